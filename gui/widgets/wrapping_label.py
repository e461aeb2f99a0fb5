"""A word-wrapped label whose minimum height is the height of its lines at its width.

A QLabel that wraps asks its layout for the height of its text at some default width; a grid row or a
splitter pane that gives it less cuts its last lines off (at projector scale a caption wraps onto
three lines where it was given room for one). This one asks for the lines it has at the width it was
last laid out at, and asks again when that width changes, so the layouts above make room or scroll.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget


class WrappingLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)
        self._lines_height = 0

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        hint = super().minimumSizeHint()
        return QSize(hint.width(), max(hint.height(), self._lines_height))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._measure()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):  # a text scale, a theme
            self._measure()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        super().setText(text)
        self._measure()

    def _measure(self) -> None:
        height = self.heightForWidth(self.width()) if self.width() > 0 and self.text() else 0
        if height != self._lines_height:
            self._lines_height = height
            self.updateGeometry()


__all__ = ["WrappingLabel"]
