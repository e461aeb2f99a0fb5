"""Stretching: loss against input length for the bundled context models, all trained at 64.

Each curve is one model's mean next-character loss on windows of each length cut from a held-out sample; the
dashed line marks the trained length. The learned table's curve stops where it refuses, and says so there. The
slider divides ctx-rope's positions by a factor without training it again: position interpolation alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QSlider, QSplitter, QVBoxLayout, QWidget

from core.going_deeper.recipe import TRAINED_LENGTH
from core.going_deeper.stretching import format_loss, summary
from gui import theme
from gui.panels.base import View
from gui.panels.common import caption, fit_table, make_plot, set_cell, table
from gui.widgets.flow_layout import FlowLayout

SCALE_STEPS_PER_UNIT = 4  # the slider moves rope_scale in quarters
MIN_SCALE_STEP, MAX_SCALE_STEP = 1, 32  # rope_scale 0.25 to 8
# Each model keeps its colour (theme.series_color's index; None: the text colour) whatever the theme.
SERIES = {"ctx-learned": 3, "ctx-sinusoidal": 4, "ctx-rope": 0, "ctx-alibi": 2, "ctx-none": None, "ctx-rope-pi": 1}


def _colour(model: str):
    index = SERIES.get(model)
    return QColor(theme.current().text) if index is None else theme.series_color(index)


@dataclass(frozen=True)
class StretchInputs:
    rope_scale: float


def compute_stretching(inputs: StretchInputs, token):
    from core.going_deeper.stretching import stretching

    return stretching(inputs.rope_scale, report=token.report, check=token.check)


class StretchingView(View):
    name = "Stretching"
    reads = frozenset()  # its own models: the bundled context models, loaded on the worker
    compute_fn = staticmethod(compute_stretching)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        row = FlowLayout()
        self.scale_slider = QSlider(Qt.Orientation.Horizontal)
        self.scale_slider.setObjectName("stretching-rope-scale")
        self.scale_slider.setRange(MIN_SCALE_STEP, MAX_SCALE_STEP)
        self.scale_slider.setValue(SCALE_STEPS_PER_UNIT)
        self.scale_slider.setMinimumWidth(160)
        self.scale_slider.setAccessibleName("rope_scale of ctx-rope")
        self.scale_slider.setToolTip("Divide ctx-rope's positions by this factor (position interpolation), without "
                                     "training it again; 1 is how it was trained")
        self.scale_caption = QLabel("")
        self.scale_caption.setObjectName("stretching-scale-caption")
        self.scale_caption.setBuddy(self.scale_slider)
        self.scale_slider.valueChanged.connect(self._scale_moved)
        row.addWidget(self.scale_caption)
        row.addWidget(self.scale_slider)
        self.add_controls(row)
        self._scale_moved()

        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        self.summary_label = caption("")
        self.summary_label.setObjectName("stretching-summary")
        self.summary_label.setToolTip("Each figure is the mean next-character loss over every prediction inside every "
                                      "window of that length cut from the start of the held-out tenth of the "
                                      "Shakespeare, which no model trained on (`extrapolate --held-out` scores the "
                                      "whole tenth)")
        self.stale_labels.append(self.summary_label)
        column.addWidget(self.summary_label)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.plot = make_plot("Held-out loss against input length", "input length (characters, log scale)",
                              "nats per character")
        self.plot.setLogMode(x=True, y=False)
        self.trained_line = pg.InfiniteLine(pos=math.log10(TRAINED_LENGTH), angle=90,
                                            label=f"trained length {TRAINED_LENGTH}",
                                            labelOpts={"position": 0.92, "anchors": [(0, 0), (0, 0)]})
        self.plot.addItem(self.trained_line)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.refusal_text = pg.TextItem(anchor=(1, 0))  # left of and below the cross: inside the plot
        self.refusal_mark = pg.ScatterPlotItem(symbol="x", size=14)
        self.plot.addItem(self.refusal_mark)
        self.plot.addItem(self.refusal_text)
        splitter.addWidget(self.plot)
        self.table = table(("model", "trained at"))  # its swatches are the plot's legend
        self.table.setObjectName("stretching-table")
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        column.addWidget(splitter, 1)

    @property
    def rope_scale(self) -> float:
        return self.scale_slider.value() / SCALE_STEPS_PER_UNIT

    def set_rope_scale(self, scale: float) -> None:
        self.scale_slider.setValue(round(scale * SCALE_STEPS_PER_UNIT))

    def _scale_moved(self) -> None:
        self.scale_caption.setText(f"rope_scale of ctx-rope: {self.rope_scale:.2f}")
        self.inputs_changed()

    def inputs(self) -> Any:
        return StretchInputs(self.rope_scale)

    def _curve(self, key: str, name: str) -> pg.PlotDataItem:
        if key not in self.curves:
            self.curves[key] = self.plot.plot([], [], name=name, symbol="o", symbolSize=6)
        return self.curves[key]

    def show_result(self, result) -> None:
        palette = theme.current()
        width = palette.line_width
        shown = list(result.curves) + ([result.rescaled] if result.rescaled is not None else [])
        for index, curve in enumerate(shown):
            rescaled = curve is result.rescaled
            key = "rescaled" if rescaled else curve.model
            name = f"ctx-rope, rope_scale {curve.rope_scale:g} (no training)" if rescaled else (
                curve.model + (f" (fine-tuned at {curve.trained_length})" if curve.trained_length != TRAINED_LENGTH
                               else ""))
            accepted = [row for row in curve.rows if row.nats_per_char is not None]
            colour = _colour("ctx-rope" if rescaled else curve.model)
            style = Qt.PenStyle.DotLine if rescaled else Qt.PenStyle.SolidLine
            item = self._curve(key, name)
            item.opts["name"] = name
            item.setData([row.length for row in accepted], [row.nats_per_char for row in accepted],
                         pen=pg.mkPen(colour, width=width, style=style), symbolBrush=pg.mkBrush(colour),
                         symbolPen=pg.mkPen(colour))
        lengths = [row.length for row in result.curves[0].rows]
        self.plot.getAxis("bottom").setTicks([[(math.log10(length), str(length)) for length in lengths]])
        if result.rescaled is None and "rescaled" in self.curves:
            self.curves["rescaled"].setData([], [])
        self._show_refusal(result)
        self._fill_table(shown, result)
        self.trained_line.setPen(pg.mkPen(palette.warning, width=2, style=Qt.PenStyle.DashLine))
        self.trained_line.label.setColor(palette.warning)
        self.summary_label.setText(summary(result))

    def _show_refusal(self, result) -> None:
        learned = next((curve for curve in result.curves if curve.refused_at is not None), None)
        if learned is None:
            self.refusal_mark.setData([], [])
            self.refusal_text.setText("")
            return
        accepted = [row for row in learned.rows if row.nats_per_char is not None]
        refused = learned.refused_at
        y = accepted[-1].nats_per_char if accepted else 0.0
        self.refusal_mark.setData([math.log10(refused.length)], [y], pen=pg.mkPen(_colour(learned.model), width=2),
                                  brush=None)
        self.refusal_text.setText(f"{learned.model} refuses {refused.length}: {learned.trained_length} rows",
                                  color=theme.current().warning)
        self.refusal_text.setPos(math.log10(refused.length), y)

    def _fill_table(self, shown, result) -> None:
        lengths = [row.length for row in shown[0].rows] if shown else []
        headers = ["model", "trained at", *(str(length) for length in lengths)]
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(len(shown))
        for row_index, curve in enumerate(shown):
            rescaled = curve is result.rescaled
            label = f"ctx-rope ÷ {curve.rope_scale:g} (dotted)" if rescaled else curve.model
            set_cell(self.table, row_index, 0, label, swatch=_colour("ctx-rope" if rescaled else curve.model))
            set_cell(self.table, row_index, 1, str(curve.trained_length), right=True)
            for column, row in enumerate(curve.rows, start=2):
                text = "refused" if row.refused else format_loss(row.nats_per_char)
                item = set_cell(self.table, row_index, column, text, right=True,
                                color=QColor(theme.current().warning) if row.refused else None)
                item.setToolTip(row.refused)
        fit_table(self.table)
        rows = self.table.verticalHeader().defaultSectionSize() * self.table.rowCount()
        self.table.setMinimumHeight(rows + self.table.horizontalHeader().sizeHint().height() + 2 * self.table.frameWidth())

    def on_stale(self) -> None:
        for item in self.curves.values():
            item.setData([], [])
        self.refusal_mark.setData([], [])
        self.refusal_text.setText("")

    def export_targets(self):
        return [("Stretching: loss against length (plot)", self.plot.getPlotItem())]
