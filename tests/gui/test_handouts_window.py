"""Handouts in the window. Checked predictions: the reveal opens only after a prediction is committed or skipped (with
the mouse or a clicker's one button), then the step says right or wrong beside the answer the app computed; a lesson
page quotes the numbers the window quotes for the same step. File > Export lesson / view as web page: written on the
compute worker, refused before anything is computed when the path cannot be written."""

from __future__ import annotations

import re

import markupsafe
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
    yield from loaded_window(request, tmp_path_factory, "handouts")


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
                                             ("12-activation-patching", 0), ("10-sampling-and-kv-cache", 1),
                                             ("04-pre-post-norm", 1), ("09-one-head", 1), ("09-one-head", 6),
                                             ("10-sampling-and-kv-cache", 5), ("03-counting-parameters", 3),
                                             ("14-encoder-versus-decoder", 1), ("16-experts", 1), ("01-causal-mask", 2)])
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


def test_a_lesson_page_tables_the_cells_the_window_tables(qtbot, window):
    open_at(qtbot, window, "07-the-block", 0)
    table = window.current_panel().table
    cells = [[table.item(row, column).text() for column in range(table.columnCount())]
             for row in range(table.rowCount())]
    page = step_figures(load_lesson(path_of("07-the-block")), 1).figures
    shapes = next(figure for figure in page if figure.part == "table")
    assert cells and [list(row) for row in shapes.table[1:]] == cells


@pytest.fixture
def messages(window, monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(window, "show_message", lambda title, text: said.append(text))
    return said


def test_the_file_menu_offers_both_exports(window):
    texts = [action.text() for action in window.menuBar().actions()[0].menu().actions()]
    assert "Export &lesson as web page..." in texts and "Export &view as web page..." in texts


def test_a_lesson_page_is_written_off_the_gui_thread(qtbot, window, tmp_path, messages, monkeypatch):
    import threading

    from core.handouts import page

    threads = []
    real_write = page.write_page
    monkeypatch.setattr(page, "write_page", lambda *args: (threads.append(threading.current_thread()),
                                                           real_write(*args))[1])
    lesson = load_lesson(next(path for path in bundled_lesson_paths() if path.stem == "13-induction-heads"))
    out = tmp_path / "induction.html"
    with qtbot.waitSignal(window.statusBar().messageChanged, timeout=TIMEOUT_MS,
                          check_params_cb=lambda text: text.startswith("Wrote")):
        assert window.handouts.export_lesson_to(lesson, str(out)) is not None
    assert threads and threads[0] is not threading.main_thread()
    text = out.read_text(encoding="utf-8")
    assert all(step.title in text for step in lesson.steps) and messages == []


def test_an_unwritable_path_is_refused_before_computing(window, tmp_path, messages, monkeypatch):
    monkeypatch.setattr(window.compute, "submit", lambda *args, **kwargs: pytest.fail("computed"))
    lesson = load_lesson(bundled_lesson_paths()[0])
    assert window.handouts.export_lesson_to(lesson, str(tmp_path / "missing" / "page.html")) is None
    assert window.handouts.export_view_to(window.panel("Positions"), str(tmp_path)) is None
    assert messages == [f"The page cannot be written: the folder {tmp_path / 'missing'} does not exist.",
                        f"The page cannot be written: {tmp_path} is a folder; give a file name ending in .html."]


def test_the_positions_view_page_shows_the_window_score(qtbot, window, tmp_path, messages):
    window.lessons.close_lesson()
    panel = window.panel("Positions")
    window.tabs.setCurrentWidget(panel)
    panel.tabs.setCurrentWidget(panel.scrubber_view)  # the view on screen is the one exported
    qtbot.waitUntil(lambda: panel.rope_score_label.text() != "", timeout=TIMEOUT_MS)
    out = tmp_path / "positions.html"
    with qtbot.waitSignal(window.statusBar().messageChanged, timeout=TIMEOUT_MS,
                          check_params_cb=lambda text: text.startswith("Wrote")):
        window.handouts.export_view_to(panel, str(out))
    assert f"rope score: {panel.rope_score_label.text()}" in out.read_text(encoding="utf-8")


def test_a_view_page_works_the_head_the_window_selected(qtbot, window, tmp_path, messages):
    window.lessons.close_lesson()
    panel = window.panel("Tokens & masks")
    window.tabs.setCurrentWidget(panel)
    panel.restore_settings({"sub_tab": "One head"})
    window.state.set_selected_layer(1)
    window.state.set_selected_head(2)
    view = panel.worked_head
    qtbot.waitUntil(lambda: settled(view) and "head 2" in view.head_caption.text(), timeout=TIMEOUT_MS)
    out = tmp_path / "one-head.html"
    with qtbot.waitSignal(window.statusBar().messageChanged, timeout=TIMEOUT_MS,
                          check_params_cb=lambda text: text.startswith("Wrote")):
        window.handouts.export_view_to(panel, str(out))
    text = out.read_text(encoding="utf-8")
    assert str(markupsafe.escape(view.head_caption.text())) in text  # block 1, head 2: the window's selection
    assert str(markupsafe.escape(view.verdict_label.text())) in text
