"""Hostile lessons in the real window: what check-lesson passes opens and draws every step; what it refuses, the
window either refuses to open or says at that step why it is not as written, without an exception; and
`--lesson F --screenshot OUT` exits 2 with the reason instead of waiting when the step's view refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.lessons import LessonError, load_lesson
from gui.lesson_quotes import settled, step_refusal
from tests.gui.lesson_window import loaded_window
from tests.hostile_lessons import CASES, REFUSED, write_cases

ROOT = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "hostile")


@pytest.fixture(scope="module")
def lesson_files(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("hostile-window"))


def drawn_or_refused(panel) -> bool:
    views = [view for view in getattr(panel, "views", []) if view.isVisible()]
    return bool(step_refusal(panel)) or all(settled(view) for view in views)


def walk(qtbot, window, path: Path) -> list[str]:
    """Open the lesson and show each step until its views drew or refused; what the window said was wrong."""
    lessons = window.lessons
    said: list[str] = []
    lessons.step_problem.connect(said.append)
    try:
        with qtbot.waitSignal(lessons.lesson_open_ended, timeout=STEP_TIMEOUT_MS) as ended:
            lessons.open_lesson(path)
        if ended.args[0]:
            window.message_boxes[-1].close()
            return [ended.args[0]]
        for index in range(len(lessons.lesson.steps)):
            if index:
                with qtbot.waitSignal(lessons.step_shown, timeout=STEP_TIMEOUT_MS):
                    lessons.go_to(index)
            else:
                qtbot.waitUntil(lambda: lessons.index == 0 and not lessons._waiting_for_model, timeout=STEP_TIMEOUT_MS)
            panel = window.current_panel()
            qtbot.waitUntil(lambda: not window.compute.busy and drawn_or_refused(panel), timeout=STEP_TIMEOUT_MS)
            refusal = step_refusal(panel) if lessons.lesson.steps[index].panel else ""
            if refusal:
                said.append(f"step {index + 1}: {refusal}")
    finally:
        lessons.step_problem.disconnect(said.append)
        lessons.close_lesson()
    return said


@pytest.mark.parametrize("name", [name for name, _lesson, _refused in CASES])
def test_a_hostile_lesson_opens_and_draws_or_the_window_says_why(qtbot, window, lesson_files, name):
    said = walk(qtbot, window, lesson_files[name])
    refused = REFUSED[name]
    if refused is None:
        assert said == [], said  # check-lesson passed it: every step draws
        return
    step, _field = refused
    try:
        load_lesson(lesson_files[name])
    except LessonError:
        assert said and f"step {step}" in said[0]  # refused before opening, with check-lesson's line
        return
    # Opened: the window either shows the step as its view refuses it or says the step is not as written. A figure
    # typed into prose is check-lesson's to catch: the window shows the step (and quotes the real figure).
    if name != "typed-figure":
        assert any(line.startswith(f"step {step}:") for line in said), said
    if name == "unreadable-text-beside-a-view-that-ignores-it":  # no view refuses it: the step itself says why
        assert any(line.startswith("step 1: 'text'") for line in said), said


def run_screenshot(home: Path, lesson: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache"), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "main.py", "--lesson", str(lesson), "--screenshot", str(out), "--size",
                           "1366x768"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("name, reason", [
    # The period's spin box stops at half the context: the step's 40 is not what the panel holds.
    ("induction-period-past-context", "step 1: 'panel_settings': 'period'"),
    ("router-without-experts", "step 1: the Families panel refuses the step's input:"),  # a refusal offering a model
    ("edit-token-outside-vocabulary", "step 1: 'edit': 'é' is not in this tokenizer's vocabulary"),
])
def test_a_screenshot_of_a_refused_step_exits_2_with_the_reason(tmp_path, lesson_files, name, reason):
    out = tmp_path / "step.png"
    result = run_screenshot(tmp_path, lesson_files[name], out)
    assert result.returncode == 2, result.stderr[-2000:]
    assert reason in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
