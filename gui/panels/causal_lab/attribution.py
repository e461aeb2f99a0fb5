"""Attribution: the clean input's logit (difference) split into what each part wrote, beside the model's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox, QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.causal_lab.common import CausalControls, labelled, make_plot, plain_label
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap

LAST = -1  # the position spin's special value: the last token


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


def attribution_refusal(model) -> str:
    """Why the exact split does not apply (config only: no torch work on the GUI thread)."""
    config = model.config
    if config.architecture != "decoder":
        return (f"Direct logit attribution needs a decoder-only model; this one is {config.architecture}, "
                "whose logits also depend on an encoder.")
    if config.norm_placement != "pre":
        return ("This model normalises after each sublayer (post-norm), so its logit is not a sum of per-part "
                "terms: the exact split needs a pre-norm model.")
    return ""


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
        self.position_spin = QSpinBox()
        self.position_spin.setObjectName("attribution-position")
        self.position_spin.setRange(LAST, 0)
        self.position_spin.setSpecialValueText("last")
        self.position_spin.setValue(LAST)
        self.position_spin.setToolTip("The position whose next-token logit is split (last: the last token)")
        self.position_spin.valueChanged.connect(self.inputs_changed)
        labelled(row, "position", self.position_spin)
        state.tokens_changed.connect(self._update_position_range)
        self._update_position_range()
        column.addLayout(row)
        self.summary_label = plain_label(name="attribution-summary")
        self.stale_labels.append(self.summary_label)
        column.addWidget(self.summary_label)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.heads_map = Heatmap("head", "layer", "Each head's direct effect on the logit (difference)")
        splitter.addWidget(self.heads_map)
        self.parts_plot = make_plot("Embeddings, biases and FFNs", "share of the logit", "")
        self.parts_plot.invertY(True)  # the first part on top, in the order they are written into the stream
        self.parts_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.7)
        self.parts_plot.addItem(self.parts_bars)
        splitter.addWidget(self.parts_plot)
        self.lens_plot = make_plot("Logit lens: the stream after each block", "stream", "logit")
        self.lens_plot.addLegend(offset=(10, 5))
        self.lens_own = self.lens_plot.plot([], [], name="own scale (logit lens)", symbol="o")
        self.lens_final = self.lens_plot.plot([], [], name="final run's scale = parts so far", symbol="s")
        splitter.addWidget(self.lens_plot)
        column.addWidget(splitter, 1)

    def _update_position_range(self) -> None:
        self.position_spin.setMaximum(max(0, len(self.state.tokens) - 1))

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        problem = attribution_refusal(model)
        if problem:
            return Refusal(problem)
        tokens = tuple(self.state.tokens)
        if not tokens:
            return Refusal("Type a text above: the attribution splits the logit of one of its positions.")
        if len(tokens) > model.config.context_length:
            return Refusal(f"The text has {len(tokens)} tokens, more than the model's context of "
                           f"{model.config.context_length}; shorten it.")
        answer, foil, problem = self.controls.answer_and_foil(self.state.tokenizer, model.config.vocab_size)
        if problem:
            return Refusal(problem[0].upper() + problem[1:] + ".")
        position = self.position_spin.value()
        position = len(tokens) - 1 if position == LAST else min(position, len(tokens) - 1)
        return AttributionInputs(model, tokens, answer, foil, position)

    def show_result(self, result) -> None:
        inputs: AttributionInputs = self.shown_inputs
        config = inputs.model.config
        verdict = "agree" if result.agrees else "DO NOT agree"
        metric = self.controls.metric_text(self.state.tokenizer, result.answer, result.foil)
        top = " (the top prediction)" if inputs.answer is None else ""
        if result.answer == result.foil:
            top += ", the same token as the foil, so every part is 0 by construction"
        self.summary_label.setText(
            f"{metric}{top} at position {result.position}: the model's own {result.total:.6g}; "
            f"the parts sum to {result.parts_sum:.6g}; difference {result.difference:.2g} "
            f"(float32 rounding allows {result.tolerance:.1g}): they {verdict}. "
            f"Final {result.norm} scale of this run: {result.final_scale:.4g}.")
        grid = result.head_matrix(config.n_layers, config.n_heads)  # (L, H)
        bound = float(np.abs(grid).max()) or 1.0
        self.heads_map.set_data(grid, [f"L{layer}" for layer in range(config.n_layers)],
                                [f"H{head}" for head in range(config.n_heads)], levels=(-bound, bound))
        others = [part for part in result.components if part.kind != "head"]
        self.parts_bars.setOpts(x0=np.zeros(len(others)), y=np.arange(len(others)),
                                width=[part.value for part in others], height=0.7,
                                brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        self.parts_plot.getAxis("left").setTicks([[(i, part.name) for i, part in enumerate(others)]])
        streams = np.arange(len(result.lens))
        self.lens_plot.getAxis("bottom").setTicks(
            [[(0, "embed"), *((i, f"after L{i - 1}") for i in range(1, len(result.lens)))]])
        self.lens_own.setData(streams, result.lens, pen=theme.pen("primary"), symbolBrush=theme.brush("primary"))
        self.lens_final.setData(streams, result.lens_final_scale, pen=theme.pen("secondary"),
                                symbolBrush=theme.brush("secondary"))

    def on_stale(self) -> None:
        self.parts_bars.setOpts(x0=[], y=[], width=[])
        self.lens_own.setData([], [])
        self.lens_final.setData([], [])

    def export_targets(self):
        return [("Attribution: heads (heatmap)", self.heads_map.plot.getPlotItem()),
                ("Attribution: other parts (bars)", self.parts_plot.getPlotItem()),
                ("Attribution: logit lens (plot)", self.lens_plot.getPlotItem())]

