"""The window fits the screens it is used on: a 1366 x 768 laptop, and a 1080p projector at large text."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSettings
from PySide6.QtWidgets import QPushButton, QWidget

from gui.widgets.flow_layout import FlowLayout, control_group
from tests.gui.file_opening import open_lesson

TITLE_BAR_AND_TASKBAR_PX = 60  # what the desktop takes from the screen's height


@pytest.fixture(scope="module")
def built_window(qapp, tmp_path_factory):
    """Every panel built (no model needed: sizes come from the widgets alone), once for the module."""
    from gui.compute import ComputeController
    from gui.main_window import MainWindow

    compute = ComputeController(torch_threads=1)
    settings = QSettings(str(tmp_path_factory.mktemp("fits") / "prefs.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings, compute=compute)
    win.remember_preferences = False
    win.build_panels()
    yield win
    win.close()
    win.deleteLater()
    compute.shutdown()


@pytest.fixture
def full_window(built_window):
    """The module's window, put back after each test as it was built: no lesson, light at 100 %, the first tab."""
    yield built_window
    if built_window.lessons.lesson is not None:
        built_window.lessons.close_lesson()
    built_window.state.set_theme("light")
    built_window.state.set_font_scale(1.0)
    built_window.tabs.setCurrentIndex(0)


@pytest.mark.parametrize(("theme_name", "scale", "screen"), [
    ("light", 1.0, (1366, 768)),
    ("projector", 1.0, (1366, 768)),
    ("projector", 1.6, (1920, 1080)),
])
def test_the_window_fits_the_screen(full_window, qapp, theme_name, scale, screen):
    full_window.state.set_theme(theme_name)
    full_window.state.set_font_scale(scale)
    qapp.processEvents()
    minimum = full_window.minimumSizeHint()
    widest = max(range(full_window.tabs.count()), key=lambda i: full_window.tabs.widget(i).minimumSizeHint().width())
    assert minimum.width() <= screen[0], (minimum, full_window.tabs.tabText(widest))
    assert minimum.height() <= screen[1] - TITLE_BAR_AND_TASKBAR_PX, minimum


SCREENS = [(1366, 768), (1280, 720), (1920, 1080)]


@pytest.mark.parametrize("theme_name", ["light", "dark", "projector"])
@pytest.mark.parametrize("scale", [1.0, 1.6, 2.0])
def test_a_lesson_in_either_view_leaves_the_window_within_every_screen(qtbot, full_window, qapp, theme_name, scale):
    from core.lessons import bundled_lesson_paths

    window = full_window
    window.state.set_theme(theme_name)
    window.state.set_font_scale(scale)
    assert open_lesson(qtbot, window, bundled_lesson_paths()[0]) == ""
    smallest = min(SCREENS)
    try:
        for presentation in (False, True):
            window.lessons.set_presentation(presentation)
            for index in range(window.tabs.count()):
                window.tabs.setCurrentIndex(index)
                qapp.processEvents()
                minimum = window.minimumSizeHint()
                where = (theme_name, scale, presentation, window.tabs.tabText(index), minimum)
                assert minimum.width() <= smallest[0], where
                assert minimum.height() <= smallest[1] - TITLE_BAR_AND_TASKBAR_PX, where
    finally:
        window.lessons.set_presentation(False)
        window.state.set_theme("light")
        window.state.set_font_scale(1.0)


def test_first_launch_takes_the_screens_free_area_and_a_larger_size_is_cut_to_it(qtbot, settings, compute):
    from gui.main_window import MainWindow

    window = MainWindow(settings=settings, compute=compute)
    window.remember_preferences = False
    qtbot.addWidget(window)
    area = window.screen().availableGeometry()
    assert area.contains(window.geometry())
    assert window.width() >= area.width() * 0.8 and window.height() >= area.height() * 0.8
    window.show()
    window.resize(area.width() + 500, area.height() + 400)
    window.fit_to_screen()
    assert window.width() <= area.width() and window.height() <= area.height()
    assert window.maximumWidth() <= area.width() and window.maximumHeight() <= area.height()


def test_looks_and_sizes_for_one_run_are_not_saved(qtbot, settings, compute):
    from gui.main_window import MainWindow

    window = MainWindow(settings=settings, compute=compute)
    qtbot.addWidget(window)
    window.set_look_for_this_run("projector", 1.6)
    window.resize_for_this_run(700, 500)
    assert (window.state.theme, window.state.font_scale, window.width()) == ("projector", 1.6, 700)
    window.close()
    assert settings.value("view/theme") == "light" and float(settings.value("view/font_scale")) == 1.0
    assert settings.value("window/geometry") is None

    again = MainWindow(settings=settings, compute=compute)
    qtbot.addWidget(again)
    assert (again.state.theme, again.state.font_scale) == ("light", 1.0)
    again.set_look_for_this_run("projector", 1.6)
    again.state.set_theme("dark")  # chosen in the View menu afterwards: that is the user's preference
    again.close()
    assert settings.value("view/theme") == "dark" and float(settings.value("view/font_scale")) == 1.0


def test_a_flow_wraps_its_groups_instead_of_widening(qtbot):
    host = QWidget()
    qtbot.addWidget(host)
    flow = FlowLayout(host, spacing=4)
    buttons = [QPushButton(f"button {index}") for index in range(6)]
    for first, second in zip(buttons[::2], buttons[1::2], strict=True):
        flow.addWidget(control_group(first, second))
    groups = [flow.itemAt(index) for index in range(flow.count())]
    widest = max(group.sizeHint().width() for group in groups)
    one_row = flow.sizeHint()
    assert flow.minimumSize().width() == widest < one_row.width()

    # Wide enough: one row. One group wide: one row per group, each inside the given width.
    assert flow.heightForWidth(one_row.width()) == one_row.height()
    tall = flow.heightForWidth(widest)
    assert tall >= 3 * max(group.sizeHint().height() for group in groups)
    flow.setGeometry(QRect(0, 0, widest, tall))
    rows = sorted({group.geometry().top() for group in groups})
    assert len(rows) == 3
    for group in groups:
        assert group.geometry().right() < widest and group.geometry().bottom() < tall
    # A caption and its control stay together on one line.
    for first, second in zip(buttons[::2], buttons[1::2], strict=True):
        assert first.mapTo(host, first.rect().center()).y() == second.mapTo(host, second.rect().center()).y()


def test_the_rows_a_flow_wraps_onto_are_kept_free_of_the_widgets_below_it(qtbot):
    from PySide6.QtWidgets import QScrollArea, QVBoxLayout

    page = QWidget()
    column = QVBoxLayout(page)
    flow = FlowLayout(spacing=4)
    for index in range(6):
        flow.addWidget(control_group(QPushButton(f"a control of row {index}")))
    column.addLayout(flow)
    plot = QWidget()  # a plot that must keep its minimum height
    plot.setMinimumHeight(300)
    column.addWidget(plot, 1)
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setWidget(page)
    qtbot.addWidget(scroll)
    widest = max(flow.itemAt(index).sizeHint().width() for index in range(flow.count()))
    scroll.resize(widest + 40, 400)  # one group per row: six rows above the plot, in 400 pixels
    scroll.show()
    wrapped = flow.heightForWidth(widest + 20)
    assert wrapped > 3 * flow.itemAt(0).sizeHint().height()
    qtbot.waitUntil(lambda: plot.height() >= 300, timeout=5_000)
    assert flow.minimumSize().height() >= flow.heightForWidth(flow.geometry().width())
    assert flow.geometry().bottom() < plot.geometry().top()  # the rows and the plot do not overlap
    assert scroll.verticalScrollBar().maximum() > 0  # the page scrolls instead
    # Wide again: one row, and the page fits without scrolling.
    scroll.resize(flow.sizeHint().width() + 60, 400)
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() == 0, timeout=5_000)
    assert flow.minimumSize().height() == flow.sizeHint().height()


@pytest.mark.parametrize(("theme_name", "scale", "screen"), [("light", 1.0, (1366, 768)), ("projector", 1.6, (1920, 1080))])
def test_every_step_of_every_bundled_lesson_leaves_the_window_within_the_screen(qtbot, full_window, qapp, theme_name, scale,
                                                                                 screen):
    from core.lessons import bundled_lesson_paths

    window = full_window
    window.state.set_theme(theme_name)
    window.state.set_font_scale(scale)
    lessons = window.lessons
    try:
        for path in bundled_lesson_paths():
            assert open_lesson(qtbot, window, path) == "", path.name
            for presentation in (False, True):
                lessons.set_presentation(presentation)
                for index in range(len(lessons.lesson.steps)):
                    lessons.go_to(index)
                    qapp.processEvents()
                    # A step may set its own look; the window must fit in that one too.
                    minimum = window.minimumSizeHint().expandedTo(window.minimumSize())
                    where = (path.stem, index + 1, presentation, window.state.theme, minimum)
                    assert minimum.width() <= screen[0], where
                    assert minimum.height() <= screen[1] - TITLE_BAR_AND_TASKBAR_PX, where
                    assert lessons.dock.next_button.isVisibleTo(window)
            lessons.set_presentation(False)
    finally:
        lessons.set_presentation(False)
        window.state.set_theme("light")
        window.state.set_font_scale(1.0)


def test_a_flow_measures_a_width_once_per_layout_pass_and_again_after_a_change(qtbot):
    """heightForWidth is asked the same width many times a pass: cached, and forgotten when the layout is invalidated."""
    from PySide6.QtWidgets import QLabel, QWidget

    from gui.widgets.flow_layout import FlowLayout

    host = QWidget()
    qtbot.addWidget(host)
    flow = FlowLayout(host)
    labels = [QLabel("word " * 4) for _ in range(6)]
    for label in labels:
        flow.addWidget(label)
    arranged = []
    original = flow._arrange
    flow._arrange = lambda rect, move: arranged.append(rect.width()) or original(rect, move)
    first = flow.heightForWidth(200)
    assert [flow.heightForWidth(200) for _ in range(5)] == [first] * 5 and arranged == [200]
    labels[0].hide()  # one row fewer
    flow.invalidate()  # what Qt does to every nested layout when the widget's layout activates after the change
    assert flow.heightForWidth(200) < first and arranged == [200, 200]
