"""Exports are the screen at the chosen size: a heatmap, a pie and a scatter plot, as PNG and SVG."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from gui import theme
from gui.widgets.export import export, shown_widget
from gui.widgets.heatmap import Heatmap
from gui.widgets.pie import PieSlice, PieView

SIZE = (900, 500)  # wider and taller than the widgets are laid out in their window


@pytest.fixture
def window(qtbot):
    """A small window whose layout holds the widget, as a panel does."""
    host = QWidget()
    QVBoxLayout(host)
    host.resize(420, 300)
    qtbot.addWidget(host)
    return host


def shown(window, widget):
    window.layout().addWidget(widget)
    window.show()
    QApplication.processEvents()
    return widget


def screen_at(widget, size) -> QImage:
    """The widget on screen resized to `size` by hand: what the export must equal."""
    widget.resize(*size)
    QApplication.sendPostedEvents()
    if (widget.width(), widget.height()) != size:  # its window's layout moved in first
        widget.resize(*size)
        QApplication.sendPostedEvents(widget)
    return widget.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32)


def exported(target, path, size) -> QImage:
    return QImage(str(export(target, path, *size))).convertToFormat(QImage.Format.Format_ARGB32)


def half_is_blank(image: QImage, background: QColor) -> bool:
    """Whether the right half of an image is the background alone (the old exports filled the left half)."""
    right = image.copy(image.width() // 2, 0, image.width() // 2, image.height())
    return all(right.pixelColor(x, y) == background for x in range(0, right.width(), 7) for y in range(0, right.height(), 7))


def pie_slices():
    inner = [PieSlice("token_embeddings", "token embeddings", 38_597_376, QColor("#0072b2"), short_label="token emb."),
             PieSlice("blocks", "12 blocks", 85_054_464, QColor("#d0d4da"), short_label="blocks")]
    outer = [PieSlice("attention", "attention", 28_348_416, QColor("#e69f00"), parent="blocks", short_label="attention"),
             PieSlice("ffn", "feed-forward (FFN)", 56_669_184, QColor("#009e73"), parent="blocks", short_label="FFN")]
    return inner, outer


def test_a_heatmap_export_is_the_heatmap_on_screen_at_that_size(window, tmp_path):
    heatmap = shown(window, Heatmap(x_label="key", y_label="query", title="weights"))
    heatmap.set_data(np.random.default_rng(0).random((6, 9)), levels=(0.0, 1.0))
    QApplication.processEvents()
    before = heatmap.geometry()
    image = exported(heatmap.plot.getPlotItem(), tmp_path / "map.png", SIZE)
    QApplication.processEvents()
    assert heatmap.geometry() == before  # put back where its layout keeps it
    assert (image.width(), image.height()) == SIZE
    assert not half_is_blank(image, QColor(theme.current().base))
    assert image == screen_at(shown_widget(heatmap.plot.getPlotItem()), SIZE)


def test_a_pie_export_is_the_pie_on_screen_at_that_size(window, tmp_path):
    view = shown(window, PieView("gpt2-small"))
    view.pie.set_data(*pie_slices())
    QApplication.processEvents()
    image = exported(view, tmp_path / "pie.png", SIZE)
    assert (image.width(), image.height()) == SIZE
    assert not half_is_blank(image, QColor(theme.current().window))
    assert image == screen_at(view, SIZE)
    plot_image = exported(view.getPlotItem(), tmp_path / "pie-plot.png", SIZE)
    assert plot_image == screen_at(view, SIZE)


def test_svg_markers_are_shapes_and_the_legend_keeps_its_size(window, tmp_path):
    plot = shown(window, pg.PlotWidget())
    plot.addLegend()
    plot.plot(np.arange(8), np.arange(8) ** 2, pen=None, symbol="o", symbolSize=9, name="squares")
    QApplication.processEvents()
    svg = export(plot.getPlotItem(), tmp_path / "plot.svg", *SIZE).read_text(encoding="utf-8")
    # Cached sprites would be written as one <image> per marker: a squeezed sprite sheet.
    assert "<image" not in svg
    assert svg.count("<path") >= 8
    assert "squares" in svg
    font_sizes = {float(size) for size in __import__("re").findall(r'font-size="([0-9.]+)', svg)}
    assert len(font_sizes) <= 2, font_sizes  # the legend's text is the size of the tick labels, not shrunk
