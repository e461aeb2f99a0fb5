"""Parameters: where a model's parameters live, what they cost, and how the shares move with width.

The pie is drawn at once from the analytic breakdown (core.params, pure Python); the count of the
real module tree built on the meta device runs on the worker and is shown beside it with a mark
saying whether the two agree. Sub-tabs: the breakdown, two configs side by side (the reading's
exercise 6), the embedding share as the width grows, and the compute / memory budget.
"""

from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.config import ConfigError, ModelConfig
from core.display import format_bytes, format_flops
from core.experiments.budgets import BudgetError, compare_configs, compute_budget, embedding_share_sweep, scaled_config
from core.params import GROUP_LABELS, ParameterBreakdown, parameter_breakdown
from core.presets import PRESETS
from gui import theme
from gui.panels.base import Panel
from gui.widgets.pie import PieSlice, PieView, format_count, format_share

CURRENT = ""  # picker data of the "current config" entry
DEFAULT_COMPARE = ("gpt2-small", "gpt2-medium")
MAX_SWEEP_WIDTH = 16384
AGREES, DIFFERS = "✓ agrees", "✗ differs"
SUBTABS = ("Breakdown", "Compare two", "Width sweep", "Budgets")


def _role_colors() -> dict[str, QColor]:
    """Wedge colours: Okabe-Ito for the parts, the theme's grid grey for the 'blocks' the outer ring splits."""
    return {
        "token_embeddings": theme.series_color(0),
        "position_embeddings": theme.series_color(5),
        "blocks": theme.color("grid"),
        "final_norm": theme.series_color(6),
        "head": theme.series_color(3),
        "attention": theme.series_color(1),
        "ffn": theme.series_color(2),
        "router": theme.series_color(4),
        "block_norms": theme.series_color(6),
    }


def block_norm_params(breakdown: ParameterBreakdown) -> int:
    """The norms inside the blocks (the rest of the 'norms' group is the final norm, or two for two towers)."""
    config = breakdown.config
    total = breakdown.decoder_block.norms * config.n_layers if breakdown.decoder_block else 0
    if breakdown.encoder_block is not None:
        total += breakdown.encoder_block.norms * config.encoder_layers
    return total


def pie_slices(breakdown: ParameterBreakdown) -> tuple[list[PieSlice], list[PieSlice]]:
    """Inner ring: embeddings, positions, blocks, final norm, head; outer ring: the blocks split by kind."""
    groups, config = breakdown.groups, breakdown.config
    colors = _role_colors()
    block_norms = block_norm_params(breakdown)
    blocks = groups["attention"] + groups["ffn"] + groups["router"] + block_norms
    stacks = config.n_layers + (config.encoder_layers if config.architecture == "encoder-decoder" else 0)
    final_label = "final norms" if config.architecture == "encoder-decoder" else "final norm"
    inner = [
        PieSlice("token_embeddings", GROUP_LABELS["token_embeddings"], groups["token_embeddings"], colors["token_embeddings"], short_label="token emb."),
        PieSlice("position_embeddings", GROUP_LABELS["position_embeddings"], groups["position_embeddings"], colors["position_embeddings"], short_label="positions"),
        PieSlice("blocks", f"{stacks} blocks", blocks, colors["blocks"], short_label="blocks"),
        PieSlice("final_norm", final_label, groups["norms"] - block_norms, colors["final_norm"]),
        PieSlice("head", "output head (untied)", groups["head"], colors["head"], short_label="head"),
    ]
    ffn_label = f"experts ({config.n_experts} per block)" if config.is_moe else "feed-forward (FFN)"
    outer = [
        PieSlice("attention", "attention", groups["attention"], colors["attention"], parent="blocks"),
        PieSlice("ffn", ffn_label, groups["ffn"], colors["ffn"], parent="blocks", short_label="experts" if config.is_moe else "FFN"),
        PieSlice("router", GROUP_LABELS["router"], groups["router"], colors["router"], parent="blocks", short_label="routers"),
        PieSlice("block_norms", "norms in the blocks", block_norms, colors["block_norms"], parent="blocks", short_label="norms"),
    ]
    return inner, outer


def sweep_widths(config: ModelConfig) -> list[int]:
    """Widths a quarter-octave apart in whole heads (so heads scale exactly), plus the config's own."""
    head = config.d_head
    multiples = {max(1, round(2 ** (i / 4))) for i in range(0, 4 * 15)}
    widths = {head * k for k in multiples if head * k <= max(MAX_SWEEP_WIDTH, config.d_model)}
    widths.add(config.d_model)
    return sorted(widths)


def _count_on_meta(configs: tuple[ModelConfig, ...]) -> dict[ModelConfig, int]:
    from core.params import instantiated_parameter_count

    return {config: instantiated_parameter_count(config) for config in configs}


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    table.verticalHeader().hide()
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.setAlternatingRowColors(True)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _set_cell(table: QTableWidget, row: int, column: int, text: str, right: bool = False, bold: bool = False,
              swatch: QColor | None = None, color: QColor | None = None) -> QTableWidgetItem:
    item = table.item(row, column)
    if item is None:
        item = QTableWidgetItem()
        table.setItem(row, column, item)
    item.setText(text)
    item.setFont(theme.font(bold=bold))
    item.setTextAlignment((Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft) | Qt.AlignmentFlag.AlignVCenter)
    item.setData(Qt.ItemDataRole.DecorationRole, swatch)
    item.setForeground(QBrush(color) if color is not None else QBrush())
    return item


def _fit_table(table: QTableWidget, whole_width: bool = False) -> None:
    """Rows and columns sized to the theme's font; with whole_width, the table never needs a horizontal scroll."""
    table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
    header = table.horizontalHeader()
    header.setFont(theme.font(bold=True))
    for column in range(table.columnCount()):
        table.resizeColumnToContents(column)
    if whole_width:
        columns = sum(max(table.sizeHintForColumn(column), header.sectionSizeHint(column)) for column in range(table.columnCount()))
        table.setMinimumWidth(columns + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width())


class ParametersPanel(Panel):
    title = "Parameters"
    needs_torch = False  # the analytic pie is pure Python; only the meta-device count waits for torch
    refresh_on = frozenset({"config"})

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.breakdown: ParameterBreakdown | None = None
        self.counted: dict[ModelConfig, int] = {}  # meta-device counts, filled by the worker
        layout = self.layout()

        controls = QHBoxLayout()
        model_caption = QLabel("Model")
        self.model_combo = self._model_combo("the current config or any preset")
        model_caption.setBuddy(self.model_combo)
        self.tied_check = QCheckBox("Tie the output head to the token embeddings")
        self.tied_check.setToolTip("a tied head reuses the V x d token table instead of a matrix of its own")
        controls.addWidget(model_caption)
        controls.addWidget(self.model_combo)
        controls.addWidget(self.tied_check)
        controls.addStretch(1)
        layout.addLayout(controls)

        self.tabs = QTabWidget()
        self.tabs.addTab(self._build_breakdown_tab(), SUBTABS[0])
        self.tabs.addTab(self._build_compare_tab(), SUBTABS[1])
        self.tabs.addTab(self._build_sweep_tab(), SUBTABS[2])
        self.tabs.addTab(self._build_budget_tab(), SUBTABS[3])
        layout.addWidget(self.tabs, 1)

        self.model_combo.currentIndexChanged.connect(self._on_model_picked)
        self.tied_check.toggled.connect(self.schedule_refresh)
        for combo in (self.compare_a_combo, self.compare_b_combo):
            combo.currentIndexChanged.connect(self.schedule_refresh)
        self.width_slider.valueChanged.connect(self._update_sweep_marker)
        self.tied_check.setChecked(self.state.config.tie_embeddings)
        self.apply_theme()
        self.schedule_refresh()

    # ---- building ------------------------------------------------------------------------------
    def _model_combo(self, tip: str) -> QComboBox:
        combo = QComboBox()
        combo.addItem(self._current_entry_text(), CURRENT)
        for name in PRESETS:
            combo.addItem(name, name)
        combo.setToolTip(tip)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        return combo

    def _current_entry_text(self) -> str:
        return f"current config ({self.state.config.name})"

    def _build_breakdown_tab(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        self.pie_view = PieView()
        self.pie = self.pie_view.pie
        row.addWidget(self.pie_view, 3)
        column = QVBoxLayout()
        self.total_label = QLabel()
        self.total_label.setWordWrap(True)
        self.total_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.agree_label = QLabel()
        self.agree_label.setToolTip("the analytic total against the parameters of the real module tree built on the meta device")
        self.tied_label = QLabel()
        self.tied_label.setWordWrap(True)
        self.block_label = QLabel()
        self.block_label.setWordWrap(True)
        self.moe_label = QLabel()
        self.moe_label.setWordWrap(True)
        self.legend_table = _table(("part", "parameters", "share"))
        for widget in (self.total_label, self.agree_label, self.tied_label, self.block_label, self.moe_label):
            column.addWidget(widget)
        column.addWidget(self.legend_table, 1)
        row.addLayout(column, 2)
        return page

    def _build_compare_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        pickers = QHBoxLayout()
        self.compare_a_combo = self._model_combo("left model")
        self.compare_b_combo = self._model_combo("right model")
        for combo, name in ((self.compare_a_combo, DEFAULT_COMPARE[0]), (self.compare_b_combo, DEFAULT_COMPARE[1])):
            combo.setCurrentIndex(combo.findData(name))
        pickers.addWidget(QLabel("Left"))
        pickers.addWidget(self.compare_a_combo)
        pickers.addSpacing(24)
        pickers.addWidget(QLabel("Right"))
        pickers.addWidget(self.compare_b_combo)
        pickers.addStretch(1)
        column.addLayout(pickers)
        row = QHBoxLayout()
        self.compare_views = (PieView(), PieView())
        for view in self.compare_views:
            view.setMinimumSize(160, 160)  # three views side by side must still fit a 1366-pixel screen
            row.addWidget(view, 3)
        self.compare_table = _table(("", "left", "right"))
        self.compare_table.horizontalHeader().setStretchLastSection(False)
        self.compare_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        row.addWidget(self.compare_table, 3)
        column.addLayout(row, 1)
        return page

    def _build_sweep_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        slider_row = QHBoxLayout()
        slider_row.addWidget(QLabel("Width d"))
        self.width_slider = QSlider(Qt.Orientation.Horizontal)
        self.width_slider.setToolTip("d_model; heads and d_ff scale in proportion, vocabulary and depth stay")
        slider_row.addWidget(self.width_slider, 1)
        column.addLayout(slider_row)
        self.sweep_label = QLabel()
        self.sweep_label.setWordWrap(True)
        column.addWidget(self.sweep_label)
        self.sweep_plot = pg.PlotWidget()
        self.sweep_plot.setMenuEnabled(False)
        self.sweep_plot.setMouseEnabled(x=False, y=False)
        self.sweep_plot.hideButtons()
        self.sweep_plot.setTitle("As the width grows, the d² blocks outgrow the V·d embeddings")
        self.sweep_plot.setLogMode(x=True, y=False)
        self.sweep_plot.setLabel("bottom", "width d_model")
        self.sweep_plot.setLabel("left", "share (%)")
        self.sweep_plot.showGrid(x=True, y=True, alpha=0.25)
        self.sweep_plot.addLegend(offset=(-10, 10))  # top right: both curves run low or level there
        self.embedding_curve = self.sweep_plot.plot([], [], name="embeddings / all parameters")
        self.ffn_curve = self.sweep_plot.plot([], [], name="FFN / one block")
        self.sweep_marker = self.sweep_plot.plot([], [], symbol="o", symbolSize=14)
        self.config_width_line = pg.InfiniteLine(angle=90, movable=False, label="", labelOpts={"position": 0.08})
        self.sweep_plot.addItem(self.config_width_line, ignoreBounds=True)
        self.sweep_plot.setYRange(0, 100, padding=0.03)
        column.addWidget(self.sweep_plot, 1)
        self.sweep = None
        return page

    def _build_budget_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        self.budget_label = QLabel()
        self.budget_label.setWordWrap(True)
        column.addWidget(self.budget_label)
        self.budget_table = _table(("quantity", "fp32", "bf16", "int8"))
        header = self.budget_table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        column.addWidget(self.budget_table, 1)
        return page

    # ---- state -> config -----------------------------------------------------------------------
    def _picked(self, combo: QComboBox) -> ModelConfig:
        name = combo.currentData()
        return self.state.config if name == CURRENT or name not in PRESETS else PRESETS[name]

    def shown_config(self) -> ModelConfig:
        """The picked model with the panel's head tying."""
        picked = self._picked(self.model_combo)
        tied = self.tied_check.isChecked()
        return picked if picked.tie_embeddings == tied else picked.replace(tie_embeddings=tied)

    def _on_model_picked(self) -> None:
        self.tied_check.blockSignals(True)
        self.tied_check.setChecked(self._picked(self.model_combo).tie_embeddings)
        self.tied_check.blockSignals(False)
        self.schedule_refresh()

    def _on_state_changed(self, field: str) -> None:
        if field == "config":
            for combo in (self.model_combo, self.compare_a_combo, self.compare_b_combo):
                combo.setItemText(0, self._current_entry_text())
            if self.model_combo.currentData() == CURRENT:
                self._on_model_picked()
        super()._on_state_changed(field)

    def refresh(self) -> None:
        try:
            config = self.shown_config()
            self._show_breakdown(config)
            self._show_comparison(self._picked(self.compare_a_combo), self._picked(self.compare_b_combo))
            self._show_sweep(config)
            self._show_budget(config)
        except (ConfigError, BudgetError) as error:
            self.show_error(str(error))
            return
        self.clear_error()
        wanted = tuple(dict.fromkeys(c for c in (config, *self._compared()) if c not in self.counted))
        if wanted and self.state.torch_ready:
            self.submit(lambda: _count_on_meta(wanted), self._show_counts, "counting parameters on the meta device")
        elif not wanted:
            self.result_shown.emit()

    def _compared(self) -> tuple[ModelConfig, ModelConfig]:
        return self._picked(self.compare_a_combo), self._picked(self.compare_b_combo)

    # ---- breakdown -----------------------------------------------------------------------------
    def _show_breakdown(self, config: ModelConfig) -> None:
        breakdown = self.breakdown = parameter_breakdown(config)
        inner, outer = pie_slices(breakdown)
        self.pie.set_data(inner, outer)
        self.pie_view.set_title(f"{config.name}: {format_count(breakdown.total)} parameters")
        self.total_label.setText(f"<b>{config.name}</b>: {breakdown.total:,} parameters by formula")
        self._update_agreement()
        self.tied_label.setText(self._tying_text(config))
        block = breakdown.decoder_block
        self.block_label.setText(
            f"One {'decoder ' if breakdown.encoder_block else ''}block: {block.total:,} = attention {block.attention:,}"
            f" + {'experts' if config.is_moe else 'FFN'} {block.ffn:,}{f' + router {block.router:,}' if block.router else ''}"
            f" + norms {block.norms:,}; the {'experts hold' if config.is_moe else 'FFN holds'} {format_share(block.ffn_share)} of it.")
        if config.is_moe:
            self.moe_label.setText(
                f"Mixture of experts: <b>{format_count(breakdown.total)}</b> parameters in total, <b>{format_count(breakdown.active)}</b>"
                f" active per token ({format_share(breakdown.active / breakdown.total)}): each token reaches {config.top_k}"
                f" of the {config.n_experts} experts in a block, but all must sit in memory.")
            self.moe_label.show()
        else:
            self.moe_label.hide()
        self._fill_legend(inner, outer, breakdown)

    def _tying_text(self, config: ModelConfig) -> str:
        tied = parameter_breakdown(config.replace(tie_embeddings=True))
        untied = parameter_breakdown(config.replace(tie_embeddings=False))
        saved = untied.total - tied.total
        shape = f"{config.vocab_size:,} × {config.d_model:,}"
        if config.tie_embeddings:
            return (f"Tied: the head reuses the {shape} token table, so V × d = {saved:,} parameters are not added"
                    f" ({format_count(tied.total)} instead of {format_count(untied.total)} untied).")
        return (f"Untied: the head is a {shape} matrix of its own, adding V × d = {saved:,} parameters"
                f" ({format_count(untied.total)} instead of {format_count(tied.total)} tied).")

    def _update_agreement(self) -> None:
        if self.breakdown is None:
            return
        config = self.breakdown.config
        counted = self.counted.get(config)
        if counted is None:
            waiting = "counting the instantiated model..." if self.state.torch_ready else "the instantiated count waits for torch to load"
            self.agree_label.setText(f"Instantiated on the meta device: {waiting}")
            self.agree_label.setStyleSheet(f"color: {theme.current().muted};")
            return
        agrees = counted == self.breakdown.total
        difference = "" if agrees else f" (by {counted - self.breakdown.total:+,})"
        self.agree_label.setText(f"Instantiated on the meta device: {counted:,}  <b>{AGREES if agrees else DIFFERS}</b>{difference}")
        role = "tertiary" if agrees else "warning"
        self.agree_label.setStyleSheet(f"color: {theme.color(role).name()};")

    def _fill_legend(self, inner: list[PieSlice], outer: list[PieSlice], breakdown: ParameterBreakdown) -> None:
        rows: list[tuple[str, int, QColor | None, bool]] = []
        for piece in inner:
            if piece.value == 0:
                continue
            rows.append((piece.label, piece.value, piece.color, False))
            for child in outer:
                if child.parent == piece.key and child.value:
                    rows.append(("    " + child.label, child.value, child.color, False))
        rows.append(("total", breakdown.total, None, True))
        if breakdown.active != breakdown.total:
            rows.append(("active per token", breakdown.active, None, True))
        table = self.legend_table
        table.setRowCount(len(rows))
        for index, (label, value, color, bold) in enumerate(rows):
            _set_cell(table, index, 0, label, bold=bold, swatch=color)
            _set_cell(table, index, 1, f"{value:,}", right=True, bold=bold)
            _set_cell(table, index, 2, format_share(value / breakdown.total), right=True, bold=bold)
        _fit_table(table)

    def pie_values(self) -> dict[str, int]:
        """Wedge key -> parameters, as the main pie shows them."""
        return {key: self.pie.value(key) for key in self.pie.keys()}

    def _show_counts(self, counts: dict[ModelConfig, int]) -> None:
        self.counted.update(counts)
        self._update_agreement()
        self._fill_comparison_counts()
        self.result_shown.emit()

    # ---- comparison ----------------------------------------------------------------------------
    def _show_comparison(self, left: ModelConfig, right: ModelConfig) -> None:
        comparison = compare_configs(left, right)
        for view, config in zip(self.compare_views, (left, right)):
            breakdown = parameter_breakdown(config)
            view.pie.set_data(*pie_slices(breakdown))
            view.set_title(f"{config.name}: {format_count(breakdown.total)}")
        colors = _role_colors()
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
        rows.append(("meta-device count", None, "", ""))
        table = self.compare_table
        table.setHorizontalHeaderLabels(["", left.name, right.name])
        table.setRowCount(len(rows))
        for index, (label, swatch, left_text, right_text) in enumerate(rows):
            _set_cell(table, index, 0, label, swatch=swatch)
            _set_cell(table, index, 1, left_text, right=True)
            _set_cell(table, index, 2, right_text, right=True)
        self._compare_totals = (comparison.a.total_params, comparison.b.total_params)
        self._fill_comparison_counts()

    def _fill_comparison_counts(self) -> None:
        table = self.compare_table
        row = table.rowCount() - 1
        if row < 0:
            return
        for column, (config, total) in enumerate(zip(self._compared(), self._compare_totals), start=1):
            counted = self.counted.get(config)
            if counted is None:
                _set_cell(table, row, column, "counting..." if self.state.torch_ready else "after torch loads", right=True,
                          color=theme.color("muted"))
            else:
                agrees = counted == total
                cell = _set_cell(table, row, column, AGREES if agrees else DIFFERS, right=True,
                                 color=theme.color("tertiary" if agrees else "warning"))
                cell.setToolTip(f"{counted:,} instantiated, {total:,} by formula")
        _fit_table(table, whole_width=True)

    # ---- width sweep ---------------------------------------------------------------------------
    def _show_sweep(self, config: ModelConfig) -> None:
        widths = sweep_widths(config)
        # Keep the slider's width while the same model is shown (a theme change, a tying toggle);
        # a new model starts at its own width.
        same_model = self.sweep is not None and self.sweep.base_name == config.name
        previous = int(self.sweep.widths[self.width_slider.value()]) if same_model else None
        self.sweep = embedding_share_sweep(config, widths)
        self.embedding_curve.setData(self.sweep.widths.astype(float), 100 * self.sweep.embedding_share)
        self.ffn_curve.setData(self.sweep.widths.astype(float), 100 * self.sweep.ffn_share_of_block)
        self.config_width_line.setValue(math.log10(config.d_model))
        self.config_width_line.label.setFormat(f"{config.name}: d = {config.d_model:,}")
        self._set_width_ticks(widths)
        self.width_slider.blockSignals(True)
        self.width_slider.setRange(0, len(widths) - 1)
        target = previous if previous in widths else config.d_model
        self.width_slider.setValue(widths.index(target))
        self.width_slider.blockSignals(False)
        self._update_sweep_marker()

    def _set_width_ticks(self, widths: list[int]) -> None:
        ticks, width = [], 1
        while width <= widths[-1]:
            if width >= widths[0]:
                ticks.append((math.log10(width), f"{width:,}"))
            width *= 2
        major = ticks[::2] if len(ticks) > 8 else ticks
        self.sweep_plot.getAxis("bottom").setTicks([major, [t for t in ticks if t not in major]])

    def _update_sweep_marker(self) -> None:
        if self.sweep is None:
            return
        index = self.width_slider.value()
        sweep = self.sweep
        width, share, ffn = int(sweep.widths[index]), float(sweep.embedding_share[index]), float(sweep.ffn_share_of_block[index])
        self.sweep_marker.setData([float(width)], [100 * share])
        try:
            scaled = scaled_config(self.shown_config(), width)
        except BudgetError as error:
            self.show_error(str(error))
            return
        self.sweep_label.setText(
            f"<b>d = {width:,}</b> ({scaled.n_heads} heads of {scaled.d_head}, d_ff {scaled.d_ff:,}):"
            f" {format_count(int(sweep.total_params[index]))} parameters; the embeddings are <b>{format_share(share)}</b>"
            f" of them, the FFN {format_share(ffn)} of a block.")

    # ---- budgets -------------------------------------------------------------------------------
    def _show_budget(self, config: ModelConfig) -> None:
        budget = compute_budget(config)
        moe = f", of {format_count(budget.total_params)} in all" if budget.active_params != budget.total_params else ""
        self.budget_label.setText(
            f"<b>{config.name}</b>: N = {format_count(budget.active_params)} parameters per token{moe}."
            f" Training ≈ 6N FLOP per token (forward 2N, backward 4N); inference adds the attention scores at"
            f" T = {budget.seq_len:,}. Weights count every parameter; the KV cache holds K and V of every layer.")
        rows: list[tuple[str, Any]] = [
            ("training FLOPs per token (6N)", format_flops(budget.training_flops_per_token)),
            (f"inference FLOPs per token (at T = {budget.seq_len:,})", format_flops(budget.inference_flops_per_token)),
            ("    of which attention scores", format_flops(budget.attention_flops_per_token)),
            ("weights", budget.weight_bytes),
            ("KV cache per token", budget.kv_cache_bytes_per_token),
            (f"KV cache at the context length ({budget.context_length:,} tokens)", budget.kv_cache_bytes_full_context),
        ]
        table = self.budget_table
        table.clearSpans()
        table.setRowCount(len(rows))
        for index, (label, value) in enumerate(rows):
            _set_cell(table, index, 0, label, bold=True)
            if isinstance(value, str):
                # A FLOP count does not depend on the dtype: one centred cell across the three columns.
                _set_cell(table, index, 1, value).setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                for column in (2, 3):
                    _set_cell(table, index, column, "")
                table.setSpan(index, 1, 1, 3)
            else:
                for column, dtype in enumerate(("fp32", "bf16", "int8"), start=1):
                    _set_cell(table, index, column, format_bytes(value[dtype]), right=True)
        _fit_table(table)

    # ---- theme, export, session ----------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()
        for view in (self.pie_view, *self.compare_views):
            view.restyle()
        for curve, role in ((self.embedding_curve, "primary"), (self.ffn_curve, "tertiary")):
            curve.setPen(theme.pen(role))
        self.sweep_marker.setSymbolBrush(theme.brush("highlight"))
        self.sweep_marker.setSymbolPen(theme.pen("text", width=2))
        self.sweep_marker.setSymbolSize(10 + 2 * theme.current().line_width)
        self.config_width_line.setPen(theme.pen("muted", width=max(1.0, theme.current().line_width / 2), style=Qt.PenStyle.DashLine))
        self.config_width_line.label.setColor(theme.color("text"))
        self.config_width_line.label.setFont(theme.font(0.9))
        if self.breakdown is not None:
            self.refresh()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            (self.title, self),
            ("Parameter pie (plot)", self.pie_view.getPlotItem()),
            ("Left comparison pie (plot)", self.compare_views[0].getPlotItem()),
            ("Right comparison pie (plot)", self.compare_views[1].getPlotItem()),
            ("Embedding share by width (plot)", self.sweep_plot.getPlotItem()),
            ("Parameter table", self.legend_table),
            ("Comparison table", self.compare_table),
            ("Budget table", self.budget_table),
        ]

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model_combo.currentData(),
            "tied": self.tied_check.isChecked(),
            "compare_left": self.compare_a_combo.currentData(),
            "compare_right": self.compare_b_combo.currentData(),
            "width": int(self.sweep.widths[self.width_slider.value()]) if self.sweep is not None else None,
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
        self.refresh()
        width = data.get("width")
        if isinstance(width, int) and not isinstance(width, bool) and self.sweep is not None:
            widths = [int(w) for w in self.sweep.widths]
            if width in widths:
                self.width_slider.setValue(widths.index(width))


__all__ = ["ParametersPanel", "pie_slices", "format_flops", "format_bytes", "sweep_widths"]
