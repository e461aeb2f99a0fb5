"""Compare two: two models' pies side by side with the reading's exercise-6 numbers in one table."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QVBoxLayout

from core.config import ModelConfig
from core.params import ParameterBreakdown
from gui.panels.base import View
from gui.panels.parameters.common import pie_slices, role_colors
from gui.panels.common import fit_table, set_cell, table
from gui.panels.parameters.count import CompareCountView, MetaCountCache
from gui.widgets.pie import PieView, format_count, format_share


@dataclass(frozen=True)
class CompareInputs:
    left: ModelConfig
    right: ModelConfig


@dataclass(frozen=True)
class CompareResult:
    comparison: Any  # core.experiments.budgets.ConfigComparison
    breakdowns: tuple[ParameterBreakdown, ParameterBreakdown]


def compute_comparison(inputs: CompareInputs, token) -> CompareResult:
    from core.experiments.budgets import compare_configs
    from core.params import parameter_breakdown

    return CompareResult(compare_configs(inputs.left, inputs.right),
                         (parameter_breakdown(inputs.left), parameter_breakdown(inputs.right)))


class CompareView(View):
    name = "Compare two"
    reads = frozenset({"config"})
    needs_torch = False
    compute_fn = staticmethod(compute_comparison)

    def __init__(self, state, compute, compared, counts: MetaCountCache, channel_prefix: str = "", parent=None) -> None:
        """compared(): the (left, right) configs the pickers above the view name."""
        super().__init__(state, compute, channel_prefix, parent)
        self.compared = compared
        # The two pies side by side, the table under them: a row of three is wider than a projector's
        # room at a large text scale.
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 0, 0, 0)
        pies = QHBoxLayout()
        self.compare_views = (PieView(), PieView())
        for view in self.compare_views:
            view.setMinimumSize(160, 160)
            pies.addWidget(view, 1)
        column.addLayout(pies, 3)
        self.compare_table = table(("", "left", "right"))
        self.compare_table.horizontalHeader().setStretchLastSection(False)
        self.compare_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        column.addWidget(self.compare_table, 2)
        self.count = CompareCountView(state, compute, compared, counts, channel_prefix)
        column.addWidget(self.count)

    def pickers_changed(self) -> None:
        self.inputs_changed()
        self.count.inputs_changed()

    def inputs(self) -> CompareInputs:
        left, right = self.compared()
        return CompareInputs(left, right)

    def show_result(self, result: CompareResult) -> None:
        comparison = result.comparison
        configs = (self.shown_inputs.left, self.shown_inputs.right)
        for view, config, breakdown in zip(self.compare_views, configs, result.breakdowns):
            view.pie.set_data(*pie_slices(breakdown))
            view.set_title(f"{html.escape(config.name)}: {format_count(breakdown.total)}")  # a title is markup
        colors = role_colors()
        rows = []
        # Rows that name a wedge carry its colour: the two pies have no room for labels of their own.
        for label, swatch, fmt in (
            ("layers × d", None, lambda s: f"{s.n_layers} × {s.d_model:,}"),
            ("parameters", None, lambda s: format_count(s.total_params)),
            ("token embeddings", colors["token_embeddings"], lambda s: format_count(s.token_embeddings)),
            ("    share of all", None, lambda s: format_share(s.token_embedding_share)),
            ("+ positions: share", None, lambda s: format_share(s.embedding_share)),
            ("one block", colors["blocks"], lambda s: format_count(s.block_params)),
            ("    attention", colors["attention"], lambda s: format_count(s.block_attention)),
            ("    FFN", colors["ffn"], lambda s: format_count(s.block_ffn)),
            ("FFN share of a block", None, lambda s: format_share(s.ffn_share_of_block)),
        ):
            rows.append((label, swatch, fmt(comparison.a), fmt(comparison.b)))
        compare_table = self.compare_table
        compare_table.setHorizontalHeaderLabels(["", configs[0].name, configs[1].name])
        compare_table.setRowCount(len(rows))
        for index, (label, swatch, left_text, right_text) in enumerate(rows):
            set_cell(compare_table, index, 0, label, swatch=swatch)
            set_cell(compare_table, index, 1, left_text, right=True)
            set_cell(compare_table, index, 2, right_text, right=True)
        fit_table(compare_table, whole_width=True)

    def apply_theme(self) -> None:
        super().apply_theme()
        for view in self.compare_views:
            view.restyle()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Left comparison pie (plot)", self.compare_views[0].getPlotItem()),
                ("Right comparison pie (plot)", self.compare_views[1].getPlotItem()),
                ("Comparison table", self.compare_table)]

