"""Getting started: what the lab is, its panels, its bundled lessons, and the reading's six exercises, each one click
from the panel or lesson that does it. Shown on a first launch and from Help > Getting started.

The panels and lessons are read from the panel registry and the bundled lesson files, never typed here: a new
panel or lesson is listed the day it is added, each panel with the lessons whose steps show it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.lessons import Lesson, LessonError, bundled_lesson_paths, load_lesson
from gui.panels import PANEL_CLASSES

SEEN_KEY = "start_page/seen"

ABOUT = ("Transformer Explorer is a lab for the Transformer block of the reading: change a model's config, its "
         "text or its weights, and every panel below recomputes what the block does with them. Every number it "
         "shows is computed from the model in the sidebar. The lessons walk through the reading step by step and "
         "ask for a prediction before each answer; the six exercises are the reading's own, each beside the panel "
         "that does it.")


@dataclass(frozen=True)
class Exercise:
    number: int
    task: str
    panel: str  # the panel's title
    lesson: str  # the bundled lesson's file name without its suffix, "" when none


# "Try it yourself" of the reading (section 3.3), in its order.
EXERCISES = (
    Exercise(1, "Stack three blocks and rerun the perturbation test: does the past stay untouched with depth?",
             "Tokens & masks", "01-causal-mask"),
    Exercise(2, "Count the parameters of the paper's base layer (d_model 512, 8 heads, d_ff 2048) by hand, then "
                "check by instantiating it.", "Parameters", "08-exercises"),
    Exercise(3, "Make the block post-norm and compare the output norm of a 12-block stack with pre-norm.",
             "Norms", "04-pre-post-norm"),
    Exercise(4, "Replace the sinusoidal encoding with learned positions and rerun the permutation experiment.",
             "Positions", "05-order-blind"),
    Exercise(5, "Check what RoPE's rotation does to the norm of a query at several positions.",
             "Positions", "02-rope"),
    Exercise(6, "Redo the parameter count for GPT-2 medium: predict the embedding table's share first.",
             "Parameters", "03-counting-parameters"),
)


def plain_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # lesson titles come from files: shown as written
    label.setWordWrap(True)
    return label


def loaded_lessons() -> list[tuple[Path, Lesson]]:
    """Each bundled lesson's path and contents; a file that does not load is left out (check-lesson names why)."""
    lessons = []
    for path in bundled_lesson_paths():
        try:
            lessons.append((path, load_lesson(path)))
        except LessonError:
            continue
    return lessons


@dataclass(frozen=True)
class PanelEntry:
    title: str
    summary: str  # what the panel is for: its module's description
    lessons: tuple[str, ...]  # the stems of the bundled lessons with a step on this panel, in lesson order


def panel_summary(panel_class) -> str:
    """The first paragraph of the panel module's docstring, less its leading "Title: "."""
    doc = (sys.modules[panel_class.__module__].__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(doc.split())
    prefix = f"{panel_class.title}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def panel_entries(lessons: list[tuple[Path, Lesson]] | None = None) -> list[PanelEntry]:
    """Every registered panel, in tab order, with its description and the bundled lessons that show it."""
    lessons = loaded_lessons() if lessons is None else lessons
    return [PanelEntry(panel.title, panel_summary(panel),
                       tuple(path.stem for path, lesson in lessons if any(step.panel == panel.title for step in lesson.steps)))
            for panel in PANEL_CLASSES]


class StartPage(QDialog):
    """The page: a few lines about the lab, a button per lesson, a row per exercise with its panel and lesson."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.setObjectName("start-page")
        self.setWindowTitle("Getting started")
        self.window_ = window
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        column = QVBoxLayout(body)
        column.addWidget(plain_label(ABOUT))
        lessons = loaded_lessons()
        column.addWidget(self._panels_box(panel_entries(lessons), {path.stem: lesson.title for path, lesson in lessons}))
        self.lesson_buttons: dict[str, QPushButton] = {}
        paths = {}
        lessons_box = QGroupBox("Lessons")
        lessons_grid = QGridLayout(lessons_box)
        for index, (path, lesson) in enumerate(lessons):
            paths[path.stem] = path
            button = QPushButton(lesson.title.replace("&", "&&"))
            button.setToolTip(f"open the lesson {path.name}")
            button.clicked.connect(lambda _checked=False, chosen=path: self.open_lesson(chosen))
            lessons_grid.addWidget(button, index, 0)
            self.lesson_buttons[path.stem] = button
        column.addWidget(lessons_box)
        exercises_box = QGroupBox("Try it yourself: the reading's six exercises")
        grid = QGridLayout(exercises_box)
        grid.setColumnStretch(0, 1)
        self.panel_buttons: dict[int, QPushButton] = {}
        self.exercise_lesson_buttons: dict[int, QPushButton] = {}
        for row, exercise in enumerate(EXERCISES):
            grid.addWidget(plain_label(f"{exercise.number}. {exercise.task}"), row, 0)
            panel_button = QPushButton(exercise.panel.replace("&", "&&"))  # a button's "&" marks its shortcut key
            panel_button.setToolTip(f"show the {exercise.panel} panel")
            panel_button.clicked.connect(lambda _checked=False, title=exercise.panel: self.open_panel(title))
            grid.addWidget(panel_button, row, 1)
            self.panel_buttons[exercise.number] = panel_button
            if exercise.lesson in paths:
                lesson_button = QPushButton("Lesson")
                lesson_button.setToolTip(f"open the lesson {self.lesson_buttons[exercise.lesson].text()}")
                lesson_button.clicked.connect(lambda _checked=False, chosen=paths[exercise.lesson]: self.open_lesson(chosen))
                grid.addWidget(lesson_button, row, 2)
                self.exercise_lesson_buttons[exercise.number] = lesson_button
        column.addWidget(exercises_box)
        column.addStretch(1)
        scroll.setWidget(body)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        screen = window.screen().availableGeometry() if window.screen() is not None else None
        if screen is not None:
            self.resize(min(max(900, self.sizeHint().width()), screen.width() * 9 // 10), screen.height() * 9 // 10)

    def _panels_box(self, entries: list[PanelEntry], titles: dict[str, str]) -> QGroupBox:
        """A row per panel: its button, what it is for, and the lessons that use it."""
        box = QGroupBox("Panels")
        grid = QGridLayout(box)
        grid.setColumnStretch(1, 1)
        self.panel_rows: dict[str, tuple[QPushButton, QLabel]] = {}
        for row, entry in enumerate(entries):
            button = QPushButton(entry.title.replace("&", "&&"))
            button.setToolTip(f"show the {entry.title} panel")
            button.clicked.connect(lambda _checked=False, title=entry.title: self.open_panel(title))
            used_in = "; ".join(titles[stem] for stem in entry.lessons)
            if used_in:
                used_in = f" Lessons: {used_in}" + ("" if used_in.endswith((".", "?", "!")) else ".")
            label = plain_label(entry.summary[:1].upper() + entry.summary[1:] + used_in)
            grid.addWidget(button, row, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(label, row, 1)
            self.panel_rows[entry.title] = (button, label)
        return box

    def open_panel(self, title: str) -> None:
        self.window_.show_panel(title)
        self.accept()

    def open_lesson(self, path: Path) -> None:
        self.accept()
        self.window_.lessons.open_lesson(path)


def should_show_on_first_launch(settings: QSettings) -> bool:
    """True until the start page has been shown once with these preferences."""
    return str(settings.value(SEEN_KEY, "false")).lower() not in ("true", "1")


def show_start_page(window) -> StartPage:
    """Show the page beside the window (not modal: the window stays usable) and note it as seen."""
    page = window.findChild(StartPage)
    if page is None:
        page = StartPage(window)
    if page.isVisible():
        page.raise_()  # already open behind the window
    else:
        page.show()
    window.settings_store.setValue(SEEN_KEY, True)
    return page


def show_on_first_launch(window) -> StartPage | None:
    """The page, if the window's preferences have never shown it (a fresh home folder)."""
    return show_start_page(window) if should_show_on_first_launch(window.settings_store) else None


def install_start_page(window, help_menu: QMenu) -> QAction:
    """Help > Getting started."""
    action = help_menu.addAction("&Getting started")
    action.setObjectName("help-getting-started")
    action.triggered.connect(lambda _checked=False: show_start_page(window))
    return action


__all__ = ["EXERCISES", "PanelEntry", "StartPage", "panel_entries", "install_start_page", "should_show_on_first_launch", "show_on_first_launch", "show_start_page"]
