"""What the Parameters views share: the model picker and head tying, wedge colours, and table helpers."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QCheckBox, QComboBox, QHeaderView, QTableWidget, QTableWidgetItem

from core.config import ModelConfig
from core.params import GROUP_LABELS, ParameterBreakdown
from core.presets import PRESETS
from gui import theme
from gui.widgets.pie import PieSlice
from gui.widgets.table_rows import fit_number_columns, never_cut_cells

CURRENT = ""  # picker data of the "current config" entry
AGREES, DIFFERS = "✓ agrees", "✗ differs"


def current_entry_text(config: ModelConfig) -> str:
    return f"current config ({config.name})"


def model_combo(config: ModelConfig, tip: str) -> QComboBox:
    """A picker of the current config (first entry) or any preset."""
    combo = QComboBox()
    combo.addItem(current_entry_text(config), CURRENT)
    for name in PRESETS:
        combo.addItem(name, name)
    combo.setToolTip(tip)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


def picked(combo: QComboBox, current: ModelConfig) -> ModelConfig:
    name = combo.currentData()
    return current if name == CURRENT or name not in PRESETS else PRESETS[name]


class ParametersControls(QObject):
    """The model picker and the head tying that the breakdown, sweep and budget views read."""

    changed = Signal()

    def __init__(self, config: ModelConfig, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model_combo = model_combo(config, "the current config or any preset")
        self.tied_check = QCheckBox("Tie the output head to the token embeddings")
        self.tied_check.setToolTip("a tied head reuses the V x d token table instead of a matrix of its own")
        self.tied_check.setChecked(config.tie_embeddings)
        self.model_combo.currentIndexChanged.connect(self._on_model_picked)
        self.tied_check.toggled.connect(self.changed)
        self._current = config

    def shown_config(self) -> ModelConfig:
        """The picked model with the chosen head tying (raises ConfigError if that cannot be built)."""
        chosen = picked(self.model_combo, self._current)
        tied = self.tied_check.isChecked()
        return chosen if chosen.tie_embeddings == tied else chosen.replace(tie_embeddings=tied)

    def follow_config(self, config: ModelConfig) -> None:
        """The current config changed: rename its entry; if it is the one shown, take its tying too."""
        self._current = config
        self.model_combo.setItemText(0, current_entry_text(config))
        if self.model_combo.currentData() == CURRENT:
            self._take_tying()
        self.changed.emit()

    def _on_model_picked(self) -> None:
        self._take_tying()
        self.changed.emit()

    def _take_tying(self) -> None:
        self.tied_check.blockSignals(True)
        self.tied_check.setChecked(picked(self.model_combo, self._current).tie_embeddings)
        self.tied_check.blockSignals(False)


def role_colors() -> dict[str, QColor]:
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
    colors = role_colors()
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


def table(columns: tuple[str, ...]) -> QTableWidget:
    widget = QTableWidget(0, len(columns))
    widget.setHorizontalHeaderLabels(list(columns))
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    widget.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    widget.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    widget.verticalHeader().hide()
    widget.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    widget.setAlternatingRowColors(True)
    widget.horizontalHeader().setStretchLastSection(True)
    never_cut_cells(widget)
    return widget


def set_cell(widget: QTableWidget, row: int, column: int, text: str, right: bool = False, bold: bool = False,
             swatch: QColor | None = None, color: QColor | None = None) -> QTableWidgetItem:
    item = widget.item(row, column)
    if item is None:
        item = QTableWidgetItem()
        widget.setItem(row, column, item)
    item.setText(text)
    item.setFont(theme.font(bold=bold))
    item.setTextAlignment((Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft) | Qt.AlignmentFlag.AlignVCenter)
    item.setData(Qt.ItemDataRole.DecorationRole, swatch)
    item.setForeground(QBrush(color) if color is not None else QBrush())
    return item


def fit_table(widget: QTableWidget, whole_width: bool = False) -> None:
    """Rows sized to the theme's font; the number columns as wide as their numbers, the first (the parts'
    names) elided with "…" when squeezed; with whole_width, the names are never elided either."""
    widget.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
    header = widget.horizontalHeader()
    header.setFont(theme.font(bold=True))
    fit_number_columns(widget, elided_column=0)
    if whole_width:
        columns = sum(max(widget.sizeHintForColumn(column), header.sectionSizeHint(column)) for column in range(widget.columnCount()))
        widget.setMinimumWidth(columns + 2 * widget.frameWidth() + widget.verticalScrollBar().sizeHint().width())
