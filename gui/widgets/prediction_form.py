"""A lesson step's checked prediction in the lesson panel: the student picks or types an answer and commits it (or
skips), and only then may the step be revealed; after the reveal it says right or wrong beside the answer the app
computed.

A rule's answer is the step's own figure, computed on the compute worker by core.handouts (the experiment the view
runs); a clicker commits the choice made, or skips when none is, so that its next press reveals.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from core.handouts.predictions import Prediction, PredictionError, answer_text, expected_answer, is_right, parse_given
from core.lessons import Lesson
from gui import theme

CHANNEL = "lesson-prediction"
MAX_TYPED_CHARS = 64
CHECKING = "Checking against the app's computation..."


def _label(name: str) -> QLabel:
    label = QLabel("")
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)  # options and answers come from lesson files and students
    return label


class PredictionForm(QWidget):
    """The prediction of the step on screen: options or a field, Commit and Skip, then the grade."""

    decided = Signal()  # committed or skipped: the reveal may open

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lesson-prediction")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.options_box = QWidget()
        self.options_layout = QVBoxLayout(self.options_box)
        self.options_layout.setContentsMargins(0, 0, 0, 0)
        self.option_group = QButtonGroup(self)
        self.field = QLineEdit()
        self.field.setObjectName("lesson-prediction-field")
        self.field.setMaxLength(MAX_TYPED_CHARS)
        self.field.returnPressed.connect(self.commit)
        self.commit_button = QPushButton("Commit")
        self.commit_button.setObjectName("lesson-prediction-commit")
        self.commit_button.setToolTip("Commit your prediction; then Reveal opens (Page Down commits what is chosen)")
        self.skip_button = QPushButton("Skip")
        self.skip_button.setObjectName("lesson-prediction-skip")
        self.skip_button.setToolTip("Reveal without predicting (Page Down skips when nothing is chosen)")
        self.commit_button.clicked.connect(self.commit)
        self.skip_button.clicked.connect(self.skip)
        buttons = QHBoxLayout()
        buttons.addWidget(self.commit_button)
        buttons.addWidget(self.skip_button)
        buttons.addStretch(1)
        self.hint = _label("lesson-prediction-hint")
        self.grade = _label("lesson-prediction-grade")
        for widget in (self.options_box, self.field, self.hint):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addWidget(self.grade)
        self.prediction: Prediction | None = None
        self.given: Any = None
        self.result = ""  # "", "right", "wrong" or "skipped"
        self.expected: Any = None
        self.expected_problem = ""
        self._key: tuple[str, int] | None = None
        self._revealed = False
        self.set_prediction(None)

    # ---- the step ------------------------------------------------------------------------------
    def set_prediction(self, prediction: Prediction | None, key: tuple[str, int] | None = None) -> None:
        """Ask for `prediction` (None hides the form); `key` names the step whose answer is awaited."""
        same_step = key is not None and key == self._key and prediction == self.prediction
        self.prediction, self._key = prediction, key
        self.given, self.result, self._revealed = None, "", False
        if not same_step:  # the step shown again keeps the answer its computation brought
            self.expected = prediction.answer if prediction is not None and not prediction.rule else None
            self.expected_problem = ""
        for button in self.option_group.buttons():  # gone at once: the step shown again builds them anew
            self.option_group.removeButton(button)
            self.options_layout.removeWidget(button)
            button.setParent(None)
            button.deleteLater()
        self.field.clear()
        self.grade.clear()
        self.grade.hide()
        self.setVisible(prediction is not None)
        if prediction is None:
            return
        for index, option in enumerate(prediction.options):
            button = QRadioButton(option)
            button.setObjectName(f"lesson-prediction-option-{index}")
            self.option_group.addButton(button, index)
            self.options_layout.addWidget(button)
            button.show()  # a child added to a shown widget waits for the event loop otherwise
        choice = prediction.kind == "choice"
        self.options_box.setVisible(choice)
        self.field.setVisible(not choice)
        self.field.setPlaceholderText("a number" if prediction.kind == "number" else "one token")
        self.hint.setText("Commit a prediction or skip it; then Reveal opens.")
        self._set_open(True)

    def request_answer(self, compute: Any, lesson: Lesson, index: int) -> None:
        """Compute a rule's answer on the worker (the step's figures, as check-lesson and the page compute them)."""
        if self.prediction is None or not self.prediction.rule:
            return
        key = self._key
        number = index + 1

        def job():
            from core.handouts.collect import step_figures

            return step_figures(lesson, number).values

        def arrived(values) -> None:
            if self._key != key or self.prediction is None:
                return
            try:
                self.expected = expected_answer(self.prediction, values)
            except PredictionError as error:
                self.expected_problem = str(error)
            self._show_grade()

        def failed(message: str) -> None:
            if self._key == key:
                self.expected_problem = message
                self._show_grade()

        compute.submit(CHANNEL, job, arrived, name="the prediction's answer", on_error=failed)

    # ---- committing ----------------------------------------------------------------------------
    @property
    def pending(self) -> bool:
        """A prediction is asked and neither committed nor skipped: the reveal waits."""
        return self.prediction is not None and not self.result

    def chosen(self) -> Any:
        """What the student picked or typed, as the prediction reads it; None for nothing (or an unreadable number)."""
        if self.prediction is None:
            return None
        if self.prediction.kind == "choice":
            button = self.option_group.checkedButton()
            return button.text() if button is not None else None
        text = self.field.text()
        return parse_given(self.prediction, text) if text.strip() else None

    def commit(self) -> bool:
        if not self.pending:
            return False
        given = self.chosen()
        if given is None:
            kind = self.prediction.kind
            self.hint.setText("Pick an option first." if kind == "choice" else
                              "Type a number first (digits, a point, commas)." if kind == "number" else
                              "Type a token first.")
            return False
        self.given, self.result = given, "committed"
        self._decided(f"Committed: {answer_text(given)}. Reveal to check it.")
        return True

    def skip(self) -> None:
        if self.pending:
            self.result = "skipped"
            self._decided("Skipped. Reveal to see the answer.")

    def clicker_press(self) -> None:
        """A clicker's one button: commit the choice made, else skip."""
        if not self.commit():
            self.skip()

    def _decided(self, hint: str) -> None:
        self.hint.setText(hint)
        self._set_open(False)
        self.decided.emit()

    def _set_open(self, open_: bool) -> None:
        for widget in (self.options_box, self.field, self.commit_button, self.skip_button):
            widget.setEnabled(open_)

    # ---- after the reveal ---------------------------------------------------------------------
    def revealed(self) -> None:
        self._revealed = True
        self._show_grade()

    def _show_grade(self) -> None:
        if not self._revealed or self.prediction is None or not self.result:
            return
        self.grade.show()
        palette = theme.current()
        if self.expected_problem:
            self.grade.setText(f"The answer could not be computed: {self.expected_problem}")
            self.grade.setStyleSheet(f"color: {palette.warning};")
            return
        if self.expected is None:
            self.grade.setText(CHECKING)
            self.grade.setStyleSheet("")
            return
        measured = answer_text(self.expected)
        if self.result == "skipped":
            text, colour = f"Skipped. The app measured: {measured}.", palette.text
        elif is_right(self.prediction, self.given, self.expected):
            text, colour = f"✔ Right: you predicted {answer_text(self.given)}; the app measured {measured}.", \
                palette.role_color("tertiary")
        else:
            text, colour = f"✘ Wrong: you predicted {answer_text(self.given)}; the app measured {measured}.", \
                palette.warning
        self.grade.setText(text)
        self.grade.setStyleSheet(f"color: {colour}; font-weight: bold;")

    @property
    def verdict(self) -> str:
        """"right", "wrong", "skipped" once revealed and checked; "" before."""
        if not self._revealed or self.expected is None or not self.result:
            return ""
        if self.result == "skipped":
            return "skipped"
        return "right" if is_right(self.prediction, self.given, self.expected) else "wrong"

    def apply_theme(self) -> None:
        for widget in (self.hint, self.grade, self.field, self.commit_button, self.skip_button,
                       *self.option_group.buttons()):
            widget.setFont(theme.font(1.0))
        self._show_grade()


__all__ = ["CHANNEL", "CHECKING", "PredictionForm"]
