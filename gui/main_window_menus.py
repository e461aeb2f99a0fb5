"""The main window's menu bar and its export dialog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QSpinBox, QWidget

from gui import theme

if TYPE_CHECKING:
    from gui.main_window import MainWindow

FONT_STEP = 1.1


def keys(standard: QKeySequence.StandardKey | None = None, *extra: str) -> list[QKeySequence]:
    """The platform's keys for a standard command, after the lab's own extra keys, each key once.

    Binding a key twice makes it ambiguous, and Qt then runs neither action ("Ambiguous shortcut
    overload"): Redo's standard keys already hold Ctrl+Shift+Z on X11.
    """
    sequences = [QKeySequence(text) for text in extra]
    if standard is not None:
        sequences += QKeySequence.keyBindings(standard)
    unique: list[QKeySequence] = []
    for sequence in sequences:
        if not sequence.isEmpty() and sequence not in unique:
            unique.append(sequence)
    return unique



class ExportDialog(QDialog):
    """Choose what to export (the panel or one of its plots) and the size in pixels."""

    def __init__(self, targets: list[tuple[str, Any]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export for slides")
        form = QFormLayout(self)
        self.target_combo = QComboBox()
        self.target_combo.addItems([label for label, _ in targets])
        form.addRow("what", self.target_combo)
        self.width_spin = QSpinBox()
        self.width_spin.setRange(16, 16384)
        self.width_spin.setValue(1920)
        self.height_spin = QSpinBox()
        self.height_spin.setRange(16, 16384)
        self.height_spin.setValue(1080)
        form.addRow("width (px)", self.width_spin)
        form.addRow("height (px)", self.height_spin)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)


def build_menus(window: MainWindow) -> None:
    """The menu bar: File, Edit, View, Model, Lessons and Help; every action is also bound on the window, so
    its keys work in full screen without a menu bar."""
    self = window
    menus = self.menuBar()
    file_menu = menus.addMenu("&File")
    self._action(file_menu, "&Open session...", self.open_session_dialog, QKeySequence.StandardKey.Open)
    self._action(file_menu, "&Save session", self.save_session_dialog, QKeySequence.StandardKey.Save)
    self._action(file_menu, "Save session &as...", lambda: self.save_session_dialog(ask=True),
                 keys(QKeySequence.StandardKey.SaveAs) or keys(None, "Ctrl+Shift+S"))
    file_menu.addSeparator()
    self._action(file_menu, "Open &model folder...", self.open_model_dialog, tip="a checkpoint folder, or a Hugging Face GPT-2 / Llama folder")
    self._action(file_menu, "&Get a model...", self.model_library_dialog,
                 tip="bundled models, models in the Hugging Face cache, and GPT-2, SmolLM2 or Qwen2.5 from the Hub")
    self._action(file_menu, "Save model &as...", self.save_model_dialog, tip="the current model as a safetensors checkpoint folder")
    self._action(file_menu, "Save model for &transformers...", self.export_model_dialog,
                 tip="a GPT-2, Llama or Qwen2 family model as a Hugging Face folder that transformers loads")
    file_menu.addSeparator()
    self._action(file_menu, "&Export current panel...", self.export_dialog, QKeySequence("Ctrl+E"), "PNG or SVG at a chosen size")
    from gui.window_handouts import HandoutExport

    self.handouts = HandoutExport(self)
    self._action(file_menu, "Export &lesson as web page...", self.handouts.export_lesson,
                 tip="the open lesson, or a lesson file, as one HTML page that opens offline, with its predictions")
    self._action(file_menu, "Export &view as web page...", self.handouts.export_view,
                 tip="the view on screen at its current inputs as one HTML page that opens offline")
    file_menu.addSeparator()
    self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

    edit_menu = menus.addMenu("&Edit")
    undo = self.state.undo_stack.createUndoAction(self, "&Undo")
    undo.setShortcut(QKeySequence.StandardKey.Undo)
    redo = self.state.undo_stack.createRedoAction(self, "&Redo")
    redo.setShortcuts(keys(QKeySequence.StandardKey.Redo))
    edit_menu.addAction(undo)
    edit_menu.addAction(redo)
    self.addActions([undo, redo])

    view_menu = menus.addMenu("&View")
    self.panels_menu = view_menu.addMenu("&Panels")
    self.sidebar_action = self.sidebar_dock.toggleViewAction()
    self.sidebar_action.setText("Model sidebar")
    self.sidebar_action.setShortcut(QKeySequence("Ctrl+B"))
    view_menu.addAction(self.sidebar_action)
    theme_menu = view_menu.addMenu("&Theme")
    self.theme_actions: dict[str, QAction] = {}
    group = QActionGroup(self)
    for name, spec in theme.THEMES.items():
        action = QAction(spec.label, self, checkable=True)
        action.triggered.connect(lambda _=False, n=name: self.state.set_theme(n))
        group.addAction(action)
        theme_menu.addAction(action)
        self.theme_actions[name] = action
    view_menu.addSeparator()
    self._action(view_menu, "Larger text", lambda: self.scale_fonts(FONT_STEP), keys(QKeySequence.StandardKey.ZoomIn, "Ctrl+=", "Ctrl++"))
    self._action(view_menu, "Smaller text", lambda: self.scale_fonts(1 / FONT_STEP), keys(QKeySequence.StandardKey.ZoomOut, "Ctrl+-"))
    self._action(view_menu, "Normal text size", lambda: self.state.set_font_scale(1.0), QKeySequence("Ctrl+0"))
    self._action(view_menu, "&Full screen", self.toggle_full_screen, keys(QKeySequence.StandardKey.FullScreen) or keys(None, "F11"))

    model_menu = menus.addMenu("&Model")
    self.device_menu = model_menu.addMenu("&Device")
    self.device_group = QActionGroup(self)
    self.device_actions: dict[str, QAction] = {}
    self._action(model_menu, "&Rebuild model", lambda: self.request_model(force=True), QKeySequence("Ctrl+R"))
    self._action(model_menu, "&Cancel computation", lambda: self.compute.cancel(), keys(QKeySequence.StandardKey.Cancel, "Esc"))

    from gui.lessons import LessonController

    self.lessons = LessonController(self, menus.addMenu("&Lessons"), view_menu)

    help_menu = menus.addMenu("&Help")
    from gui.shortcuts_dialog import show_shortcuts

    from gui.user_guide import add_user_guide_action

    add_user_guide_action(help_menu, self)
    self._action(help_menu, "&Keyboard shortcuts", lambda: show_shortcuts(self), QKeySequence.StandardKey.HelpContents)
    self._action(help_menu, "&About", self.show_about)
    from gui.start_page import install_start_page

    install_start_page(self, help_menu)


__all__ = ["FONT_STEP", "ExportDialog", "build_menus", "keys"]
