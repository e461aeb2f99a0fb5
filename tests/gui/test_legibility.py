"""The legibility rule at projector scale (projector theme, text at 160%): every panel and sub-tab, a lesson
open, in and out of presentation view: no text under 14 px, no control under 24 px."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QCheckBox, QLabel, QPushButton, QSlider, QTabWidget, QVBoxLayout, QWidget

from core.lessons import bundled_lesson_paths
from gui.legibility import MIN_CONTROL_PX, MIN_TEXT_PX, legibility_problems

PROJECTOR_SCALE = 1.6


@pytest.fixture(scope="module")
def projected(qapp, request, tmp_path_factory):
    from pytestqt.qtbot import QtBot

    from gui.main_window import MainWindow

    bot = QtBot(request)
    settings = QSettings(str(tmp_path_factory.mktemp("legibility") / "prefs.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.remember_preferences = False
    window.fit_to_screen = lambda: None  # the offscreen screen is smaller than the projector's
    window.set_full_screen = lambda on: None  # and full screen would shrink the window to it
    window.state.set_theme("projector")
    window.state.set_font_scale(PROJECTOR_SCALE)
    window.resize(1920, 1050)
    window.show()
    with bot.waitSignal(window.model_loaded, timeout=60_000):
        window.start_loading()
    with bot.waitSignal(window.lessons.step_shown, timeout=30_000):
        window.lessons.open_lesson(bundled_lesson_paths()[0])
    yield window, bot
    window.close()
    window.deleteLater()
    from gui import theme

    theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)  # the application's style sheet outlives the window


def every_view(window, bot):
    """Show each panel, each of its sub-tabs and its Reading's script view in turn, once it has settled."""
    from gui.panels.reading_mode import ReadingMode

    def settled():
        bot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
        bot.wait(50)
        settle_plots(window, bot)

    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        panel = window.tabs.widget(index)
        for tabs in panel.findChildren(QTabWidget) or [None]:
            for sub in range(tabs.count() if tabs is not None else 1):
                if tabs is not None:
                    tabs.setCurrentIndex(sub)
                settled()
                yield window.tabs.tabText(index)
        for reading in panel.findChildren(ReadingMode):
            reading.set_on(True)
            try:
                settled()
                yield f"{window.tabs.tabText(index)} (reading's script)"
            finally:
                reading.set_on(False)


def settle_plots(window, bot):
    """Let plots lay themselves out again: an axis measures its tick labels as it first draws them and
    the title beside it narrows an event later; a pie places its labels once its view has its size.
    What is still wrong after this is wrong for good, and the rule reports it."""
    from pytestqt.exceptions import TimeoutError as WaitTimeout

    try:
        bot.waitUntil(lambda: not legibility_problems(window), timeout=2_000)
    except WaitTimeout:
        pass


@pytest.mark.parametrize("presentation", [False, True], ids=["window", "presentation"])
def test_nothing_under_the_rule_at_projector_scale(projected, presentation):
    window, bot = projected
    window.lessons.set_presentation(presentation)
    try:
        seen, found = [], {}
        for panel in every_view(window, bot):
            seen.append(panel)
            for problem in legibility_problems(window):
                found.setdefault(str(problem), panel)
        assert len(seen) >= window.tabs.count()
        assert not found, "\n".join(f"{panel}: {problem}" for problem, panel in found.items())
        dock = window.lessons.dock
        assert not legibility_problems(dock)  # the lesson itself: its text, Reveal, Back and Next
    finally:
        window.lessons.set_presentation(False)


def test_an_answer_cover_is_legible(projected):
    window, bot = projected
    lessons = window.lessons
    with bot.waitSignal(lessons.step_shown, timeout=30_000):
        lessons.go_to(0)
    # Every result of the panel is covered, those of the other sub-tabs too: the one on screen is read.
    bot.waitUntil(lambda: any(c.isVisible() for c in lessons.covers), timeout=30_000)
    cover = next(c for c in lessons.covers if c.isVisible())
    from gui import theme
    from gui.legibility import text_px

    assert text_px(theme.font(1.0, bold=True)) >= MIN_TEXT_PX
    assert cover.height() >= MIN_CONTROL_PX or cover.target.height() < MIN_CONTROL_PX


def test_the_rule_finds_small_text_and_small_controls(qtbot):
    host = QWidget()
    qtbot.addWidget(host)
    layout = QVBoxLayout(host)
    small = QLabel("tiny")
    font = small.font()
    font.setPixelSize(MIN_TEXT_PX - 3)
    small.setFont(font)
    small.setObjectName("tiny-label")
    box = QCheckBox("tick")
    box.setObjectName("small-box")
    box.setFixedHeight(MIN_CONTROL_PX - 8)
    big = QPushButton("Reveal")
    big.setObjectName("big-button")
    big.setMinimumHeight(MIN_CONTROL_PX + 4)
    bigger = big.font()
    bigger.setPixelSize(MIN_TEXT_PX + 4)
    big.setFont(bigger)
    slider = QSlider()
    slider.setObjectName("thin-slider")
    slider.setOrientation(slider.orientation().Horizontal)
    slider.setStyleSheet("QSlider { min-height: 0px; min-width: 0px; }")  # the theme's sizes do not apply here
    slider.setFixedHeight(MIN_CONTROL_PX - 10)
    for widget in (small, box, big, slider):
        layout.addWidget(widget)
    host.show()
    qtbot.waitExposed(host)
    problems = {(p.kind, p.where) for p in legibility_problems(host)}
    assert ("text", "tiny-label") in problems
    assert ("control", "small-box") in problems
    assert ("control", "thin-slider") in problems
    assert not any(where == "big-button" for _, where in problems)


@pytest.fixture
def projector_look(qapp):
    from gui import theme

    theme.apply_theme(qapp, "projector", PROJECTOR_SCALE)
    yield theme
    theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)


@pytest.mark.parametrize("preset", ["tiny-gpt", "gpt2-small", "transformer-base", "tiny-moe"])
@pytest.mark.parametrize("size", [(420, 380), (900, 620)])
def test_every_wedge_of_a_few_percent_has_a_label_inside_the_view(qtbot, projector_look, preset, size):
    from core.params import parameter_breakdown
    from core.presets import get_preset
    from gui.legibility import dropped_plot_labels
    from gui.panels.parameters.common import pie_slices
    from gui.widgets.pie import MIN_LABELED_SHARE, PieView

    view = PieView()
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    view.restyle()
    view.pie.set_data(*pie_slices(parameter_breakdown(get_preset(preset))))
    qtbot.wait(1)
    big = [key for key in view.pie.keys() if view.pie.share(key) >= MIN_LABELED_SHARE]
    assert big
    assert all(view.pie._labels[key].isVisible() for key in big)
    assert not dropped_plot_labels(view), dropped_plot_labels(view)

    # The check itself: a hidden label is a dropped one.
    view.pie._labels[big[0]].hide()
    assert any(big[0] in problem.where for problem in dropped_plot_labels(view))


def test_a_table_shows_all_its_rows_or_scrolls(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

    from gui.legibility import MIN_TABLE_ROWS, hidden_rows

    table = QTableWidget(5, 1)
    qtbot.addWidget(table)
    for row in range(5):
        table.setItem(row, 0, QTableWidgetItem(f"guess {row}"))
    table.verticalHeader().setDefaultSectionSize(30)
    table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setFixedHeight(70)  # the header and one row
    table.show()
    qtbot.waitExposed(table)
    assert hidden_rows(table) and "1 of 5" in str(hidden_rows(table)[0])
    table.setFixedHeight(30 * 5 + table.horizontalHeader().height() + 2 * table.frameWidth() + 4)
    qtbot.waitUntil(lambda: table.viewport().height() >= 150)
    assert not hidden_rows(table)
    table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    table.setFixedHeight(30 * MIN_TABLE_ROWS + table.horizontalHeader().height() + 2 * table.frameWidth() + 4)
    qtbot.waitUntil(lambda: table.verticalScrollBar().isVisible())
    assert not hidden_rows(table)


def test_a_colour_bar_is_as_wide_as_its_labels(qtbot, projector_look):
    import numpy as np

    from gui.legibility import dropped_plot_labels
    from gui.widgets.heatmap import HeatmapWidget

    heatmap = HeatmapWidget("RoPE", "key n", "query m", "score")
    qtbot.addWidget(heatmap)
    heatmap.resize(640, 460)
    heatmap.show()
    qtbot.waitExposed(heatmap)
    heatmap.setData(np.linspace(-0.75, 0.75, 64, dtype=np.float32).reshape(8, 8), levels=(-0.75, 0.75))
    heatmap.plot.grab()  # the axis measures its labels as it draws them
    axis = heatmap.colorbar.axis
    assert axis.textWidth > 0 and not dropped_plot_labels(heatmap.plot)
    axis.setWidth(20)  # pyqtgraph's fixed width, too narrow for projector text: the rule sees it
    heatmap.plot.grab()
    assert any("axis" in problem.where for problem in dropped_plot_labels(heatmap.plot))


@pytest.mark.parametrize(("theme_name", "scale", "floor"), [("light", 1.0, 10), ("projector", PROJECTOR_SCALE, MIN_TEXT_PX)])
def test_the_encoder_decoder_diagram_scrolls_before_its_text_gets_small(qtbot, qapp, theme_name, scale, floor):
    from core.presets import get_preset
    from gui import theme
    from gui.legibility import text_px
    from core.diagram_layout import diagram_parts
    from gui.widgets.block_diagram import SMALLEST_TEXT, BlockDiagramView

    theme.apply_theme(qapp, theme_name, scale)
    try:
        view = BlockDiagramView()
        qtbot.addWidget(view)
        view.resize(420, 500)  # far narrower than the two towers
        view.show()
        qtbot.waitExposed(view)
        view.set_diagram(diagram_parts(get_preset("transformer-base"), 16))
        drawn = text_px(theme.font(SMALLEST_TEXT)) * view.transform().m11()
        assert drawn >= floor - 0.5, drawn
        assert view.horizontalScrollBar().maximum() > 0  # the rest is reached by scrolling
        problems = legibility_problems(view)
        assert theme_name != "projector" or not problems, problems
    finally:
        theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)


def test_tick_labels_the_axis_would_leave_out_are_found(qtbot, projector_look):
    import pyqtgraph as pg

    from gui.legibility import dropped_plot_labels

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    theme = projector_look
    theme.style_plot(plot)
    guesses = [(index, f"guess {index}") for index in range(10)]
    plot.getAxis("left").setTicks([guesses])
    plot.setYRange(-0.6, 9.6, padding=0)
    plot.resize(400, 160)  # room for about four labels
    plot.show()
    qtbot.waitExposed(plot)
    assert any("tick labels" in problem.what for problem in dropped_plot_labels(plot))
    plot.resize(400, 900)
    qtbot.waitUntil(lambda: plot.getAxis("left").height() > 700)
    assert not dropped_plot_labels(plot)


def test_a_long_title_wraps_inside_its_plot_and_the_rule_sees_one_that_does_not(qtbot, projector_look):
    import pyqtgraph as pg

    from gui.legibility import broken_title, cut_plot
    from gui.widgets.plot_titles import wrap_title

    title = "Each block's gradient norm, before clipping, for every run"
    plots = {}
    for name, plot in (("bare", pg.PlotWidget()), ("wrapped", wrap_title(pg.PlotWidget()))):
        qtbot.addWidget(plot)
        plot.setTitle(title)
        projector_look.style_plot(plot)
        plot.setLabel("left", "||dL/dθ||")
        plot.resize(300, 400)
        plot.show()
        qtbot.waitExposed(plot)
        plot.grab()  # the axes measure their tick labels as they draw them
        plots[name] = plot
    assert cut_plot(plots["bare"]) and "cut" in str(cut_plot(plots["bare"])[0])
    wrapped = plots["wrapped"]
    qtbot.waitUntil(lambda: not cut_plot(wrapped))
    label = wrapped.getPlotItem().titleLabel
    line = label.item.document().documentLayout().documentSize().height()
    assert label.item.textWidth() > 0  # it wrapped, rather than shrinking its text
    assert label.maximumHeight() >= line - 1
    wrapped.setTitle("learned (random, untrained)")
    wrapped.resize(200, 400)  # narrower than its longest word beside its axis
    qtbot.waitUntil(lambda: not cut_plot(wrapped))
    # Kept inside the plot only by breaking a word: the rule sees that too, and not once the words fit.
    qtbot.waitUntil(lambda: bool(broken_title(wrapped)))
    assert "broken across lines" in str(broken_title(wrapped)[0])
    wrapped.resize(420, 400)
    qtbot.waitUntil(lambda: not broken_title(wrapped))


def test_a_plot_keeps_a_few_lines_of_height_and_the_rule_sees_one_that_does_not(qtbot, projector_look):
    import pyqtgraph as pg

    from gui.legibility import squashed_plot
    from gui.widgets.plot_titles import MIN_PLOT_LINES, min_plot_height, wrap_title

    least = min_plot_height(MIN_PLOT_LINES)
    host = QWidget()
    qtbot.addWidget(host)
    layout = QVBoxLayout(host)
    bare, kept = pg.PlotWidget(), wrap_title(pg.PlotWidget())
    for plot in (bare, kept):
        plot.setTitle("Rotation keeps lengths")
        layout.addWidget(plot)
    host.resize(400, 3 * MIN_CONTROL_PX)  # what a crowded panel leaves its plots
    host.show()
    qtbot.waitExposed(host)
    assert bare.height() < least and squashed_plot(bare)  # squeezed to a strip, and seen
    assert kept.minimumHeight() >= least
    assert kept.height() >= least and not squashed_plot(kept)


def test_a_wrapped_caption_keeps_its_lines_and_the_rule_sees_one_cut_off(qtbot, projector_look):
    from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

    from gui.legibility import clipped_label
    from gui.widgets.wrapping_label import WrappingLabel

    text = "The reading's unit test on a fresh attention layer, split into heads the right way and the wrong way."
    pages = {}
    for name, label in (("plain", QLabel(text)), ("wrapping", WrappingLabel(text))):
        label.setWordWrap(True)
        page = QWidget()
        column = QVBoxLayout(page)
        column.addWidget(label)
        below = QWidget()  # a plot under the caption, holding its own minimum
        below.setMinimumHeight(200)
        column.addWidget(below, 1)
        qtbot.addWidget(page)
        page.resize(240, 260)  # narrow: the caption wraps onto several lines
        page.show()
        qtbot.waitExposed(page)
        pages[name] = (page, label)
    plain_page, plain = pages["plain"]
    qtbot.waitUntil(lambda: bool(clipped_label(plain)))
    assert "its last lines are cut" in str(clipped_label(plain)[0])
    page, wrapping = pages["wrapping"]
    qtbot.waitUntil(lambda: page.minimumSizeHint().height() >= wrapping.heightForWidth(wrapping.width()) + 200)
    page.resize(240, page.minimumSizeHint().height())
    qtbot.waitUntil(lambda: not clipped_label(wrapping))
    narrow = page.minimumSizeHint().height()
    page.resize(600, narrow)  # wider: fewer lines, a lower minimum
    qtbot.waitUntil(lambda: page.minimumSizeHint().height() < narrow)
