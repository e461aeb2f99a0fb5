"""Checked predictions in the window: the reveal opens only after a prediction is committed or skipped (with the
mouse or a clicker's one button), then the step says right or wrong beside the answer the app computed; and a lesson
page quotes the numbers the window quotes for the same step."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QRadioButton

from core.handouts.collect import step_figures
from core.lessons import PLACEHOLDER, bundled_lesson_paths, load_lesson
from gui.answer_cover import widget_text
from gui.lesson_quotes import NOT_COMPUTED, settled
from gui.widgets.prediction_form import CHECKING
from tests.gui.lesson_window import loaded_window

TIMEOUT_MS = 60_000
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "predictions")


def path_of(name: str):
    return next(path for path in bundled_lesson_paths() if path.stem == name)


def open_at(qtbot, window, name: str, index: int) -> None:
    lessons = window.lessons
    if lessons.lesson is None or lessons.lesson.source != str(path_of(name)):
        with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
            lessons.open_lesson(path_of(name))
    if lessons.index != index:
        with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
            lessons.go_to(index)
    panel = window.current_panel()
    views = [view for view in getattr(panel, "views", []) if view.isVisible()]
    qtbot.waitUntil(lambda: not window.compute.busy and all(settled(view) for view in views), timeout=TIMEOUT_MS)


def grade_text(qtbot, form) -> str:
    qtbot.waitUntil(lambda: form.grade.isVisible() and form.grade.text() != CHECKING, timeout=TIMEOUT_MS)
    return form.grade.text()


def test_the_reveal_waits_for_a_committed_prediction_then_says_wrong(qtbot, window):
    open_at(qtbot, window, "13-induction-heads", 0)
    dock = window.lessons.dock
    form = dock.prediction
    assert form.isVisible() and form.pending and not dock.reveal_button.isEnabled()
    dock.show_step(window.lessons.lesson, 0, lambda text: text)  # shown again: one button per option, no more
    options = [button for button in form.options_box.findChildren(QRadioButton) if button.isVisibleTo(form)]
    assert [button.text() for button in options] == ["layer 0", "layer 1"]
    dock.reveal()  # the Reveal action (Ctrl+Shift+R) is refused too
    assert not dock.revealed and window.lessons.covers
    qtbot.mouseClick(form.commit_button, Qt.MouseButton.LeftButton)  # nothing picked: nothing committed
    assert form.pending and form.hint.text() == "Pick an option first."
    form.option_group.buttons()[0].setChecked(True)  # "layer 0"
    qtbot.mouseClick(form.commit_button, Qt.MouseButton.LeftButton)
    assert not form.pending and dock.reveal_button.isEnabled() and not dock.revealed
    assert not form.grade.isVisible()  # nothing said about the answer before the reveal
    qtbot.mouseClick(dock.reveal_button, Qt.MouseButton.LeftButton)
    assert dock.revealed
    assert grade_text(qtbot, form) == "✘ Wrong: you predicted layer 0; the app measured layer 1."
    assert form.verdict == "wrong"


def test_a_clicker_commits_the_choice_made_then_reveals(qtbot, window):
    open_at(qtbot, window, "13-induction-heads", 1)
    lessons = window.lessons
    form = lessons.dock.prediction
    form.option_group.buttons()[0].setChecked(True)  # "rises"
    lessons.advance()  # the clicker's button: commits the choice
    assert not form.pending and form.given == "rises" and not lessons.dock.revealed
    lessons.advance()  # and reveals
    assert lessons.dock.revealed and lessons.index == 1
    assert grade_text(qtbot, form).startswith("✔ Right: you predicted rises; the app measured rises.")


def test_a_clicker_skips_when_nothing_is_chosen_and_a_number_is_graded_within_its_tolerance(qtbot, window):
    open_at(qtbot, window, "03-counting-parameters", 0)
    lessons = window.lessons
    form = lessons.dock.prediction
    lessons.advance()
    assert form.result == "skipped" and not lessons.dock.revealed
    lessons.advance()
    assert grade_text(qtbot, form) == "Skipped. The app measured: FFN."
    with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
        lessons.go_to(2)
    assert form.pending and form.field.isVisible()
    qtbot.keyClicks(form.field, "38,000,000")
    qtbot.keyClick(form.field, Qt.Key.Key_Return)
    lessons.dock.reveal()
    assert grade_text(qtbot, form) == "✔ Right: you predicted 38,000,000; the app measured 38,597,376."


@pytest.mark.parametrize(("name", "index"), [("02-rope", 0), ("02-rope", 2), ("05-order-blind", 0),
                                             ("13-induction-heads", 0), ("13-induction-heads", 1),
                                             ("12-activation-patching", 0), ("10-sampling-and-kv-cache", 1)])
def test_a_lesson_page_quotes_the_numbers_the_window_quotes(qtbot, window, name, index):
    open_at(qtbot, window, name, index)
    lessons = window.lessons
    step = load_lesson(path_of(name)).steps[index]
    page = step_figures(load_lesson(path_of(name)), index + 1).quotes
    quoted = [part for part in PLACEHOLDER.findall(step.reveal) if part in page]
    assert quoted, "the step quotes nothing the page computes"
    lessons.dock.prediction.skip()
    lessons.dock.reveal()
    for part in quoted:
        qtbot.waitUntil(lambda p=part: lessons.quotes.text(p) != NOT_COMPUTED, timeout=TIMEOUT_MS)
        window_numbers = NUMBER.findall(widget_text(lessons.quotes.widgets[part]))
        page_numbers = NUMBER.findall(page[part])
        assert page_numbers and all(number in window_numbers for number in page_numbers), (part, page[part])
