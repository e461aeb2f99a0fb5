"""Router: which experts each token of the lab's text goes to in each layer, with the router's probabilities, how many
tokens each expert received, and how many of the model's parameters one token uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import as_sentence, labelled, make_plot, note_label, plain_label, sequence_refusal
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap
from gui.widgets.legend import legend_below
from gui.widgets.turning_splitter import TurningSplitter


@dataclass(frozen=True)
class RouterInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]


def compute_router(inputs: RouterInputs, token):
    from core.experiments.routing import routing

    token.check()
    return routing(inputs.model, list(inputs.tokens), inputs.tokenizer)


class RouterView(View):
    name = "Router"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_router)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.layer_spin = QSpinBox()
        self.layer_spin.setObjectName("router-layer")
        self.layer_spin.setToolTip("The layer whose router is drawn (the load plot shows every layer)")
        self.layer_spin.valueChanged.connect(self._redraw)  # a slice of the result: nothing recomputes
        labelled(row, "layer", self.layer_spin)
        self.note_label = note_label("router-note")
        row.addWidget(self.note_label)
        self.add_controls(row)
        self.active_label = plain_label(name="router-active")
        self.load_label = plain_label(name="router-load")
        self.stale_labels += [self.active_label, self.load_label, self.note_label]
        column.addWidget(self.active_label)
        column.addWidget(self.load_label)
        splitter = TurningSplitter()
        self.map = Heatmap("token", "expert", "Router probabilities", value_format="{:.3f}")
        self.map.setObjectName("router-map")
        self.chosen_marks = pg.ScatterPlotItem(symbol="o", size=9, pxMode=True)
        self.map.plot.addItem(self.chosen_marks)
        splitter.addWidget(self.map)
        self.load_plot = make_plot("Tokens per expert, every layer", "expert", "tokens")
        self.load_plot.setObjectName("router-load-plot")
        legend_below(self.load_plot)
        self.load_bars: list[pg.BarGraphItem] = []
        self.balanced_line = pg.InfiniteLine(angle=0, movable=False)
        self.load_plot.addItem(self.balanced_line)
        splitter.addWidget(self.load_plot)
        splitter.setSizes([600, 400])
        column.addWidget(splitter, 1)
        state.model_changed.connect(self._follow_model)
        self._follow_model()

    def _follow_model(self) -> None:
        """The layer picker offers the new model's layers; a layer it lacks is reset and the note says so."""
        model = self.state.model
        layers = model.config.n_layers if model is not None else 1
        note = ""
        if model is not None and self.layer_spin.value() > layers - 1:
            note = f"layer reset to {layers - 1}: {model.config.name} has {layers} layer{'s' if layers != 1 else ''}"
        self.layer_spin.setRange(0, max(0, layers - 1))
        if model is not None:
            self.note_label.setText(note)

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        from core.experiments.routing import moe_problem

        problem = moe_problem(model.config)
        if problem:
            return Refusal(as_sentence(problem), offer="tiny-moe" if not model.config.is_moe else "")
        problem = sequence_refusal(model, self.state.tokens)
        if problem:
            return Refusal(problem)
        return RouterInputs(model, self.state.tokenizer, tuple(self.state.tokens))

    # ---- showing -------------------------------------------------------------------------------
    def show_result(self, result) -> None:
        config = self.shown_inputs.model.config
        agrees = ("the same as" if result.instantiated_parameters == result.total_parameters
                  else "BUT the model itself holds")
        self.active_label.setText(
            f"{config.name}: {result.total_parameters:,} parameters by formula ({agrees} "
            f"{result.instantiated_parameters:,} counted on the model). One token uses {result.active_parameters:,} of "
            f"them, {result.active_share:.1%}: in each of {result.n_layers} layers only its {result.top_k} chosen "
            f"experts of {result.n_experts} run, {result.expert_parameters:,} parameters each.")
        self.load_label.setText("Tokens per expert: " + "; ".join(
            f"layer {layer} " + ", ".join(f"E{e} {n}" for e, n in enumerate(result.load[layer]))
            for layer in range(result.n_layers)) + f" (evenly spread: {result.balanced_load:g} each).")
        self._draw_map(result)
        self._draw_load(result)

    def _redraw(self) -> None:
        if self.result is not None and not self.is_stale and not self.showing_message:
            self._draw_map(self.result)

    def _draw_map(self, result) -> None:
        layer = min(self.layer_spin.value(), result.n_layers - 1)
        probabilities = result.probabilities[layer].T  # (E, T)
        self.map.plot.setTitle(f"Router probabilities of layer {layer} (circles: the {result.top_k} experts each "
                               "token is sent to)")
        self.map.set_data(probabilities, [f"E{e}" for e in range(result.n_experts)], list(result.token_labels),
                          levels=(0.0, float(probabilities.max())))
        chosen = result.chosen[layer]  # (T, k)
        positions = np.repeat(np.arange(chosen.shape[0]), chosen.shape[1]) + 0.5
        self.chosen_marks.setData(x=positions, y=chosen.ravel() + 0.5, brush=None,
                                  pen=theme.pen("highlight", width=2))

    def _draw_load(self, result) -> None:
        layers, experts = result.load.shape
        while len(self.load_bars) < layers:
            bars = pg.BarGraphItem(x=[], height=[], width=0.1)
            self.load_plot.addItem(bars)
            self.load_bars.append(bars)
        legend = self.load_plot.getPlotItem().legend
        if legend is not None:
            legend.clear()
        width = 0.8 / layers
        for layer, bars in enumerate(self.load_bars):
            if layer >= layers:
                bars.setOpts(x=[], height=[])
                continue
            colour = theme.series_color(layer)
            bars.setOpts(x=np.arange(experts) - 0.4 + width * (layer + 0.5), height=result.load[layer], width=width,
                         brush=pg.mkBrush(colour), pen=pg.mkPen(colour))
            if legend is not None:
                legend.addItem(bars, f"layer {layer}")
        self.balanced_line.setPos(result.balanced_load)
        self.balanced_line.setPen(theme.pen("muted", width=2, style=Qt.PenStyle.DashLine))
        self.load_plot.getAxis("bottom").setTicks([[(e, f"E{e}") for e in range(experts)]])
        self.load_plot.setXRange(-0.6, experts - 0.4, padding=0)

    def on_stale(self) -> None:
        self.chosen_marks.setData([], [])
        for bars in self.load_bars:
            bars.setOpts(x=[], height=[])

    def export_targets(self):
        return [("Router (view)", self), ("Router probabilities (heatmap)", self.map.plot.getPlotItem()),
                ("Tokens per expert (bars)", self.load_plot.getPlotItem())]
