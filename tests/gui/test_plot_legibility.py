"""Plots read from the back row: tick labels apart, data areas not squashed under their labels, axis text and
lines at the theme's sizes, in every plot of the Causal lab and Families panels."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from gui.legibility import crowded_ticks, squashed_view

PROJECTOR_SCALE = 1.6


@pytest.fixture
def projector_look(qapp):
    from gui import theme

    theme.apply_theme(qapp, "projector", PROJECTOR_SCALE)
    yield theme
    theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)


def test_a_short_colour_bar_keeps_its_labels_apart(qtbot, projector_look):
    from gui.widgets.heatmap import Heatmap

    heatmap = Heatmap("head", "layer", "Induction score (click a head)")
    qtbot.addWidget(heatmap)
    heatmap.resize(420, 230)  # two rows of heads beside a lesson: a colour bar of a few lines
    heatmap.show()
    qtbot.waitExposed(heatmap)
    heatmap.set_data(np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4), ["L0", "L1"], [f"H{h}" for h in range(4)],
                     levels=(0.0, 1.0))
    qtbot.waitUntil(lambda: not heatmap.plot._wrapping_title._refit_pending)  # fitted once this pass is done
    heatmap.plot.grab()
    axis = heatmap.colorbar.axis
    line = pg.QtGui.QFontMetrics(axis.style["tickFont"]).height() * 0.8
    values = sorted(v for v in axis.tickValues(0.0, 1.0, axis.height())[0][1] if 0.0 <= v <= 1.0)
    assert len(values) >= 2 and min(np.diff(values)) * axis.height() >= line  # apart, and still a scale
    assert not crowded_ticks(heatmap.plot)
    # The check itself: pyqtgraph's own spacing draws "1.0 ... 0" on top of each other here.
    axis.tickSpacing = pg.AxisItem.tickSpacing.__get__(axis)
    axis.tickValues = pg.AxisItem.tickValues.__get__(axis)
    assert any("overlap" in problem.what for problem in crowded_ticks(heatmap.plot))


def test_a_plot_squashed_under_its_labels_is_found(qtbot, projector_look):
    from gui.panels.common import make_plot
    from gui.widgets.plot_titles import min_view_height

    plot = make_plot("Attention of L1H0 (induction 0.762); the second repeat starts at 20", "key", "query")
    qtbot.addWidget(plot)
    plot.resize(700, 700)
    plot.show()
    qtbot.waitExposed(plot)
    assert plot.getPlotItem().vb.height() >= min_view_height()
    assert not squashed_view(plot)
    plot._wrapping_title.min_lines = 0  # no least height of its own: squeezed to less than its title and axes
    plot.setMinimumHeight(0)
    plot.resize(700, min_view_height() * 2)
    qtbot.waitUntil(lambda: plot.getPlotItem().vb.height() < min_view_height())
    assert squashed_view(plot)


@pytest.mark.parametrize(("theme_name", "scale"), [("light", 1.0), ("projector", PROJECTOR_SCALE)])
@pytest.mark.parametrize("width", [270, 450])
def test_a_plot_with_a_legend_below_keeps_its_data_area(qtbot, qapp, theme_name, scale, width):
    """The Induction view's loss plot beside a lesson: its title, axes and a legend row under them took all of
    its least height, and the curves were drawn in no height at all."""
    from PySide6.QtWidgets import QSplitter

    from gui import theme
    from gui.panels.common import make_plot
    from gui.widgets.legend import legend_below
    from gui.widgets.plot_titles import min_view_height

    theme.apply_theme(qapp, theme_name, scale)
    try:
        splitter = QSplitter(pg.QtCore.Qt.Orientation.Vertical)
        qtbot.addWidget(splitter)
        plot = make_plot("Loss: first repeat against second", "offset in the repeat", "loss")
        legend_below(plot)
        first, second = plot.plot([], [], name="first repeat"), plot.plot([], [], name="second repeat")
        splitter.addWidget(plot)
        splitter.resize(width, 100)  # as low as the plot lets it be
        splitter.show()
        qtbot.waitExposed(splitter)
        first.setData(np.arange(20), np.linspace(4, 3, 20), pen=theme.pen("primary"))
        second.setData(np.arange(20), np.linspace(1, 0.3, 20), pen=theme.pen("secondary"))
        box = plot.getPlotItem().vb
        qtbot.waitUntil(lambda: box.height() >= min_view_height() - 1, timeout=5_000)
        assert not squashed_view(plot)
        assert splitter.height() <= plot.minimumHeight() + 2 * splitter.frameWidth()  # held at its least height
    finally:
        theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)


def test_the_decades_of_a_short_log_axis_keep_apart(qtbot, projector_look):
    from gui.panels.positions.common import make_plot

    plot = make_plot("Wavelength of each (sin, cos) pair", "pair i", "wavelength")
    qtbot.addWidget(plot)
    projector_look.style_plot(plot)
    plot.setLogMode(y=True)
    plot.plot(np.arange(32), np.geomspace(1.0, 1e5, 32))
    plot.resize(500, 300)
    plot.show()
    qtbot.waitExposed(plot)
    plot._wrapping_title.min_lines = 0
    plot._wrapping_title._least_view_height = lambda: 0  # no least data height: squeezed
    plot.setMinimumHeight(0)
    box = plot.getPlotItem().vb
    plot.resize(500, plot.height() - box.height() + 70)  # five decades in 70 px
    axis = plot.getAxis("left")
    qtbot.waitUntil(lambda: box.height() < 80 and axis.range[1] > 4)  # the five decades in view
    assert not crowded_ticks(plot)
    axis.tickSpacing = pg.AxisItem.tickSpacing.__get__(axis)  # pyqtgraph's own: every decade, overlapping
    axis.tickValues = pg.AxisItem.tickValues.__get__(axis)
    assert crowded_ticks(plot)


def test_plot_text_follows_the_theme_in_the_causal_lab_and_families(qtbot, qapp, settings, compute):
    """Every plot of the two panels, in both looks: tick labels at the theme's plot text, axis names no smaller."""
    from gui import theme
    from gui.main_window import MainWindow

    window = MainWindow(settings=settings, compute=compute)
    window.remember_preferences = False
    qtbot.addWidget(window)
    window.build_panels()
    try:
        for name, scale in (("projector", PROJECTOR_SCALE), ("light", 1.0)):
            window.state.set_theme(name)
            window.state.set_font_scale(scale)
            qapp.processEvents()
            tick_px = pg.QtGui.QFontInfo(theme.font(0.9)).pixelSize()
            for title in ("Causal lab", "Families"):
                plots = window.panel(title).findChildren(pg.PlotWidget)
                assert len(plots) >= 4, title
                for plot in plots:
                    for side in ("left", "bottom"):
                        axis = plot.getAxis(side)
                        assert pg.QtGui.QFontInfo(axis.style["tickFont"]).pixelSize() == tick_px, (title, side)
                        assert getattr(axis, "_spaced_ticks", False), (title, side)
                        if axis.labelText:
                            size = axis.labelStyle.get("font-size", "")
                            assert size.endswith("px") and int(size[:-2]) >= tick_px, (title, side, size)
    finally:
        window.state.set_theme("light")
        window.state.set_font_scale(1.0)
        window.close()


def test_a_left_axis_is_as_long_as_its_name(qtbot, projector_look):
    """The cross-attention map's "decoder position: reads → produces" was cut at both ends on a low map."""
    from gui.legibility import cut_axis_name
    from gui.panels.common import make_plot

    plot = make_plot("Cross-attention of layer 1, head 0", "source position", "decoder position: reads → produces")
    qtbot.addWidget(plot)
    plot.resize(900, 100)  # as low as the plot lets it be
    plot.show()
    qtbot.waitExposed(plot)
    axis = plot.getAxis("left")
    qtbot.waitUntil(lambda: axis.height() + 1 >= axis.label.boundingRect().width() > 100, timeout=5_000)
    assert not cut_axis_name(plot)
    plot._wrapping_title.min_lines = 0  # the check itself: squeezed under its name
    plot._wrapping_title._least_view_height = lambda: 10
    plot.setMinimumHeight(0)
    plot.resize(900, 200)
    qtbot.waitUntil(lambda: bool(cut_axis_name(plot)), timeout=5_000)
