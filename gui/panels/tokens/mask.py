"""Mask: the grid of which query may read which key, for every kind of attention the model has."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.tokens.common import TokensControls
from gui.panels.common import caption, sequence_refusal, set_title
from gui.widgets.heatmap import Heatmap

MASK_VISIBLE, MASK_DENOMINATOR_ONLY, MASK_HIDDEN = 1.0, 0.5, 0.0


def mask_kinds(config) -> list[tuple[str, bool]]:
    """(mask_grid kind, whether the panel's mask mode applies to it) for the kinds this config has."""
    if config.architecture == "encoder":
        return [("encoder-self", True)]
    if config.architecture == "encoder-decoder":
        return [("decoder-self", True), ("encoder-self", False), ("cross", False)]
    return [("decoder-self", True)]


@dataclass(frozen=True)
class MaskInputs:
    config: Any  # the model's ModelConfig
    tokenizer: Any
    tokens: tuple[int, ...]
    mask_mode: str


def compute_masks(inputs: MaskInputs, token) -> tuple:
    from core.experiments.common import token_labels
    from core.experiments.mask_grids import mask_grid

    labels = token_labels(list(inputs.tokens), inputs.tokenizer)
    return tuple(
        mask_grid(inputs.config, len(inputs.tokens), kind, inputs.mask_mode if applies else None,
                         query_labels=labels, key_labels=labels)
        for kind, applies in mask_kinds(inputs.config)
    )


class MaskView(View):
    name = "Mask"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_masks)

    def __init__(self, state, compute, controls: TokensControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        self.note = caption("", rich=True)
        self.note.setObjectName("tokens-mask-note")
        layout.addWidget(self.note)
        row = QHBoxLayout()
        self.maps: list[Heatmap] = []
        for _ in range(3):  # decoder self, encoder self, cross: created once, hidden when the model lacks one
            heatmap = Heatmap(x_label="key (can be read)", y_label="query (reads)", value_format="{:.1f}")
            heatmap.plot.setMouseEnabled(x=False, y=False)
            heatmap.hovered.connect(lambda r, c, value, h=heatmap: self._hovered(h, r, c, value))
            heatmap.hide()
            self.maps.append(heatmap)
            row.addWidget(heatmap, 1)
        layout.addLayout(row, 1)
        self.readouts = [heatmap.readout for heatmap in self.maps]
        self.stale_labels = [self.note]

    def inputs(self) -> MaskInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        return MaskInputs(model.config, self.state.tokenizer, tuple(tokens), self.controls.mask_mode)

    def show_result(self, masks: tuple) -> None:
        palette = theme.current()
        for heatmap, grid in zip(self.maps, list(masks) + [None] * 3):
            if grid is None:
                heatmap.hide()
                continue
            heatmap.show()
            hidden = np.where(grid.in_denominator, MASK_DENOMINATOR_ONLY, MASK_HIDDEN)
            values = np.where(grid.visible, MASK_VISIBLE, hidden)
            set_title(heatmap.plot, grid.title)
            rows = [f"⚠{label}" if empty else label for label, empty in zip(grid.query_labels, grid.empty_rows)]
            heatmap.set_data(values.astype(np.float32), row_labels=rows, col_labels=grid.key_labels, levels=(0.0, 1.0))
            self._style_map(heatmap)
        notes = []
        for grid in masks:
            text = f"<b>{html.escape(grid.title)}</b>: {html.escape(grid.note)}"
            if grid.empty_rows.any():
                text += (f" <span style='color:{palette.warning}'>{int(grid.empty_rows.sum())} query row(s) see no key "
                         "(⚠): softmax 0/0 gives NaN.</span>")
            notes.append(text)
        masked, denominator, visible = (colour.name() for colour in self._colours())
        swatch = "<span style='color:{}; font-size:large'>■</span>"
        self.note.setText("<br>".join(notes) + f"<br>{swatch.format(visible)} can attend &nbsp; "
                          f"{swatch.format(denominator)} in the softmax denominator, weight zeroed after it &nbsp; "
                          f"{swatch.format(masked)} masked &nbsp; ⚠ a query that sees nothing")

    def refresh_hover(self) -> None:
        for heatmap in self.maps:
            if heatmap.isVisible():
                heatmap.refresh_hover()

    @staticmethod
    def _colours() -> tuple[QColor, QColor, QColor]:
        """masked, in the denominator only, can attend."""
        palette = theme.current()
        return QColor(palette.alternate).darker(112), theme.color("secondary"), QColor(palette.accent)

    def _style_map(self, heatmap: Heatmap) -> None:
        """Categorical colours for a mask (the theme's continuous colormap would suggest a quantity)."""
        masked, denominator, visible = self._colours()
        heatmap.colorbar.setColorMap(pg.ColorMap([0.0, 0.25, 0.26, 0.74, 0.75, 1.0],
                                                 [masked, masked, denominator, denominator, visible, visible]))
        heatmap.colorbar.hide()  # three categories read better from the legend in the caption

    def _hovered(self, heatmap: Heatmap, row: int, col: int, value: float) -> None:
        if self.is_stale or self.result is None:
            heatmap.readout.setText(" ")
            return
        meaning = {MASK_VISIBLE: "can attend", MASK_DENOMINATOR_ONLY: "in the softmax denominator, weight zeroed after",
                   MASK_HIDDEN: "masked"}.get(float(value), "")
        heatmap.readout.setText(f"query {row} '{heatmap.row_labels[row]}' → "
                                f"key {col} '{heatmap.col_labels[col]}': {meaning}")

    def apply_theme(self) -> None:
        super().apply_theme()
        for heatmap in self.maps:
            self._style_map(heatmap)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [(f"Mask grid {index + 1}", heatmap.plot.getPlotItem())
                for index, heatmap in enumerate(self.maps) if heatmap.isVisibleTo(self) or index == 0]
