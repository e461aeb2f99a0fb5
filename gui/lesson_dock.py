"""The lesson panel: the current step's text, its question, the Reveal button and Back / Next."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.lessons import Lesson, LessonStep
from gui import theme
from gui.widgets.prediction_form import PredictionForm

DOCK_WIDTH = 380  # pixels: a paragraph of lesson text at a readable line length
DOCK_MIN_WIDTH = 300
# The keys, on the panel itself: a clicker sends Page Down / Page Up (some send the arrows).
KEYS_LINE = "Keys: Page Down, → or Space reveal, then next; Page Up or ← back"
PRESENTING_KEYS_LINE = KEYS_LINE + "; Esc or F11 leave"

class LessonDock(QDockWidget):
    """The lesson's current step: its text, the question, the Reveal button and Previous / Next."""

    previous_requested = Signal()
    next_requested = Signal()
    answer_revealed = Signal()
    close_requested = Signal()  # the lesson is closed (the lab goes back to where it was)

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
        close.setToolTip("Close the lesson and put the lab back as it was before it")
        close.clicked.connect(self.close_requested)
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
        self.reveal_button.setToolTip("Show what the app measured (Page Down, Space or Ctrl+Shift+R)")
        self.reveal_text = QLabel("")
        self.reveal_text.setObjectName("lesson-reveal")
        self.reveal_text.setWordWrap(True)
        self.reveal_text.setTextFormat(Qt.TextFormat.RichText)
        self.reveal_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reveal_text.hide()
        self.prediction = PredictionForm()  # a checked prediction: committed or skipped before Reveal opens
        self.prediction.decided.connect(self._update_reveal_button)
        for widget in (self.predict_heading, self.question, self.prediction, self.reveal_button, self.reveal_text):
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
        self.keys_line = QLabel(KEYS_LINE)
        self.keys_line.setObjectName("lesson-keys")
        self.keys_line.setWordWrap(True)
        self.keys_line.setContentsMargins(12, 0, 12, 8)
        outer_layout.addWidget(self.keys_line)
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
        self.prediction.set_prediction(step.prediction, (lesson.source or lesson.title, index))
        self._update_reveal_button()
        self.previous_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(lesson.steps) - 1)
        self.next_button.setText("Next ▶" if index < len(lesson.steps) - 1 else "Last step")

    def _update_reveal_button(self) -> None:
        self.reveal_button.setEnabled(not self.prediction.pending)
        self.reveal_button.setToolTip("Commit a prediction or skip it first" if self.prediction.pending else
                                      "Show what the app measured (Page Down, Space or Ctrl+Shift+R)")

    def reveal(self) -> None:
        if not self._reveal_source or self.prediction.pending:
            return
        self.reveal_text.setText(self._resolve(self._reveal_source))
        self.reveal_text.show()
        self.reveal_button.hide()
        self.prediction.revealed()
        self.answer_revealed.emit()
        # The answer may sit below the fold at projector sizes; a prediction's grade comes first, just above it.
        first = self.prediction.grade if self.prediction.isVisible() else self.reveal_text
        QTimer.singleShot(0, self, lambda: self.scroll.ensureWidgetVisible(first))

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
        self.keys_line.setFont(theme.font(0.85))
        self.keys_line.setStyleSheet(f"color: {spec.muted};")
        self.step_title.setFont(theme.font(1.25, bold=True))
        self.text.setFont(theme.font(1.1))
        self.predict_heading.setFont(theme.font(1.0, bold=True))
        self.predict_heading.setStyleSheet(f"color: {spec.accent};")
        self.question.setFont(theme.font(1.1))
        self.reveal_text.setFont(theme.font(1.1))
        for button in (self.reveal_button, self.previous_button, self.next_button):
            button.setFont(theme.font(1.0))
        self.prediction.apply_theme()
        self.predict_frame.setStyleSheet(
            f"QFrame#lesson-predict {{ border: 2px solid {spec.accent}; border-radius: 6px; }}")



__all__ = ["PRESENTING_KEYS_LINE", "DOCK_MIN_WIDTH", "DOCK_WIDTH", "LessonDock"]
