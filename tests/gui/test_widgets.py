"""Reusable widgets: the heatmap with token ticks and a hover readout, the export helpers."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage

from gui import theme
from gui.widgets.export import ExportError, export
from gui.widgets.heatmap import Heatmap


@pytest.fixture
def heatmap(qtbot):
    widget = Heatmap(x_label="key", y_label="query")
    qtbot.addWidget(widget)
    widget.resize(500, 400)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_heatmap_shows_a_matrix_with_token_ticks(heatmap):
    pattern = np.tril(np.ones((4, 4), dtype=np.float32))
    pattern /= pattern.sum(axis=1, keepdims=True)
    heatmap.set_data(pattern, row_labels=list("ab c"), col_labels=list("ab c"), levels=(0.0, 1.0))
    assert heatmap.image.image.shape == (4, 4)
    assert heatmap.image.getLevels() == pytest.approx((0.0, 1.0))
    ticks = heatmap.plot.getAxis("left")._tickLevels[0]
    assert [label for _, label in ticks] == ["a", "b", "\u2423", "c"]  # a space token stays visible


def test_heatmap_hover_reads_out_the_cell(qtbot, heatmap):
    heatmap.set_data(np.arange(6, dtype=np.float32).reshape(2, 3), row_labels=["x", "y"], col_labels=["p", "q", "r"])
    view = heatmap.plot.getViewBox()
    scene_pos = view.mapViewToScene(QPointF(2.5, 1.5))  # column 2, row 1
    with qtbot.waitSignal(heatmap.hovered, timeout=1000) as blocker:
        heatmap._mouse_moved(scene_pos)
    assert blocker.args == [1, 2, 5.0]
    assert heatmap.readout.text() == "row 1 'y'  x  column 2 'r':  5"


def test_heatmap_rejects_non_matrices(heatmap):
    with pytest.raises(ValueError, match="2-D"):
        heatmap.set_data(np.zeros(3))


def test_heatmap_follows_the_theme_colormap(heatmap):
    from PySide6.QtWidgets import QApplication

    theme.apply_theme(QApplication.instance(), "projector", 1.0)
    try:
        heatmap.apply_theme()
        assert heatmap.colorbar.colorMap().name == "cividis"
    finally:
        theme.apply_theme(QApplication.instance(), "light", 1.0)


def test_export_a_plain_widget_at_a_size(heatmap, tmp_path):
    heatmap.set_data(np.eye(3))
    written = export(heatmap, tmp_path / "map.png", 640, 480)
    image = QImage(str(written))
    assert (image.width(), image.height()) == (640, 480)
    assert b"<svg" in export(heatmap.plot.getPlotItem(), tmp_path / "map.svg", 640, 480).read_bytes()[:2000]


@pytest.mark.parametrize("name, size, message", [("a.jpg", (100, 100), ".png or .svg"), ("a.png", (4, 4), "between 16")])
def test_export_refuses_bad_requests(heatmap, tmp_path, name, size, message):
    with pytest.raises(ExportError, match=message):
        export(heatmap, tmp_path / name, *size)


def test_export_into_a_missing_folder(heatmap, tmp_path):
    with pytest.raises(ExportError, match="does not exist"):
        export(heatmap, tmp_path / "nope" / "a.png")


def test_heatmap_widget_marks_a_cell_and_exports_its_plot(qtbot, tmp_path):
    from gui.widgets.heatmap import HeatmapWidget

    grid = HeatmapWidget("RoPE", "key n", "query m", "score")
    qtbot.addWidget(grid)
    grid.resize(400, 300)
    grid.show()
    grid.setData(np.arange(12, dtype=np.float32).reshape(3, 4), list("abcd"), list("xyz"))
    assert [label for _, label in grid.plot.getAxis("bottom")._tickLevels[0]] == list("abcd")
    grid.set_marker(2, 1)
    assert grid.marker.isVisible() and grid.marker.rect().topLeft() == QPointF(1.0, 2.0)
    grid._mouse_moved(grid.plot.getViewBox().mapViewToScene(QPointF(1.5, 2.5)))
    assert grid.readout.text().endswith("score 9")
    assert export(grid.plot_item(), tmp_path / "grid.png", 300, 200).exists()


def test_a_graphics_view_exports_like_any_widget(qtbot, tmp_path):
    from PySide6.QtWidgets import QGraphicsScene, QGraphicsView

    from gui.widgets.export import export

    scene = QGraphicsScene()
    scene.addRect(0, 0, 100, 50)
    view = QGraphicsView(scene)
    qtbot.addWidget(view)
    view.resize(300, 200)
    png = export(view, tmp_path / "view.png", 600, 400)
    svg = export(view, tmp_path / "view.svg", 600, 400)
    assert png.stat().st_size > 0
    assert "<svg" in svg.read_text()
