"""Attribution: the clean input's logit (difference) split into what each part wrote, beside the model's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.causal_lab.common import POSITION_TIP, CausalControls, chosen_position, position_spin
from gui.panels.common import as_sentence, labelled, make_plot, plain_label, sequence_refusal
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap
from gui.widgets.legend import legend_below
from gui.widgets.turning_splitter import TurningSplitter


KEY_TEXT = ("Bars per layer: its attention bias (upper, blue) and its FFN or experts (lower, orange). The lens "
            "reads the stream before block 0 (emb) and after each block.")
KEY_TEXT_ATTENTION_ONLY = ("Bars per layer: its attention bias; the model is attention-only, so no FFN writes into the "
                           "stream. The lens reads the stream before block 0 (emb) and after each block.")


@dataclass(frozen=True)
class AttributionInputs:
    model: Any
    tokens: tuple[int, ...]
    answer: int | None  # None: the model's top prediction
    foil: int | None
    position: int


def compute_attribution(inputs: AttributionInputs, token):
    from core.experiments.attribution import direct_logit_attribution

    token.check()
    return direct_logit_attribution(inputs.model, list(inputs.tokens), inputs.answer, inputs.foil, inputs.position)


class AttributionView(View):
    name = "Attribution"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_attribution)

    def __init__(self, state, compute, controls: CausalControls, channel_prefix: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.position_spin = position_spin("attribution-position", f"The position whose logit is split; {POSITION_TIP}")
        self.position_spin.valueChanged.connect(self.inputs_changed)
        labelled(row, "position", self.position_spin)
        state.tokens_changed.connect(self._update_position_range)
        self._update_position_range()
        self.add_controls(row)
        self.summary_label = plain_label(name="attribution-summary")
        self.stale_labels.append(self.summary_label)
        column.addWidget(self.summary_label)
        self.key_label = plain_label(KEY_TEXT, name="attribution-key")
        column.addWidget(self.key_label)
        splitter = TurningSplitter()
        self.heads_map = Heatmap("head", "layer", "Direct effect of each head")
        splitter.addWidget(self.heads_map)
        # One row per layer (its attention bias above, its FFN or experts below) keeps the labels few enough
        # to read at projector scale; the command line lists every part on its own.
        self.parts_plot = make_plot("Biases and FFNs", "direct effect on the logit", "")
        self.parts_plot.invertY(True)  # the first part on top, in the order they are written into the stream
        self.parts_bars = {role: pg.BarGraphItem(x0=[], y=[], width=[], height=0.4)
                           for role in ("single", "attn_bias", "ffn")}
        for bars in self.parts_bars.values():
            self.parts_plot.addItem(bars)
        splitter.addWidget(self.parts_plot)
        self.lens_plot = make_plot("Logit lens", "stream after block", "logit")
        legend_below(self.lens_plot)
        self.lens_plot.setToolTip("own scale: the stream read through the final norm with its own scale (the classic "
                                  "logit lens); final scale: with the final run's scale, i.e. the parts summed so far")
        self.lens_own = self.lens_plot.plot([], [], name="own scale", symbol="o")
        self.lens_final = self.lens_plot.plot([], [], name="final scale", symbol="s")
        splitter.addWidget(self.lens_plot)
        column.addWidget(splitter, 1)

    def _update_position_range(self) -> None:
        self.position_spin.setMaximum(max(0, len(self.state.tokens) - 1))

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        from core.experiments.attribution import refusal  # torch is loaded: a model is

        problem = refusal(model)
        if problem:
            return Refusal(as_sentence(problem))
        tokens = tuple(self.state.tokens)
        if not tokens:
            return Refusal("Type a text above: the attribution splits the logit of one of its positions.")
        problem = sequence_refusal(model, list(tokens))  # ids of another vocabulary (a tokenizer kept from another model)
        if problem:
            return Refusal(problem)
        answer, foil, problem = self.controls.answer_and_foil(self.state.tokenizer, model.config.vocab_size)
        if problem:
            return Refusal(problem[0].upper() + problem[1:] + ".")
        return AttributionInputs(model, tokens, answer, foil, chosen_position(self.position_spin, len(tokens)))

    def show_result(self, result) -> None:
        inputs: AttributionInputs = self.shown_inputs
        config = inputs.model.config
        verdict = "agree" if result.agrees else "DO NOT agree"
        metric = self.controls.metric_text(self.state.tokenizer, result.answer, result.foil)
        top = " (the top prediction)" if inputs.answer is None else ""
        if result.answer == result.foil:
            top += ", the same token as the foil, so every part is 0 by construction"
        here = (" (an encoder's logit there scores the token that belongs at that position, not the next one)"
                if config.architecture == "encoder" else "")
        self.summary_label.setText(
            f"{metric}{top} at position {result.position}{here}: the model's own {result.total:.6g}; "
            f"the parts sum to {result.parts_sum:.6g}; difference {result.difference:.2g} "
            f"(float32 rounding allows {result.tolerance:.1g}): they {verdict}. "
            f"Final {result.norm} scale of this run: {result.final_scale:.4g}.")
        grid = result.head_matrix(config.n_layers, config.n_heads)  # (L, H)
        bound = float(np.abs(grid).max()) or 1.0
        self.heads_map.set_data(grid, [f"L{layer}" for layer in range(config.n_layers)],
                                [f"H{head}" for head in range(config.n_heads)], levels=(-bound, bound))
        self._show_parts(result, config.n_layers)
        self.key_label.setText(KEY_TEXT_ATTENTION_ONLY if config.attention_only else KEY_TEXT)
        self.parts_plot.setTitle("Biases (no FFNs)" if config.attention_only else "Biases and FFNs")
        # What the bars measure: each part's direct effect on the metric, in logits (a difference with a foil).
        self.parts_plot.setLabel("bottom", "direct effect on the logit" + (" difference" if result.foil is not None
                                                                           else ""))
        streams = np.arange(len(result.lens))
        self.lens_plot.getAxis("bottom").setTicks(
            [[(0, "emb"), *((i, f"L{i - 1}") for i in range(1, len(result.lens)))]])
        self.lens_own.setData(streams, result.lens, pen=theme.pen("primary"), symbolBrush=theme.brush("primary"))
        self.lens_final.setData(streams, result.lens_final_scale, pen=theme.pen("secondary"),
                                symbolBrush=theme.brush("secondary"))

    def _show_parts(self, result, n_layers: int) -> None:
        """Rows: embed, pos_embed (when the model adds one), each layer, the final norm's bias (when it has one)."""
        rows: list[str] = []
        single: dict[int, float] = {}
        per_layer = {"attn_bias": np.zeros(n_layers), "ffn": np.zeros(n_layers)}
        for part in result.components:
            if part.kind in ("embed", "pos_embed", "norm_bias", "head_bias"):
                single[len(rows)] = part.value
                rows.append(part.name)
            elif part.kind == "attn_bias":
                per_layer["attn_bias"][part.layer] += part.value
            elif part.kind in ("ffn", "expert"):
                per_layer["ffn"][part.layer] += part.value
        first_layer_row = sum(1 for name in rows if name not in ("final norm bias", "logit bias"))
        layer_rows = [f"L{layer}" for layer in range(n_layers)]
        rows[first_layer_row:first_layer_row] = layer_rows
        single = {(row if row < first_layer_row else row + n_layers): value for row, value in single.items()}
        layer_y = np.arange(first_layer_row, first_layer_row + n_layers)
        roles = {"single": (np.array(list(single)), np.array(list(single.values())), 0.0, "tertiary"),
                 "attn_bias": (layer_y, per_layer["attn_bias"], -0.2, "primary"),
                 "ffn": (layer_y, per_layer["ffn"], 0.2, "secondary")}
        for role, (ys, widths, shift, colour) in roles.items():
            self.parts_bars[role].setOpts(x0=np.zeros(len(ys)), y=ys + shift, width=widths, height=0.4,
                                          brush=theme.brush(colour), pen=theme.pen(colour, width=1))
        self.parts_plot.getAxis("left").setTicks([list(enumerate(rows))])

    def on_stale(self) -> None:
        for bars in self.parts_bars.values():
            bars.setOpts(x0=[], y=[], width=[])
        self.lens_own.setData([], [])
        self.lens_final.setData([], [])

    def export_targets(self):
        return [("Attribution: heads (heatmap)", self.heads_map.plot.getPlotItem()),
                ("Attribution: other parts (bars)", self.parts_plot.getPlotItem()),
                ("Attribution: logit lens (plot)", self.lens_plot.getPlotItem())]

