"""`--lesson NAME|FILE [--step N] [--presentation]`: a lesson chosen on the command line, checked before
the window opens and started once the panels and torch are there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.lessons import Lesson, LessonError, bundled_lesson_paths, load_lesson

from gui.lesson_quotes import settled, step_refusal

if TYPE_CHECKING:
    from gui.main_window import MainWindow


class LaunchError(ValueError):
    """A --lesson, --step or --presentation the app cannot start with; the message says what to give."""


def bundled_lesson_names() -> dict[str, Path]:
    """Each bundled lesson under its file name, with and without the number that orders it ("01-causal-mask", "causal-mask")."""
    names: dict[str, Path] = {}
    for path in bundled_lesson_paths():
        names[path.stem] = path
        number, _, rest = path.stem.partition("-")
        if number.isdigit() and rest:
            names.setdefault(rest, path)
    return names


def find_lesson(name_or_file: str) -> Path:
    """The bundled lesson called `name_or_file`, else the lesson file at that path."""
    names = bundled_lesson_names()
    key = name_or_file.strip().lower()
    if key in names:
        return names[key]
    path = Path(name_or_file).expanduser()
    if path.exists():
        return path
    short = sorted(name for name in names if not name[:1].isdigit())
    raise LaunchError(f"--lesson: no bundled lesson or file called {name_or_file!r}; the bundled lessons are {', '.join(short)}")


@dataclass(frozen=True)
class LessonLaunch:
    lesson: Lesson
    path: Path
    step: int  # counted from 0
    presentation: bool

    def start_in(self, window: MainWindow) -> None:
        """Open the lesson in the window, read off its GUI thread (a file the window refuses gets its message
        there), then go to the chosen step."""
        window.lessons.open_lesson(self.path, on_started=lambda: self._go_to_chosen_step(window))

    def _go_to_chosen_step(self, window: MainWindow) -> None:
        controller = window.lessons
        if self.step:
            controller.go_to(self.step)
        if self.presentation:
            controller.set_presentation(True)


def settle_step(window: MainWindow, wait_until: Callable[[Callable[[], Any]], bool]) -> str:
    """The lesson's step shown again as the window shows it (its panel, covers and outline), once every panel ran,
    for --screenshot; returns why the step cannot be shown as written ("" when it can): an edit or panel settings
    the window could not make, or a view of the step's panel refusing the step's input (with or without offering
    another model). `wait_until(condition)` runs the event loop until the condition holds or time runs out."""
    lessons, shown, problems = window.lessons, [], []
    lessons.step_shown.connect(shown.append)
    lessons.step_problem.connect(problems.append)
    lessons.go_to(lessons.index)
    wait_until(lambda: problems or (shown and not window.compute.busy))
    if problems:
        return problems[0]
    panel = window.current_panel()
    views = [view for view in getattr(panel, "views", []) if view.isVisible()]
    wait_until(lambda: step_refusal(panel) or (not window.compute.busy and all(settled(view) for view in views)))
    refusal = step_refusal(panel)
    if refusal:
        return f"step {lessons.index + 1}: the {panel.title} panel refuses the step's input: {refusal}"
    wait_until(lambda: lessons.outline.isVisible() or not lessons.lesson.steps[lessons.index].focus)
    return ""


def lesson_to_launch(name_or_file: str | None, step: int | None, presentation: bool) -> LessonLaunch:
    """Check the command line's lesson options before any window or torch work."""
    if name_or_file is None:
        given = "--step" if step is not None else "--presentation"
        raise LaunchError(f"{given} needs --lesson NAME|FILE")
    path = find_lesson(name_or_file)
    try:
        lesson = load_lesson(path)
    except LessonError as error:
        raise LaunchError(f"--lesson {path.name}: {error}") from None
    count = len(lesson.steps)
    if step is not None and not 1 <= step <= count:
        raise LaunchError(f"--step: {lesson.title!r} has steps 1 to {count}, not {step}")
    return LessonLaunch(lesson, path, (step or 1) - 1, presentation)


__all__ = ["LaunchError", "LessonLaunch", "bundled_lesson_names", "find_lesson", "lesson_to_launch", "settle_step"]
