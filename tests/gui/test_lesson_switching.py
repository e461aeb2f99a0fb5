"""Lessons 12-16 opened after one another in every order show each step as they do opened first: a lesson sets
every input it relies on (the steps' state and the panel settings, those a step does not name put back to the
panel's defaults) and nothing leaks from the lesson before. A reveal quotes only the result of the step's inputs."""

from __future__ import annotations

import itertools

import pytest

from core.lessons import load_lesson
from core.lesson_runs import PANEL_DEFAULTS
from gui.answer_cover import widget_text
from gui.lesson_quotes import CHANGED, settled
from tests.gui.lesson_window import loaded_window

LESSONS = ["12-activation-patching", "13-induction-heads", "14-encoder-versus-decoder", "15-cross-attention",
           "16-experts"]
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "switching")


def path_of(name: str):
    from core.lessons import bundled_lesson_paths

    return next(path for path in bundled_lesson_paths() if path.stem == name)


def settle(qtbot, window) -> None:
    panel = window.current_panel()
    views = [view for view in getattr(panel, "views", []) if view.isVisible()]
    qtbot.waitUntil(lambda: not window.compute.busy and not window.lessons._waiting_for_model and all(
        settled(view) for view in views), timeout=TIMEOUT_MS)


def shown(window) -> dict:
    """What the step shows: the lab's inputs, the panel's settings and the text of its views' results."""
    state, panel = window.state, window.current_panel()
    labels = {f"{view.name}.{index}": label.text() for view in panel.views if view.isVisible()
              for index, label in enumerate(view.stale_labels)}
    return {"model": state.config.name, "seed": state.seed, "text": state.text, "tokens": list(state.tokens),
            "edit": state.token_edit, "panel": panel.title, "settings": panel.settings(), "labels": labels}


def walk(qtbot, window, name: str) -> list[dict]:
    lessons = window.lessons
    with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
        lessons.open_lesson(path_of(name))
    seen = []
    for index in range(len(lessons.lesson.steps)):
        if index:
            with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
                lessons.go_to(index)
        settle(qtbot, window)
        seen.append(shown(window))
    return seen


@pytest.fixture(scope="module")
def first_seen(qtbot_module, window):
    """Each lesson as it shows opened first in a fresh window (closed again after, which puts the lab back)."""
    seen = {}
    for name in LESSONS:
        seen[name] = walk(qtbot_module, window, name)
        window.lessons.close_lesson()
    return seen


@pytest.fixture(scope="module")
def qtbot_module(qapp, request):
    from pytestqt.qtbot import QtBot

    return QtBot(request)


@pytest.mark.parametrize("before, after", list(itertools.permutations(LESSONS, 2)))
def test_a_lesson_opened_after_another_shows_what_it_shows_opened_first(qtbot, window, first_seen, before, after):
    lessons = window.lessons
    with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
        lessons.open_lesson(path_of(before))
    last = len(lessons.lesson.steps) - 1
    if last:  # the earlier lesson left at its last step, its panels as that step set them
        with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
            lessons.go_to(last)
    settle(qtbot, window)
    seen = walk(qtbot, window, after)  # opened over the earlier one, as from the Lessons menu
    for number, (now, first) in enumerate(zip(seen, first_seen[after]), 1):
        assert now == first, f"{after} step {number} after {before}: " + ", ".join(
            key for key in first if now[key] != first[key])


def test_the_panels_defaults_are_the_ones_check_lesson_computes_with(window):
    """A panel built with the model loaded (its pickers then have a shape) records the declared defaults."""
    from gui.state import LabState

    state = LabState()  # a lab of its own: the panel built here must not follow the window's
    state.set_config(window.state.config)
    state.set_tokenizer(window.state.tokenizer)
    state.set_torch_ready(True)
    state.set_model(window.state.model)
    for title, defaults in PANEL_DEFAULTS.items():
        panel = type(window.panel(title))(state, window.compute)
        recorded = panel.default_settings()
        assert {key: recorded[key] for key in defaults} == defaults


def test_a_reveal_quotes_the_steps_result_not_one_the_student_made_since(qtbot, window):
    lessons, panel = window.lessons, window.panel("Causal lab")
    lesson = load_lesson(path_of("13-induction-heads"))
    with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
        lessons.open_lesson(path_of("13-induction-heads"))
    with qtbot.waitSignal(lessons.step_shown, timeout=TIMEOUT_MS):
        lessons.go_to(2)
    assert lesson.steps[2].panel_settings["heads"] == "L1H1"
    settle(qtbot, window)
    lessons.dock.reveal()
    summary = panel.ablation_summary.text()
    assert "L1H1" in summary and summary in widget_text(lessons.dock.reveal_text)
    # The student switches the copying head off instead: the prose was written about L1H1, so its figures go.
    view = panel.ablation_view
    view.heads_picker.set_selected([(1, 0)])
    assert summary not in widget_text(lessons.dock.reveal_text)  # at once, not when the new result comes
    qtbot.waitUntil(lambda: view.result is not None and not view.is_stale and "L1H0" in panel.ablation_summary.text(),
                    timeout=TIMEOUT_MS)
    revealed = widget_text(lessons.dock.reveal_text)
    assert CHANGED in revealed and panel.ablation_summary.text() not in revealed and summary not in revealed
    view.heads_picker.set_selected([(1, 1)])  # back to the step's input: its result, quoted again
    qtbot.waitUntil(lambda: summary in widget_text(lessons.dock.reveal_text), timeout=TIMEOUT_MS)
    lessons.close_lesson()
