"""Ablation: silence chosen heads or FFNs on the clean input and watch the loss and the top predictions move."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QComboBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import (as_sentence, labelled, layers_and_heads, make_plot, note_label, plain_label,
                               sequence_refusal, token_label)
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.legend import legend_below
from gui.widgets.part_picker import PartPicker
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


def parse_parts(heads_text: str, ffns_text: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """The heads of 'L0H1, L2H3' and the FFN layers of '0, 2' (a session's or a lesson's text); items that are
    not a head or a layer are skipped (the pickers then tick only what the model has)."""
    heads, ffns = [], []
    for item in filter(None, (part.strip() for part in heads_text[:MAX_PARTS_CHARS].replace(";", ",").split(","))):
        match = HEAD_PATTERN.fullmatch(item.replace(" ", ""))
        if match:
            heads.append((int(match[1]), int(match[2])))
    for item in filter(None, (part.strip() for part in ffns_text[:MAX_PARTS_CHARS].replace(";", ",").split(","))):
        if item.isdigit() and len(item) <= 6:
            ffns.append(int(item))
    return tuple(dict.fromkeys(heads)), tuple(dict.fromkeys(ffns))


def heads_text(heads) -> str:
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def ffns_text(ffns) -> str:
    return ", ".join(str(layer) for layer in ffns)


class AblationView(View):
    name = "Ablation"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_ablation)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        # Pickers, not text fields: only heads and FFNs the model has can be chosen.
        self.heads_picker = PartPicker(lambda layer, head: f"L{layer}H{head}")
        self.heads_picker.setObjectName("ablation-heads")
        self.heads_picker.set_tip("Heads to ablate: tick them in the grid (a row per layer, a column per head)")
        self.heads_picker.set_selected([(0, 0)])
        self.ffns_picker = PartPicker(lambda layer, _column: f"FFN {layer}")
        self.ffns_picker.setObjectName("ablation-ffns")
        self.ffns_picker.set_tip("FFN layers to ablate: tick them in the list")
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("ablation-mode")
        self.mode_combo.addItem("zero: write nothing", "zero")
        self.mode_combo.addItem("mean: its mean over the positions", "mean")
        for picker in (self.heads_picker, self.ffns_picker):
            picker.changed.connect(self.inputs_changed)
        self.mode_combo.currentIndexChanged.connect(self.inputs_changed)
        state.signal("model").connect(self._offer_ffns)
        labelled(row, "heads", self.heads_picker)
        labelled(row, "FFN layers", self.ffns_picker)
        labelled(row, "ablation", self.mode_combo)
        self._parts_dropped: list[str] = []  # parts the last model's shape dropped from the pickers
        self.note_label = note_label("ablation-note")
        row.addWidget(self.note_label)
        state.signal("model").connect(self._follow_model)
        self.add_controls(row)
        self.summary_label = plain_label(name="ablation-summary")
        self.stale_labels += [self.summary_label, self.note_label]
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

    def _follow_model(self) -> None:
        """Heads and FFN layers the new model lacks left the pickers (_offer_ffns); an emptied choice is L0H0. The
        note says which went."""
        model = self.state.model
        if model is None:
            return
        config = model.config
        gone, self._parts_dropped = self._parts_dropped, []
        note = ""
        if gone:
            shape = "is attention-only" if config.attention_only and any(g.startswith("FFN") for g in gone) \
                else f"has {layers_and_heads(config)}"
            if not self.heads_picker.selected() and not self.ffns_picker.selected():
                self.heads_picker.set_selected([(0, 0)])
                note = f"heads reset to L0H0: {config.name} {shape}, without {', '.join(gone)}"
            else:
                note = f"{', '.join(gone)} removed from the choice: {config.name} {shape}"
        self.note_label.setText(note)

    def _offer_ffns(self) -> None:
        """The pickers hold the model's heads and FFNs; an attention-only model has no FFNs to pick: that picker is
        off and says so."""
        model = self.state.model
        if model is None:
            return
        config = model.config
        none = config.attention_only
        heads, ffns = self.heads_picker.selected(), self.ffns_picker.selected()
        self.heads_picker.set_shape(config.n_layers, config.n_heads)
        self.ffns_picker.set_shape(0 if none else config.n_layers, 1)
        # What the new shape dropped, for the note (_follow_model).
        kept_heads, kept_ffns = set(self.heads_picker.selected()), set(self.ffns_picker.selected())
        self._parts_dropped = ([f"L{layer}H{head}" for layer, head in heads if (layer, head) not in kept_heads]
                         + [f"FFN {layer}" for layer, column in ffns if (layer, column) not in kept_ffns])
        self.ffns_picker.setEnabled(not none)
        self.ffns_picker.set_none_text("none: attention-only" if none else "none")

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        tokens = tuple(self.state.tokens)
        if len(tokens) < 2:
            return Refusal("Text: the loss needs at least two tokens; type a longer text above.")
        problem = sequence_refusal(model, list(tokens))
        if problem:
            return Refusal(problem)
        from core.experiments.ablation import refusal  # torch is loaded: a model is

        problem = refusal(model)
        if problem:
            return Refusal(as_sentence(problem))
        heads = self.heads_picker.selected()
        ffns = tuple(layer for layer, _column in self.ffns_picker.selected())
        if not heads and not ffns:
            return Refusal("Heads and FFN layers: none is ticked; tick a head or an FFN layer to ablate.")
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
