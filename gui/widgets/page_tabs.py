"""Tabs whose size follows the page on show, not the largest page behind it.

A QTabWidget asks for the largest minimum size among all its pages, so one wide page (a table at
projector scale) makes every other page scroll sideways. Pages that are not current get the
Ignored size policy, which QStackedLayout leaves out of its size hints; the current page keeps the
policy it asked for.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSizePolicy, QTabBar, QTabWidget, QWidget

OWN_POLICY = "page_tabs_own_size_policy"


class ShorteningTabBar(QTabBar):
    """A tab bar that shortens the names of the tabs not shown ("Param...") where all do not fit, and never the
    name of the tab shown: every tab stays in view, without scroll arrows, and the page on screen is named whole."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setElideMode(Qt.TextElideMode.ElideRight)
        self.currentChanged.connect(self._lay_out_again)

    def minimumTabSizeHint(self, index: int) -> QSize:  # noqa: N802 (Qt's name)
        return self.tabSizeHint(index) if index == self.currentIndex() else super().minimumTabSizeHint(index)

    def _lay_out_again(self, _index: int) -> None:
        self.setElideMode(self.elideMode())  # Qt lays the tabs out again, with the new current tab's least width


class PageTabs(QTabWidget):
    """A QTabWidget sized by its current page."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.currentChanged.connect(self._size_to_current)

    def tabInserted(self, index: int) -> None:  # noqa: N802 (Qt override)
        super().tabInserted(index)
        self._size_to_current()

    def _size_to_current(self, _index: int = -1) -> None:
        current = self.currentWidget()
        for index in range(self.count()):
            page = self.widget(index)
            own = page.property(OWN_POLICY)  # the page's own policy while it is set aside
            if page is current:
                if own is not None:
                    page.setSizePolicy(own)
                    page.setProperty(OWN_POLICY, None)
            elif own is None:
                page.setProperty(OWN_POLICY, page.sizePolicy())
                page.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        # Each ancestor's layout measures again: Qt passes a new size hint up only through layouts it has
        # activated, and one that was invalidated while hidden would keep the last page's width for good.
        widget: QWidget | None = self
        while widget is not None:
            widget.updateGeometry()
            if widget.isWindow():
                break
            widget = widget.parentWidget()
