"""File > Export lesson as web page and Export view as web page: written on the compute worker, refused before
anything is computed when the path cannot be written, and the view page shows what the view shows."""

from __future__ import annotations

import pytest

from core.lessons import bundled_lesson_paths, load_lesson
from tests.gui.lesson_window import loaded_window

TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "handouts")


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
    panel = window.panel("Positions")
    window.tabs.setCurrentWidget(panel)
    qtbot.waitUntil(lambda: panel.rope_score_label.text() != "", timeout=TIMEOUT_MS)
    out = tmp_path / "positions.html"
    with qtbot.waitSignal(window.statusBar().messageChanged, timeout=TIMEOUT_MS,
                          check_params_cb=lambda text: text.startswith("Wrote")):
        window.handouts.export_view_to(panel, str(out))
    assert f"rope score: {panel.rope_score_label.text()}" in out.read_text(encoding="utf-8")
    norms = window.panel("Norms")
    assert not window.handouts._exportable(norms)
    assert messages[-1].startswith("The Norms panel cannot be exported as a web page yet")
