"""A reusable heatmap: one pyqtgraph ImageItem with token tick labels, a colour bar and a hover readout.

    heatmap = Heatmap(x_label="key", y_label="query")
    heatmap.set_data(pattern, row_labels=tokens, col_labels=tokens, levels=(0.0, 1.0))

Items are created once; set_data only updates them. Row 0 is drawn at the top, as in a matrix.
NaN cells (masked positions) are left transparent so they read as "not there".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gui import theme
from gui.widgets.plot_titles import fit_title, wrap_title

MIN_MAP_LINES = 5  # a title, an axis label, and room for a few rows of cells


def _visible(label: str) -> str:
    """Whitespace tokens get a visible stand-in so that a space or newline has a tick label."""
    return label.replace(" ", "\u2423").replace("\n", "\u21b5").replace("\t", "\u21e5") or "\u2205"


class Heatmap(QWidget):
    hovered = Signal(int, int, float)  # row, column, value
    clicked = Signal(int, int)  # row, column

    def __init__(self, x_label: str = "", y_label: str = "", title: str = "", value_format: str = "{:.4g}",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.value_format = value_format
        self.nan_text = "masked"  # what the readout says over a NaN cell (a view may name its own reason)
        self.matrix = np.zeros((1, 1), dtype=np.float32)
        self.row_labels: list[str] = []
        self.col_labels: list[str] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = wrap_title(pg.PlotWidget(), MIN_MAP_LINES)  # a long title wraps inside the map
        self.plot.setMenuEnabled(False)
        self.plot.setAspectLocked(False)
        self.plot.invertY(True)
        if title:
            self.plot.setTitle(title)
        if x_label:
            self.plot.setLabel("bottom", x_label)
        if y_label:
            self.plot.setLabel("left", y_label)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap=theme.colormap(), interactive=False, width=14)
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.readout = QLabel(" ")
        self.readout.setObjectName("heatmap-readout")
        self.readout.setTextFormat(Qt.TextFormat.PlainText)
        self._last_scene_pos: QPointF | None = None
        self.stale = False
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)
        self.plot.scene().sigMouseMoved.connect(self._mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.plot.getViewBox().sigResized.connect(self._update_ticks)
        self.apply_theme()

    def set_data(
        self,
        matrix: np.ndarray,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        levels: tuple[float, float] | None = None,
    ) -> None:
        """Show a 2-D array; levels fix the colour range (e.g. (0, 1) for attention weights)."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError(f"a heatmap shows a 2-D array, got shape {matrix.shape}")
        self.matrix = matrix
        rows, cols = matrix.shape
        self.row_labels = [str(label) for label in row_labels] if row_labels is not None else [str(i) for i in range(rows)]
        self.col_labels = [str(label) for label in col_labels] if col_labels is not None else [str(i) for i in range(cols)]
        if levels is None:
            finite = matrix[np.isfinite(matrix)]
            low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            levels = (low, high if high > low else low + 1.0)
        self.image.setImage(matrix, autoLevels=False, levels=levels)
        self.image.setRect(0, 0, cols, rows)
        self.colorbar.setLevels(levels)
        self.plot.setRange(xRange=(0, cols), yRange=(0, rows), padding=0)
        self._update_ticks()

    def _update_ticks(self) -> None:
        """Label every cell when there is room, else every k-th, so labels never overlap."""
        line = QFontMetrics(theme.font(0.9)).height()
        view = self.plot.getViewBox()
        for axis_name, labels, extent in (("left", self.row_labels, view.height()), ("bottom", self.col_labels, view.width())):
            if not labels:
                continue
            widest = line if axis_name == "left" else max(line, max(QFontMetrics(theme.font(0.9)).horizontalAdvance(_visible(t)) for t in labels) + 4)
            room = max(1, int(extent // max(1, widest)))
            step = max(1, math.ceil(len(labels) / room))
            ticks = [(i + 0.5, _visible(label)) for i, label in enumerate(labels) if i % step == 0]
            self.plot.getAxis(axis_name).setTicks([ticks])

    def _style_colorbar(self) -> None:
        """The colour bar's axis in the theme's font, as wide as its labels: pyqtgraph fixes it at 45 px,
        which cuts "-0.75" or "1e-05" at projector sizes."""
        axis = self.colorbar.axis
        axis.setPen(pg.mkPen(theme.current().text, width=theme.current().axis_width))
        axis.setTextPen(pg.mkPen(theme.current().text))
        axis.setStyle(tickFont=theme.font(0.9), autoExpandTextSpace=True)
        theme.space_ticks(axis)
        if axis.labelText:
            label_px = max(8, round(theme.font(0.9).pointSizeF() * 1.35))
            axis.setLabel(axis.labelText, **{"color": theme.current().text, "font-size": f"{label_px}px"})
        theme.plain_axis_numbers(axis)
        axis.setWidth(None)  # from the widest label from now on

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        point = self.plot.getViewBox().mapSceneToView(scene_pos)
        row, col = int(math.floor(point.y())), int(math.floor(point.x()))
        if 0 <= row < self.matrix.shape[0] and 0 <= col < self.matrix.shape[1]:
            return row, col
        return None

    def set_stale(self, stale: bool) -> None:
        """While stale (its data describes inputs that have changed) the readout stays empty."""
        self.stale = stale
        if stale:
            self.readout.setText(" ")

    def refresh_hover(self) -> None:
        """Read out the cell under the cursor again: its data may have changed under it."""
        if not self.stale and self._last_scene_pos is not None and self.plot.underMouse():
            self._mouse_moved(self._last_scene_pos)
        else:
            self.readout.setText(" ")

    def _mouse_moved(self, scene_pos: QPointF) -> None:
        self._last_scene_pos = QPointF(scene_pos)
        cell = self.cell_at(scene_pos)
        if cell is None or self.stale:
            self.readout.setText(" ")
            return
        row, col = cell
        value = float(self.matrix[row, col])
        shown = self.nan_text if not math.isfinite(value) else self.value_format.format(value)
        row_label = _visible(self.row_labels[row]) if row < len(self.row_labels) else str(row)
        col_label = _visible(self.col_labels[col]) if col < len(self.col_labels) else str(col)
        self.readout.setText(f"row {row} '{row_label}'  x  column {col} '{col_label}':  {shown}")
        self.hovered.emit(row, col, value)

    def _mouse_clicked(self, event) -> None:
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.clicked.emit(*cell)

    def apply_theme(self) -> None:
        """Colormap, fonts and pens of the current theme (the base Panel calls this on theme changes)."""
        theme.style_plot(self.plot)
        self.colorbar.setColorMap(theme.colormap())
        self._style_colorbar()
        self.readout.setFont(theme.font(0.95))
        # Squeezed under its title and axis text a map shows no cell: below MIN_MAP_LINES lines (and the
        # lines its title wraps onto) its view scrolls instead.
        fit_title(self.plot)
        self._update_ticks()


class HeatmapWidget(Heatmap):
    """The heatmap with a title, axis names and a value name in the constructor, for panels written as

        grid = HeatmapWidget("RoPE", "key n", "query m", "score")
        grid.setData(matrix, x_labels, y_labels, levels=(-1.0, 1.0))
        grid.set_marker(row, col)
        exporter_target = grid.plot_item()
    """

    def __init__(self, title: str = "", x_label: str = "", y_label: str = "", value_label: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(x_label=x_label, y_label=y_label, title=title, parent=parent)
        self.value_label = value_label
        if value_label:
            self.colorbar.getAxis("left").setLabel(value_label)
            self._style_colorbar()
        self.marker = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.marker.setZValue(10)
        self.marker.hide()
        self.plot.addItem(self.marker)
        self._style_marker()

    def setData(self, matrix: np.ndarray, x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None,
                levels: tuple[float, float] | None = None) -> None:
        """Columns are labelled by x_labels, rows by y_labels."""
        self.set_data(matrix, row_labels=y_labels, col_labels=x_labels, levels=levels)

    def set_marker(self, row: int | None, col: int | None) -> None:
        """Outline one cell (None hides the outline)."""
        if row is None or col is None:
            self.marker.hide()
            return
        self.marker.setRect(float(col), float(row), 1.0, 1.0)
        self.marker.show()

    def plot_item(self) -> pg.PlotItem:
        return self.plot.getPlotItem()

    def _style_marker(self) -> None:
        pen = theme.pen("highlight", width=max(2.0, theme.current().line_width))
        pen.setCosmetic(True)
        self.marker.setPen(pen)

    def apply_theme(self) -> None:
        super().apply_theme()
        if hasattr(self, "marker"):
            self._style_marker()

    def _mouse_moved(self, scene_pos: QPointF) -> None:
        super()._mouse_moved(scene_pos)
        if self.value_label and self.readout.text().strip():
            head, _, value = self.readout.text().rpartition(":  ")
            self.readout.setText(f"{head}:  {self.value_label} {value}")


__all__ = ["Heatmap", "HeatmapWidget"]
