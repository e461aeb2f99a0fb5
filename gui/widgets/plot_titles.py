"""A plot title that wraps onto further lines where it is wider than its plot.

pyqtgraph gives a title a minimum width of its whole line, so a long title (projector text, a lesson
beside the panel) makes the plot item wider than its widget and cuts its right side off: the end of
the title, the last tick label, part of the curve.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QTextOption

TITLE_MARGIN_PX = 8  # kept free beside the title


class WrappingTitle(QObject):
    """Keeps plot's title within the plot's width: re-fitted on every resize and every new title."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        super().__init__(plot)
        self.plot = plot
        self.label = plot.getPlotItem().titleLabel
        self._line_height: float | None = None  # the title row's height before it first wrapped
        self._fitting = False
        self.label.item.document().setDefaultTextOption(QTextOption(Qt.AlignmentFlag.AlignHCenter))
        set_text = self.label.setText

        def set_and_fit(text, **style):
            set_text(text, **style)
            self.fit()

        self.label.setText = set_and_fit  # every setTitle goes through here
        plot.viewport().installEventFilter(self)  # the viewport: it has its new size when told
        plot.getPlotItem().geometryChanged.connect(self._overflow)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

    def fit(self) -> None:
        if self._fitting:
            return
        self._fitting = True
        try:
            self._fit()
        finally:
            self._fitting = False

    def _overflow(self) -> None:
        """The plot item outgrew the widget after all (its axes widened once their ticks were measured)."""
        if self.plot.getPlotItem().geometry().width() > self.plot.viewport().width() + 1:
            self.fit()

    def _fit(self) -> None:
        item = self.plot.getPlotItem()
        text = self.label.item
        # The title spans the view box's column: the plot's width less what lies beside that column.
        laid_out = item.geometry().width() > 0 and self.label.geometry().width() > 0
        beside = (item.geometry().width() - self.label.geometry().width() if laid_out else
                  sum(axis.width() for axis in (item.getAxis("left"), item.getAxis("right")) if axis.isVisible()))
        room = max(1, self.plot.viewport().width() - math.ceil(beside) - TITLE_MARGIN_PX)
        text.setTextWidth(-1)  # its one-line width
        if text.boundingRect().width() > room:
            text.setTextWidth(room)
            if self._line_height is None:
                self._line_height = self.label.maximumHeight()  # what setTitle gives one line
            height = max(self._line_height, math.ceil(text.boundingRect().height()))
        else:
            height = self._line_height
        if height is not None:
            self.label.setMaximumHeight(height)
            item.layout.setRowFixedHeight(0, height)
        self.label.updateMin()
        self.label.resizeEvent(None)
        # A plot item cannot be set narrower than its minimum: one set while the title was long stays too wide.
        shown = item.geometry()
        if shown.width() > self.plot.viewport().width():
            item.setGeometry(QRectF(shown.x(), shown.y(), self.plot.viewport().width(), shown.height()))


def wrap_title(plot: pg.PlotWidget) -> pg.PlotWidget:
    plot._wrapping_title = WrappingTitle(plot)
    return plot
