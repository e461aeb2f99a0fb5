"""Help > Keyboard shortcuts: every shortcut of the window's actions, read from the actions themselves.

The table is built when the dialog opens, from the menu bar (in menu order) and from the actions the
window holds outside its menus, so it can never list a key the window does not have.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

OUTSIDE_MENUS = "Window"


def plain(text: str) -> str:
    """A menu text without its mnemonic marks and trailing dots: '&Open session...' -> 'Open session'."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").removesuffix("...").strip()


def key_text(action: QAction) -> str:
    """The action's keys as the platform writes them, each once (Redo's standard key may repeat an explicit one)."""
    keys = (sequence.toString(QKeySequence.SequenceFormat.NativeText) for sequence in action.shortcuts()
            if not sequence.isEmpty())
    return ", ".join(dict.fromkeys(keys))


def shortcut_rows(window: QWidget) -> list[tuple[str, str, str]]:
    """(menu, command, keys) for every action of the window that has a shortcut, menus first in their order."""
    rows: list[tuple[str, str, str]] = []
    seen: set[int] = set()

    def walk(menu: QMenu, path: str) -> None:
        for action in menu.actions():
            if action.menu() is not None:
                walk(action.menu(), f"{path} > {plain(action.menu().title())}")
                continue
            seen.add(id(action))
            if not action.isSeparator() and key_text(action):
                rows.append((path, plain(action.text()), key_text(action)))

    menu_bar = getattr(window, "menuBar", None)
    if menu_bar is not None:
        for top in menu_bar().actions():
            if top.menu() is not None:
                walk(top.menu(), plain(top.menu().title()))
    for action in window.actions():
        if id(action) not in seen and key_text(action):
            rows.append((OUTSIDE_MENUS, plain(action.text()) or action.toolTip(), key_text(action)))
    return rows


class ShortcutsDialog(QDialog):
    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows(window)
        self.table = QTableWidget(len(rows), 3, self)
        self.table.setHorizontalHeaderLabels(["Menu", "Command", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))  # items show plain text
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(620, 560)


def show_shortcuts(window: QWidget) -> ShortcutsDialog:
    """Open the dialog without blocking the window (results keep arriving behind it)."""
    dialog = ShortcutsDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog
