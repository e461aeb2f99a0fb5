"""Ladder: the 2017 block updated one part at a time, each rung's held-out loss over its seeds.

The chart puts every seed's figure as a point and the seeds' range as a bar about their mean, so a rung's change
is read against the spread; the table names each change and says whether it is worth more than the spread.
Clicking a rung (on the chart, or its row) makes its bundled model the lab's model. The figures are the bundled
record that `ladder --train` wrote; `ladder --json` prints the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QPushButton, QSplitter, QVBoxLayout, QWidget

from core.going_deeper.ladder import HELPS, HURTS, WITHIN, record_summary
from core.going_deeper.recipe import RUNGS
from gui import theme
from gui.panels.base import View
from gui.panels.common import caption, fit_table, labelled, make_plot, set_cell, table
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.table_rows import fit_number_columns

SEED_OFFSET = 0.08  # seeds of one rung side by side, this far apart on the rung axis
COLUMNS = ("rung", "change", "parameters", "mean", "spread", "vs before")  # nats per character
SHORT_VERDICTS = {HELPS: "better", HURTS: "worse", WITHIN: "within spread"}  # the whole verdict in the tooltip


@dataclass(frozen=True)
class LadderInputs:
    record: str  # which record: the bundled one


def compute_ladder(inputs: LadderInputs, token):
    from core.going_deeper.ladder import read_record

    token.check()
    return read_record()


class LadderView(View):
    name = "Ladder"
    reads = frozenset()
    needs_torch = False  # a JSON record: no model runs
    compute_fn = staticmethod(compute_ladder)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        row = FlowLayout()
        self.rung_combo = QComboBox()
        self.rung_combo.setObjectName("ladder-rung")
        for rung in RUNGS:
            self.rung_combo.addItem(f"{rung.name}: {rung.model}", rung.model)
        self.rung_combo.setToolTip("A rung of the ladder, from the 2017 block to today's")
        self.open_button = QPushButton("Open its model")
        self.open_button.setObjectName("ladder-open")
        self.open_button.setToolTip("Make the chosen rung's bundled model the lab's model (clicking a rung on the "
                                    "chart or in the table does the same)")
        self.open_button.clicked.connect(lambda: self.open_model(self.rung_combo.currentData()))
        labelled(row, "rung", self.rung_combo)
        row.addWidget(self.open_button)
        self.add_controls(row)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        self.summary_label = caption("")
        self.summary_label.setObjectName("ladder-summary")
        self.opened_label = caption("")
        self.opened_label.setObjectName("ladder-opened")
        self.stale_labels += [self.summary_label]
        column.addWidget(self.summary_label)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.plot = make_plot("Held-out loss of each rung (points: seeds; bar: their range)", "rung (click one to "
                              "open its model)", "nats per character")
        self.plot.setMouseEnabled(x=False, y=False)
        self.seed_points = pg.ScatterPlotItem(size=9)
        empty = np.zeros(0)
        self.spread_bars = pg.ErrorBarItem(x=empty, y=empty, top=empty, bottom=empty, beam=0.25)
        self.mean_marks = pg.ScatterPlotItem(symbol="_", size=28)
        for item in (self.spread_bars, self.seed_points, self.mean_marks):
            self.plot.addItem(item)
        self.plot.scene().sigMouseClicked.connect(self._plot_clicked)
        splitter.addWidget(self.plot)
        self.table = table(COLUMNS)
        self.table.setObjectName("ladder-table")
        self.table.cellClicked.connect(lambda row, _column: self.open_rung(row))
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        column.addWidget(splitter, 1)
        column.addWidget(self.opened_label)

    def inputs(self) -> Any:
        return LadderInputs("bundled")

    def show_result(self, record) -> None:
        rungs = record["rungs"]
        spots, xs, means, tops, bottoms = [], [], [], [], []
        for index, rung in enumerate(rungs):
            losses = [seed["nats_per_char"] for seed in rung["seeds"]]
            middle = (len(losses) - 1) / 2
            spots += [{"pos": (index + (k - middle) * SEED_OFFSET, loss), "data": index} for k, loss in enumerate(losses)]
            mean = rung["mean_nats_per_char"]
            xs.append(index)
            means.append(mean)
            tops.append(max(losses) - mean)
            bottoms.append(mean - min(losses))
        palette = theme.current()
        self.seed_points.setData(spots, brush=theme.brush("primary"), pen=theme.pen("primary"))
        self.mean_marks.setData(xs, means, pen=theme.pen("text", width=2.5), brush=theme.brush("text"))
        self.spread_bars.setData(x=np.array(xs), y=np.array(means), top=np.array(tops), bottom=np.array(bottoms),
                                 beam=0.25,
                                 pen=theme.pen("secondary", width=max(2.0, palette.line_width)))
        axis = self.plot.getAxis("bottom")
        axis.setTicks([[(index, rung["name"]) for index, rung in enumerate(rungs)]])
        self.plot.setXRange(-0.6, len(rungs) - 0.4, padding=0)
        self._fill_table(rungs)
        self.summary_label.setText(record_summary(record))

    def _fill_table(self, rungs: list[dict]) -> None:
        self.table.setRowCount(len(rungs))
        for row, rung in enumerate(rungs):
            change = rung.get("change_from_previous")
            verdict = SHORT_VERDICTS.get(rung.get("against_previous"), "the first rung")
            set_cell(self.table, row, 0, rung["name"], bold=True)
            set_cell(self.table, row, 1, rung["change"]).setToolTip(rung["change"])
            set_cell(self.table, row, 2, f"{int(rung['parameters']):,}", right=True)
            set_cell(self.table, row, 3, f"{rung['mean_nats_per_char']:.3f}", right=True)
            set_cell(self.table, row, 4, f"{rung['spread_nats_per_char']:.3f}", right=True)
            text = verdict if change is None else f"{change:+.3f} {verdict}"
            set_cell(self.table, row, 5, text).setToolTip(rung.get("against_previous") or text)
        fit_table(self.table)
        fit_number_columns(self.table, elided_column=1)  # the change's words elide (whole in the tooltip), not the figures
        rows = self.table.verticalHeader().defaultSectionSize() * self.table.rowCount()
        self.table.setMinimumHeight(rows + self.table.horizontalHeader().sizeHint().height() + 2 * self.table.frameWidth())

    def _plot_clicked(self, event) -> None:
        if self.result is None or self.is_stale:
            return
        point = self.plot.getViewBox().mapSceneToView(event.scenePos())
        index = round(point.x())
        if 0 <= index < len(self.result["rungs"]) and abs(point.x() - index) < 0.45:
            self.open_rung(index)

    def open_rung(self, index: int) -> None:
        """Make the shown record's rung `index` the lab's model."""
        if self.result is not None and 0 <= index < len(self.result["rungs"]):
            self.open_model(self.result["rungs"][index]["model"])

    def open_model(self, model: str) -> None:
        """Make a rung's bundled model the lab's model (a preset of the same name carries its weights)."""
        from core.presets import PRESETS

        if model not in PRESETS:
            self.opened_label.setText(f"{model} is not a model this app bundles.")
            return
        self.state.set_config(PRESETS[model])
        self.opened_label.setText(f"Opened {model} as the lab's model: the other panels now show it.")

    def on_stale(self) -> None:
        self.seed_points.setData([])
        self.mean_marks.setData([])
        empty = np.zeros(0)
        self.spread_bars.setData(x=empty, y=empty, top=empty, bottom=empty)

    def export_targets(self):
        return [("Ladder: loss by rung (plot)", self.plot.getPlotItem())]
