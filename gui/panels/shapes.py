"""Tensor shapes: the reading's walk-through traced from a forward pass, with each tensor's memory.

B and T are the panel's own; d_model and heads start from the current config and can be changed
here to ask "what if" without touching the model (d_ff keeps the config's expansion ratio).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from core.config import ConfigError, ModelConfig
from core.display import format_bytes
from gui import theme
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.panels.base import Panel

COLUMNS = ("step", "shape", "elements", "memory", "meaning")


_meta_models: dict[ModelConfig, Any] = {}  # touched on the worker thread only


def _compute_shapes(config: ModelConfig, batch: int, seq: int):
    from core.experiments.shapes import attention_growth, growth_lengths, meta_model, trace_shapes

    # Building a big meta model is pure Python (seconds for Mixtral); changing B or T should not redo it.
    model = _meta_models.get(config)
    if model is None:
        _meta_models.clear()
        model = _meta_models[config] = meta_model(config)
    trace = trace_shapes(config, batch, seq, model=model)
    growth = attention_growth(config, batch, growth_lengths(config.context_length, seq), model=model)
    return trace, growth


class ShapesPanel(Panel):
    title = "Tensor shapes"
    shortcut = ""
    refresh_on = frozenset({"config"})

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.trace = None
        self.growth = None
        layout = self.layout()

        controls = FlowLayout()  # wraps on a narrow window or at a large text scale
        self.batch_spin = self._spin("B", 1, 4096, 1, "batch size", controls)
        self.seq_spin = self._spin("T", 1, 1 << 20, 128, "sequence length (at most the context length)", controls)
        self.d_model_spin = self._spin("d_model", 1, 1 << 20, state.config.d_model, "width of the residual stream", controls)
        self.heads_spin = self._spin("heads", 1, 1024, state.config.n_heads, "attention heads", controls)
        self.reset_button = QPushButton("Use model's d_model and heads")
        self.reset_button.setToolTip("Copy d_model and n_heads from the current model config")
        self.reset_button.clicked.connect(self._copy_from_config)
        controls.addWidget(self.reset_button)
        layout.addLayout(controls)

        self.summary = QLabel("Waiting for torch to load...")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        # Sized once per result (see _fill_table): ResizeToContents would re-measure on every cell edit.
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        splitter.addWidget(self.table)

        plots = QSplitter(Qt.Orientation.Horizontal)
        self.memory_plot = pg.PlotWidget()
        self.memory_plot.setMenuEnabled(False)
        self.memory_plot.setTitle("Memory per tensor (one block)")
        self.memory_plot.setLabel("bottom", "memory", units="B")
        self.memory_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.memory_plot.getAxis("bottom").setLabel("memory (MiB)")
        self.memory_plot.invertY(True)
        self.memory_plot.setMouseEnabled(x=False, y=False)
        self.memory_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.7, width=[0])
        self.attention_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.7, width=[0])
        self.memory_plot.addItem(self.memory_bars)
        self.memory_plot.addItem(self.attention_bars)
        self.memory_plot.getViewBox().sigResized.connect(self._update_memory_ticks)
        plots.addWidget(self.memory_plot)

        self.growth_plot = pg.PlotWidget()
        self.growth_plot.setMenuEnabled(False)
        self.growth_plot.setTitle("As T grows (one layer, traced)")
        self.growth_plot.setLogMode(x=True, y=True)
        self.growth_plot.setLabel("bottom", "sequence length T")
        self.growth_plot.setLabel("left", "memory")
        self.growth_plot.showGrid(x=True, y=True, alpha=0.25)
        self.growth_plot.addLegend(offset=(10, 10))
        self.attention_curve = self.growth_plot.plot([], [], name="(B, h, T, T) attention weights", symbol="o", symbolSize=5)
        self.residual_curve = self.growth_plot.plot([], [], name="(B, T, d_model) activation", symbol="s", symbolSize=5)
        self.current_marker = pg.ScatterPlotItem(size=14, symbol="o")
        self.growth_plot.addItem(self.current_marker)
        plots.addWidget(self.growth_plot)
        plots.setSizes([500, 500])
        splitter.addWidget(plots)
        splitter.setSizes([360, 300])
        layout.addWidget(splitter, 1)

        for spin in (self.batch_spin, self.seq_spin, self.d_model_spin, self.heads_spin):
            spin.valueChanged.connect(self.schedule_refresh)
        self.apply_theme()

    def _spin(self, label: str, low: int, high: int, value: int, tip: str, layout: FlowLayout) -> QSpinBox:
        caption = QLabel(label)
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setValue(value)
        spin.setToolTip(tip)
        spin.setKeyboardTracking(False)
        spin.setObjectName(f"shapes-{label}")
        spin.setAccelerated(True)
        caption.setBuddy(spin)
        layout.addWidget(control_group(caption, spin))
        return spin

    # ---- state -> request ----------------------------------------------------------------------
    def traced_config(self) -> ModelConfig:
        """The current config with the panel's d_model and heads (raises ConfigError if impossible)."""
        config = self.state.config
        d_model, heads = self.d_model_spin.value(), self.heads_spin.value()
        if (d_model, heads) == (config.d_model, config.n_heads):
            return config
        changes: dict[str, Any] = {"d_model": d_model, "n_heads": heads, "name": f"{config.name} (what-if)"}
        changes["d_ff"] = max(1, round(config.d_ff * d_model / config.d_model))
        if config.n_kv_heads is not None and heads % config.n_kv_heads:
            changes["n_kv_heads"] = None
        return config.replace(**changes)

    def _copy_from_config(self) -> None:
        config = self.state.config
        for spin, value in ((self.d_model_spin, config.d_model), (self.heads_spin, config.n_heads)):
            spin.blockSignals(True)
            spin.setValue(value)
            spin.blockSignals(False)
        self.schedule_refresh()

    def _on_state_changed(self, field: str) -> None:
        if field == "config":
            self._copy_from_config()
        super()._on_state_changed(field)

    def refresh(self) -> None:
        try:
            config = self.traced_config()
        except ConfigError as error:
            self.show_error(f"{error.field}: {error.message}")
            return
        batch, seq = self.batch_spin.value(), self.seq_spin.value()
        if seq > config.context_length:
            self.show_error(f"T = {seq} exceeds the context length of {config.context_length}; lower T or raise context_length")
            return
        self.summary.setText(f"Tracing {config.name} at B={batch}, T={seq}...")
        self.submit(lambda: _compute_shapes(config, batch, seq), self.show_result, "tensor shapes")

    # ---- result -> views -----------------------------------------------------------------------
    def show_result(self, result) -> None:
        self.trace, self.growth = result
        trace = self.trace
        self._fill_table(trace)
        self._update_plots()
        config = trace.config
        matrix = trace.attention_matrix_bytes
        layers = config.n_layers + config.encoder_layers if config.architecture == "encoder-decoder" else config.n_layers
        self.summary.setText(
            f"<b>{config.name}</b>: B={trace.batch}, T={trace.seq}, d_model={config.d_model}, h={config.n_heads}, "
            f"d_head={config.d_head}; traced on the {trace.device} device through block 0. "
            f"<span style='color:{theme.current().warning}'><b>The (B, h, T, T) attention matrix</b> is "
            f"{format_bytes(matrix)} per layer ({matrix / max(1, trace.residual_bytes):.1f}x one (B, T, d_model) "
            f"activation), {format_bytes(matrix * layers)} if all {layers} layers keep theirs; "
            f"doubling T quadruples it.</span>"
        )
        self.result_shown.emit()

    def _fill_table(self, trace) -> None:
        self.table.setUpdatesEnabled(False)
        try:
            self._fill_cells(trace)
        finally:
            self.table.setUpdatesEnabled(True)
        for column in range(len(COLUMNS) - 1):
            self.table.resizeColumnToContents(column)
        self.table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.6))

    def _fill_cells(self, trace) -> None:
        self.table.setRowCount(len(trace.rows))
        # Fonts come from the theme, not the table: the application font change reaches the table later.
        bold, plain = theme.font(bold=True), theme.font()
        warning = QBrush(theme.color("warning"))
        for index, row in enumerate(trace.rows):
            cells = (
                row.name,
                "(" + ", ".join(str(n) for n in row.shape) + ")",
                f"{row.elements:,}",
                format_bytes(row.bytes),
                row.note,
            )
            for column, text in enumerate(cells):
                item = self.table.item(index, column)
                if item is None:
                    item = QTableWidgetItem()
                    self.table.setItem(index, column, item)
                if item.text() != text:
                    item.setText(text)
                item.setToolTip(f"{row.note}\ncaptured at {row.hook} ({row.dtype})")
                if column in (2, 3):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setFont(bold if row.is_attention_matrix else plain)
                item.setForeground(warning if row.is_attention_matrix else QBrush())

    def _update_plots(self) -> None:
        trace, growth = self.trace, self.growth
        if trace is None or growth is None:
            return
        rows = trace.rows
        largest = max(row.bytes for row in rows)
        unit, divisor = next(((u, d) for u, d in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)) if largest >= d), ("B", 1))
        mib = np.array([row.bytes / divisor for row in rows])
        self.memory_plot.getAxis("bottom").setLabel(f"memory ({unit})")
        ys = np.arange(len(rows), dtype=float)
        is_matrix = np.array([row.is_attention_matrix for row in rows])
        self.memory_bars.setOpts(x0=np.zeros(int((~is_matrix).sum())), y=ys[~is_matrix], width=mib[~is_matrix], height=0.7,
                                 brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        self.attention_bars.setOpts(x0=np.zeros(int(is_matrix.sum())), y=ys[is_matrix], width=mib[is_matrix], height=0.7,
                                    brush=theme.brush("highlight"), pen=theme.pen("highlight", width=1))
        self._update_memory_ticks()
        self.memory_plot.setYRange(-0.6, len(rows) - 0.4, padding=0)
        self.memory_plot.setXRange(0, max(float(mib.max()), 1e-6) * 1.05, padding=0)

        seqs = np.array(growth.seqs, dtype=float)
        self.attention_curve.setData(seqs, np.array(growth.attention_bytes, dtype=float))
        self.residual_curve.setData(seqs, np.array(growth.residual_bytes, dtype=float))
        self.attention_curve.setPen(theme.pen("highlight"))
        self.attention_curve.setSymbolBrush(theme.brush("highlight"))
        self.attention_curve.setSymbolPen(theme.pen("highlight", width=1))
        self.residual_curve.setPen(theme.pen("primary"))
        self.residual_curve.setSymbolBrush(theme.brush("primary"))
        self.residual_curve.setSymbolPen(theme.pen("primary", width=1))
        self._set_log_ticks(growth.seqs, growth.attention_bytes + growth.residual_bytes)
        # The scatter item sits in a log-log view, so it is given log10 coordinates itself.
        self.current_marker.setData([np.log10(trace.seq)], [np.log10(max(1, trace.attention_matrix_bytes))],
                                    brush=pg.mkBrush(None), pen=theme.pen("text", width=2.5))

    def _update_memory_ticks(self) -> None:
        """Label every row when there is room; on a cramped plot (big text) every k-th and the attention rows."""
        if self.trace is None:
            return
        rows = self.trace.rows
        line = QFontMetrics(theme.font(0.9)).height()
        room = max(1, int(self.memory_plot.getViewBox().height() // max(1, line)))
        step = max(1, -(-len(rows) // room))
        # Greedy by importance: the attention matrix, then the biggest tensors, each label keeping its room.
        order = sorted(range(len(rows)), key=lambda i: (not rows[i].name == "attention weights", -rows[i].bytes, i))
        chosen: list[int] = []
        for index in order:
            if all(abs(index - other) >= step for other in chosen):
                chosen.append(index)
        self.memory_plot.getAxis("left").setTicks([[(float(i), rows[i].name) for i in sorted(chosen)]])

    def _set_log_ticks(self, seqs: tuple[int, ...], byte_counts: tuple[int, ...]) -> None:
        """Powers of two on T and powers of 1024 on memory read better than pyqtgraph's decades."""
        longest = max(seqs)
        step = 4 if longest > 512 else 2
        t_ticks, n = [], 1
        while n <= longest:
            t_ticks.append((float(np.log10(n)), f"{n:,}" if n < 10_000 else f"{n // 1024}k"))
            n *= step
        self.growth_plot.getAxis("bottom").setTicks([t_ticks])
        low, high = max(1, min(byte_counts)), max(1, max(byte_counts))
        m_ticks, n = [], 1
        while n <= high * 1024:
            if n * 1024 >= low:
                m_ticks.append((float(np.log10(n)), format_bytes(n).replace(".0", "")))
            n *= 1024
        minor = [(float(np.log10(v)), "") for v in (2**k for k in range(0, 60)) if low / 2 <= v <= high * 2]
        self.growth_plot.getAxis("left").setTicks([m_ticks, minor])

    def apply_theme(self) -> None:
        super().apply_theme()
        for widget in (self.memory_plot, self.growth_plot):
            widget.getPlotItem().showGrid(x=widget is self.growth_plot, y=widget is self.growth_plot, alpha=0.25)
        if self.trace is not None:
            self._fill_table(self.trace)
            self._update_plots()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            (self.title, self),
            ("Memory per tensor (plot)", self.memory_plot.getPlotItem()),
            ("Growth with T (plot)", self.growth_plot.getPlotItem()),
            ("Shape table", self.table),
        ]

    def settings(self) -> dict[str, Any]:
        return {
            "batch": self.batch_spin.value(),
            "seq": self.seq_spin.value(),
            "d_model": self.d_model_spin.value(),
            "heads": self.heads_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        for key, spin in (("batch", self.batch_spin), ("seq", self.seq_spin), ("d_model", self.d_model_spin), ("heads", self.heads_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.blockSignals(True)
                spin.setValue(value)
                spin.blockSignals(False)
        self.schedule_refresh()


__all__ = ["ShapesPanel"]
