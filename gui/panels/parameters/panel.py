"""Parameters: where a model's parameters live, what they cost, and how the shares move with width.

Sub-tabs, one view each (gui/panels/parameters/*.py): the breakdown of the picked model, two
configs side by side (the reading's exercise 6), the embedding share as the width grows, and the
compute / memory budget. The analytic numbers (core.params, pure Python) need no torch; the count
of the real module tree built on the meta device is a small view of its own beside them, with a
mark saying whether the two agree. Only the sub-tab on screen computes; a change of the config,
the picked model or the tying marks its numbers stale at once.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QVBoxLayout, QWidget

from core.config import ModelConfig
from core.params import ParameterBreakdown
from gui.panels.base import Panel
from gui.panels.parameters.breakdown import BreakdownView
from gui.panels.parameters.budget import BudgetView
from gui.panels.parameters.common import ParametersControls, current_entry_text, model_combo, picked
from gui.panels.parameters.compare import CompareView
from gui.panels.parameters.count import MetaCountCache
from gui.panels.parameters.sweep import SweepView
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.page_tabs import PageTabs

DEFAULT_COMPARE = ("gpt2-small", "gpt2-medium")
SUBTABS = ("Breakdown", "Compare two", "Width sweep", "Budgets")


class ParametersPanel(Panel):
    title = "Parameters"
    needs_torch = False  # the analytic numbers are pure Python; only the meta-device count waits for torch
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        layout = self.layout()
        self.controls = ParametersControls(state.config)
        self.model_combo, self.tied_check = self.controls.model_combo, self.controls.tied_check
        controls = FlowLayout()  # wraps on a narrow window or at a large text scale
        model_caption = QLabel("Model")
        model_caption.setBuddy(self.model_combo)
        controls.addWidget(control_group(model_caption, self.model_combo))
        controls.addWidget(self.tied_check)
        layout.addLayout(controls)
        self.compare_a_combo = model_combo(state.config, "left model")
        self.compare_b_combo = model_combo(state.config, "right model")
        for combo, name in ((self.compare_a_combo, DEFAULT_COMPARE[0]), (self.compare_b_combo, DEFAULT_COMPARE[1])):
            combo.setCurrentIndex(combo.findData(name))
        self.width_slider = QSlider(Qt.Orientation.Horizontal)
        self.width_slider.setToolTip("d_model; heads and d_ff scale in proportion, vocabulary and depth stay")
        # Before the views subscribe: a new config's entry text and tying reach the pickers before the views read them.
        state.config_changed.connect(self._on_config_changed)

        counts = MetaCountCache()  # shared by both meta counts: the breakdown's model is often one compared
        prefix = f"{self.channel}/"
        self.breakdown_view = self.add_view(BreakdownView(state, compute, self.controls, counts, prefix))
        self.compare = self.add_view(CompareView(state, compute, self._compared, counts, prefix))
        self.sweep_view = self.add_view(SweepView(state, compute, self.controls, self.width_slider, prefix))
        self.budget = self.add_view(BudgetView(state, compute, self.controls, prefix))
        for count in (self.breakdown_view.count, self.compare.count):
            count.result_shown.connect(self.result_shown)
            count.error_shown.connect(self.error_shown)

        self.tabs = PageTabs()  # sized by the view on show, not the widest view
        self.tabs.addTab(self.breakdown_view, SUBTABS[0])
        self.tabs.addTab(self._compare_page(), SUBTABS[1])
        self.tabs.addTab(self._sweep_page(), SUBTABS[2])
        self.tabs.addTab(self.budget, SUBTABS[3])
        layout.addWidget(self.tabs, 1)
        for combo in (self.compare_a_combo, self.compare_b_combo):
            combo.currentIndexChanged.connect(self.compare.pickers_changed)

        # Names lessons and tests point at.
        breakdown = self.breakdown_view
        self.pie_view, self.pie = breakdown.pie_view, breakdown.pie
        self.total_label, self.agree_label, self.tied_label = breakdown.total_label, breakdown.agree_label, breakdown.tied_label
        self.block_label, self.moe_label, self.legend_table = breakdown.block_label, breakdown.moe_label, breakdown.legend_table
        self.compare_views, self.compare_table = self.compare.compare_views, self.compare.compare_table
        self.compare_agree_label = self.compare.count.label
        sweep = self.sweep_view
        self.sweep_label, self.sweep_plot, self.sweep_marker = sweep.sweep_label, sweep.sweep_plot, sweep.sweep_marker
        self.embedding_curve, self.ffn_curve, self.config_width_line = sweep.embedding_curve, sweep.ffn_curve, sweep.config_width_line
        self.budget_label, self.budget_table = self.budget.budget_label, self.budget.budget_table
        self.apply_theme()

    def _compare_page(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        pickers = FlowLayout(spacing=24)
        pickers.addWidget(control_group(QLabel("Left"), self.compare_a_combo))
        pickers.addWidget(control_group(QLabel("Right"), self.compare_b_combo))
        column.addLayout(pickers)
        column.addWidget(self.compare, 1)
        return page

    def _sweep_page(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        slider_row = QHBoxLayout()
        slider_row.addWidget(QLabel("Width d"))
        slider_row.addWidget(self.width_slider, 1)
        column.addLayout(slider_row)
        column.addWidget(self.sweep_view, 1)
        return page

    # ---- state -> pickers ----------------------------------------------------------------------
    def _on_config_changed(self) -> None:
        config = self.state.config
        for combo in (self.compare_a_combo, self.compare_b_combo):
            combo.setItemText(0, current_entry_text(config))
        self.controls.follow_config(config)

    def _compared(self) -> tuple[ModelConfig, ModelConfig]:
        config = self.state.config
        return picked(self.compare_a_combo, config), picked(self.compare_b_combo, config)

    def shown_config(self) -> ModelConfig:
        """The picked model with the panel's head tying."""
        return self.controls.shown_config()

    # ---- what is on screen ---------------------------------------------------------------------
    @property
    def breakdown(self) -> ParameterBreakdown | None:
        """The breakdown on screen (None until its first result, and while stale)."""
        return self.breakdown_view.breakdown

    @property
    def sweep(self):
        return self.sweep_view.sweep

    def pie_values(self) -> dict[str, int]:
        """Wedge key -> parameters, as the main pie shows them."""
        return {key: self.pie.value(key) for key in self.pie.keys()}

    # ---- theme, export, session ----------------------------------------------------------------
    def export_targets(self) -> list[tuple[str, Any]]:
        breakdown, compare = self.breakdown_view.export_targets(), self.compare.export_targets()
        return [(self.title, self), breakdown[0], *compare[:2], *self.sweep_view.export_targets(), breakdown[1],
                compare[2], *self.budget.export_targets()]

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model_combo.currentData(),
            "tied": self.tied_check.isChecked(),
            "compare_left": self.compare_a_combo.currentData(),
            "compare_right": self.compare_b_combo.currentData(),
            "width": self.sweep_view.picked_width,
            "tab": self.tabs.currentIndex(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        for key, combo in (("model", self.model_combo), ("compare_left", self.compare_a_combo), ("compare_right", self.compare_b_combo)):
            value = data.get(key)
            index = combo.findData(value) if isinstance(value, str) else -1
            if index >= 0:
                combo.setCurrentIndex(index)
        if isinstance(data.get("tied"), bool):
            self.tied_check.setChecked(data["tied"])
        tab = data.get("tab")
        if isinstance(tab, int) and not isinstance(tab, bool) and 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)
        width = data.get("width")
        if isinstance(width, int) and not isinstance(width, bool) and width > 0:
            self.sweep_view.pick_width(width)
