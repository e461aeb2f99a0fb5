"""Predictions: the next-token distribution read from the logits at the selected chip, with temperature."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QSpinBox, QVBoxLayout

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.tokens.common import TokensControls
from gui.panels.common import caption, sequence_refusal, set_title
from gui.widgets.flow_layout import FlowLayout, control_group

DEFAULT_TOP_K = 10
CONTEXT_SHOWN = 24  # tokens of context quoted beside the bars


@dataclass(frozen=True)
class PredictionsInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]
    position: int
    top_k: int
    temperature: float
    mask_mode: str


def compute_predictions(inputs: PredictionsInputs, token) -> Any:
    from core.experiments.next_token import next_token_predictions

    return next_token_predictions(inputs.model, list(inputs.tokens), inputs.position, inputs.tokenizer,
                                         k=inputs.top_k, temperature=inputs.temperature, mask_mode=inputs.mask_mode)


class PredictionsView(View):
    name = "Predictions"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_predictions)

    def __init__(self, state, compute, controls: TokensControls, selected_position, channel_prefix: str = "",
                 parent=None) -> None:
        """selected_position(): the chip the prediction reads (the panel's strip selection)."""
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.selected_position = selected_position
        controls.changed.connect(self.inputs_changed)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()  # wraps the note below the spins rather than widening the panel
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setObjectName("tokens-temperature")
        self.temperature_spin.setRange(0.05, 10.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setValue(1.0)
        self.temperature_spin.setKeyboardTracking(False)
        self.temperature_spin.setToolTip("softmax(logits / temperature): below 1 sharpens, above 1 flattens")
        self.top_k_spin = QSpinBox()
        self.top_k_spin.setObjectName("tokens-top-k")
        self.top_k_spin.setRange(1, 30)
        self.top_k_spin.setValue(DEFAULT_TOP_K)
        self.top_k_spin.setKeyboardTracking(False)
        for text, spin in (("Temperature", self.temperature_spin), ("Top k", self.top_k_spin)):
            label = QLabel(text)
            label.setBuddy(spin)
            row.addWidget(control_group(label, spin))
        self.note = caption("Select a chip: the prediction reads the logits at that position.")
        row.addWidget(self.note)
        self.add_controls(row)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.invertY(True)
        self.plot.setLabel("bottom", "probability")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.setTitle("Next token")
        self.bars = pg.BarGraphItem(x0=[0], y=[0], height=0.7, width=[0])
        self.plot.addItem(self.bars)
        self.labels: list[pg.TextItem] = []
        layout.addWidget(self.plot, 1)
        self.temperature_spin.valueChanged.connect(self.inputs_changed)
        self.top_k_spin.valueChanged.connect(self.inputs_changed)
        self.stale_labels = [self.note]

    def inputs(self) -> PredictionsInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        from core.experiments.next_token import next_token_refusal  # torch is loaded: a model is

        problem = next_token_refusal(model.config)
        if problem:
            return Refusal(problem[0].upper() + problem[1:] + ".")
        selected = self.selected_position()
        position = selected if 0 <= selected < len(tokens) else len(tokens) - 1
        return PredictionsInputs(model, self.state.tokenizer, tuple(tokens), position, self.top_k_spin.value(),
                                 round(self.temperature_spin.value(), 4), self.controls.mask_mode)

    def on_stale(self) -> None:
        for label in self.labels:
            label.hide()

    def show_result(self, predictions) -> None:
        k = len(predictions.probabilities)
        ys = np.arange(k, dtype=float)
        self.bars.setOpts(x0=np.zeros(k), y=ys, width=predictions.probabilities, height=0.7,
                          brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        self.plot.getAxis("left").setTicks([list(enumerate(predictions.labels))])
        # A line of height for each guess (the axis leaves out labels that would overlap), plus title and axis.
        line = QFontMetrics(theme.font(0.9)).height()
        self.plot.setMinimumHeight(round(k * line * 1.2 + 4 * line))
        top = float(predictions.probabilities.max()) if k else 1.0
        self.plot.setXRange(0, min(1.0, top * 1.25) or 1.0, padding=0)
        self.plot.setYRange(-0.6, k - 0.4, padding=0)
        while len(self.labels) < k:
            label = pg.TextItem(anchor=(0, 0.5))
            self.plot.addItem(label)
            self.labels.append(label)
        for index, label in enumerate(self.labels):
            if index >= k:
                label.hide()
                continue
            probability = float(predictions.probabilities[index])
            label.setText(f"{probability:.3f}" if probability >= 1e-3 else f"{probability:.1e}", color=theme.color("text"))
            label.setFont(theme.font(0.85))
            label.setPos(probability, index)
            label.show()
        context = "".join(predictions.context_labels[-CONTEXT_SHOWN:])
        set_title(self.plot, f"Next token after position {predictions.position} (T = {predictions.temperature:g})")
        ellipsis = "…" if len(predictions.context_labels) > CONTEXT_SHOWN else ""
        if predictions.reads_later:
            self.note.setText(f"Tokens up to here: {ellipsis}{context}; and later ones too: {predictions.reads_later}.")
        else:
            self.note.setText(f"Context seen: {ellipsis}{context}")

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Next-token predictions", self.plot.getPlotItem())]
