"""Ablation: silence chosen heads or FFNs on the clean input and watch the loss and the top predictions move."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QComboBox, QLineEdit, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import as_sentence, labelled, make_plot, plain_label, sequence_refusal, token_label
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.legend import legend_below
from gui.widgets.turning_splitter import TurningSplitter

MAX_PARTS_CHARS = 2000
HEAD_PATTERN = re.compile(r"L(\d{1,6})H(\d{1,6})", re.IGNORECASE)


@dataclass(frozen=True)
class AblationInputs:
    model: Any
    tokens: tuple[int, ...]
    heads: tuple[tuple[int, int], ...]
    ffns: tuple[int, ...]
    mode: str


def compute_ablation(inputs: AblationInputs, token):
    from core.experiments.ablation import ablate

    token.check()
    return ablate(inputs.model, list(inputs.tokens), inputs.heads, inputs.ffns, inputs.mode)


def parse_parts(heads_text: str, ffns_text: str, n_layers: int, n_heads: int):
    """((layer, head) pairs, FFN layers, "") or ((), (), why not) for 'L0H1, L2H3' and '0, 2'."""
    if len(heads_text) > MAX_PARTS_CHARS or len(ffns_text) > MAX_PARTS_CHARS:
        return (), (), f"list at most {MAX_PARTS_CHARS} characters of heads or FFNs"
    heads = []
    for item in filter(None, (part.strip() for part in heads_text.replace(";", ",").split(","))):
        match = HEAD_PATTERN.fullmatch(item.replace(" ", ""))
        if not match:
            return (), (), f"{item!r} is not a head: write heads as L0H1, L2H3 (layer, head)"
        layer, head = int(match[1]), int(match[2])
        if layer >= n_layers or head >= n_heads:
            return (), (), f"there is no {item}: the model has {n_layers} layers of {n_heads} heads"
        heads.append((layer, head))
    ffns = []
    for item in filter(None, (part.strip() for part in ffns_text.replace(";", ",").split(","))):
        if not item.isdigit() or len(item) > 6:
            return (), (), f"{item!r} is not a layer: write FFN layers as 0, 2"
        if int(item) >= n_layers:
            return (), (), f"there is no FFN in layer {item}: the model has {n_layers} layers"
        ffns.append(int(item))
    if not heads and not ffns:
        return (), (), "name the heads (L0H1, ...) or FFN layers (0, ...) to ablate"
    return tuple(dict.fromkeys(heads)), tuple(dict.fromkeys(ffns)), ""


class AblationView(View):
    name = "Ablation"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_ablation)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.heads_edit = QLineEdit("L0H0")
        self.heads_edit.setObjectName("ablation-heads")
        self.heads_edit.setToolTip("Heads to ablate, as L<layer>H<head>, separated by commas")
        self.ffns_edit = QLineEdit()
        self.ffns_edit.setObjectName("ablation-ffns")
        self.ffns_edit.setToolTip("FFN layers to ablate, separated by commas")
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("ablation-mode")
        self.mode_combo.addItem("zero: write nothing", "zero")
        self.mode_combo.addItem("mean: its mean over the positions", "mean")
        for edit in (self.heads_edit, self.ffns_edit):
            edit.setMaxLength(MAX_PARTS_CHARS + 1)
            edit.textChanged.connect(self.inputs_changed)
        self.mode_combo.currentIndexChanged.connect(self.inputs_changed)
        state.signal("model").connect(self._offer_ffns)
        labelled(row, "heads", self.heads_edit)
        labelled(row, "FFN layers", self.ffns_edit)
        labelled(row, "ablation", self.mode_combo)
        column.addLayout(row)
        self.summary_label = plain_label(name="ablation-summary")
        self.stale_labels.append(self.summary_label)
        column.addWidget(self.summary_label)
        splitter = TurningSplitter()
        self.loss_plot = make_plot("Loss at each position", "position (predicting the next token)", "loss")
        legend_below(self.loss_plot)
        self.loss_before = self.loss_plot.plot([], [], name="intact")
        self.loss_after = self.loss_plot.plot([], [], name="ablated")
        splitter.addWidget(self.loss_plot)
        self.top_label = plain_label(name="ablation-top", wrap=False)
        self.stale_labels.append(self.top_label)
        splitter.addWidget(self.top_label)
        column.addWidget(splitter, 1)
        self._offer_ffns()

    def _offer_ffns(self) -> None:
        """An attention-only model has no FFNs to pick: the field is off and says so."""
        model = self.state.model
        none = model is not None and model.config.attention_only
        self.ffns_edit.setEnabled(not none)
        self.ffns_edit.setPlaceholderText("none: attention-only" if none else "")

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        tokens = tuple(self.state.tokens)
        if len(tokens) < 2:
            return Refusal("The loss needs at least two tokens: type a longer text above.")
        if len(tokens) > model.config.context_length:
            return Refusal(f"The text has {len(tokens)} tokens, more than the model's context of "
                           f"{model.config.context_length}; shorten it.")
        problem = sequence_refusal(model, list(tokens))
        if problem:
            return Refusal(problem)
        from core.experiments.ablation import refusal  # torch is loaded: a model is

        problem = refusal(model)
        if problem:
            return Refusal(as_sentence(problem))
        heads, ffns, problem = parse_parts(self.heads_edit.text(), self.ffns_edit.text(), model.config.n_layers,
                                           model.config.n_heads)
        if problem:
            return Refusal(problem[0].upper() + problem[1:] + ".")
        if ffns:
            from core.experiments.ablation import ffn_problem  # torch is loaded: a model is

            problem = ffn_problem(model.config)
            if problem:
                return Refusal(problem[0].upper() + problem[1:] + ".")
        return AblationInputs(model, tokens, heads, ffns, self.mode_combo.currentData())

    def show_result(self, result) -> None:
        tokenizer = self.state.tokenizer
        parts = [f"L{l}H{h}" for l, h in result.heads] + [f"FFN {l}" for l in result.ffns]
        self.summary_label.setText(
            f"{result.mode}-ablating {', '.join(parts)}: mean next-token loss {result.loss_before:.4f} intact, "
            f"{result.loss_after:.4f} ablated ({result.loss_after - result.loss_before:+.4f}).")
        positions = np.arange(len(result.position_loss_before))
        self.loss_before.setData(positions, result.position_loss_before, pen=theme.pen("primary"))
        self.loss_after.setData(positions, result.position_loss_after, pen=theme.pen("secondary"))
        lines = [f"Top predictions after position {result.position}:", f"{'intact':>15}   {'ablated':>15}"]
        for (before, p_before), (after, p_after) in zip(result.top_before, result.top_after):
            lines.append(f"{token_label(tokenizer, before):>8} {p_before:6.3f}   {token_label(tokenizer, after):>8} {p_after:6.3f}")
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        fixed.setPointSizeF(theme.font().pointSizeF())  # columns line up, at the theme's text size
        self.top_label.setFont(fixed)
        self.top_label.setText("\n".join(lines))

    def on_stale(self) -> None:
        self.loss_before.setData([], [])
        self.loss_after.setData([], [])

    def export_targets(self):
        return [("Ablation: loss per position (plot)", self.loss_plot.getPlotItem())]
