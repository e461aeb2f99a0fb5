"""Log axes label decades, then 2x and 5x ticks, and never draw the other minor ticks' labels over them."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage, QPainter

from gui.widgets.log_axis import LogAxis, log_ready_axes


def test_ticks_fall_in_three_levels_and_only_two_are_labelled(qtbot):
    axis = LogAxis("left")
    axis.setLogMode(True)
    levels = axis.tickValues(math.log10(0.03), 0.0, 200)
    decades, labelled, unlabelled = (values for _spacing, values in levels)
    assert np.allclose(decades, [-1.0, 0.0])
    assert np.allclose(sorted(10 ** np.array(labelled)), [0.05, 0.2, 0.5])
    assert np.allclose(sorted(10 ** np.array(unlabelled)), [0.03, 0.04, 0.06, 0.07, 0.08, 0.09, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    assert axis.style["maxTextLevel"] == 1  # levels 0 and 1 carry text
    axis.setLogMode(False)
    assert axis.style["maxTextLevel"] == 2  # a linear axis keeps pyqtgraph's default


def label_rects(plot: pg.PlotWidget) -> list:
    image = QImage(plot.width(), plot.height(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = plot.getAxis("left").generateDrawSpecs(painter)
    finally:
        painter.end()
    assert specs is not None
    return sorted((rect for rect, _flags, _text in specs[2]), key=lambda r: r.top())


def test_no_two_labels_overlap_on_a_short_plot(qtbot):
    # pyqtgraph's own AxisItem fails this: it labels 0.03 ... 0.09 and 0.3 ... 0.9 on top of each other.
    plot = pg.PlotWidget(axisItems=log_ready_axes())
    qtbot.addWidget(plot)
    plot.resize(500, 160)
    plot.setLogMode(y=True)
    plot.plot(np.arange(100), np.linspace(0.03, 1.0, 100))
    plot.show()
    qtbot.waitExposed(plot)
    text_rects = label_rects(plot)
    assert len(text_rects) >= 2  # at least two decades' labels
    for upper, lower in zip(text_rects, text_rects[1:]):
        assert upper.bottom() <= lower.top() + 0.5, "two tick labels overlap"
