"""Breakdown: the pie of where one model's parameters live, its legend, tying and one block spelled out."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.config import ConfigError, ModelConfig
from core.display import short_counts_apart
from core.params import ParameterBreakdown
from gui.panels.base import Refusal, View
from gui.panels.parameters.common import ParametersControls, pie_slices
from gui.panels.common import fit_table, set_cell, table
from gui.panels.parameters.count import MetaCountCache, MetaCountView
from gui.widgets.pie import PieSlice, PieView, format_count, format_share
from gui.widgets.table_rows import keep_rows_in_view
from gui.widgets.turning_splitter import TurningBox


@dataclass(frozen=True)
class BreakdownInputs:
    config: ModelConfig


@dataclass(frozen=True)
class BreakdownResult:
    breakdown: ParameterBreakdown
    tied_total: int  # the same model with a tied head
    untied_total: int  # and with a head of its own


def compute_breakdown(inputs: BreakdownInputs, token) -> BreakdownResult:
    from core.params import parameter_breakdown

    config = inputs.config
    return BreakdownResult(parameter_breakdown(config), parameter_breakdown(config.replace(tie_embeddings=True)).total,
                           parameter_breakdown(config.replace(tie_embeddings=False)).total)


def rich_label() -> QLabel:
    label = QLabel("")
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)  # the app's markup around computed numbers and preset names
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class BreakdownView(View):
    name = "Breakdown"
    reads = frozenset({"config"})
    needs_torch = False  # pure Python: the formula needs no torch; the meta count below waits for it
    compute_fn = staticmethod(compute_breakdown)

    def __init__(self, state, compute, controls: ParametersControls, counts: MetaCountCache, channel_prefix: str = "",
                 parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        page = QVBoxLayout(self.content)
        page.setContentsMargins(0, 0, 0, 0)
        row = TurningBox()  # the figures go below the pie where both do not fit (a lesson beside the panel)
        page.addWidget(row)
        self.pie_view = PieView()
        self.pie = self.pie_view.pie
        row.addWidget(self.pie_view, 3)
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        self.total_label = rich_label()
        self.count = MetaCountView(state, compute, lambda: (controls.shown_config(),), counts, channel_prefix)
        controls.changed.connect(self.count.inputs_changed)
        self.agree_label = self.count.label
        self.tied_label = rich_label()
        self.block_label = rich_label()
        self.moe_label = rich_label()
        self.legend_table = table(("part", "parameters", "share"))
        for widget in (self.total_label, self.count, self.tied_label, self.block_label, self.moe_label):
            column.addWidget(widget)
        column.addWidget(self.legend_table, 1)
        row.addWidget(side, 2)
        self.stale_labels = [self.total_label, self.tied_label, self.block_label, self.moe_label]

    def inputs(self) -> BreakdownInputs | Refusal:
        try:
            return BreakdownInputs(self.controls.shown_config())
        except ConfigError as error:
            return Refusal(f"{error.field}: {error.message}")

    @property
    def breakdown(self) -> ParameterBreakdown | None:
        return self.result.breakdown if self.result is not None and not self.is_stale else None

    def show_result(self, result: BreakdownResult) -> None:
        breakdown = result.breakdown
        config = breakdown.config
        inner, outer = pie_slices(breakdown)
        self.pie.set_data(inner, outer)
        name = html.escape(config.name)  # a config's name may come from a file: shown as written, not as markup
        self.pie_view.set_title(f"{name}: {format_count(breakdown.total)} parameters")
        self.total_label.setText(f"<b>{name}</b>: {breakdown.total:,} parameters by formula")
        self.tied_label.setText(self._tying_text(config, result))
        self.block_label.setText(self._block_text(breakdown))
        if config.is_moe:
            self.moe_label.setText(
                f"Mixture of experts: <b>{format_count(breakdown.total)}</b> parameters in total, <b>{format_count(breakdown.active)}</b>"
                f" active per token ({format_share(breakdown.active / breakdown.total)}): each token reaches {config.top_k}"
                f" of the {config.n_experts} experts in a block, but all must sit in memory.")
            self.moe_label.show()
        else:
            self.moe_label.hide()
        self._fill_legend(inner, outer, breakdown)

    @staticmethod
    def _block_text(breakdown: ParameterBreakdown) -> str:
        """One block spelled out. Of an encoder-decoder, the encoder's block first: the base layer (self-attention
        and FFN) that papers count; the decoder's block adds cross-attention and a norm to it."""
        config = breakdown.config
        ffn = "experts" if config.is_moe else "FFN"
        holds = "experts hold" if config.is_moe else "FFN holds"

        def spelled(block) -> str:
            if config.attention_only:
                return (f"{block.total:,} = attention {block.attention:,} + norms {block.norms:,}; "
                        "attention-only, no FFN")
            router = f" + router {block.router:,}" if block.router else ""
            return (f"{block.total:,} = attention {block.attention:,} + {ffn} {block.ffn:,}{router} + norms {block.norms:,};"
                    f" the {holds} {format_share(block.ffn_share)} of it")

        encoder, decoder = breakdown.encoder_block, breakdown.decoder_block
        if encoder is None:
            return f"One block: {spelled(decoder)}."
        share = "" if config.attention_only else f", the {holds} {format_share(decoder.ffn_share)}"
        return (f"One encoder block (the base layer): {spelled(encoder)}. A decoder block adds cross-attention:"
                f" {decoder.total:,}{share}.")

    @staticmethod
    def _tying_text(config: ModelConfig, result: BreakdownResult) -> str:
        tied, untied = result.tied_total, result.untied_total
        saved = untied - tied
        shape = f"{config.vocab_size:,} × {config.d_model:,}"
        tied_short, untied_short = short_counts_apart(tied, untied)
        if config.tie_embeddings:
            return (f"Tied: the head reuses the {shape} token table, so V × d = {saved:,} parameters are not added"
                    f" ({tied_short} instead of {untied_short} untied).")
        return (f"Untied: the head is a {shape} matrix of its own, adding V × d = {saved:,} parameters"
                f" ({untied_short} instead of {tied_short} tied).")

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
        legend = self.legend_table
        legend.setRowCount(len(rows))
        for index, (label, value, color, bold) in enumerate(rows):
            set_cell(legend, index, 0, label, bold=bold, swatch=color)
            set_cell(legend, index, 1, f"{value:,}", right=True, bold=bold)
            set_cell(legend, index, 2, format_share(value / breakdown.total), right=True, bold=bold)
        fit_table(legend)
        keep_rows_in_view(legend)  # below the pie (a lesson beside the panel), not squeezed to its header

    def apply_theme(self) -> None:
        super().apply_theme()
        self.pie_view.restyle()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Parameter pie (plot)", self.pie_view.getPlotItem()), ("Parameter table", self.legend_table)]
