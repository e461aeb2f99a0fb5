"""Tensor shapes: the reading's walk-through traced from a forward pass, with each tensor's memory.

B and T are the panel's own (and S, the source length, for an encoder-decoder); d_model and heads
start from the current config and can be changed
here to ask "what if" without touching the model (d_ff keeps the config's expansion ratio). The
trace is one view (`ShapesView`): its inputs are the traced config, B and T; a change of any of
them marks the table, the plots and the summary stale at once, and an impossible what-if or a T
over the context length replaces them with the reason.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
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
    QVBoxLayout,
    QWidget,
)

from core.config import ConfigError, ModelConfig
from core.display import format_bytes, plural
from core.experiments.shapes_what_if import what_if_config
from gui import theme
from gui.panels.base import Panel, Refusal, View
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.legend import legend_below
from gui.widgets.log_axis import log_ready_axes
from gui.widgets.plot_titles import wrap_title
from gui.widgets.table_rows import never_cut_cells

COLUMNS = ("step", "shape", "elements", "memory", "meaning")
SETTING_KEYS = ("batch", "seq", "d_model", "heads", "source_seq")  # in the order of ShapesControls.spins()


class MetaModelCache:
    """The meta-device model of the last traced config, so that changing B or T does not rebuild it.

    Building a big meta model is pure Python (seconds for Mixtral). Touched on the worker thread
    only; it rides along in the inputs, outside their equality.
    """

    def __init__(self) -> None:
        self._config: ModelConfig | None = None
        self._model: Any = None

    @property
    def model(self) -> Any:
        return self._model

    def model_for(self, config: ModelConfig, build) -> Any:
        if self._model is None or self._config != config:
            self._model = None  # the old one goes before the new one is built
            self._model, self._config = build(config), config
        return self._model


@dataclass(frozen=True)
class ShapesInputs:
    config: ModelConfig
    batch: int
    seq: int
    meta_models: MetaModelCache = field(compare=False, repr=False)
    source_seq: int | None = None  # S: an encoder-decoder's source length; None for one stack


@dataclass(frozen=True)
class ShapesResult:
    trace: Any  # core.experiments.shapes.ShapeTrace
    growth: Any  # core.experiments.shapes.AttentionGrowth


def compute_shapes(inputs: ShapesInputs, token) -> ShapesResult:
    from core.experiments.shapes import attention_growth, growth_lengths, meta_model, trace_shapes

    config, batch, seq, source = inputs.config, inputs.batch, inputs.seq, inputs.source_seq
    model = inputs.meta_models.model_for(config, meta_model)
    token.check()
    trace = trace_shapes(config, batch, seq, model=model, source_seq=source)
    token.check()
    growth = attention_growth(config, batch, growth_lengths(config.context_length, seq), model=model, source_seq=source)
    return ShapesResult(trace, growth)


class ShapesControls(QWidget):
    """B, T and the what-if d_model and heads; `changed` fires once per edit (or per sync from the config)."""

    changed = Signal()

    def __init__(self, config: ModelConfig, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        controls = FlowLayout(self)  # wraps on a narrow window or at a large text scale
        controls.setContentsMargins(0, 0, 0, 0)
        self.batch_spin = self._spin("B", 1, 4096, 1, "batch size", controls)
        self.seq_spin = self._spin("T", 1, 1 << 20, 128, "sequence length (at most the context length)", controls)
        self.source_spin = self._spin("S", 1, 1 << 20, 128, "an encoder-decoder's source length: what its encoder reads, "
                                      "and the keys and values of every cross-attention (at most the context length)",
                                      controls)
        self.d_model_spin = self._spin("d_model", 1, 1 << 20, config.d_model, "width of the residual stream", controls)
        self.heads_spin = self._spin("heads", 1, 1024, config.n_heads, "attention heads", controls)
        self.reset_button = QPushButton("Use model's d_model and heads")
        self.reset_button.setToolTip("Copy d_model and n_heads from the current model config")
        controls.addWidget(self.reset_button)
        pair = config.architecture == "encoder-decoder"
        self.source_spin.setVisible(pair)
        self.source_spin.property("caption").setVisible(pair)
        for spin in self.spins():
            spin.valueChanged.connect(self.changed)

    def spins(self) -> tuple[QSpinBox, ...]:
        return self.batch_spin, self.seq_spin, self.d_model_spin, self.heads_spin, self.source_spin

    def _spin(self, label: str, low: int, high: int, value: int, tip: str, layout: FlowLayout) -> QSpinBox:
        caption = QLabel(label)
        spin = QSpinBox()
        spin.setProperty("caption", caption)  # shown and hidden with its spin (S, for an encoder-decoder only)
        spin.setRange(low, high)
        spin.setValue(value)
        spin.setToolTip(tip)
        spin.setKeyboardTracking(False)
        spin.setObjectName(f"shapes-{label}")
        spin.setAccelerated(True)
        caption.setBuddy(spin)
        layout.addWidget(control_group(caption, spin))
        return spin

    def set_values(self, values: dict[str, int]) -> None:
        """Set several spins with one `changed` (a session, a lesson step, the config's own width)."""
        spins = dict(zip(SETTING_KEYS, self.spins()))
        for key, value in values.items():
            spin = spins[key]
            spin.blockSignals(True)
            # Clamped here: a spin box holds 32-bit values and raises on a larger one (a hand-edited session).
            spin.setValue(min(max(value, spin.minimum()), spin.maximum()))
            spin.blockSignals(False)
        self.changed.emit()

    def copy_from(self, config: ModelConfig) -> None:
        """The config's own width; a T or S beyond its context comes down to the context length."""
        values = {"d_model": config.d_model, "heads": config.n_heads}
        for key, spin in (("seq", self.seq_spin), ("source_seq", self.source_spin)):
            if spin.value() > config.context_length:
                values[key] = config.context_length
        pair = config.architecture == "encoder-decoder"
        self.source_spin.setVisible(pair)
        self.source_spin.property("caption").setVisible(pair)
        self.set_values(values)

    def traced_config(self, config: ModelConfig) -> ModelConfig:
        return what_if_config(config, self.d_model_spin.value(), self.heads_spin.value())


class ShapesView(View):
    """The traced walk-through: the shape table, memory per tensor, growth with T, and the summary."""

    name = "Tensor shapes"
    reads = frozenset({"config"})
    compute_fn = staticmethod(compute_shapes)

    def __init__(self, state, compute, controls: ShapesControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.meta_models = MetaModelCache()
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)  # the app's own markup around computed numbers
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, len(COLUMNS))
        never_cut_cells(self.table)
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
        self.memory_plot = wrap_title(pg.PlotWidget())
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

        self.growth_plot = wrap_title(pg.PlotWidget(axisItems=log_ready_axes()))
        self.growth_plot.setMenuEnabled(False)
        self.growth_plot.setTitle("As T grows (one layer, traced)")
        self.growth_plot.setLogMode(x=True, y=True)
        self.growth_plot.setLabel("bottom", "sequence length T")
        self.growth_plot.setLabel("left", "memory")
        self.growth_plot.showGrid(x=True, y=True, alpha=0.25)
        legend_below(self.growth_plot)
        self.attention_curve = self.growth_plot.plot([], [], name="(B, h, T, T) attention", symbol="o", symbolSize=5)
        self.residual_curve = self.growth_plot.plot([], [], name="(B, T, d) activation", symbol="s", symbolSize=5)
        self.current_marker = pg.ScatterPlotItem(size=14, symbol="o")
        self.growth_plot.addItem(self.current_marker)
        plots.addWidget(self.growth_plot)
        plots.setSizes([500, 500])
        splitter.addWidget(plots)
        splitter.setSizes([360, 300])
        layout.addWidget(splitter, 1)
        self.stale_labels = [self.summary]
        controls.changed.connect(self.inputs_changed)

    def inputs(self) -> ShapesInputs | Refusal:
        try:
            config = self.controls.traced_config(self.state.config)
        except ConfigError as error:
            return Refusal(f"{error.field}: {error.message}")
        batch, seq = self.controls.batch_spin.value(), self.controls.seq_spin.value()
        if seq > config.context_length:
            return Refusal(f"T = {seq} exceeds the context length of {config.context_length}; "
                           "lower T or raise context_length")
        source = self.controls.source_spin.value() if config.architecture == "encoder-decoder" else None
        if source is not None and source > config.context_length:
            return Refusal(f"S = {source} exceeds the context length of {config.context_length}; "
                           "lower S or raise context_length")
        return ShapesInputs(config, batch, seq, self.meta_models, source)

    def show_result(self, result: ShapesResult) -> None:
        trace = result.trace
        self._fill_table(trace)
        self._update_plots(trace, result.growth)
        config = trace.config
        matrix = trace.attention_matrix_bytes
        if trace.source_seq is not None:
            kept = (f"{format_bytes(trace.all_attention_weights_bytes)} if every layer keeps its weights ("
                    f"{plural(config.n_layers, 'decoder block')} of T x T and T x S, "
                    f"{plural(config.encoder_layers, 'encoder block')} of S x S)")
        else:
            kept = (f"{format_bytes(trace.all_attention_weights_bytes)} if all "
                    f"{plural(config.n_layers, 'layer')} keep theirs")
        source = (f", S={trace.source_seq} (the encoder's source; cross-attention is (B, h, T, S))"
                  if trace.source_seq is not None else "")
        towers = "block 0 of each tower" if trace.source_seq is not None else "block 0"
        self.memory_plot.setTitle("Memory per tensor (one block of each tower)" if trace.source_seq is not None
                                  else "Memory per tensor (one block)")
        self.summary.setText(
            f"<b>{html.escape(config.name)}</b>: B={trace.batch}, T={trace.seq}{source}, d_model={config.d_model}, "
            f"h={config.n_heads}, d_head={config.d_head}; traced on the {trace.device} device through {towers}. "
            f"<span style='color:{theme.current().warning}'><b>The (B, h, T, T) attention matrix</b> is "
            f"{format_bytes(matrix)} per layer ({matrix / max(1, trace.residual_bytes):.1f}x one (B, T, d_model) "
            f"activation), {kept}; doubling T quadruples it.</span>"
        )

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
        warning, no_brush = QBrush(theme.color("warning")), QBrush()
        # Built once: combining Qt's flags is a Python enum call, and each setter below repaints and re-measures
        # its cell, so a cell is only told what changed (a new model's trace replaces a table of the same rows).
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
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
                tip = f"{row.note}\ncaptured at {row.hook} ({row.dtype})"
                if item.toolTip() != tip:
                    item.setToolTip(tip)
                if column in (2, 3) and item.textAlignment() != right:
                    item.setTextAlignment(right)
                font, brush = (bold, warning) if row.is_attention_matrix else (plain, no_brush)
                if item.font() != font:
                    item.setFont(font)
                if item.foreground() != brush:
                    item.setForeground(brush)

    def _update_plots(self, trace, growth) -> None:
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
        if self.result is None:
            return
        rows = self.result.trace.rows
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

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            ("Memory per tensor (plot)", self.memory_plot.getPlotItem()),
            ("Growth with T (plot)", self.growth_plot.getPlotItem()),
            ("Shape table", self.table),
        ]


class ShapesPanel(Panel):
    title = "Tensor shapes"
    shortcut = ""
    refresh_on = frozenset()  # the view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        layout = self.layout()
        self.controls = ShapesControls(state.config)
        layout.addWidget(self.controls)
        # Before the view subscribes: a new config's own width reaches the spins before the view reads them.
        state.config_changed.connect(self._copy_from_config)
        self.controls.reset_button.clicked.connect(self._copy_from_config)
        self.shapes = self.add_view(ShapesView(state, compute, self.controls))
        layout.addWidget(self.shapes, 1)
        # Names lessons, sessions and tests point at.
        controls, view = self.controls, self.shapes
        self.batch_spin, self.seq_spin, self.source_seq_spin = controls.batch_spin, controls.seq_spin, controls.source_spin
        self.d_model_spin, self.heads_spin, self.reset_button = controls.d_model_spin, controls.heads_spin, controls.reset_button
        self.summary, self.table = view.summary, view.table
        self.memory_plot, self.growth_plot = view.memory_plot, view.growth_plot
        self.memory_bars, self.attention_bars = view.memory_bars, view.attention_bars
        self.attention_curve, self.residual_curve, self.current_marker = (view.attention_curve, view.residual_curve,
                                                                          view.current_marker)
        self.apply_theme()

    @property
    def trace(self):
        """The shape trace on screen (None until the first result, or while a refusal is shown)."""
        return self.shapes.result.trace if self.shapes.result is not None else None

    @property
    def growth(self):
        return self.shapes.result.growth if self.shapes.result is not None else None

    def traced_config(self) -> ModelConfig:
        """The current config with the panel's d_model and heads (raises ConfigError if impossible)."""
        return self.controls.traced_config(self.state.config)

    def _copy_from_config(self) -> None:
        self.controls.copy_from(self.state.config)

    def settings(self) -> dict[str, Any]:
        return dict(zip(SETTING_KEYS, (spin.value() for spin in self.controls.spins())))

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        values = {key: value for key, value in data.items()
                  if key in SETTING_KEYS and isinstance(value, int) and not isinstance(value, bool)}
        if values:
            self.controls.set_values(values)


__all__ = ["ShapesPanel", "ShapesView", "ShapesInputs", "compute_shapes"]
