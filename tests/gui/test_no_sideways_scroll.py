"""No panel scrolls sideways beside a lesson: on a 1080p projector at text 160% and on a 1366 x 768 laptop,
in window and presentation view, every panel, every sub-tab page (each pairing, where a panel shows two
sets of sub-tabs side by side) and every Reading's script view fits the width the window leaves it."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import QSettings

from core.lessons import bundled_lesson_paths
from gui.panels.base import COMPUTING, View
from gui.widgets.page_tabs import PageTabs

# (screen, theme, text scale): the projector of a lecture hall, and a student's laptop.
SCREENS = {"projector": ((1920, 1080), "projector", 1.6), "laptop": ((1366, 768), "light", 1.0)}


@pytest.fixture(scope="module", params=list(SCREENS))
def lesson_window(qapp, request, tmp_path_factory):
    from pytestqt.qtbot import QtBot

    from gui import theme
    from gui.main_window import FIRST_LAUNCH_SHARE, MainWindow

    (width, height), theme_name, scale = SCREENS[request.param]
    bot = QtBot(request)
    settings = QSettings(str(tmp_path_factory.mktemp("sideways") / "prefs.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.remember_preferences = False
    window.fit_to_screen = lambda: None  # the offscreen screen is not the one measured here
    window.set_full_screen = lambda on: None  # nor is it the screen a presentation would fill
    window.state.set_theme(theme_name)
    window.state.set_font_scale(scale)
    # The size the app opens at on that screen; a maximised window only has more room.
    window.resize(round(width * FIRST_LAUNCH_SHARE), round(height * FIRST_LAUNCH_SHARE))
    window.show()
    with bot.waitSignal(window.model_loaded, timeout=60_000):
        window.start_loading()
    with bot.waitSignal(window.lessons.step_shown, timeout=30_000):
        window.lessons.open_lesson(bundled_lesson_paths()[0])
    yield request.param, window, bot
    window.close()
    window.deleteLater()
    theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)  # the application's style sheet outlives the window


def settled(window, panel) -> bool:
    """The worker idle and every view on screen showing what it computed (its captions set their widths)."""
    views = [view for view in panel.findChildren(View) if view.isVisible()]
    return not window.compute.busy and not any(
        view.update_scheduled or (view.showing_message and view.message.text() == COMPUTING) for view in views)


def every_page(window, bot):
    """Show each panel, each pairing of its sub-tab pages and its Reading's script view in turn, once settled."""
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        panel = window.tabs.widget(index)
        tab_sets = panel.findChildren(PageTabs)
        for pages in itertools.product(*(range(tabs.count()) for tabs in tab_sets)):
            for tabs, page in zip(tab_sets, pages, strict=True):
                tabs.setCurrentIndex(page)
            bot.waitUntil(lambda panel=panel: settled(window, panel), timeout=60_000)
            yield " / ".join([window.tabs.tabText(index)] + [t.tabText(p) for t, p in zip(tab_sets, pages, strict=True)])
        reading = getattr(panel, "reading_mode", None)
        if reading is not None:
            reading.set_on(True)
            bot.waitUntil(lambda panel=panel: settled(window, panel), timeout=60_000)
            yield f"{window.tabs.tabText(index)} / Reading's script"
            reading.set_on(False)


def sideways(window) -> tuple[int, int]:
    """(the width the shown panel needs, the width the window's panel area gives it)."""
    return window.tabs.minimumSizeHint().width(), window.central_scroll.viewport().width()


@pytest.mark.parametrize("presentation", [False, True], ids=["window", "presentation"])
def test_no_panel_needs_more_width_than_the_window_leaves_it_beside_a_lesson(lesson_window, presentation):
    screen, window, bot = lesson_window
    beside_sidebar = sideways(window)[1]
    window.lessons.set_presentation(presentation)
    if presentation:  # the sidebar gives way to the panels (and the lesson widens, where the platform lets it)
        bot.waitUntil(lambda: sideways(window)[1] > beside_sidebar, timeout=5_000)
    bar = window.central_scroll.horizontalScrollBar()
    try:
        seen, too_wide = 0, []
        for where in every_page(window, bot):
            seen += 1
            need, room = sideways(window)
            if need > room:
                too_wide.append(f"{where}: needs {need} px, has {room} px")
                continue
            bot.waitUntil(lambda: not bar.isVisible(), timeout=5_000)  # the scroll area follows the new hint
        assert seen > window.tabs.count()
        assert not too_wide, f"{screen}:\n" + "\n".join(too_wide)
    finally:
        window.lessons.set_presentation(False)


def test_a_wrapping_group_narrows_to_its_row_and_a_growing_group_takes_what_the_row_leaves(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel, QSlider, QWidget

    from gui.widgets.flow_layout import FlowLayout, control_group, wrapping_group

    host = QWidget()
    qtbot.addWidget(host)
    flow = FlowLayout(host, spacing=4)
    formula, value = QLabel("a long formula caption (q+PE[m])·(k+PE[n]) ="), QLabel("12.0287056485")
    pair = wrapping_group(formula, value)
    slider = QSlider(Qt.Orientation.Horizontal)
    handle = control_group(QLabel("query m"), slider, grow=True)
    flow.addWidget(pair)
    flow.addWidget(handle)
    pair_item, handle_item = flow.itemAt(0), flow.itemAt(1)
    # The pair asks for one line but needs only its wider label: the flow's minimum is no wider.
    assert pair_item.minimumSize().width() < pair_item.sizeHint().width()
    assert flow.minimumSize().width() == max(pair_item.minimumSize().width(), handle_item.minimumSize().width())

    host.show()
    qtbot.waitExposed(host)
    narrow = max(pair_item.minimumSize().width(), handle_item.minimumSize().width())
    host.resize(narrow, flow.heightForWidth(narrow))
    # The pair's own flow places its labels once the pair has its new size.
    qtbot.waitUntil(lambda: pair.width() <= narrow and value.geometry().top() > formula.geometry().top())
    assert pair.geometry().right() < narrow
    assert handle.geometry().top() >= pair.geometry().bottom()  # the handle went to a row of its own

    wide = pair_item.sizeHint().width() + handle_item.sizeHint().width() + 200
    host.resize(wide, flow.heightForWidth(wide))
    qtbot.waitUntil(lambda: host.width() == wide and value.geometry().top() == formula.geometry().top())
    assert handle.geometry().top() < pair.geometry().bottom()  # on the pair's row
    assert handle.geometry().right() == wide - 1  # the growing group took the rest of the row
    assert handle.geometry().width() > handle_item.sizeHint().width()


def test_a_long_plot_title_wraps_inside_its_plot_instead_of_widening_it(qtbot, qapp):
    from gui import theme
    from gui.panels.positions.common import make_plot

    theme.apply_theme(qapp, "projector", 1.6)
    try:
        plot = make_plot("Score against key position n, query at m", "key position n", "score")
        qtbot.addWidget(plot)
        theme.style_plot(plot)
        item, title = plot.getPlotItem(), plot.getPlotItem().titleLabel
        one_line = title.item.boundingRect().height()
        plot.resize(360, 300)
        plot.show()
        qtbot.waitExposed(plot)
        # Wrapped: the plot item (title, axes, curve) stays inside the widget, the title on more lines.
        qtbot.waitUntil(lambda: item.geometry().width() <= plot.viewport().width() + 1)
        assert title.item.boundingRect().height() > 1.5 * one_line
        assert title.geometry().height() >= title.item.boundingRect().height()  # its row holds every line

        plot.resize(1400, 300)
        qtbot.waitUntil(lambda: title.item.boundingRect().height() < 1.5 * one_line)  # room again: one line
    finally:
        theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)
