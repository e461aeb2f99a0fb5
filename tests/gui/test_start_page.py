"""The start page with the real window: Help > Getting started opens it once installed, a fresh home shows it
once, each lesson and each of the six exercises is one click from its panel or lesson."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QLabel

from core.lessons import bundled_lesson_paths, load_lesson



@pytest.fixture
def window(qtbot, tmp_path):
    from gui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "prefs.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    win.remember_preferences = False
    win.fit_to_screen = lambda: None
    qtbot.addWidget(win)
    win.resize(1366, 740)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):  # the panels are built with the model
        win.start_loading()
    return win


def help_menu(window):
    return next(action.menu() for action in window.menuBar().actions() if action.text() == "&Help")


@pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")  # the offscreen platform
def test_help_getting_started_opens_the_page_and_a_fresh_home_sees_it_once(window, qtbot):
    from gui.start_page import StartPage, install_start_page, should_show_on_first_launch, show_on_first_launch

    action = install_start_page(window, help_menu(window))
    assert action in help_menu(window).actions()
    assert should_show_on_first_launch(window.settings_store)
    page = show_on_first_launch(window)
    assert page is not None and page.isVisible()
    assert not should_show_on_first_launch(window.settings_store)
    page.close()
    assert show_on_first_launch(window) is None  # the second launch with the same home
    action.trigger()
    assert window.findChild(StartPage).isVisible()


@pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")  # the offscreen platform
def test_every_lesson_is_listed_by_its_title_and_every_exercise_opens_its_panel(window, qtbot):
    from gui.start_page import EXERCISES, show_start_page

    page = show_start_page(window)
    titles = {path.stem: load_lesson(path).title for path in bundled_lesson_paths()}
    assert {stem: button.text().replace("&&", "&") for stem, button in page.lesson_buttons.items()} == titles
    assert [exercise.number for exercise in EXERCISES] == [1, 2, 3, 4, 5, 6]
    for exercise in EXERCISES:
        assert exercise.lesson in titles
        page = show_start_page(window)
        qtbot.mouseClick(page.panel_buttons[exercise.number], Qt.MouseButton.LeftButton)
        assert window.current_panel().title == exercise.panel
        assert not page.isVisible()
    assert all(label.textFormat() == Qt.TextFormat.PlainText for label in page.findChildren(QLabel))


@pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")  # the offscreen platform
def test_every_registered_panel_is_listed_with_the_lessons_that_show_it(window, qtbot):
    from gui.panels import PANEL_CLASSES
    from gui.start_page import show_start_page

    page = show_start_page(window)
    assert list(page.panel_rows) == [panel.title for panel in PANEL_CLASSES]
    lessons = {path.stem: load_lesson(path) for path in bundled_lesson_paths()}
    for panel in PANEL_CLASSES:
        button, label = page.panel_rows[panel.title]
        assert button.isVisibleTo(page) and len(label.text()) > 20, panel.title
        # Each bundled lesson with a step on the panel is named in its row, and no other.
        showing = {lesson.title for lesson in lessons.values() if any(step.panel == panel.title for step in lesson.steps)}
        named = {lesson.title for lesson in lessons.values() if lesson.title in label.text()}
        assert named == showing, panel.title
    assert {"Causal lab", "Families"} <= set(page.panel_rows)
    for stem in ("12-activation-patching", "13-induction-heads"):
        assert lessons[stem].title in page.panel_rows["Causal lab"][1].text()
    for stem in ("14-encoder-versus-decoder", "15-cross-attention", "16-experts"):
        assert lessons[stem].title in page.panel_rows["Families"][1].text()
    qtbot.mouseClick(page.panel_rows["Families"][0], Qt.MouseButton.LeftButton)
    assert window.current_panel().title == "Families" and not page.isVisible()
