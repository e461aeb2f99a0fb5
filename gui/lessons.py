"""Lesson mode: runs the steps of a lesson in the window (state, panel, panel settings, covers, outline),
owns the keyboard while a lesson is open (a clicker's Page Down / Right / Space reveal, then advance), the
presentation view for projectors, and puts the lab back as it was when the lesson closes.

The lesson files and their format live in core.lessons; the dock is gui.lesson_dock; covers and the
outline are gui.answer_cover. The controller reaches the window only through LessonWindow.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QLineEdit,
    QMenu,
    QMenuBar,
    QPlainTextEdit,
    QStatusBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)
from shiboken6 import isValid

from core.lesson_runs import PANEL_DEFAULTS, STATE_FOLLOWING, step_states
from core.lessons import PLACEHOLDER, Lesson, LessonError, LessonStep, bundled_lesson_paths, load_lesson
from core.presets import get_preset
from gui import theme
from gui.answer_cover import (
    FOCUS_DELAY_MS,
    AnswerCover,
    FocusOutline,
    bring_into_view,
    find_panel_widget,
    find_panel_widgets,
    shown_rect,
    widget_text,
)
from gui.lesson_dock import DOCK_MIN_WIDTH, DOCK_WIDTH, KEYS_LINE, PRESENTING_KEYS_LINE, LessonDock
from gui.lesson_quotes import StepQuotes

log = logging.getLogger("transformer_explorer.lessons")

MODEL_WAIT_MS = 30_000  # a step whose model never arrives still finishes (its panel shows why)
LESSON_FILTER = "Lesson (*.json)"
NEXT_KEYS = (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Space)  # what clickers send for "next"
PREVIOUS_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_Left)
LEAVE_KEYS = (Qt.Key.Key_Escape, Qt.Key.Key_F11)  # leave the presentation view
TYPING_WIDGETS = (QLineEdit, QTextEdit, QPlainTextEdit, QAbstractSpinBox)  # their keys are the student's


class LessonWindow(Protocol):
    """What the lesson controller needs of the window it runs in (gui.main_window.MainWindow is one)."""

    state: Any  # gui.state.LabState
    panels: list
    tabs: QTabWidget
    sidebar_dock: QDockWidget
    file_reader: Any  # gui.file_reader.FileReader
    settings_store: Any  # QSettings
    loaded: Any  # gui.model_loader.LoadedModel | None
    compute: Any  # gui.compute.ComputeController: the lesson's own computations (a prediction's answer)

    def panel(self, title: str) -> Any: ...
    def show_message(self, title: str, text: str) -> Any: ...
    def set_look_for_this_run(self, theme_name: str | None = None, font_scale: float | None = None) -> None: ...
    def status_figures(self) -> list[QWidget]: ...
    def current_session(self) -> Any: ...
    def apply_session(self, session: Any) -> None: ...
    def adopt_model(self, loaded: Any) -> None: ...
    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt's name)
    def menuBar(self) -> QMenuBar: ...  # noqa: N802
    def addDockWidget(self, area: Qt.DockWidgetArea, dock: QDockWidget) -> None: ...  # noqa: N802
    def resizeDocks(self, docks: list, sizes: list, orientation: Qt.Orientation) -> None: ...  # noqa: N802
    def addAction(self, action: QAction) -> None: ...  # noqa: N802
    def isVisible(self) -> bool: ...  # noqa: N802
    def isFullScreen(self) -> bool: ...  # noqa: N802
    def set_full_screen(self, on: bool) -> None: ...
    def width(self) -> int: ...


def is_typing_in(widget: QWidget | None) -> bool:
    """Whether the focused widget takes typed keys (a text field, a spin box, an editable combo box)."""
    if widget is None:
        return False
    return isinstance(widget, TYPING_WIDGETS) or (isinstance(widget, QComboBox) and widget.isEditable())


class LessonController(QObject):
    """Runs lessons in a window: the Lessons menu, the dock, step navigation and keys, presentation view."""

    step_shown = Signal(int)  # the step's state, panel and panel settings are in place
    step_problem = Signal(str)  # the step could not be set up as written (an edit, its panel's settings): why
    lesson_started = Signal(str)
    lesson_open_ended = Signal(str)  # an open_lesson ended: "" when the lesson started, else the message shown
    titles_read = Signal()  # the Lessons menu shows the bundled lessons' own titles

    def __init__(self, window: LessonWindow, lessons_menu: QMenu, view_menu: QMenu) -> None:
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.lesson: Lesson | None = None
        self.index = 0
        self._generation = 0  # which step a deferred finish belongs to (paging fast drops stale ones)
        self._waiting_for_model = False
        self._followed_panel = None  # the panel whose results the current step quotes
        self.quotes: StepQuotes | None = None  # what the current step quotes, from which results
        self._states: list[dict[str, Any]] = []  # each step's lab state (core.lesson_runs.step_states)
        self.presentation = False
        self._hidden_for_presentation: list[QWidget] = []
        self._was_full_screen = False
        # The lab as it was before the lesson opened: put back when the lesson closes.
        self._before: tuple[Any, Any, int] | None = None  # (session, loaded model, panel tab)

        self.dock = LessonDock(window)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.dock.hide()
        self.dock.previous_requested.connect(self.previous_step)
        self.dock.next_requested.connect(self.next_step)
        self.dock.close_requested.connect(self.close_lesson)
        self.dock.visibilityChanged.connect(lambda _visible: self._update_actions())
        self.outline = FocusOutline(window)
        self.covers: list[AnswerCover] = []  # over the step's answer until Reveal
        self.dock.answer_revealed.connect(self._uncover)
        self._model_timer = QTimer(self)
        self._model_timer.setSingleShot(True)
        self._model_timer.timeout.connect(self._finish_after_model)
        self.state.model_changed.connect(self._on_model_changed)
        self.state.theme_changed.connect(self._restyle)
        self.state.font_scale_changed.connect(self._restyle)

        self.menu = lessons_menu
        # Named by file until their titles are read, off the GUI thread, so the window appears without waiting.
        self.bundled_actions: dict[Path, QAction] = {}
        for path in bundled_lesson_paths():
            action = QAction(path.stem.replace("&", "&&"), window)
            action.triggered.connect(lambda _=False, p=path: self.open_lesson(p))
            lessons_menu.addAction(action)
            self.bundled_actions[path] = action
        window.file_reader.read("lesson-titles", lambda paths=list(self.bundled_actions): _menu_entries(paths),
                                self._show_titles, self._titles_failed)
        lessons_menu.addSeparator()
        self._add_action(lessons_menu, "Open lesson file...", self.open_lesson_dialog)
        lessons_menu.addSeparator()
        self.show_dock_action = self.dock.toggleViewAction()
        self.show_dock_action.setText("Lesson panel")
        lessons_menu.addAction(self.show_dock_action)
        # Page Down reveals a step's answer before it advances, as a clicker's only button must. The same keys,
        # the arrows and Space reach the lesson through the application's event filter whatever has focus.
        self.next_action = self._add_action(lessons_menu, "Next (reveal first)", self.advance,
                                            [QKeySequence(Qt.Key.Key_PageDown)])
        self.previous_action = self._add_action(lessons_menu, "Previous step", self.previous_step,
                                                [QKeySequence(Qt.Key.Key_PageUp)])
        self.reveal_action = self._add_action(lessons_menu, "Reveal", self.dock.reveal, [QKeySequence("Ctrl+Shift+R")])
        self.close_action = self._add_action(lessons_menu, "Close lesson", self.close_lesson)
        self.presentation_action = self._add_action(view_menu, "&Presentation view", self.toggle_presentation,
                                                    [QKeySequence("Ctrl+Shift+P")])
        self.presentation_action.setCheckable(True)
        self.presentation_action.setStatusTip("hide the sidebar, menus and status bar; large lesson text")
        self._update_actions()

    def _add_action(self, menu: QMenu, text: str, slot, shortcuts: list[QKeySequence] | None = None) -> QAction:
        action = QAction(text, self.window)
        if shortcuts:
            action.setShortcuts(shortcuts)
        action.triggered.connect(lambda _=False: slot())
        menu.addAction(action)
        self.window.addAction(action)  # shortcuts keep working with the menu bar hidden
        return action

    # ---- keys ------------------------------------------------------------------------------------
    def _owns_keys(self) -> bool:
        return self.lesson is not None and self.dock.isVisible() and QApplication.activeModalWidget() is None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        """The lesson's keys, whatever widget has focus, except in a field being typed in."""
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) or not isinstance(event, QKeyEvent):
            return False
        key, modifiers = event.key(), event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if modifiers != Qt.KeyboardModifier.NoModifier or not self._owns_keys():
            return False
        if not isinstance(watched, QWidget) or watched.window() is not self.window:
            return False
        presenting = self.presentation and key in LEAVE_KEYS
        if not presenting and (key not in NEXT_KEYS + PREVIOUS_KEYS or is_typing_in(QApplication.focusWidget())):
            return False
        if kind == QEvent.Type.ShortcutOverride:
            event.accept()  # the key comes as a key press (below), not as a menu shortcut
            return True
        if event.isAutoRepeat():  # a held clicker button must not page through the whole lesson
            return True
        if presenting:
            self.set_presentation(False)
        elif key in NEXT_KEYS:
            self.advance()
        else:
            self.previous_step()
        return True

    def advance(self) -> None:
        """A clicker's "next": reveal the step's answer when it has one still covered, else go to the next step."""
        if self.lesson is None:
            return
        if self.dock.prediction.pending:
            self.dock.prediction.clicker_press()  # commits the choice made, else skips: the next press reveals
        elif self.dock.reveal_button.isVisible() and not self.dock.revealed:
            self.dock.reveal()
        else:
            self.next_step()

    # ---- opening ---------------------------------------------------------------------------------
    def open_lesson_dialog(self) -> None:
        store = self.window.settings_store
        start = str(store.value("lesson/dir", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self.window, "Open lesson", start, LESSON_FILTER)
        if path:
            store.setValue("lesson/dir", str(Path(path).parent))
            self.open_lesson(path)

    def _show_titles(self, entries: list[tuple[Path, str, str]]) -> None:
        for path, title, tip in entries:
            action = self.bundled_actions.get(path)
            if action is not None:
                action.setText(title.replace("&", "&&"))
                action.setStatusTip(tip)
        self.titles_read.emit()

    def _titles_failed(self, error: Exception) -> None:  # the menu keeps the file names; each still opens
        log.error("the bundled lessons' titles could not be read", exc_info=error)

    def open_lesson(self, path: str | Path, wait: bool = False, on_started: Callable[[], None] | None = None) -> str | None:
        """Open a lesson file: read and checked on a thread of its own while the window stays live, started here.

        Returns at once (None, or the message when the panels are not built yet); lesson_open_ended says how
        it ended, and `on_started` runs once the lesson has started. A newer open supersedes one still being
        read (that one never starts). With wait=True the file is read on this thread and the result returned:
        None when started, else the message shown (nothing changed), for code that must have it at once.
        """
        path = Path(path)
        if not self.window.panels:
            return self._refuse(path, LessonError("the panels are still loading; try again in a moment"))
        panels, themes = [panel.title for panel in self.window.panels], list(theme.THEMES)
        reader = self.window.file_reader
        if wait:
            reader.cancel("lesson")
            try:
                lesson = load_lesson(path, panels=panels, themes=themes)
            except LessonError as error:
                return self._refuse(path, error)
            self._start_opened(lesson, path, on_started)
            return None
        self.window.statusBar().showMessage(f"opening the lesson {path.name}...")
        reader.read("lesson", lambda: load_lesson(path, panels=panels, themes=themes),
                    lambda lesson: self._start_opened(lesson, path, on_started),
                    lambda error: self._refuse(path, error))
        return None

    def _start_opened(self, lesson: Lesson, path: Path, on_started: Callable[[], None] | None) -> None:
        if self.window.statusBar().currentMessage() == f"opening the lesson {path.name}...":
            self.window.statusBar().clearMessage()
        self.start(lesson)
        self.lesson_open_ended.emit("")
        if on_started is not None:
            on_started()

    def _refuse(self, path: Path, error: Exception) -> str:
        """One message box for a lesson that cannot be opened; the lab and any running lesson are left as they were."""
        message = str(error)
        if not isinstance(error, LessonError):  # a defect behind the reader, not a bad file: logged whole
            log.error("reading the lesson %s failed", path, exc_info=error)
            message = f"it could not be read: {type(error).__name__}: {error}"
        if self.window.statusBar().currentMessage() == f"opening the lesson {path.name}...":
            self.window.statusBar().clearMessage()
        self.window.show_message("Could not open the lesson", f"{path.name}: {message}")
        self.lesson_open_ended.emit(message)
        return message

    def start(self, lesson: Lesson) -> None:
        if self._before is None:  # a lesson opened over another keeps the lab from before the first
            window = self.window
            self._before = (window.current_session(), window.loaded, window.tabs.currentIndex())
        self.lesson = lesson
        self._states = [values for _number, _step, values in step_states(lesson)]
        QApplication.instance().installEventFilter(self)
        if not self.dock.isVisible():
            self.dock.show()
            self.window.resizeDocks([self.dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        self.dock.raise_()
        self.lesson_started.emit(lesson.title)
        self.go_to(0)

    def close_lesson(self) -> None:
        """Close the lesson and put back the model, text, panel settings and panel from before it opened."""
        self.set_presentation(False)
        QApplication.instance().removeEventFilter(self)
        self._generation += 1
        self.outline.clear()
        self._uncover()
        self._follow_results(None)
        self._model_timer.stop()
        self._waiting_for_model = False
        self.lesson = None
        self.dock.hide()
        before, self._before = self._before, None
        if before is None:
            return
        session, loaded, tab = before
        window = self.window
        if loaded is not None and loaded is not window.loaded and loaded.config == session.config:
            window.adopt_model(loaded)  # a trained or opened model comes back as it was, not rebuilt
        window.apply_session(session)
        window.tabs.setCurrentIndex(tab)
        self._update_actions()

    # ---- navigation ------------------------------------------------------------------------------
    def next_step(self) -> None:
        if self.lesson is not None and self.index < len(self.lesson.steps) - 1:
            self.go_to(self.index + 1)

    def previous_step(self) -> None:
        if self.lesson is not None and self.index > 0:
            self.go_to(self.index - 1)

    def go_to(self, index: int) -> None:
        """Show step `index`: its text now, its state now, its panel settings once the model is built."""
        lesson = self.lesson
        if lesson is None or not 0 <= index < len(lesson.steps):
            return
        self.index = index
        self._generation += 1
        self.outline.clear()
        self._uncover()
        step = lesson.steps[index]
        self._apply_state(step, self._states[index])
        panel = self._panel(step)
        if panel is not None:
            self.window.tabs.setCurrentWidget(panel)
        self._follow_results(panel if step.placeholders() else None, step)
        self.dock.show_step(lesson, index, self._resolver(panel))
        self.dock.prediction.request_answer(self.window.compute, lesson, index)
        self._update_actions()
        if self._model_pending():
            self._waiting_for_model = True
            self._model_timer.start(MODEL_WAIT_MS)
        else:
            self._finish_step()

    def _follow_results(self, panel, step: LessonStep | None = None) -> None:
        """Quote the panel's numbers afresh whenever it shows a new result or refuses (they are computed after the
        step), and take them away the moment the lab's inputs change."""
        if self._followed_panel is not None:
            if isValid(self._followed_panel):
                self._followed_panel.result_shown.disconnect(self._on_result_shown)
            self.state.changed.disconnect(self._on_result_shown)
        if self.quotes is not None:
            self.quotes.dispose()
        self._followed_panel = panel
        self.quotes = StepQuotes(panel, step, self._refresh_quotes) if panel is not None and step is not None else None
        if panel is not None:
            panel.result_shown.connect(self._on_result_shown)
            self.state.changed.connect(self._on_result_shown)

    def _on_result_shown(self, *_args: Any) -> None:
        if self.quotes is not None:
            self.quotes.result_shown()
        self._refresh_quotes()

    def _refresh_quotes(self) -> None:
        if self.lesson is not None:
            self.dock.refresh_live_text(self.lesson.steps[self.index])

    def _apply_state(self, step: LessonStep, values: dict[str, Any]) -> None:
        """The lab state the step shows, whatever step or lesson came before: what the steps up to it set
        (core.lesson_runs.step_states), with an input already in place left alone (no recomputation, no undo step)."""
        state = self.state
        # Theme first, so the panels' re-styling happens before they compute; a lesson's look is not saved
        # as the user's preference.
        self.window.set_look_for_this_run(step.state.get("theme"), step.state.get("font_scale"))
        changes: list[tuple[Callable[[Any], Any], Any]] = []
        config = (values.get("config") or get_preset(values["preset"])) if "preset" in values else state.config
        if config != state.config:
            changes.append((state.set_config, config))
        if "seed" in values and values["seed"] != state.seed:
            changes.append((state.set_seed, values["seed"]))
        if "text" in values and not self._shows_text(values):
            changes.append((state.set_text, values["text"]))
        for key, setter, count in (("selected_layer", state.set_selected_layer, config.n_layers),
                                   ("selected_head", state.set_selected_head, config.n_heads)):
            if key in values and min(values[key], count - 1) != getattr(state, key):  # clamped to the step's model
                changes.append((setter, min(values[key], count - 1)))
        if not changes:
            return
        state.undo_stack.beginMacro(f"lesson step: {step.title}")  # one undoable edit per step
        try:
            for setter, value in changes:
                setter(value)
        finally:
            state.undo_stack.endMacro()

    def _shows_text(self, values: dict[str, Any]) -> bool:
        """Whether the lab's tokens are already the step's text, with the step's edit made when it has one."""
        state, tokenizer = self.state, self.state.tokenizer
        if tokenizer is None:
            return state.text == values["text"] and "edit" not in values
        try:
            expected = tokenizer.encode(values["text"])
            edit = values.get("edit")
            if edit is not None:
                (token_id,) = tokenizer.encode(edit["token"])
                expected[edit["position"]] = token_id
        except Exception:  # noqa: BLE001 (an edit this tokenizer cannot make: the text is set again, the edit refused)
            return False
        return list(state.tokens) == expected and (edit is None or state.token_edit is not None)

    def _replace_token(self, position: int, token: str) -> str:
        """One token replaced, as a chip edit in the token strip: the panels measure this edit, not a probe.
        Returns why the edit could not be made ("" when it was)."""
        from gui.state import TokenEdit

        state, tokenizer = self.state, self.state.tokenizer
        tokens = state.tokens
        if tokenizer is None:
            return "the tokenizer is not loaded yet"
        try:
            ids = tokenizer.encode(token)
        except Exception:  # noqa: BLE001 (each tokenizer raises its own unknown-token error)
            return f"{token!r} is not in this tokenizer's vocabulary"
        if len(ids) != 1:
            return f"{token!r} is {len(ids)} tokens of this tokenizer, not one"
        if not 0 <= position < len(tokens):
            return f"the text has no position {position} ({len(tokens)} tokens)"
        edited = list(tokens)
        edited[position] = ids[0]
        if edited != tokens:
            state.set_tokens(edited, TokenEdit("replace", position, tuple(tokens)))
        return ""

    def _model_pending(self) -> bool:
        """Whether the window is about to build a model for the state (panel settings wait for it)."""
        state, loaded = self.state, self.window.loaded
        if not state.torch_ready:
            return False
        return loaded is None or (loaded.config, loaded.seed, loaded.device) != (state.config, state.seed, state.device)

    def _on_model_changed(self) -> None:
        if self._waiting_for_model and not self._model_pending():
            # After this turn of the event loop: the panels' own handlers for the new model (limits of
            # their spin boxes, say) must run before the step's settings are applied to them.
            generation = self._generation
            QTimer.singleShot(0, self, lambda: self._finish_if_current(generation))

    def _restyle(self) -> None:
        self.dock.apply_theme()
        for cover in self.covers:
            if isValid(cover):
                cover.restyle()
        if self.lesson is not None:
            self.dock.refresh_live_text(self.lesson.steps[self.index])

    def _finish_if_current(self, generation: int) -> None:
        if generation == self._generation and self._waiting_for_model:
            self._finish_after_model()

    def _finish_after_model(self) -> None:
        self._model_timer.stop()
        self._waiting_for_model = False
        self._finish_step()

    def _finish_step(self) -> None:
        lesson = self.lesson
        if lesson is None:
            return
        step = lesson.steps[self.index]
        panel = self._panel(step)
        problems = []
        if "text" in self._states[self.index] and self.state.text_problem:  # shown without what it cannot read
            problems.append(f"step {self.index + 1}: 'text': the model's tokenizer cannot read it: "
                            f"{self.state.text_problem}")
        edit = self._states[self.index].get("edit")
        if edit is not None:
            # Once the model is in place: loading one may bring its tokenizer, which retokenizes the text.
            problem = self._replace_token(edit["position"], edit["token"])
            if problem:
                problems.append(f"step {self.index + 1}: 'edit': {problem}")
        if panel is not None:
            try:
                with panel.views_held():
                    panel.restore_settings(self._panel_settings(panel, step))
                problems += [f"step {self.index + 1}: 'panel_settings': {line}" for line in _not_taken(panel, step)]
            except Exception:  # a panel's own defect must not stop the lesson
                log.warning("panel %r could not take the lesson's settings", panel.title, exc_info=True)
                problems.append(f"step {self.index + 1}: 'panel_settings': the {panel.title} panel could not take them")
        if self.quotes is not None:
            self.quotes.settle()
            # A view showing again what it showed before puts it back without a new result: quote it then.
            generation = self._generation
            QTimer.singleShot(0, self, lambda: generation == self._generation and self._refresh_quotes())
        self.dock.refresh_live_text(step)
        if panel is not None and step.reveal and not self.dock.revealed:
            self._cover(panel, step)
        if panel is not None and step.focus:
            generation = self._generation
            QTimer.singleShot(FOCUS_DELAY_MS, self, lambda: self._point_at(generation, panel, step.focus))
        self.step_shown.emit(self.index)
        for problem in problems:
            self.window.statusBar().showMessage(f"this step is not as written: {problem}", 10000)
            self.step_problem.emit(problem)

    def _panel_settings(self, panel, step: LessonStep) -> dict[str, Any]:
        """The step's panel settings, and the panel's defaults for those it does not name: nothing is carried over
        from an earlier step or lesson. A setting that follows the lab's state (the corrupted input follows the
        clean one) is set from it."""
        settings = {**panel.default_settings(), **PANEL_DEFAULTS.get(panel.title, {}), **step.panel_settings}
        for key, field in STATE_FOLLOWING.get(panel.title, {}).items():
            if key not in step.panel_settings:
                settings[key] = list(getattr(self.state, field))
        return settings

    def _cover(self, panel: QWidget, step: LessonStep) -> None:
        """Cover every result of the panel the step does not show, so the student predicts before seeing it."""
        self._uncover()
        for name in step.covered_parts():
            targets = self._part_widgets(panel, name)
            if not targets:
                log.warning("lesson answer %r is not a widget of %s", name, panel.objectName())
            self.covers += [AnswerCover(target) for target in targets]

    def _part_widgets(self, panel: QWidget, name: str) -> list[QWidget]:
        """The widgets of a declared part: the panel's, or the window's status-bar figures."""
        if name == "status_model":
            return self.window.status_figures()
        return find_panel_widgets(panel, name)

    def _uncover(self) -> None:
        for cover in self.covers:
            if isValid(cover):
                cover.remove()
        self.covers = []

    def cover_of(self, widget: QWidget) -> AnswerCover | None:
        """The cover over `widget` now, if the step still withholds it."""
        return next((c for c in self.covers if isValid(c) and c.target is widget and not c.isHidden()), None)

    def _point_at(self, generation: int, panel: QWidget, name: str, wait_for_result: bool = True) -> None:
        # The window may have closed in the meantime (its panels go with it).
        if generation != self._generation or not isValid(panel) or not self.window.isVisible():
            return
        target = find_panel_widget(panel, name)
        if target is not None and not target.isVisible() and wait_for_result:
            # A view shows its content with its first result: point at the target once that is on screen.
            panel.result_shown.connect(lambda: self._point_at(generation, panel, name, wait_for_result=False),
                                       Qt.ConnectionType.SingleShotConnection)
            return
        if target is None or not target.isVisible():
            log.warning("lesson focus %r is not a visible widget of %s", name, panel.objectName())
            return
        bring_into_view(target)
        self.outline.point_at(target)

    def _panel(self, step: LessonStep):
        if not step.panel:
            return None
        try:
            return self.window.panel(step.panel)
        except KeyError:
            self.window.statusBar().showMessage(f"this lesson asks for a panel this window lacks: {step.panel}", 10000)
            return None

    def _resolver(self, panel):
        """Turn a lesson text into HTML: escaped, paragraphs kept, {{name}} replaced by what `name` shows."""
        def resolve(text: str) -> str:
            if not text:
                return ""
            pieces = []
            position = 0
            for match in PLACEHOLDER.finditer(text):
                pieces.append(html.escape(text[position:match.start()]))
                quotes = self.quotes
                value = quotes.text(match.group(1)) if quotes is not None and quotes.panel is panel else ""
                # Colour, not bold: a quoted caption can run to several lines.
                shown = html.escape(value or "(not computed yet)")
                pieces.append(f"<span style='color:{theme.current().accent}'>{shown}</span>")
                position = match.end()
            pieces.append(html.escape(text[position:]))
            paragraphs = "".join(pieces).split("\n\n")
            return "".join(f"<p>{paragraph.replace(chr(10), '<br>')}</p>" for paragraph in paragraphs)
        return resolve

    def _update_actions(self) -> None:
        active = self.lesson is not None and self.dock.isVisible()
        for action in (self.next_action, self.previous_action, self.reveal_action, self.close_action):
            action.setEnabled(active)

    # ---- presentation view -------------------------------------------------------------------------
    def toggle_presentation(self) -> None:
        self.set_presentation(not self.presentation)

    def set_presentation(self, on: bool) -> None:
        """Hide what a projected lesson does not need (sidebar, menus, status bar, tab bar); widen the lesson."""
        if on == self.presentation:
            return
        self.presentation = on
        window = self.window
        if on:
            candidates = [window.sidebar_dock, window.menuBar(), window.statusBar(), window.tabs.tabBar()]
            self._hidden_for_presentation = [widget for widget in candidates if widget.isVisible()]
            self._was_full_screen = window.isFullScreen()
            window.set_full_screen(True)
            for widget in self._hidden_for_presentation:
                widget.hide()
            self.dock.show()
            self.dock.raise_()
            # Wide panels would otherwise squeeze the lesson to a column of single words.
            self.dock.widget().setMinimumWidth(DOCK_WIDTH)
            # A third of the screen: the lesson text is read from the back of the room.
            window.resizeDocks([self.dock], [max(DOCK_WIDTH, window.width() // 3)], Qt.Orientation.Horizontal)
        else:
            for widget in self._hidden_for_presentation:
                widget.show()
            self._hidden_for_presentation = []
            if not self._was_full_screen:
                window.set_full_screen(False)
            self.dock.widget().setMinimumWidth(DOCK_MIN_WIDTH)
            window.resizeDocks([self.dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        self.presentation_action.setChecked(on)
        self.dock.keys_line.setText(PRESENTING_KEYS_LINE if on else KEYS_LINE)
        self.dock.apply_theme()
        self._update_actions()


def _not_taken(panel, step: LessonStep) -> list[str]:
    """The step's numeric settings the panel holds another value of (a spin box clamps a blank, a layer, to the
    model): the step would show something other than what it says."""
    held = panel.settings()
    lines = []
    for key, value in step.panel_settings.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key in held:
            now = held[key]
            number = isinstance(now, (int, float)) and not isinstance(now, bool)
            if not number or abs(now - value) > 1e-9 * max(1.0, abs(value)):
                lines.append(f"{key!r} is {now!r} in the {panel.title} panel, not {value!r}")
    return lines


def _menu_entries(paths: list[Path]) -> list[tuple[Path, str, str]]:
    """Each bundled lesson's menu entry (its path, title and tip); a file that cannot be used keeps its name and says why."""
    entries = []
    for path in paths:
        try:
            lesson = load_lesson(path)
        except LessonError as error:
            entries.append((path, path.stem, str(error)))
        else:
            entries.append((path, lesson.title, lesson.description))
    return entries


__all__ = [
    "KEYS_LINE",
    "AnswerCover",
    "FocusOutline",
    "LessonController",
    "LessonDock",
    "LessonWindow",
    "bring_into_view",
    "find_panel_widget",
    "find_panel_widgets",
    "is_typing_in",
    "shown_rect",
    "widget_text",
]
