"""Legends sit below their plot, never over its data; the legibility rule finds one that covers a line."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gui.legibility import legend_over_data
from gui.widgets.legend import legend_below


def shown_plot(qtbot, width: int = 420, height: int = 300) -> pg.PlotWidget:
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(width, height)
    plot.show()
    qtbot.waitExposed(plot)
    return plot


def test_an_in_view_legend_over_a_flat_line_is_found(qtbot):
    plot = shown_plot(qtbot)
    plot.addLegend(offset=(10, 5))  # pyqtgraph's own: anchored at the top left of the view box
    plot.plot(np.arange(50), np.full(50, 1.0), name="‖R(m) q‖")  # a level line along the top of the view
    plot.plot(np.arange(50), np.linspace(0, 0.9, 50), name="other")
    plot.setYRange(0, 1.02, padding=0)
    qtbot.waitUntil(lambda: plot.getPlotItem().legend.sceneBoundingRect().height() > 0)
    problems = legend_over_data(plot)
    assert problems and "‖R(m) q‖" in problems[0].what


def test_a_legend_below_covers_nothing_and_flows_onto_rows_when_narrow(qtbot):
    plot = shown_plot(qtbot, width=900)
    legend = legend_below(plot)
    for index, name in enumerate(("no encoding", "learned", "sinusoidal", "RoPE")):
        plot.plot(np.arange(20), np.full(20, 1.0 + index * 0.01), name=name)
    plot.setYRange(0, 1.05, padding=0)
    qtbot.waitUntil(lambda: legend.columnCount == 4)  # wide: one row of four
    view = plot.getPlotItem().vb
    # Once laid out, under the view box, not in it.
    qtbot.waitUntil(lambda: legend.sceneBoundingRect().top() >= view.sceneBoundingRect().bottom() - 1)
    assert legend_over_data(plot) == []
    plot.resize(260, 300)
    qtbot.waitUntil(lambda: legend.columnCount < 4)  # narrow: the entries wrap instead of being cut
    right = max(label.sceneBoundingRect().left() + label.item.boundingRect().width() for _sample, label in legend.items)
    assert right <= plot.width() + 1 and len(legend.items) == 4
