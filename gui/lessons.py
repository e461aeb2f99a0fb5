"""Lesson mode: a dock of guided steps that set the lab's state, ask for a prediction, reveal the
result and outline the part of the view that matters; plus the presentation view for projectors.

The lesson files and their format live in core.lessons; this module only runs them.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QFontMetrics, QKeyEvent, QKeySequence, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTabBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from shiboken6 import isValid

from core.lessons import PLACEHOLDER, Lesson, LessonError, LessonStep, bundled_lesson_paths, load_lesson
from core.presets import get_preset
from gui import theme

if TYPE_CHECKING:
    from gui.main_window import MainWindow

log = logging.getLogger("transformer_explorer.lessons")

FOCUS_MS = 4000  # how long the outline stays: long enough to find it from the back row
FOLLOW_MS = 200  # how often the outline re-measures its target while it shows
FOCUS_DELAY_MS = 150  # let the tab switch and the layout settle before measuring the target
MODEL_WAIT_MS = 30_000  # a step whose model never arrives still finishes (its panel shows why)
LESSON_FILTER = "Lesson (*.json)"
DOCK_WIDTH = 380  # pixels: a paragraph of lesson text at a readable line length
DOCK_MIN_WIDTH = 300
# A focused widget with less than this share in view (of what the viewport could show of it) is scrolled
# to; one more in view stays put, so the step's setup beside it (sliders, the token strip) stays on screen.
SLIVER = 0.25
_TAGS = re.compile(r"<[^>]+>")


def widget_text(widget: Any) -> str:
    """What a widget shows, as plain text, for a lesson's {{name}} placeholder."""
    if isinstance(widget, QLabel):
        text = widget.text()
        if "<" in text:  # the panels write their captions as rich text
            text = html.unescape(_TAGS.sub("", re.sub(r"<br\s*/?>", " ", text)))
        return " ".join(text.split())
    if isinstance(widget, (QLineEdit, QAbstractSpinBox)):
        return widget.text()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QAbstractButton):
        return widget.text()
    return ""


def find_panel_widget(panel: QWidget, name: str) -> QWidget | None:
    """The panel's widget called `name`: an attribute of the panel, else a child's objectName."""
    candidate = getattr(panel, name, None)
    if isinstance(candidate, QWidget):
        return candidate
    return panel.findChild(QWidget, name)


def shown_rect(widget: QWidget) -> QRect:
    """The part of `widget` (in its own coordinates) inside the viewports it scrolls in: what can be on screen."""
    rect = widget.rect()
    ancestor = widget.parentWidget()
    while ancestor is not None and not rect.isEmpty():
        # Only a viewport the widget lies in: a cover over a table is the table's child, beside its viewport.
        if isinstance(ancestor, QAbstractScrollArea) and ancestor.viewport().isAncestorOf(widget):
            port = ancestor.viewport()
            rect = rect.intersected(QRect(widget.mapFrom(port, QPoint(0, 0)), port.size()))
        ancestor = ancestor.parentWidget()
    return rect


def bring_into_view(widget: QWidget) -> None:
    """Scroll the scroll areas around `widget` to it when only a SLIVER of what could be in view is (a panel
    wider than its room, left scrolled to the far end by an earlier step)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            shown, port = shown_rect(widget), parent.viewport().size()
            wanted_w, wanted_h = min(widget.width(), port.width()), min(widget.height(), port.height())
            if shown.width() < SLIVER * wanted_w or shown.height() < SLIVER * wanted_h:
                parent.ensureWidgetVisible(widget, 24, 24)  # a widget wider than the view: its start
        parent = parent.parentWidget()


def find_panel_widgets(panel: QWidget, name: str) -> list[QWidget]:
    """The widgets called `name`: one, or each of a panel attribute that holds several (two pies side by side)."""
    candidate = getattr(panel, name, None)
    if isinstance(candidate, (tuple, list)) and candidate and all(isinstance(item, QWidget) for item in candidate):
        return list(candidate)
    widget = find_panel_widget(panel, name)
    return [widget] if widget is not None else []


def uses_arrow_keys(widget: QWidget) -> bool:
    """Whether a focused widget has its own use for the arrow keys (buttons and tab bars do not)."""
    if isinstance(widget, (QAbstractButton, QTabBar, QMainWindow, QDockWidget)):
        return False
    return bool(widget.focusPolicy() & Qt.FocusPolicy.TabFocus)


class FocusOutline(QWidget):
    """A frame drawn over a widget of the window for a few seconds; clicks pass through it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("lesson-focus-outline")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.target: QWidget | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clear)
        # The panel may still lay out around the target (a view's first result resizes its neighbours):
        # the frame follows it while it shows.
        self._follow = QTimer(self)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self._fit)
        self.hide()

    def point_at(self, target: QWidget, milliseconds: int = FOCUS_MS) -> None:
        self.target = target
        self._fit()
        self.show()
        self.raise_()
        self._timer.start(milliseconds)
        self._follow.start()

    def _fit(self) -> None:
        target = self.target
        if target is None or not isValid(target):
            self.clear()
            return
        window = self.parentWidget()
        margin = 4
        # The part on screen: a panel wider than its room scrolls, and the frame must not run over the docks.
        shown = shown_rect(target)
        if shown.isEmpty():
            shown = target.rect()
        top_left = target.mapTo(window, shown.topLeft())
        self.setGeometry(QRect(top_left, shown.size()).adjusted(-margin, -margin, margin, margin))

    def clear(self) -> None:
        self._timer.stop()
        self._follow.stop()
        self.target = None
        self.hide()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width = 4
        painter.setPen(QPen(theme.color("warning"), width))
        painter.drawRoundedRect(self.rect().adjusted(width // 2, width // 2, -width // 2, -width // 2), 6, 6)


class AnswerCover(QWidget):
    """An opaque card over a widget that shows a step's answer, until the student has predicted and revealed.

    A child of the covered widget, so it moves, resizes and shows with it (a view shows its content
    with its first result), raised again whenever the widget lays out its scroll bars; it takes the
    mouse too, so no hover readout gives the number away. (Not a sibling: a splitter would take a
    sibling for a pane of its own.)
    """

    TEXT = "Predict first, then Reveal (Ctrl+Shift+R)"
    SHORTER = ("Predict first, then Reveal", "Predict, then Reveal")  # for a cover too small for TEXT

    def __init__(self, target: QWidget) -> None:
        super().__init__(target)
        self.setObjectName("lesson-answer-cover")
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.target = target
        target.installEventFilter(self)
        # The text sits in the part on screen: scrolling a panel wider than its room moves that part.
        ancestor = target.parentWidget()
        while ancestor is not None:
            if isinstance(ancestor, QAbstractScrollArea):
                for bar in (ancestor.horizontalScrollBar(), ancestor.verticalScrollBar()):
                    bar.valueChanged.connect(self.update)
            ancestor = ancestor.parentWidget()
        self._fit()

    def shown_text(self) -> tuple[str, QRect]:
        """The longest of the texts that fits the part of the cover on screen, and that part."""
        shown = shown_rect(self)
        room = (shown if not shown.isEmpty() else self.rect()).adjusted(6, 2, -6, -2)
        metrics = QFontMetrics(theme.font(1.0, bold=True))
        flags = int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap)
        for text in (self.TEXT, *self.SHORTER):
            needed = metrics.boundingRect(room, flags, text)
            if needed.width() <= room.width() and needed.height() <= room.height():
                return text, room
        return self.SHORTER[-1], room

    def restyle(self) -> None:
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        accent = theme.color("accent")
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(theme.current().window))
        painter.setPen(QPen(accent, 2, Qt.PenStyle.DashLine))
        painter.drawRect(self.rect().adjusted(1, 1, -2, -2))
        painter.setFont(theme.font(1.0, bold=True))
        painter.setPen(accent)
        flags = Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap
        text, room = self.shown_text()
        painter.drawText(room, int(flags), text)

    def _fit(self) -> None:
        self.setGeometry(self.target.rect())
        self.show()
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.target and event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest,
                                                       QEvent.Type.ChildAdded, QEvent.Type.ChildPolished):
            self._fit()
            QTimer.singleShot(0, self, self.raise_)  # after the widget's own handler has placed its scroll bars
        return False

    def remove(self) -> None:
        if isValid(self.target):
            self.target.removeEventFilter(self)
        self.hide()
        self.deleteLater()


class LessonDock(QDockWidget):
    """The lesson's current step: its text, the question, the Reveal button and Previous / Next."""

    previous_requested = Signal()
    next_requested = Signal()
    answer_revealed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__("Lesson", parent)
        self.setObjectName("lesson-dock")
        self.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        # A label with a close button as the title bar: the style's title font ignores the text scale.
        bar = QWidget()
        bar_layout = QHBoxLayout(bar)
        bar_layout.setContentsMargins(8, 4, 4, 2)
        self.heading = QLabel("Lesson")
        self.heading.setObjectName("lesson-dock-title")
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Close the lesson panel")
        close.clicked.connect(self.close)
        bar_layout.addWidget(self.heading, 1)
        bar_layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.setTitleBarWidget(bar)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(12, 8, 12, 12)
        layout.setSpacing(10)
        self.lesson_title = QLabel("")
        self.lesson_title.setObjectName("lesson-title")
        self.lesson_title.setWordWrap(True)
        self.lesson_title.setTextFormat(Qt.TextFormat.PlainText)  # titles come from lesson files
        self.counter = QLabel("")
        self.counter.setObjectName("lesson-counter")
        self.step_title = QLabel("Choose a lesson from the Lessons menu.")
        self.step_title.setObjectName("lesson-step-title")
        self.step_title.setWordWrap(True)
        self.step_title.setTextFormat(Qt.TextFormat.PlainText)
        self.text = QLabel("")
        self.text.setObjectName("lesson-text")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.predict_frame = QFrame()
        self.predict_frame.setObjectName("lesson-predict")
        predict_layout = QVBoxLayout(self.predict_frame)
        predict_layout.setContentsMargins(10, 8, 10, 8)
        self.predict_heading = QLabel("Predict first")
        self.question = QLabel("")
        self.question.setObjectName("lesson-question")
        self.question.setWordWrap(True)
        self.question.setTextFormat(Qt.TextFormat.RichText)
        self.reveal_button = QPushButton("Reveal")
        self.reveal_button.setObjectName("lesson-reveal-button")
        self.reveal_button.setToolTip("Show what the app measured (Ctrl+Shift+R)")
        self.reveal_text = QLabel("")
        self.reveal_text.setObjectName("lesson-reveal")
        self.reveal_text.setWordWrap(True)
        self.reveal_text.setTextFormat(Qt.TextFormat.RichText)
        self.reveal_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reveal_text.hide()
        for widget in (self.predict_heading, self.question, self.reveal_button, self.reveal_text):
            predict_layout.addWidget(widget)
        predict_layout.setAlignment(self.reveal_button, Qt.AlignmentFlag.AlignLeft)
        for widget in (self.lesson_title, self.counter, self.step_title, self.text, self.predict_frame):
            layout.addWidget(widget)
        layout.addStretch(1)
        # Ignored: the body takes the viewport's width and the labels wrap to it, whatever the font size.
        body.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        scroll = self.scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)

        self.previous_button = QPushButton("◀ Back")
        self.previous_button.setToolTip("Previous step (Page Up, ←)")
        self.previous_button.clicked.connect(self.previous_requested)
        self.next_button = QPushButton("Next ▶")
        self.next_button.setToolTip("Next step (Page Down, →)")
        self.next_button.clicked.connect(self.next_requested)
        navigation = QHBoxLayout()
        navigation.setContentsMargins(12, 4, 12, 8)
        navigation.addWidget(self.previous_button)
        navigation.addStretch(1)
        navigation.addWidget(self.next_button)
        outer = QWidget()
        outer_layout = QVBoxLayout(outer)
        outer_layout.setContentsMargins(0, 0, 0, 0)
        outer_layout.addWidget(scroll, 1)
        outer_layout.addLayout(navigation)
        outer.setMinimumWidth(DOCK_MIN_WIDTH)
        outer.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.setWidget(outer)
        self.predict_frame.hide()
        self.previous_button.setEnabled(False)
        self.next_button.setEnabled(False)
        self.reveal_button.clicked.connect(self.reveal)
        self._reveal_source = ""
        self._resolve = lambda text: html.escape(text)
        self.apply_theme()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        # The dock is built before the window applies the saved theme and text size.
        self.apply_theme()
        super().showEvent(event)

    def show_step(self, lesson: Lesson, index: int, resolve) -> None:
        """Show step `index`; `resolve(text)` turns a lesson text into HTML with live values filled in."""
        step = lesson.steps[index]
        self._resolve = resolve
        self.lesson_title.setText(lesson.title)
        self.counter.setText(f"Step {index + 1} of {len(lesson.steps)}")
        self.step_title.setText(step.title)
        self.text.setText(resolve(step.text))
        self.predict_frame.setVisible(bool(step.predict))
        self.question.setText(resolve(step.predict))
        self._reveal_source = step.reveal
        self.reveal_button.setVisible(bool(step.reveal))
        self.reveal_text.hide()
        self.reveal_text.setText("")
        self.previous_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(lesson.steps) - 1)
        self.next_button.setText("Next ▶" if index < len(lesson.steps) - 1 else "Last step")

    def reveal(self) -> None:
        if not self._reveal_source:
            return
        self.reveal_text.setText(self._resolve(self._reveal_source))
        self.reveal_text.show()
        self.reveal_button.hide()
        self.answer_revealed.emit()
        # The answer may sit below the fold at projector sizes.
        QTimer.singleShot(0, self, lambda: self.scroll.ensureWidgetVisible(self.reveal_text))

    def refresh_live_text(self, step: LessonStep) -> None:
        """Fill the placeholders in again (a panel showed a new result)."""
        self.text.setText(self._resolve(step.text))
        self.question.setText(self._resolve(step.predict))
        if self.reveal_text.isVisible():
            self.reveal_text.setText(self._resolve(self._reveal_source))

    @property
    def revealed(self) -> bool:
        return self.reveal_text.isVisible()

    def apply_theme(self) -> None:
        spec = theme.current()
        self.heading.setFont(theme.font(1.05, bold=True))
        self.lesson_title.setFont(theme.font(1.05, bold=True))
        self.counter.setFont(theme.font(0.95))
        self.counter.setStyleSheet(f"color: {spec.muted};")
        self.step_title.setFont(theme.font(1.25, bold=True))
        self.text.setFont(theme.font(1.1))
        self.predict_heading.setFont(theme.font(1.0, bold=True))
        self.predict_heading.setStyleSheet(f"color: {spec.accent};")
        self.question.setFont(theme.font(1.1))
        self.reveal_text.setFont(theme.font(1.1))
        for button in (self.reveal_button, self.previous_button, self.next_button):
            button.setFont(theme.font(1.0))
        self.predict_frame.setStyleSheet(
            f"QFrame#lesson-predict {{ border: 2px solid {spec.accent}; border-radius: 6px; }}")


class LessonController(QObject):
    """Runs lessons in a MainWindow: the Lessons menu, the dock, step navigation, presentation view."""

    step_shown = Signal(int)  # the step's state, panel and panel settings are in place
    lesson_started = Signal(str)
    lesson_open_ended = Signal(str)  # an open_lesson ended: "" when the lesson started, else the message shown
    titles_read = Signal()  # the Lessons menu shows the bundled lessons' own titles

    def __init__(self, window: MainWindow, lessons_menu: QMenu, view_menu: QMenu) -> None:
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.lesson: Lesson | None = None
        self.index = 0
        self._generation = 0  # which step a deferred finish belongs to (paging fast drops stale ones)
        self._waiting_for_model = False
        self._followed_panel = None  # the panel whose results the current step quotes
        self.presentation = False
        self._hidden_for_presentation: list[QWidget] = []

        self.dock = LessonDock(window)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.dock.hide()
        self.dock.previous_requested.connect(self.previous_step)
        self.dock.next_requested.connect(self.next_step)
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
        self.next_action = self._add_action(lessons_menu, "Next step", self.next_step, [QKeySequence(Qt.Key.Key_PageDown)])
        self.previous_action = self._add_action(lessons_menu, "Previous step", self.previous_step,
                                                [QKeySequence(Qt.Key.Key_PageUp)])
        # Clickers send arrows too; the arrows stay hidden from the menu, which lists the page keys.
        self.next_arrow_action = self._arrow_action(Qt.Key.Key_Right, self.next_step)
        self.previous_arrow_action = self._arrow_action(Qt.Key.Key_Left, self.previous_step)
        self.reveal_action = self._add_action(lessons_menu, "Reveal", self.dock.reveal, [QKeySequence("Ctrl+Shift+R")])
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

    def _arrow_action(self, key: Qt.Key, step) -> QAction:
        action = QAction(self.window)
        action.setShortcut(QKeySequence(key))
        action.triggered.connect(lambda _=False: self._on_arrow(key, step))
        self.window.addAction(action)
        return action

    def _on_arrow(self, key: Qt.Key, step) -> None:
        """Step the lesson, unless the focused control uses arrows itself (a slider, the token strip)."""
        focus = QApplication.focusWidget()
        if focus is not None and uses_arrow_keys(focus) and not self.dock.isAncestorOf(focus):
            arrows = (self.next_arrow_action, self.previous_arrow_action)
            # Disabled while the key is re-sent: the application would match it to this shortcut again.
            for action in arrows:
                action.setEnabled(False)
            try:
                for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
                    QApplication.sendEvent(focus, QKeyEvent(kind, key, Qt.KeyboardModifier.NoModifier))
            finally:
                self._update_actions()
            return
        step()

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
        self.window._show_message("Could not open the lesson", f"{path.name}: {message}")
        self.lesson_open_ended.emit(message)
        return message

    def start(self, lesson: Lesson) -> None:
        self.lesson = lesson
        if not self.dock.isVisible():
            self.dock.show()
            self.window.resizeDocks([self.dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        self.dock.raise_()
        self.lesson_started.emit(lesson.title)
        self.go_to(0)

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
        self._apply_state(step)
        panel = self._panel(step)
        if panel is not None:
            self.window.tabs.setCurrentWidget(panel)
        self._follow_results(panel if step.placeholders() else None)
        self.dock.show_step(lesson, index, self._resolver(panel))
        self._update_actions()
        if self._model_pending():
            self._waiting_for_model = True
            self._model_timer.start(MODEL_WAIT_MS)
        else:
            self._finish_step()

    def _follow_results(self, panel) -> None:
        """Quote the panel's numbers afresh whenever it shows a new result (they are computed after the step)."""
        if self._followed_panel is not None and isValid(self._followed_panel):
            self._followed_panel.result_shown.disconnect(self._on_result_shown)
        self._followed_panel = panel
        if panel is not None:
            panel.result_shown.connect(self._on_result_shown)

    def _on_result_shown(self) -> None:
        if self.lesson is not None:
            self.dock.refresh_live_text(self.lesson.steps[self.index])

    def _apply_state(self, step: LessonStep) -> None:
        values = step.state
        state = self.state
        # Theme first, so the panels' re-styling happens before they compute; a lesson's look is not saved
        # as the user's preference.
        self.window.set_look_for_this_run(values.get("theme"), values.get("font_scale"))
        undoable = [key for key in values if key not in ("theme", "font_scale")]
        if not undoable:
            return
        state.undo_stack.beginMacro(f"lesson step: {step.title}")
        try:
            if "preset" in values:
                state.set_config(values.get("config") or get_preset(values["preset"]))
            if "seed" in values:
                state.set_seed(values["seed"])
            if "text" in values:
                state.set_text(values["text"])
            config = state.config
            if "selected_layer" in values:
                state.set_selected_layer(min(values["selected_layer"], config.n_layers - 1))
            if "selected_head" in values:
                state.set_selected_head(min(values["selected_head"], config.n_heads - 1))
        finally:
            state.undo_stack.endMacro()

    def _replace_token(self, position: int, token: str) -> None:
        """One token replaced, as a chip edit in the token strip: the panels measure this edit, not a probe."""
        from gui.state import TokenEdit

        state, tokenizer = self.state, self.state.tokenizer
        tokens = state.tokens
        ids = tokenizer.encode(token) if tokenizer is not None else []
        if len(ids) != 1 or not 0 <= position < len(tokens):
            problem = "the tokenizer is not loaded yet" if tokenizer is None else (
                f"{token!r} is not one token of this tokenizer" if len(ids) != 1 else
                f"the text has no position {position} ({len(tokens)} tokens)")
            self.window.statusBar().showMessage(f"this step's edit was not made: {problem}", 10000)
            return
        edited = list(tokens)
        edited[position] = ids[0]
        if edited != tokens:
            state.set_tokens(edited, TokenEdit("replace", position, tuple(tokens)))

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
        if "edit" in step.state:
            # Once the model is in place: loading one may bring its tokenizer, which retokenizes the text.
            self._replace_token(step.state["edit"]["position"], step.state["edit"]["token"])
        if panel is not None and step.panel_settings:
            try:
                panel.restore_settings(dict(step.panel_settings))
            except Exception:  # a panel's own defect must not stop the lesson
                log.warning("panel %r could not take the lesson's settings", panel.title, exc_info=True)
                self.window.statusBar().showMessage(f"the {panel.title} panel could not take this step's settings", 10000)
        self.dock.refresh_live_text(step)
        if panel is not None and step.reveal and not self.dock.revealed:
            self._cover(panel, step.answer_widgets())
        if panel is not None and step.focus:
            generation = self._generation
            QTimer.singleShot(FOCUS_DELAY_MS, self, lambda: self._point_at(generation, panel, step.focus))
        self.step_shown.emit(self.index)

    def _cover(self, panel: QWidget, names: list[str]) -> None:
        """Hide what the step's reveal talks about, so the student predicts before seeing it."""
        self._uncover()
        for name in dict.fromkeys(names):
            targets = find_panel_widgets(panel, name)
            if not targets:
                log.warning("lesson answer %r is not a widget of %s", name, panel.objectName())
            self.covers += [AnswerCover(target) for target in targets]

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
                widget = find_panel_widget(panel, match.group(1)) if panel is not None else None
                value = widget_text(widget) if widget is not None else ""
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
        for action in (self.next_action, self.previous_action, self.next_arrow_action, self.previous_arrow_action,
                       self.reveal_action):
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
            self.dock.widget().setMinimumWidth(DOCK_MIN_WIDTH)
            window.resizeDocks([self.dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        self.presentation_action.setChecked(on)
        self.dock.apply_theme()
        self._update_actions()


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


__all__ = ["AnswerCover", "LessonController", "LessonDock", "FocusOutline", "bring_into_view", "find_panel_widget",
           "find_panel_widgets", "shown_rect", "widget_text"]
