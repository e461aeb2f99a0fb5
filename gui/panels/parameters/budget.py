"""Budgets: training and inference FLOPs per token, weight and KV-cache memory in three dtypes."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QVBoxLayout

from core.config import ConfigError, ModelConfig
from core.display import format_bytes
from core.experiments.budget_captions import budget_rows, budget_summary
from gui.panels.base import Refusal, View
from gui.panels.parameters.common import ParametersControls
from gui.panels.common import fit_table, set_cell, table


@dataclass(frozen=True)
class BudgetInputs:
    config: ModelConfig


def compute_budget_of(inputs: BudgetInputs, token) -> Any:
    from core.experiments.budgets import compute_budget

    return compute_budget(inputs.config)


class BudgetView(View):
    name = "Budgets"
    reads = frozenset({"config"})
    needs_torch = False
    compute_fn = staticmethod(compute_budget_of)

    def __init__(self, state, compute, controls: ParametersControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 0, 0, 0)
        self.budget_label = QLabel("")
        self.budget_label.setWordWrap(True)
        self.budget_label.setTextFormat(Qt.TextFormat.RichText)  # the app's markup around computed numbers
        column.addWidget(self.budget_label)
        self.budget_table = table(("quantity", "fp32", "bf16", "int8"))
        header = self.budget_table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        column.addWidget(self.budget_table, 1)
        self.stale_labels = [self.budget_label]

    def inputs(self) -> BudgetInputs | Refusal:
        try:
            return BudgetInputs(self.controls.shown_config())
        except ConfigError as error:
            return Refusal(f"{error.field}: {error.message}")

    def show_result(self, budget) -> None:
        config = self.shown_inputs.config
        self.budget_label.setText(budget_summary(f"<b>{html.escape(config.name)}</b>", budget))
        rows = budget_rows(budget)
        budget_table = self.budget_table
        budget_table.clearSpans()
        budget_table.setRowCount(len(rows))
        for index, (label, value) in enumerate(rows):
            set_cell(budget_table, index, 0, label, bold=True)
            if isinstance(value, str):
                # A FLOP count does not depend on the dtype: one centred cell across the three columns.
                set_cell(budget_table, index, 1, value).setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                for column in (2, 3):
                    set_cell(budget_table, index, column, "")
                budget_table.setSpan(index, 1, 1, 3)
            else:
                for column, dtype in enumerate(("fp32", "bf16", "int8"), start=1):
                    set_cell(budget_table, index, column, format_bytes(value[dtype]), right=True)
        fit_table(budget_table)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Budget table", self.budget_table)]
