"""Head split: the reading's unit test that head 0 of a multi-head layer equals a single head on its slice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QVBoxLayout

from gui import theme
from gui.panels.base import View
from gui.panels.tokens.common import TokensControls
from gui.panels.common import caption
from gui.widgets.heatmap import Heatmap

HEAD_SPLIT_MAX_TOKENS = 24  # the head-split maps stay legible cell by cell


@dataclass(frozen=True)
class HeadSplitInputs:
    seed: int
    d_model: int
    n_heads: int
    n_tokens: int
    causal: bool


def compute_head_split(inputs: HeadSplitInputs, token) -> Any:
    from core.experiments.head_split import head_split_check

    return head_split_check(inputs.seed, inputs.d_model, inputs.n_heads, inputs.n_tokens, causal=inputs.causal)


class HeadSplitView(View):
    name = "Head split"
    reads = frozenset({"config", "model", "seed", "tokens"})
    compute_fn = staticmethod(compute_head_split)

    def __init__(self, state, compute, controls: TokensControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        self.note = caption("")
        self.note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        grid = QGridLayout()
        grid.addWidget(self.note, 1, 0)  # beside the difference maps, where a third would be empty
        self.maps = [Heatmap(x_label="key", y_label="query", value_format="{:.8g}", title=title)
                     for title in ("single head on its d_head slice", "multi-head: head 0", "wrong reshape: head 0")]
        # |head 0 - reference| under the two candidates, on one shared scale: the correct split is flat 0,
        # the wrong reshape lights up where it mixed other tokens' features in.
        self.difference_maps = [Heatmap(x_label="key", y_label="query", value_format="{:.8g}", title=title)
                                for title in ("|multi-head - reference|", "|wrong reshape - reference|")]
        self.captions = [caption("", rich=True) for _ in self.maps]
        for column, (heatmap, label) in enumerate(zip(self.maps, self.captions)):
            heatmap.plot.setMouseEnabled(x=False, y=False)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(heatmap, 0, column)
            grid.addWidget(label, 2, column)
            grid.setColumnStretch(column, 1)
        for column, heatmap in enumerate(self.difference_maps, start=1):
            heatmap.plot.setMouseEnabled(x=False, y=False)
            grid.addWidget(heatmap, 1, column)
        grid.setRowStretch(0, 1)
        grid.setRowStretch(1, 1)
        layout.addLayout(grid, 1)
        self.readouts = [heatmap.readout for heatmap in self.maps + self.difference_maps]
        self.stale_labels = [self.note, *self.captions]

    def inputs(self) -> HeadSplitInputs | None:
        model = self.state.model
        config = model.config if model is not None else self.state.config
        n_tokens = max(2, min(len(self.state.tokens), HEAD_SPLIT_MAX_TOKENS))
        return HeadSplitInputs(self.state.seed, config.d_model, config.n_heads, n_tokens,
                               self.controls.mask_mode != "none")

    def show_result(self, split) -> None:
        labels = [str(i) for i in range(split.n_tokens)]
        maps = (split.single_head_weights, split.multi_head_weights, split.wrong_reshape_weights)
        correct = f"{split.correct_difference:.1e}" if split.correct_difference else "0.0"
        texts = (
            "reference: softmax(q k^T / sqrt(d_head)) on columns 0..d_head-1",
            # A zero-width space lets the call wrap before .transpose: unbroken, it sets a third of the
            # panel's width at projector text.
            f"view(B,T,H,d)\u200b.transpose(1,2): max |Δ| vs reference = <b>{correct}</b>",
            f"one view(B,H,T,d): max |Δ| vs reference = "
            f"<b style='color:{theme.current().warning}'>{split.wrong_difference:.3f}</b>",
        )
        for heatmap, weights, label, text in zip(self.maps, maps, self.captions, texts):
            heatmap.set_data(weights, row_labels=labels, col_labels=labels, levels=(0.0, 1.0))
            label.setText(text)
        differences = [np.abs(candidate - split.single_head_weights) for candidate in maps[1:]]  # display only
        top = max(float(np.nanmax(differences[1])), 1e-12)
        for heatmap, difference in zip(self.difference_maps, differences):
            heatmap.set_data(difference, row_labels=labels, col_labels=labels, levels=(0.0, top))
        self.note.setText(
            f"The reading's unit test on a fresh attention layer (d_model {split.d_model}, {split.n_heads} heads, "
            f"d_head {split.d_head}, {split.n_tokens} random input vectors, seed {split.seed}). {split.note}")

    def refresh_hover(self) -> None:
        for heatmap in self.maps + self.difference_maps:
            heatmap.refresh_hover()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Head split: single head", self.maps[0].plot.getPlotItem()),
                ("Head split: multi-head head 0", self.maps[1].plot.getPlotItem()),
                ("Head split: wrong reshape", self.maps[2].plot.getPlotItem()),
                ("Head split: |multi-head - reference|", self.difference_maps[0].plot.getPlotItem()),
                ("Head split: |wrong reshape - reference|", self.difference_maps[1].plot.getPlotItem())]
