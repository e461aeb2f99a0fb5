"""Steering and ablation with one feature: the next-token distribution and a greedy continuation, without and
with the edit. The SAE's error term is kept, so strength 0 leaves the model's output bit-identical."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QVBoxLayout, QWidget

from core.features.views import SteerInputs, compute_steering, steer_summary, top_next
from gui import theme
from gui.panels.common import labelled, make_plot, plain_label, token_label, token_labels
from gui.panels.features.feature_view import FeatureView
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.legend import legend_below

MAX_ALPHA = 100.0


class SteeringView(FeatureView):
    name = "Steer"
    compute_fn = staticmethod(compute_steering)

    def __init__(self, state, compute, controls, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, controls, channel_prefix, parent)
        row = FlowLayout()
        self.alpha_spin = QDoubleSpinBox()
        self.alpha_spin.setObjectName("features-alpha")
        self.alpha_spin.setRange(-MAX_ALPHA, MAX_ALPHA)
        self.alpha_spin.setDecimals(1)
        self.alpha_spin.setSingleStep(1.0)
        self.alpha_spin.setToolTip("alpha: added times the feature's unit decoder direction at every position")
        self.alpha_spin.valueChanged.connect(self.inputs_changed)
        self.ablate_box = QCheckBox("remove the feature instead")
        self.ablate_box.setObjectName("features-ablate")
        self.ablate_box.setToolTip("Ablation: the feature's own contribution taken out wherever it fires")
        self.ablate_box.toggled.connect(self.inputs_changed)
        labelled(row, "strength alpha", self.alpha_spin)
        row.addWidget(self.ablate_box)
        self.add_controls(row)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        self.summary_label = plain_label(name="features-steer-summary")
        self.clean_text = plain_label(name="features-clean-text")
        self.steered_text = plain_label(name="features-steered-text")
        column.addWidget(self.summary_label)
        self.plot = make_plot("Next token after the text", "token", "probability")
        legend_below(self.plot)
        self.clean_bars = pg.BarGraphItem(x=[0], height=[0], width=0.4, name="without the edit")
        self.steered_bars = pg.BarGraphItem(x=[0], height=[0], width=0.4, name="with the edit")
        self.plot.addItem(self.clean_bars)
        self.plot.addItem(self.steered_bars)
        column.addWidget(self.plot, 1)
        column.addWidget(self.clean_text)
        column.addWidget(self.steered_text)
        self.stale_labels += [self.summary_label, self.clean_text, self.steered_text]

    def feature_inputs(self, model):
        return SteerInputs(model, self.controls.sae_path, tuple(self.state.tokens), self.controls.feature,
                           self.alpha_spin.value(), self.ablate_box.isChecked())

    def show_result(self, result) -> None:
        tokenizer = self.state.tokenizer
        inputs = self.shown_inputs
        ids = top_next(result)
        xs = np.arange(len(ids), dtype=float)
        self.clean_bars.setOpts(x=xs - 0.2, height=result.clean_probs[ids], width=0.4, brush=theme.brush("primary"))
        self.steered_bars.setOpts(x=xs + 0.2, height=result.steered_probs[ids], width=0.4,
                                  brush=theme.brush("secondary"))
        self.plot.getAxis("bottom").setTicks([[(float(x), token_label(tokenizer, int(i))) for x, i in zip(xs, ids)]])
        self.summary_label.setText(steer_summary(result, inputs.feature, inputs.alpha, inputs.ablate))
        self.clean_text.setText("Without: " + "".join(token_labels(tokenizer, result.clean_ids)))
        self.steered_text.setText("With:    " + "".join(token_labels(tokenizer, result.steered_ids)))

    def on_stale(self) -> None:
        for bars in (self.clean_bars, self.steered_bars):
            bars.setOpts(x=[0], height=[0], width=0.4)

    def export_targets(self):
        return [("Steering: next-token distribution (plot)", self.plot.getPlotItem())]
