"""A log axis that labels decades first, then 2 and 5 times a decade, and never the other minors.

pyqtgraph puts every log tick of a short range (1, 2, ... 9 times each decade) in one level, so on a
plot a few hundred pixels tall their labels are drawn over each other. Here decades, 2x / 5x and the
other minor ticks are three levels: the axis's own text-fill limits drop the 2x / 5x labels when they
would crowd, and the other minors are ticks without text.
"""

from __future__ import annotations

import math

import pyqtgraph as pg

DECADE_MULTIPLES = (1,)
LABELLED_MULTIPLES = (2, 5)
UNLABELLED_MULTIPLES = (3, 4, 6, 7, 8, 9)


class LogAxis(pg.AxisItem):
    """An AxisItem whose log mode has labelled decades, labelled 2x / 5x ticks and unlabelled minors."""

    def setLogMode(self, *args, **kwargs) -> None:  # noqa: N802 (pyqtgraph override)
        super().setLogMode(*args, **kwargs)
        self.setStyle(maxTextLevel=1 if self.logMode else 2)  # 2: pyqtgraph's default for linear axes

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802, N803 (pyqtgraph override)
        first, last = math.floor(minVal), math.ceil(maxVal)
        if last - first > 12:  # many decades: pyqtgraph's own spacing of whole decades reads well
            return super().logTickValues(minVal, maxVal, size, stdTicks)

        def within(multiples: tuple[int, ...]) -> list[float]:
            values = (decade + math.log10(m) for decade in range(first, last + 1) for m in multiples)
            return [v for v in values if minVal <= v <= maxVal]

        return [(None, within(DECADE_MULTIPLES)), (None, within(LABELLED_MULTIPLES)), (None, within(UNLABELLED_MULTIPLES))]


def log_ready_axes() -> dict[str, LogAxis]:
    """Left and bottom axes for a PlotWidget that may switch either axis to log mode."""
    return {"left": LogAxis("left"), "bottom": LogAxis("bottom")}
