"""Encodings: the sinusoidal table with each pair's wavelength and a row's fingerprint, the current model's
learned position table, and the ALiBi penalty per head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QSpinBox, QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import View
from gui.panels.positions.common import (
    EXACT_FORMAT,
    PositionsControls,
    even,
    hide_stale_text,
    labelled,
    make_plot,
    make_spin,
    plain_label,
    positional_name,
    style_colorbars,
    style_legends,
)
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap


@dataclass(frozen=True)
class EncodingsInputs:
    n_positions: int
    d_model: int  # width of the sinusoidal table
    learned_model: Any  # the current model when it has a learned table, else None
    learned_note: str  # why there is no learned table ("" when there is one)
    alibi_heads: int
    alibi_length: int


@dataclass(frozen=True)
class EncodingsData:
    sinusoidal: Any  # core SinusoidalHeatmap
    learned: Any  # core LearnedPositionTable, or None
    alibi: Any  # core AlibiMatrices


def compute_encodings(inputs: EncodingsInputs, token) -> EncodingsData:
    from core.experiments import positions

    sinusoidal = positions.sinusoidal_heatmap(inputs.n_positions, inputs.d_model)
    token.check()
    learned = positions.learned_position_table(inputs.learned_model) if inputs.learned_model is not None else None
    alibi = positions.alibi_matrix(inputs.alibi_heads, inputs.alibi_length)
    return EncodingsData(sinusoidal=sinusoidal, learned=learned, alibi=alibi)


def learned_table_note(model) -> str:
    """Why this model shows no learned position table, or "" when it has one."""
    if model is None:
        return "No model is loaded yet."
    config = model.config
    if config.positional != "learned":
        return (f"{config.name} uses {positional_name(config.positional)} positions, so it has no learned table. "
                "Load a model with learned positions (the tiny-gpt preset) to see one.")
    return ""


class EncodingsView(View):
    name = "Encodings"
    reads = frozenset({"model"})
    compute_fn = staticmethod(compute_encodings)

    def __init__(self, state, compute, controls: PositionsControls, channel_prefix: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        config_width = max(2, even(state.config.d_model))
        self.encoding_width_spin = make_spin(2, 1024, config_width, "Width d_model of the sinusoidal table", step=2)
        self.fingerprint_spin = QSpinBox()
        self.fingerprint_spin.setRange(0, controls.n_positions - 1)
        self.fingerprint_spin.setValue(3)
        self.fingerprint_spin.setToolTip("The position whose row (its fingerprint) is drawn; or click the table")
        self.fingerprint_spin.valueChanged.connect(lambda _value: self._redraw_fingerprint())
        self.alibi_heads_spin = make_spin(1, 64, 8, "Heads of the ALiBi layer: each gets its own slope")
        self.alibi_length_spin = make_spin(2, 256, 24, "Positions of the ALiBi matrix")
        self.alibi_head_combo = QComboBox()
        self.alibi_head_combo.setToolTip("Which head's penalty to show")
        self._alibi_head = 0  # the head asked for; the combo gets its entries with the first result
        self.alibi_head_combo.currentIndexChanged.connect(self._alibi_head_picked)
        labelled(row, "sinusoid d_model", self.encoding_width_spin)
        labelled(row, "fingerprint of position", self.fingerprint_spin)
        labelled(row, "ALiBi heads", self.alibi_heads_spin)
        labelled(row, "T", self.alibi_length_spin)
        labelled(row, "show", self.alibi_head_combo)
        self.add_controls(row)

        columns = QSplitter(Qt.Orientation.Horizontal)
        left = QSplitter(Qt.Orientation.Vertical)
        self.sinusoid_map = Heatmap("dimension", "position", "Sinusoidal table PE[pos, dim]", value_format=EXACT_FORMAT)
        self.sinusoid_map.clicked.connect(lambda row_index, _col: self.fingerprint_spin.setValue(row_index))
        left.addWidget(self.sinusoid_map)
        self.fingerprint_plot = make_plot("Fingerprint of one position", "dimension", "PE")
        self.fingerprint_bars = pg.BarGraphItem(x=[0], height=[0], width=0.8)
        self.fingerprint_plot.addItem(self.fingerprint_bars)
        left.addWidget(self.fingerprint_plot)
        self.wavelength_plot = make_plot("Wavelength of each (sin, cos) pair", "pair i (dims 2i, 2i+1)", "wavelength")
        self.wavelength_plot.setLogMode(x=False, y=True)
        self.wavelength_curve = self.wavelength_plot.plot([], [], symbol="o", symbolSize=6)
        left.addWidget(self.wavelength_plot)
        left.setSizes([420, 220, 220])
        columns.addWidget(left)

        right = QSplitter(Qt.Orientation.Vertical)
        learned_box = QWidget()
        learned_column = QVBoxLayout(learned_box)
        learned_column.setContentsMargins(0, 0, 0, 0)
        self.learned_note = plain_label(name="positions-learned-note")
        self.learned_note.setWordWrap(True)
        self.learned_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        learned_column.addWidget(self.learned_note)
        self.learned_map = Heatmap("dimension", "position", "Learned positions of the model", value_format=EXACT_FORMAT)
        learned_column.addWidget(self.learned_map, 1)
        right.addWidget(learned_box)
        self.alibi_map = Heatmap("key position", "query position", "ALiBi penalty added to scores",
                                 value_format=EXACT_FORMAT)
        right.addWidget(self.alibi_map)
        right.setSizes([430, 430])
        columns.addWidget(right)
        column.addWidget(columns, 1)
        self.stale_labels = [self.learned_note]
        controls.positions_spin.valueChanged.connect(self.inputs_changed)
        for spin in (self.encoding_width_spin, self.alibi_heads_spin, self.alibi_length_spin):
            spin.valueChanged.connect(self.inputs_changed)

    def spins(self) -> dict[str, QSpinBox]:
        """This view's numeric controls under their session keys."""
        return {"encoding_d_model": self.encoding_width_spin, "fingerprint": self.fingerprint_spin,
                "alibi_heads": self.alibi_heads_spin, "alibi_length": self.alibi_length_spin}

    def inputs(self) -> EncodingsInputs:
        model = self.state.model
        note = learned_table_note(model)
        return EncodingsInputs(self.controls.n_positions, even(self.encoding_width_spin.value()),
                               model if not note else None, note, self.alibi_heads_spin.value(),
                               self.alibi_length_spin.value())

    def show_result(self, data: EncodingsData) -> None:
        table = data.sinusoidal.table
        self.sinusoid_map.set_data(table, row_labels=[str(p) for p in range(table.shape[0])],
                                   col_labels=[str(d) for d in range(table.shape[1])], levels=(-1.0, 1.0))
        self.wavelength_curve.setData(np.arange(data.sinusoidal.wavelengths.shape[0]), data.sinusoidal.wavelengths)
        self.fingerprint_spin.blockSignals(True)
        self.fingerprint_spin.setMaximum(table.shape[0] - 1)
        self.fingerprint_spin.blockSignals(False)
        self._redraw_fingerprint()
        if data.learned is None:
            self.learned_note.setText(self.shown_inputs.learned_note)
            self.learned_map.hide()
        else:
            learned = data.learned.table
            self.learned_note.setText(f"{data.learned.label}. Rows of a trained table vary smoothly with position; "
                                      "an untrained one is noise.")
            self.learned_map.set_data(learned, row_labels=[str(p) for p in range(learned.shape[0])],
                                      col_labels=[str(d) for d in range(learned.shape[1])])
            self.learned_map.show()
        heads = data.alibi.head_labels
        self.alibi_head_combo.blockSignals(True)
        self.alibi_head_combo.clear()
        self.alibi_head_combo.addItems(list(heads))
        self.alibi_head_combo.setCurrentIndex(min(self._alibi_head, len(heads) - 1))
        self.alibi_head_combo.blockSignals(False)
        self._redraw_alibi()

    @property
    def alibi_head(self) -> int:
        """The ALiBi head on show (0-based), or the one asked for until the heads are known."""
        shown = self.alibi_head_combo.currentIndex()
        return shown if shown >= 0 else self._alibi_head

    def set_alibi_head(self, head: int) -> None:
        """Show this head's penalty (the last head where the layer has fewer)."""
        self._alibi_head = min(max(0, head), self.alibi_heads_spin.maximum() - 1)
        if self.alibi_head_combo.count():
            self.alibi_head_combo.setCurrentIndex(min(self._alibi_head, self.alibi_head_combo.count() - 1))

    def _alibi_head_picked(self, index: int) -> None:
        if index >= 0:
            self._alibi_head = index
        self._redraw_alibi()

    def refresh_hover(self) -> None:
        for heatmap in (self.sinusoid_map, self.learned_map, self.alibi_map):
            heatmap.refresh_hover()

    def _redraw_fingerprint(self) -> None:
        data = None if self.is_stale else self.result
        if data is None:
            return
        table = data.sinusoidal.table
        row = min(self.fingerprint_spin.value(), table.shape[0] - 1)
        self.fingerprint_bars.setOpts(x=np.arange(table.shape[1]), height=table[row], width=0.8,
                                      brush=theme.brush("primary"), pen=pg.mkPen(None))
        self.fingerprint_plot.setTitle(f"Fingerprint of position {row}: its row of the table")
        self.fingerprint_plot.setYRange(-1.1, 1.15, padding=0)

    def _redraw_alibi(self) -> None:
        data = None if self.is_stale else self.result
        if data is None:
            return
        head = max(0, self.alibi_head_combo.currentIndex())
        bias = data.alibi.bias[head]
        labels = [str(p) for p in range(bias.shape[0])]
        self.alibi_map.set_data(bias, row_labels=labels, col_labels=labels)
        self.alibi_map.plot.setTitle(f"ALiBi penalty, {data.alibi.head_labels[head]}")

    def apply_theme(self) -> None:
        # Cleared while stale: the table below keeps its place.
        self.set_label_minimum_height(self.learned_note, 2 * QFontMetrics(theme.font()).lineSpacing())
        self.wavelength_curve.setPen(theme.pen("primary"))
        self.wavelength_curve.setSymbolBrush(theme.brush("primary"))
        self.wavelength_curve.setSymbolPen(theme.pen("primary", width=1))
        super().apply_theme()
        hide_stale_text(self)
        style_legends(self)
        style_colorbars(self)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            ("Sinusoidal table (heatmap)", self.sinusoid_map.plot.getPlotItem()),
            ("Fingerprint of a position (plot)", self.fingerprint_plot.getPlotItem()),
            ("Sinusoid wavelengths (plot)", self.wavelength_plot.getPlotItem()),
            ("Learned position embeddings (heatmap)", self.learned_map.plot.getPlotItem()),
            ("ALiBi penalty (heatmap)", self.alibi_map.plot.getPlotItem()),
        ]
