"""Where the token strip's chips go, and their texts: cheap for the lab's largest text (10,000 chips).

Chips are kept as numbers (a QRect is made only for a chip painted or asked about) and found by
bisection on their tops; a chip's text is laid out when it is first painted, not for every chip.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFont, QStaticText, QTransform


class ChipRects(Sequence[QRect]):
    """The chip body of each token, in token order; their tops never decrease (rows go down)."""

    def __init__(self, xs: Sequence[int] = (), tops: Sequence[int] = (), widths: Sequence[int] = (),
                 height: int = 0) -> None:
        self.xs, self.tops, self.widths, self.height = tuple(xs), tuple(tops), tuple(widths), height

    def __len__(self) -> int:
        return len(self.xs)

    def __getitem__(self, index: int) -> QRect:
        return QRect(self.xs[index], self.tops[index], self.widths[index], self.height)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChipRects) and (self.xs, self.tops, self.widths, self.height) == (
            other.xs, other.tops, other.widths, other.height)

    __hash__ = None

    def between(self, top: int, bottom: int, above: int) -> range:
        """The chips that may reach into rows top..bottom, each with a line `above` its body (a superset)."""
        return range(bisect_left(self.tops, top - self.height), bisect_right(self.tops, bottom + above))


@dataclass(frozen=True)
class ChipGeometry:
    rects: ChipRects  # the chip body of each token
    height: int  # total height needed at the width the layout was made for


def wrap_chips(widths: Sequence[int], width: int, gap: int, index_height: int, chip_height: int) -> ChipGeometry:
    """Chips of these widths in rows of at most `width`, each under a line of `index_height`."""
    row_height = index_height + chip_height + gap * 2
    xs: list[int] = []
    tops: list[int] = []
    x, y = gap, gap
    for w in widths:
        if x + w > width - gap and x > gap:
            x, y = gap, y + row_height
        xs.append(x)
        tops.append(y + index_height)
        x += w + gap
    return ChipGeometry(ChipRects(xs, tops, widths, chip_height), y + row_height)


class ChipTexts:
    """Pre-laid-out texts by chip position (drawStaticText is several times faster than drawText), made on first
    paint; `clear()` when the texts or the font change, `drop(index)` when one chip's does."""

    def __init__(self) -> None:
        self._texts: dict[int, QStaticText] = {}

    def get(self, index: int, text: str, font: QFont) -> QStaticText:
        static = self._texts.get(index)
        if static is None:
            static = self._texts[index] = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(QTransform(), font)
        return static

    def drop(self, index: int) -> None:
        self._texts.pop(index, None)

    def clear(self) -> None:
        self._texts.clear()

    def __len__(self) -> int:
        return len(self._texts)


__all__ = ["ChipGeometry", "ChipRects", "ChipTexts", "wrap_chips"]
