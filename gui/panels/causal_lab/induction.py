"""Induction: a repeated random sequence, every head's induction and previous-token score, and the loss of
the first repeat against the second. Clicking a head draws its attention pattern on the sequence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox, QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import as_sentence, labelled, layers_and_heads, make_plot, note_label, plain_label, token_labels
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap
from gui.widgets.legend import legend_below
from gui.widgets.turning_splitter import TurningSplitter

MAX_PERIOD = 512  # a pattern of (2N)^2 cells per head stays drawable
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class InductionInputs:
    model: Any
    period: int
    seed: int


def compute_induction(inputs: InductionInputs, token):
    from core.experiments.induction import induction

    token.check()
    return induction(inputs.model, inputs.period, inputs.seed)


class InductionView(View):
    name = "Induction"
    reads = frozenset({"model", "tokenizer"})
    compute_fn = staticmethod(compute_induction)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.chosen_head: tuple[int, int] | None = None
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.period_spin = QSpinBox()
        self.period_spin.setObjectName("induction-period")
        self.period_spin.setRange(2, MAX_PERIOD)
        self.period_spin.setValue(20)
        self.period_spin.setToolTip("N: random tokens in one repeat; the sequence is these N tokens twice")
        self.seed_spin = QSpinBox()
        self.seed_spin.setObjectName("induction-seed")
        self.seed_spin.setRange(0, MAX_SEED)
        self.seed_spin.setToolTip("Seed of the random tokens")
        for spin in (self.period_spin, self.seed_spin):
            spin.valueChanged.connect(self.inputs_changed)
        self._period_cut_from: int | None = None  # the period a new model's context cut, for the note
        state.signal("model").connect(self._bound_period)
        self._bound_period()
        labelled(row, "tokens per repeat N", self.period_spin)
        labelled(row, "seed", self.seed_spin)
        self.note_label = note_label("induction-note")
        row.addWidget(self.note_label)
        state.model_changed.connect(self._follow_model)
        self.add_controls(row)
        self.summary_label = plain_label(name="induction-summary")
        self.stale_labels += [self.summary_label, self.note_label]
        column.addWidget(self.summary_label)
        top = TurningSplitter()
        self.induction_map = Heatmap("head", "layer", "Induction score (click a head)", value_format="{:.3f}")
        self.previous_map = Heatmap("head", "layer", "Previous-token score", value_format="{:.3f}")
        self.induction_map.clicked.connect(self._choose_head)
        self.previous_map.clicked.connect(self._choose_head)
        top.addWidget(self.induction_map)
        top.addWidget(self.previous_map)
        bottom = TurningSplitter()
        self.loss_plot = make_plot("Loss: first repeat against second", "offset in the repeat", "loss")
        legend_below(self.loss_plot)
        self.loss_first = self.loss_plot.plot([], [], name="first repeat")
        self.loss_second = self.loss_plot.plot([], [], name="second repeat")
        bottom.addWidget(self.loss_plot)
        self.pattern_map = Heatmap("key", "query", "Attention pattern", value_format="{:.3f}")
        bottom.addWidget(self.pattern_map)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(bottom)
        column.addWidget(splitter, 1)

    def _bound_period(self) -> None:
        """Two repeats must fit the model's context: the spin offers no period past half of it."""
        model = self.state.model
        if model is not None:
            old = self.period_spin.value()
            self.period_spin.setMaximum(max(2, min(MAX_PERIOD, model.config.context_length // 2)))
            self._period_cut_from = old if self.period_spin.value() != old else None

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        from core.experiments.induction import period_problem  # torch is loaded: a model is

        period = self.period_spin.value()
        problem = period_problem(model, period)
        if problem:
            field = "Model" if 2 * period <= model.config.context_length and period >= 2 else "Tokens per repeat N"
            return Refusal(f"{field}: {as_sentence(problem)}")
        return InductionInputs(model, period, self.seed_spin.value())

    def _follow_model(self) -> None:
        """A clicked head the new model lacks goes back to its strongest head, and the note says so, as it does a
        period past the new context (cut by _bound_period)."""
        model = self.state.model
        if model is None:
            return
        config = model.config
        parts = []
        if self.chosen_head is not None and not (self.chosen_head[0] < config.n_layers
                                                 and self.chosen_head[1] < config.n_heads):
            layer, head = self.chosen_head
            self.chosen_head = None
            parts.append(f"pattern's head L{layer}H{head} reset to the strongest induction head: {config.name} has "
                         f"{layers_and_heads(config)}")
        if self._period_cut_from is not None:  # _bound_period, which ran first, cut it
            parts.append(f"tokens per repeat reset from {self._period_cut_from} to {self.period_spin.value()}: two "
                         f"repeats must fit {config.name}'s context of {config.context_length}")
            self._period_cut_from = None
        self.note_label.setText("; ".join(parts))

    def _choose_head(self, layer: int, head: int) -> None:
        self.chosen_head = (layer, head)
        if self.result is not None and not self.is_stale:
            self._show_pattern(self.result)

    def _show_pattern(self, result) -> None:
        layer, head = self.chosen_head if self.chosen_head is not None else result.best_head()
        labels = token_labels(self.state.tokenizer, result.tokens)
        self.pattern_map.plot.setTitle(
            f"Attention of L{layer}H{head} (induction {result.induction_score[layer, head]:.3f}); the second repeat "
            f"starts at {result.repeat_start}")
        self.pattern_map.set_data(result.patterns[layer, head], labels, labels, levels=(0.0, 1.0))

    def show_result(self, result) -> None:
        n_layers, n_heads = result.induction_score.shape
        rows, columns = [f"L{layer}" for layer in range(n_layers)], [f"H{head}" for head in range(n_heads)]
        self.induction_map.set_data(result.induction_score, rows, columns, levels=(0.0, 1.0))
        self.previous_map.set_data(result.previous_token_score, rows, columns, levels=(0.0, 1.0))
        offsets = np.arange(len(result.loss_first))
        self.loss_first.setData(offsets, result.loss_first, pen=theme.pen("primary"))
        self.loss_second.setData(offsets, result.loss_second, pen=theme.pen("secondary"))
        layer, head = result.best_head()
        first, second = float(result.loss_first.mean()), float(result.loss_second.mean())
        self.summary_label.setText(
            f"{result.period} random tokens (seed {result.seed}) repeated once. Strongest induction head L{layer}H{head}: "
            f"score {result.induction_score[layer, head]:.3f}. Mean loss: first repeat {first:.3f}, second {second:.3f} "
            f"({second / first:.2f} of the first)." if first > 0 else "")
        self._show_pattern(result)

    def on_stale(self) -> None:
        self.loss_first.setData([], [])
        self.loss_second.setData([], [])

    def export_targets(self):
        return [("Induction score (heatmap)", self.induction_map.plot.getPlotItem()),
                ("Previous-token score (heatmap)", self.previous_map.plot.getPlotItem()),
                ("Induction: loss by repeat (plot)", self.loss_plot.getPlotItem()),
                ("Induction: attention pattern (heatmap)", self.pattern_map.plot.getPlotItem())]
