"""The "Reading's script" switch of a panel: one check box that swaps the panel's sub-tabs for the reading's view.

The check box sits at the left end of the sub-tab bar, where it costs no height and stays in view
when a wide panel scrolls sideways. While it is checked the sub-tabs (and their bar) give way to the
reading's view, and the check box moves to a row of its own above that view, outside the view's
content, so it can always be unchecked, even while the view shows a message instead of a result;
the view's own controls (`view.header_widgets()`, its seed) sit in that row beside it.
The sub-tabs' views are only hidden, never changed: unchecking shows them as they were (a view
that missed an input change while hidden catches up, as every hidden view does).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from gui.panels.base import View
from gui.widgets.flow_layout import FlowLayout, control_group

READING_SCRIPT = "Reading's script"


class ReadingMode(QObject):
    toggled = Signal(bool)

    def __init__(self, tabs: QTabWidget, view: View, name: str, tooltip: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tabs, self.view = tabs, view
        self.check = QCheckBox(READING_SCRIPT)
        self.check.setObjectName(name)
        self.check.setToolTip(tooltip)
        self.container = QWidget()
        column = QVBoxLayout(self.container)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        # A flow: the view's controls go below the check box where the panel is narrow (a lesson beside it).
        self.header = QWidget()
        header_row = FlowLayout(self.header, spacing=12)
        self._check_slot = QWidget()
        self._slot_row = QHBoxLayout(self._check_slot)
        self._slot_row.setContentsMargins(0, 0, 0, 0)
        header_row.addWidget(self._check_slot)
        if view.header_widgets():
            header_row.addWidget(control_group(*view.header_widgets()))
        self.header.hide()
        self.stack = QStackedWidget()
        self.stack.addWidget(tabs)
        self.stack.addWidget(view)
        column.addWidget(self.header)
        column.addWidget(self.stack, 1)
        tabs.setCornerWidget(self.check, Qt.Corner.TopLeftCorner)
        self.check.toggled.connect(self._toggled)

    @property
    def on(self) -> bool:
        return self.stack.currentWidget() is self.view

    def set_on(self, on: bool) -> None:
        self.check.setChecked(on)  # no signal when unchanged; _toggled does the rest

    def _toggled(self, on: bool) -> None:
        if on:
            self.tabs.setCornerWidget(None, Qt.Corner.TopLeftCorner)
            self._slot_row.addWidget(self.check)
            self.header.show()
            self.stack.setCurrentWidget(self.view)
        else:
            self.stack.setCurrentWidget(self.tabs)
            self.header.hide()
            self._slot_row.removeWidget(self.check)
            self.tabs.setCornerWidget(self.check, Qt.Corner.TopLeftCorner)
        self.check.show()
        self.toggled.emit(on)
