"""A feature's dashboard: top activating contexts shaded, its histogram and density, the tokens its decoder
direction pushes up and down, the features that fire on a selection of the text, and each token's features."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QScrollArea, QSpinBox, QSplitter, QVBoxLayout, QWidget

from core.features.views import DASHBOARD_TOKENS, FeatureInputs, compute_dashboard, dashboard_summary, logit_effects
from gui import theme
from gui.panels.common import (caption, fit_table, labelled, make_plot, plain_label, set_cell, table, token_label,
                               token_labels)
from gui.panels.features.contexts import ShadedContexts
from gui.panels.features.feature_view import FeatureView
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.turning_splitter import TurningSplitter

MAX_POSITION = 100_000


class DashboardView(FeatureView):
    name = "Feature"
    compute_fn = staticmethod(compute_dashboard)

    def __init__(self, state, compute, controls, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, controls, channel_prefix, parent)
        row = FlowLayout()
        self.first_spin, self.last_spin = QSpinBox(), QSpinBox()
        for spin, name, tip in ((self.first_spin, "features-from", "First position of the text searched"),
                                (self.last_spin, "features-to", "Last position of the text searched")):
            spin.setObjectName(name)
            spin.setRange(0, 0)
            spin.setToolTip(tip)
            spin.valueChanged.connect(self._selection_changed)
        labelled(row, "search the text from", self.first_spin)
        labelled(row, "to", self.last_spin)
        self.add_controls(row)
        state.tokens_changed.connect(self._bound_selection)
        self._bound_selection()

        outer = QVBoxLayout(self.content)
        outer.setContentsMargins(0, 4, 0, 0)
        page = QWidget()
        page_scroll = QScrollArea()  # at a projector's text size the dashboard is taller than the window: it scrolls
        page_scroll.setWidgetResizable(True)
        page_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        page_scroll.setWidget(page)
        outer.addWidget(page_scroll)
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        self.summary_label = plain_label(name="features-summary")
        column.addWidget(self.summary_label)
        splitter = TurningSplitter()
        left = QWidget()
        left_column = QVBoxLayout(left)
        left_column.setContentsMargins(0, 0, 0, 0)
        left_column.addWidget(caption("Top activating contexts on held-out Shakespeare (the firing token outlined)"))
        self.contexts = ShadedContexts()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.contexts)
        left_column.addWidget(scroll, 2)
        self.histogram = make_plot("Histogram", "activation", "tokens")
        self.histogram_bars = pg.BarGraphItem(x=[0], height=[0], width=1)
        self.histogram.addItem(self.histogram_bars)
        left_column.addWidget(self.histogram, 1)
        splitter.addWidget(left)
        right = QSplitter(Qt.Orientation.Vertical)
        upper = QWidget()
        upper_column = QVBoxLayout(upper)
        upper_column.setContentsMargins(0, 0, 0, 0)
        self.logits_label = plain_label(name="features-logits")
        upper_column.addWidget(self.logits_label)
        self.search_label = plain_label(name="features-search")
        upper_column.addWidget(self.search_label)
        self.search_table = table(("feature", "summed activation"))
        self.search_table.setObjectName("features-search-table")
        self.search_table.cellClicked.connect(self._pick_searched)
        upper_column.addWidget(self.search_table, 1)
        right.addWidget(upper)
        lower = QWidget()
        lower_column = QVBoxLayout(lower)
        lower_column.setContentsMargins(0, 0, 0, 0)
        lower_column.addWidget(caption("The text's tokens and their most active features"))
        self.token_table = table(("position", "token", "active features (activation)"))
        self.token_table.setObjectName("features-token-table")
        lower_column.addWidget(self.token_table, 1)
        right.addWidget(lower)
        splitter.addWidget(right)
        splitter.setSizes([640, 420])
        column.addWidget(splitter, 1)
        self.stale_labels += [self.summary_label, self.logits_label, self.search_label]
        self._size_for_rows()

    def _size_for_rows(self) -> None:
        """Each table shows at least four rows and the plots their axes, however small the window."""
        line = QFontMetrics(theme.font()).height()
        for widget in (self.search_table, self.token_table):
            widget.setMinimumHeight(round(line * 1.6 * 5))
        self.histogram.setMinimumHeight(line * 10)

    def apply_theme(self) -> None:
        super().apply_theme()
        self._size_for_rows()

    def _bound_selection(self) -> None:
        last = max(0, min(MAX_POSITION, len(self.state.tokens) - 1))
        for spin in (self.first_spin, self.last_spin):
            spin.setMaximum(last)
        if self.last_spin.value() < self.first_spin.value() or self.last_spin.value() == 0:
            self.last_spin.setValue(last)

    def _selection_changed(self) -> None:
        if self.first_spin.value() > self.last_spin.value():
            other = self.last_spin if self.sender() is self.first_spin else self.first_spin
            other.setValue(self.sender().value())
        self.inputs_changed()

    def select(self, first: int, last: int) -> None:
        """Search the features that fire over positions first..last of the text (lessons, tests)."""
        self.last_spin.setValue(max(first, last))
        self.first_spin.setValue(first)
        self.last_spin.setValue(last)

    def feature_inputs(self, model):
        last = min(self.last_spin.value(), len(self.state.tokens) - 1)
        first = min(self.first_spin.value(), last)
        return FeatureInputs(model, self.state.tokenizer, self.controls.sae_path, tuple(self.state.tokens),
                             self.controls.feature, (first, last))

    def _pick_searched(self, row: int, _column: int) -> None:
        if self.result is not None and row < len(self.result.search):
            self.controls.feature_spin.setValue(self.result.search[row][0])

    def show_result(self, result) -> None:
        tokenizer = self.state.tokenizer
        self.summary_label.setText(dashboard_summary(result))
        rows = [(c.activation, token_labels(tokenizer, c.ids), list(c.activations), c.marked) for c in result.contexts]
        self.contexts.set_rows(rows)
        counts, edges = result.summary.histogram_counts, result.summary.histogram_edges
        centres, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0]) if len(edges) > 1 else 1.0
        self.histogram_bars.setOpts(x=centres, height=counts, width=width * 0.9, brush=theme.brush("primary"),
                                    pen=pg.mkPen(None))
        self.logits_label.setText(logit_effects(result, lambda token_id: token_label(tokenizer, token_id)))
        first, last = result.selection
        labels = token_labels(tokenizer, self.shown_inputs.tokens[first:last + 1])
        self.search_label.setText(f"Features that fire most on positions {first}..{last} ({''.join(labels)[:60]}); "
                                  "click one to open it:" if result.search else
                                  f"No feature fires on positions {first}..{last}.")
        self.search_table.setRowCount(len(result.search))
        for row, (feature, value) in enumerate(result.search):
            set_cell(self.search_table, row, 0, str(feature), right=True, bold=feature == result.feature)
            set_cell(self.search_table, row, 1, f"{value:.3f}", right=True)
        fit_table(self.search_table, whole_width=True)
        tokens = self.shown_inputs.tokens
        self.token_table.setRowCount(len(tokens))
        for position, (token_id, active) in enumerate(zip(tokens, result.per_token)):
            set_cell(self.token_table, position, 0, str(position), right=True)
            set_cell(self.token_table, position, 1, token_label(tokenizer, token_id))
            set_cell(self.token_table, position, 2, ", ".join(f"{f} ({v:.2f})" for f, v in active) or "none",
                     bold=any(f == result.feature for f, _ in active))
        fit_table(self.token_table, whole_width=True)

    def on_stale(self) -> None:
        self.contexts.clear()
        self.histogram_bars.setOpts(x=[0], height=[0], width=1)

    def export_targets(self):
        return [("Feature: activation histogram (plot)", self.histogram.getPlotItem())]


__all__ = ["DASHBOARD_TOKENS", "DashboardView"]
