"""A splitter whose panes sit side by side where the row has room for both, and one above the other where not.

A horizontal QSplitter asks for the sum of its panes' minimum widths, so two panes that each fit a
lesson's side of the window together make the panel scroll sideways. This one asks only for its
widest pane and turns vertical while it is narrower than the panes side by side.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QBoxLayout, QSplitter, QWidget

from gui.widgets.plot_titles import readable_width


class TurningSplitter(QSplitter):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)

    def side_by_side_width(self) -> int:
        """The width the panes need next to each other: each its minimum, or the width its plots read at (their
        titles unbroken, their axes' names whole), whichever is more."""
        panes = [self.widget(index) for index in range(self.count()) if not self.widget(index).isHidden()]
        needed = sum(max(pane.minimumSizeHint().expandedTo(pane.minimumSize()).width(), readable_width(pane))
                     for pane in panes)
        return needed + self.handleWidth() * max(0, len(panes) - 1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        hint = super().minimumSizeHint()
        panes = [self.widget(index) for index in range(self.count()) if not self.widget(index).isHidden()]
        widest = max((pane.minimumSizeHint().expandedTo(pane.minimumSize()).width() for pane in panes), default=0)
        return QSize(widest, hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        self._turn_for(event.size().width())
        super().resizeEvent(event)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # a pane's minimum changed (a sub-tab switched), not the width
            self._turn_for(self.width())
        return super().event(event)

    def _turn_for(self, width: int) -> None:
        turn = Qt.Orientation.Horizontal if width >= self.side_by_side_width() else Qt.Orientation.Vertical
        if turn != self.orientation():
            self.setOrientation(turn)


class TurningBox(QWidget):
    """Panes side by side where the row has room for all, one above the other where not, like TurningSplitter;
    for panes of wrapped text, whose height follows their width: a box layout gives them that height, a
    splitter squeezes them to one line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)

    def addWidget(self, widget: QWidget, stretch: int = 0) -> None:  # noqa: N802 (Qt's name, as a splitter's)
        self.box.addWidget(widget, stretch)

    def panes(self) -> list[QWidget]:
        items = (self.box.itemAt(index) for index in range(self.box.count()))
        return [item.widget() for item in items if item.widget() is not None and not item.widget().isHidden()]

    def side_by_side_width(self) -> int:
        panes = self.panes()
        needed = sum(pane.minimumSizeHint().expandedTo(pane.minimumSize()).width() for pane in panes)
        return needed + self.box.spacing() * max(0, len(panes) - 1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        hint = super().minimumSizeHint()
        panes = self.panes()
        widest = max((pane.minimumSizeHint().expandedTo(pane.minimumSize()).width() for pane in panes), default=0)
        return QSize(widest, hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        self._turn_for(event.size().width())
        super().resizeEvent(event)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self._turn_for(self.width())
        return super().event(event)

    def _turn_for(self, width: int) -> None:
        side_by_side = width >= self.side_by_side_width()
        turn = QBoxLayout.Direction.LeftToRight if side_by_side else QBoxLayout.Direction.TopToBottom
        if turn != self.box.direction():
            self.box.setDirection(turn)
