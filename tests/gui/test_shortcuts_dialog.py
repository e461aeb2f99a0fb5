"""Help > Keyboard shortcuts lists the window's own actions and their keys, and F1 opens it."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from gui.shortcuts_dialog import ShortcutsDialog, plain, shortcut_rows


def menu_actions_with_keys(window):
    found = {}

    def walk(menu):
        for action in menu.actions():
            if action.menu() is not None:
                walk(action.menu())
            elif action.shortcuts():
                found[plain(action.text())] = action

    for top in window.menuBar().actions():
        if top.menu() is not None:
            walk(top.menu())
    return found


def test_every_shortcut_of_the_menus_is_listed_with_its_keys(window):
    rows = shortcut_rows(window)
    listed = {command: keys for _menu, command, keys in rows}
    actions = menu_actions_with_keys(window)
    assert len(actions) >= 10  # the scan saw the real menus
    for command, action in actions.items():
        keys = [s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()]
        assert listed[command].split(", ") == list(dict.fromkeys(keys)), command
    menus = {menu for menu, _command, _keys in rows}
    assert {"File", "Edit", "View", "Model", "Help"} <= {menu.split(" > ")[0] for menu in menus}
    assert listed["Keyboard shortcuts"] == QKeySequence(QKeySequence.StandardKey.HelpContents).toString(
        QKeySequence.SequenceFormat.NativeText)
    assert any(menu == "View > Panels" for menu, _c, _k in rows)  # the Ctrl+1.. panel entries, made after loading


def test_a_new_action_appears_and_the_table_is_plain_text(qtbot, window):
    from PySide6.QtGui import QAction

    extra = QAction("<b>Odd</b> && <i>name</i>", window)
    extra.setShortcut(QKeySequence("Ctrl+Alt+J"))
    window.addAction(extra)
    dialog = ShortcutsDialog(window)
    qtbot.addWidget(dialog)
    cells = {(dialog.table.item(r, 1).text(), dialog.table.item(r, 2).text()) for r in range(dialog.table.rowCount())}
    keys = QKeySequence("Ctrl+Alt+J").toString(QKeySequence.SequenceFormat.NativeText)
    assert ("<b>Odd</b> & <i>name</i>", keys) in cells
    assert dialog.table.rowCount() == len(shortcut_rows(window))


def test_the_help_key_opens_the_dialog(qtbot, window):
    help_key = QKeySequence(QKeySequence.StandardKey.HelpContents)[0]  # F1 on Linux and Windows
    window.activateWindow()
    qtbot.keyClick(window, help_key.key(), help_key.keyboardModifiers())
    qtbot.waitUntil(lambda: window.findChild(ShortcutsDialog) is not None and window.findChild(ShortcutsDialog).isVisible(),
                    timeout=5000)
    dialog = window.findChild(ShortcutsDialog)
    assert dialog.table.rowCount() == len(shortcut_rows(window))
    dialog.close()
