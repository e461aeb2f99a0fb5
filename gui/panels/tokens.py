"""Tokens & masks: edit a token and watch, layer by layer, which positions of the residual stream move.

The reading's central experiment made playable. The token strip on top edits the sequence (every
edit is an undoable change of `LabState.tokens`); each edit at position t runs the sequence before
and after the edit through the same model (`causal_edit_diff` on the worker) and shows the max
|change| per (layer, position). "Unchanged" is only ever what `torch.equal` measured: those cells
are hatched and read "0 (exact)"; a tiny leak such as 3.1e-08 is a number on a log colour scale,
never rounded away. The sub-tabs show the mask itself, the attention weights, the head-split
pitfall and the next-token distribution of the same sequence.

Only the propagation and the visible sub-tab are computed per edit (one worker job, one channel);
results are cached by what they depend on, so switching tabs computes only what is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QUndoCommand
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gui import theme
from gui.panels.base import Panel
from gui.widgets.heatmap import Heatmap
from gui.widgets.token_strip import TokenStrip

# The core's MASK_MODES (core.model imports torch, which the GUI thread must not): a test checks they agree.
MASK_MODE_CHOICES: tuple[tuple[str, str], ...] = (
    ("causal", "causal"),
    ("none", "none (bidirectional)"),
    ("off-by-one", "off-by-one (diag=0)"),
    ("after-softmax", "after the softmax"),
)
SUB_TABS = ("Propagation", "Mask", "Attention", "Head split", "Predictions")
HEAD_SPLIT_MAX_TOKENS = 24  # the head-split maps stay legible cell by cell
HATCH_CELL_PX = 8  # resolution of the exact-zero / NaN overlay per heatmap cell
MAX_BAR_LABELS = 32  # value labels on the per-position bars up to this many positions
DEFAULT_TOP_K = 10
MASK_VISIBLE, MASK_DENOMINATOR_ONLY, MASK_HIDDEN = 1.0, 0.5, 0.0


def format_change(value: float, exact: bool) -> str:
    """A max |change| as a student should read it: exact zeros say so, tiny leaks keep their digits."""
    if exact:
        return "0 (exact)"
    if math.isnan(value):
        return "NaN"
    if value == 0.0:
        return "0 (not bitwise equal)"
    if abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


# ---- requests and results (plain data crossing to and from the worker) ---------------------------
@dataclass(frozen=True)
class EditProbe:
    """One edit to measure: `base` with position `position` replaced by `new_token`."""

    base: tuple[int, ...]
    position: int
    new_token: int
    measured_edit: bool  # True: the user's own edit; False: a probe chosen after an insert / delete / new text


@dataclass(frozen=True)
class ViewRequest:
    """Which parts one job computes; a part whose key is None is not wanted."""

    diff_key: tuple | None = None
    attention_key: tuple | None = None
    mask_key: tuple | None = None
    split_key: tuple | None = None
    predictions_key: tuple | None = None


@dataclass(frozen=True)
class ViewResult:
    request: ViewRequest
    diff: Any = None  # CausalDiffResult
    attention: Any = None  # AttentionMaps
    masks: tuple = ()  # MaskGrid per attention kind the model has
    split: Any = None  # HeadSplitCheck
    predictions: Any = None  # NextTokenPredictions
    mode_descriptions: dict = field(default_factory=dict)


def mask_kinds(config) -> list[tuple[str, bool]]:
    """(mask_grid kind, whether the panel's mask mode applies to it) for the kinds this config has."""
    if config.architecture == "encoder":
        return [("encoder-self", True)]
    if config.architecture == "encoder-decoder":
        return [("decoder-self", True), ("encoder-self", False), ("cross", False)]
    return [("decoder-self", True)]


def compute_views(model, tokenizer, request: ViewRequest) -> ViewResult:
    """Runs on the compute worker: every torch call of the panel happens here."""
    from core.experiments import causal

    diff = attention = split = predictions = None
    masks: tuple = ()
    if request.diff_key is not None:
        probe, mode, n_blocks = request.diff_key
        diff = causal.causal_edit_diff(model, list(probe.base), probe.position, probe.new_token, mask_mode=mode,
                                       n_blocks=n_blocks, tokenizer_or_labels=tokenizer)
    if request.attention_key is not None:
        tokens, mode = request.attention_key
        attention = causal.attention_maps(model, list(tokens), mask_mode=mode, tokenizer_or_labels=tokenizer)
    if request.mask_key is not None:
        tokens, mode = request.mask_key
        labels = causal.token_labels(list(tokens), tokenizer)
        masks = tuple(
            causal.mask_grid(model.config, len(tokens), kind, mode if applies else None,
                             query_labels=labels, key_labels=labels)
            for kind, applies in mask_kinds(model.config)
        )
    if request.split_key is not None:
        seed, d_model, n_heads, n_tokens, is_causal = request.split_key
        split = causal.head_split_check(seed, d_model, n_heads, n_tokens, causal=is_causal)
    if request.predictions_key is not None:
        tokens, position, k, temperature, mode = request.predictions_key
        predictions = causal.next_token_predictions(model, list(tokens), position, tokenizer, k=k,
                                                    temperature=temperature, mask_mode=mode)
    return ViewResult(request, diff, attention, masks, split, predictions, dict(causal.MASK_MODE_DESCRIPTIONS))


class _SetTokensCommand(QUndoCommand):
    """A strip edit on the LabState's own undo stack, so Edit > Undo reverts it like any other edit."""

    def __init__(self, state, old: list[int], new: list[int], text: str) -> None:
        super().__init__(text)
        self._state, self._old, self._new = state, list(old), list(new)

    def redo(self) -> None:
        self._state.set("tokens", self._new, undoable=False)

    def undo(self) -> None:
        self._state.set("tokens", self._old, undoable=False)


# ---- views -----------------------------------------------------------------------------------------
def _log_ticks(low: int, high: int, room: int = 8) -> list[tuple[float, str]]:
    """Decade ticks 1e-8 .. 1, at most `room` of them so that labels never overlap."""
    step = max(1, math.ceil((high - low + 1) / max(1, room)))
    return [(float(k), f"1e{k}" if k not in (0, 1) else ("1" if k == 0 else "10")) for k in range(low, high + 1, step)]


def _set_title(plot: pg.PlotWidget, text: str) -> None:
    """A plot title at the size theme.style_plot gives titles (a bare setTitle would reset it)."""
    label_px = max(8, round(theme.font(0.9).pointSizeF() * 1.35))
    style = (text, theme.current().text, label_px)
    if getattr(plot, "_tokens_title_style", None) == style:
        return  # re-setting a title re-lays out the whole plot
    plot._tokens_title_style = style
    plot.setTitle(text, color=theme.current().text, size=f"{round(label_px * 1.1)}px")


def _hatch_overlay(exact: np.ndarray, nan: np.ndarray,
                   cell_px: tuple[int, int] = (HATCH_CELL_PX, HATCH_CELL_PX)) -> np.ndarray:
    """RGBA (rows*Sy, cols*Sx, 4): exact zeros hatched, NaN cross-hatched; transparent elsewhere.

    A pattern rather than a colour, so "exactly unchanged" cannot be mistaken for a small value of the
    colormap (and survives greyscale printing). cell_px is about a cell's size on screen, so that the
    stripes stay thin, evenly spaced and at 45 degrees however few and wide the cells are.
    """
    width, height = cell_px
    rows, cols = exact.shape
    yy, xx = np.mgrid[0:height, 0:width]
    # A period that divides the cell size, so stripes run on unbroken from cell to cell; bolder on a projector.
    period, stroke = (8, 2) if theme.current().line_width > 2 else (4, 1)
    diagonal = ((xx + yy) % period) < stroke  # (Sy, Sx) one set of diagonal stripes
    crossed = diagonal | (((xx - yy) % period) < stroke)
    palette = theme.current()
    base, muted, warning = QColor(palette.base), QColor(palette.muted), QColor(palette.warning)
    tiles = np.zeros((3, height, width, 4), dtype=np.uint8)  # per category: transparent, exact, NaN
    tiles[1] = (base.red(), base.green(), base.blue(), 255)
    tiles[1][diagonal] = (muted.red(), muted.green(), muted.blue(), 255)
    tiles[2] = (255, 255, 255, 255)
    tiles[2][crossed] = (warning.red(), warning.green(), warning.blue(), 255)
    category = np.where(exact, 1, np.where(nan, 2, 0))  # (rows, cols)
    # One gather and a transpose instead of per-pixel masks: (rows, cols, S, S, 4) -> (rows*S, cols*S, 4).
    return np.ascontiguousarray(tiles[category].transpose(0, 2, 1, 3, 4).reshape(rows * height, cols * width, 4))


def _overlay_cell_px(view_width: float, view_height: float, rows: int, cols: int) -> tuple[int, int]:
    """About one overlay pixel per screen pixel, in multiples of 8 (both stripe periods), within a bounded image."""
    def fit(extent: float, count: int, limit: int) -> int:
        pixels = extent / max(1, count) if extent > 0 else HATCH_CELL_PX
        return int(min(max(8, round(pixels / 8) * 8), max(8, limit // max(1, count) // 8 * 8)))
    return fit(view_width, cols, 4096), fit(view_height, rows, 2048)


class TileOverview(QWidget):
    """All layers x heads as small multiples in one image (one ImageItem, not one plot per head)."""

    GAP_FRACTION = 0.08

    def __init__(self, on_pick, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_pick = on_pick
        self._shape = (0, 0, 0, 0)
        self._weights: np.ndarray | None = None
        self._labels: tuple[str, ...] = ()
        self._gap = 1
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.invertY(True)
        self.plot.setTitle("All layers x heads (click one)")
        self.plot.getViewBox().setAspectLocked(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.selection = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.selection.setZValue(10)
        self.plot.addItem(self.selection)
        self.readout = QLabel(" ")
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)
        self.plot.scene().sigMouseMoved.connect(self._moved)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.apply_theme()

    def set_maps(self, weights: np.ndarray, labels: tuple[str, ...]) -> None:
        """weights: (L, H, T, S) attention weights; tiled into one (L*(T+g), H*(S+g)) image."""
        n_layers, n_heads, n_queries, n_keys = weights.shape
        gap = max(1, round(max(n_queries, n_keys) * self.GAP_FRACTION))
        tiled = np.full((n_layers * (n_queries + gap) - gap, n_heads * (n_keys + gap) - gap), np.nan, dtype=np.float32)
        for layer in range(n_layers):
            for head in range(n_heads):
                r, c = layer * (n_queries + gap), head * (n_keys + gap)
                tiled[r:r + n_queries, c:c + n_keys] = weights[layer, head]
        self._weights, self._labels, self._gap, self._shape = weights, labels, gap, weights.shape
        self.image.setImage(tiled, autoLevels=False, levels=(0.0, 1.0))
        self.image.setLookupTable(theme.colormap().getLookupTable(nPts=256))
        self.plot.setRange(xRange=(0, tiled.shape[1]), yRange=(0, tiled.shape[0]), padding=0.02)
        layer_ticks = [(layer * (n_queries + gap) + n_queries / 2, f"block {layer}") for layer in range(n_layers)]
        head_ticks = [(head * (n_keys + gap) + n_keys / 2, f"head {head}") for head in range(n_heads)]
        self.plot.getAxis("left").setTicks([layer_ticks])
        self.plot.getAxis("bottom").setTicks([head_ticks])

    def select(self, layer: int, head: int) -> None:
        _, _, n_queries, n_keys = self._shape
        if not n_queries:
            return
        left, top = head * (n_keys + self._gap) - 0.5, layer * (n_queries + self._gap) - 0.5
        self.selection.setRect(QRectF(left, top, n_keys + 1, n_queries + 1))

    def _cell(self, scene_pos) -> tuple[int, int, int, int] | None:
        if self._weights is None:
            return None
        point = self.plot.getViewBox().mapSceneToView(scene_pos)
        n_layers, n_heads, n_queries, n_keys = self._shape
        row, col = int(math.floor(point.y())), int(math.floor(point.x()))
        layer, query = divmod(row, n_queries + self._gap)
        head, key = divmod(col, n_keys + self._gap)
        if row < 0 or col < 0 or layer >= n_layers or head >= n_heads or query >= n_queries or key >= n_keys:
            return None
        return layer, head, query, key

    def _moved(self, scene_pos) -> None:
        cell = self._cell(scene_pos)
        if cell is None:
            self.readout.setText(" ")
            return
        layer, head, query, key = cell
        value = float(self._weights[layer, head, query, key])
        label = self._labels
        self.readout.setText(f"block {layer}, head {head}: query {query} '{label[query]}' -> "
                             f"key {key} '{label[key]}': {value:.6g}")

    def _clicked(self, event) -> None:
        cell = self._cell(event.scenePos())
        if cell is not None:
            self._on_pick(cell[0], cell[1])

    def apply_theme(self) -> None:
        theme.style_plot(self.plot)
        self.selection.setPen(theme.pen("highlight", width=max(2.0, theme.current().line_width)))
        self.readout.setFont(theme.font(0.95))
        if self._weights is not None:
            self.image.setLookupTable(theme.colormap().getLookupTable(nPts=256))


class TokensPanel(Panel):
    title = "Tokens & masks"
    refresh_on = frozenset({"model", "tokens", "tokenizer", "seed", "config", "device"})

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self._probe: EditProbe | None = None
        self._shown_tokens: list[int] | None = None
        self._probe_hint: int | None = None  # where an insert / delete happened: the next probe's position
        self._views = ViewResult(ViewRequest())
        self._cache: dict[str, tuple[tuple | None, Any]] = {}
        self._descriptions: dict[str, str] = {}
        self._bar_row: int | None = None  # the propagation row shown as bars (None: the last)
        self._bar_labels: list[pg.TextItem] = []
        self._bar_decades = (-8, 0)
        self._overlay_generation = 0  # counts results, so the hatch is redrawn for each new one
        self._overlay_key: tuple | None = None
        self._mode_chosen_by_user = False  # until then the mask follows the model's own (causal / none)
        layout = self.layout()

        self.strip = TokenStrip()
        layout.addWidget(self.strip)
        # Short captions (the stack's own actions say "Undo replace token 8", too wide on a projector);
        # what would be undone is in the tooltip.
        stack = state.undo_stack
        self.undo_button, self.redo_button = QToolButton(), QToolButton()
        for button, caption, slot, enabled in ((self.undo_button, "Undo", stack.undo, stack.canUndo()),
                                               (self.redo_button, "Redo", stack.redo, stack.canRedo())):
            button.setText(caption)
            button.setEnabled(enabled)
            button.clicked.connect(slot)
        self.strip.add_control_group(self.undo_button, self.redo_button)
        stack.canUndoChanged.connect(self.undo_button.setEnabled)
        stack.canRedoChanged.connect(self.redo_button.setEnabled)
        # Bound methods, not lambdas: Qt drops the connection when the panel goes, the state lives on.
        stack.undoTextChanged.connect(self._set_undo_tooltip)
        stack.redoTextChanged.connect(self._set_redo_tooltip)
        self._set_undo_tooltip(stack.undoText())
        self._set_redo_tooltip(stack.redoText())

        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("tokens-mask-mode")
        for mode, label in MASK_MODE_CHOICES:
            self.mode_combo.addItem(label, mode)
        self.mode_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode_combo.setMinimumContentsLength(20)
        self.mode_combo.setToolTip("The self-attention mask both runs use; each pitfall shows what it leaks")
        self.depth_spin = QSpinBox()
        self.depth_spin.setObjectName("tokens-depth")
        self.depth_spin.setRange(1, 1)
        self.depth_spin.setToolTip("Run only the first N blocks "
                                   "(the reading's exercise 1: does the property survive depth?)")
        self.depth_spin.setKeyboardTracking(False)
        mode_caption, depth_caption = QLabel("Mask"), QLabel("Blocks")
        mode_caption.setBuddy(self.mode_combo)
        depth_caption.setBuddy(self.depth_spin)
        # Beside the edit buttons (wrapping below them only when the window is narrow): the plots need the height.
        self.strip.add_control_group(mode_caption, self.mode_combo)
        self.strip.add_control_group(depth_caption, self.depth_spin)
        self.verdict = QLabel("Waiting for torch to load...")
        self.verdict.setObjectName("tokens-verdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.verdict)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._build_propagation(), "Propagation")
        self.tabs.addTab(self._build_mask(), "Mask")
        self.tabs.addTab(self._build_attention(), "Attention")
        self.tabs.addTab(self._build_head_split(), "Head split")
        self.tabs.addTab(self._build_predictions(), "Predictions")
        layout.addWidget(self.tabs, 1)

        self.strip.text_submitted.connect(self.state.set_text)
        self.strip.replace_requested.connect(self.replace_token)
        self.strip.insert_requested.connect(self.insert_token)
        self.strip.delete_requested.connect(self.delete_token)
        self.strip.selection_changed.connect(self._on_selection)
        self.mode_combo.currentIndexChanged.connect(self.schedule_refresh)
        self.mode_combo.activated.connect(self._mode_chosen)
        self.depth_spin.valueChanged.connect(self.schedule_refresh)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.strip.set_tokenizer(state.tokenizer)
        self.strip.set_tokens(state.tokens)
        self.strip.set_text(state.text)
        self._sync_model_limits()
        self.apply_theme()

    # ---- building ------------------------------------------------------------------------------
    def _caption(self, text: str = "") -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def _build_propagation(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        self.propagation_note = self._caption("")
        self.propagation_note.setObjectName("tokens-propagation-note")
        layout.addWidget(self.propagation_note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.propagation_map = Heatmap(x_label="position (original tokens)", y_label="stream after",
                                       title="max |change| per layer and position (log scale)")
        self.propagation_map.plot.setMouseEnabled(x=False, y=False)
        self.propagation_map.plot.setAntialiasing(False)  # axis-aligned cells and bars: smoothing only costs time
        self.propagation_values = np.zeros((1, 1))  # the max_change the map shows, in float64
        self.propagation_exact = np.zeros((1, 1), dtype=bool)
        self.propagation_nan = np.zeros((1, 1), dtype=bool)
        self.propagation_overlay = pg.ImageItem(axisOrder="row-major")
        self.propagation_overlay.setZValue(5)
        self.propagation_map.plot.addItem(self.propagation_overlay)
        self.propagation_map.plot.getViewBox().sigResized.connect(self._draw_overlay)
        self.edit_column = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.edit_column.setZValue(8)
        self.bar_row_outline = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.bar_row_outline.setZValue(9)
        self.propagation_map.plot.addItem(self.edit_column)
        self.propagation_map.plot.addItem(self.bar_row_outline)
        self.propagation_map.hovered.connect(self._propagation_hovered)
        self.propagation_map.clicked.connect(lambda row, _col: self._set_bar_row(row))
        splitter.addWidget(self.propagation_map)

        bars_page = QWidget()
        bars_layout = QVBoxLayout(bars_page)
        bars_layout.setContentsMargins(0, 0, 0, 0)
        row_controls = QHBoxLayout()
        self.bar_row_combo = QComboBox()
        self.bar_row_combo.setObjectName("tokens-bar-row")
        self.bar_row_combo.setMinimumContentsLength(9)
        self.bar_row_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.bar_row_combo.setToolTip("Which row of the map the bars show (click a row of the map too)")
        bar_caption = QLabel("Bars for")
        bar_caption.setBuddy(self.bar_row_combo)
        self.bar_legend = QLabel("")
        row_controls.addWidget(bar_caption)
        row_controls.addWidget(self.bar_row_combo)
        row_controls.addWidget(self.bar_legend, 1)
        bars_layout.addLayout(row_controls)
        self.bar_plot = pg.PlotWidget()
        self.bar_plot.setMenuEnabled(False)
        self.bar_plot.setMouseEnabled(x=False, y=False)
        self.bar_plot.setAntialiasing(False)
        self.bar_plot.setLabel("left", "max |Δ| (log)")
        self.bar_plot.setLabel("bottom", "position")
        self.bars = pg.BarGraphItem(x=[0], height=[0], width=0.8, y0=[0])
        self.bar_plot.addItem(self.bars)
        self.exact_markers = pg.ScatterPlotItem(symbol="o", size=9)
        self.nan_markers = pg.ScatterPlotItem(symbol="x", size=12)
        self.bar_plot.addItem(self.exact_markers)
        self.bar_plot.addItem(self.nan_markers)
        self.bar_plot.getViewBox().sigResized.connect(self._update_bar_ticks)
        self.bar_plot.scene().sigMouseMoved.connect(self._bars_hovered)
        self.bar_readout = QLabel(" ")
        bars_layout.addWidget(self.bar_plot, 1)
        bars_layout.addWidget(self.bar_readout)
        splitter.addWidget(bars_page)
        splitter.setSizes([300, 260])
        layout.addWidget(splitter, 1)
        self.bar_row_combo.currentIndexChanged.connect(lambda index: self._set_bar_row(index) if index >= 0 else None)
        return page

    def _build_mask(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        self.mask_note = self._caption("")
        layout.addWidget(self.mask_note)
        self.mask_row = QHBoxLayout()
        self.mask_maps: list[Heatmap] = []
        for _ in range(3):  # decoder self, encoder self, cross: created once, hidden when the model lacks one
            heatmap = Heatmap(x_label="key (can be read)", y_label="query (reads)", value_format="{:.1f}")
            heatmap.plot.setMouseEnabled(x=False, y=False)
            heatmap.hovered.connect(lambda row, col, value, h=heatmap: self._mask_hovered(h, row, col, value))
            heatmap.hide()
            self.mask_maps.append(heatmap)
            self.mask_row.addWidget(heatmap, 1)
        layout.addLayout(self.mask_row, 1)
        return page

    def _build_attention(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.layer_spin, self.head_spin = QSpinBox(), QSpinBox()
        self.layer_spin.setObjectName("tokens-layer")
        self.head_spin.setObjectName("tokens-head")
        for caption, spin in (("Block", self.layer_spin), ("Head", self.head_spin)):
            label = QLabel(caption)
            label.setBuddy(spin)
            spin.setKeyboardTracking(False)
            row.addWidget(label)
            row.addWidget(spin)
        self.attention_note = self._caption("")
        row.addWidget(self.attention_note, 1)
        layout.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.overview = TileOverview(self._pick_head)
        self.attention_map = Heatmap(x_label="key", y_label="query", value_format="{:.8g}")
        self.attention_map.plot.setMouseEnabled(x=False, y=False)
        splitter.addWidget(self.attention_map)
        splitter.addWidget(self.overview)
        splitter.setSizes([600, 400])
        layout.addWidget(splitter, 1)
        self.layer_spin.valueChanged.connect(self.state.set_selected_layer)
        self.head_spin.valueChanged.connect(self.state.set_selected_head)
        return page

    def _build_head_split(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        self.split_note = self._caption("")
        self.split_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        grid = QGridLayout()
        grid.addWidget(self.split_note, 1, 0)  # beside the difference maps, where a third would be empty
        self.split_maps = [
            Heatmap(x_label="key", y_label="query", value_format="{:.8g}", title=title)
            for title in ("single head on its d_head slice", "multi-head: head 0", "wrong reshape: head 0")
        ]
        # |head 0 - reference| under the two candidates, on one shared scale: the correct split is flat 0,
        # the wrong reshape lights up where it mixed other tokens' features in.
        self.split_difference_maps = [
            Heatmap(x_label="key", y_label="query", value_format="{:.8g}", title=title)
            for title in ("|multi-head - reference|", "|wrong reshape - reference|")
        ]
        self.split_captions = [self._caption("") for _ in self.split_maps]
        for column, (heatmap, caption) in enumerate(zip(self.split_maps, self.split_captions)):
            heatmap.plot.setMouseEnabled(x=False, y=False)
            caption.setAlignment(Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(heatmap, 0, column)
            grid.addWidget(caption, 2, column)
            grid.setColumnStretch(column, 1)
        for column, heatmap in enumerate(self.split_difference_maps, start=1):
            heatmap.plot.setMouseEnabled(x=False, y=False)
            grid.addWidget(heatmap, 1, column)
        grid.setRowStretch(0, 1)
        grid.setRowStretch(1, 1)
        layout.addLayout(grid, 1)
        return page

    def _build_predictions(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setObjectName("tokens-temperature")
        self.temperature_spin.setRange(0.05, 10.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setValue(1.0)
        self.temperature_spin.setKeyboardTracking(False)
        self.temperature_spin.setToolTip("softmax(logits / temperature): below 1 sharpens, above 1 flattens")
        self.top_k_spin = QSpinBox()
        self.top_k_spin.setObjectName("tokens-top-k")
        self.top_k_spin.setRange(1, 30)
        self.top_k_spin.setValue(DEFAULT_TOP_K)
        self.top_k_spin.setKeyboardTracking(False)
        for caption, spin in (("Temperature", self.temperature_spin), ("Top k", self.top_k_spin)):
            label = QLabel(caption)
            label.setBuddy(spin)
            row.addWidget(label)
            row.addWidget(spin)
        self.predictions_note = self._caption("Select a chip: the prediction reads the logits at that position.")
        row.addWidget(self.predictions_note, 1)
        layout.addLayout(row)
        self.predictions_plot = pg.PlotWidget()
        self.predictions_plot.setMenuEnabled(False)
        self.predictions_plot.setMouseEnabled(x=False, y=False)
        self.predictions_plot.invertY(True)
        self.predictions_plot.setLabel("bottom", "probability")
        self.predictions_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.predictions_plot.setTitle("Next token")
        self.prediction_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.7, width=[0])
        self.predictions_plot.addItem(self.prediction_bars)
        self.prediction_labels: list[pg.TextItem] = []
        layout.addWidget(self.predictions_plot, 1)
        self.temperature_spin.valueChanged.connect(self.schedule_refresh)
        self.top_k_spin.valueChanged.connect(self.schedule_refresh)
        return page

    # ---- edits (strip -> state, undoable) --------------------------------------------------------
    # The signal's own text, not a query of the stack: the stack may be mid-destruction when it emits.
    def _set_undo_tooltip(self, text: str) -> None:
        self.undo_button.setToolTip(f"Undo {text}" if text else "Nothing to undo")

    def _set_redo_tooltip(self, text: str) -> None:
        self.redo_button.setToolTip(f"Redo {text}" if text else "Nothing to redo")

    def replace_token(self, position: int, token_id: int) -> None:
        old = self.state.tokens
        if not 0 <= position < len(old) or old[position] == token_id:
            return
        new = list(old)
        new[position] = int(token_id)
        self.state.undo_stack.push(_SetTokensCommand(self.state, old, new, f"replace token {position}"))

    def insert_token(self, position: int, token_id: int) -> None:
        old = self.state.tokens
        new = old[:position] + [int(token_id)] + old[position:]
        self._probe_hint = position
        self.state.undo_stack.push(_SetTokensCommand(self.state, old, new, f"insert token at {position}"))

    def delete_token(self, position: int) -> None:
        old = self.state.tokens
        if not 0 <= position < len(old):
            return
        if len(old) == 1:
            self.strip.show_message("Not deleted: the sequence needs at least one token.")
            return
        new = old[:position] + old[position + 1:]
        self._probe_hint = min(position, len(new) - 1)
        self.state.undo_stack.push(_SetTokensCommand(self.state, old, new, f"delete token {position}"))
        self.strip.select(min(position, len(new) - 1))

    # ---- state -> panel ------------------------------------------------------------------------
    def _on_state_changed(self, field: str) -> None:
        if field == "tokens":
            self.strip.set_tokens(self.state.tokens)
        elif field == "text":
            self.strip.set_text(self.state.text)
            if self.state.text_problem:
                self.strip.show_message(self.state.text_problem)
            else:
                self.strip.clear_message()
        elif field == "tokenizer":
            self.strip.set_tokenizer(self.state.tokenizer)
            self._cache.clear()
        elif field in ("model", "config"):
            self._cache.clear()
            self._sync_model_limits()
        elif field in ("selected_layer", "selected_head"):
            self._sync_selection_spins()
            self._show_attention()
        super()._on_state_changed(field)

    def _mode_chosen(self, _index: int) -> None:
        self._mode_chosen_by_user = True

    def _sync_model_limits(self) -> None:
        model = self.state.model
        config = model.config if model is not None else self.state.config
        if not self._mode_chosen_by_user:
            own = "causal" if config.self_attention_causal else "none"
            self.mode_combo.blockSignals(True)
            self.mode_combo.setCurrentIndex(self.mode_combo.findData(own))
            self.mode_combo.blockSignals(False)
        n_blocks = len(model.blocks) if model is not None else config.n_layers
        at_max = self.depth_spin.value() == self.depth_spin.maximum()
        self.depth_spin.blockSignals(True)
        self.depth_spin.setRange(1, max(1, n_blocks))
        if at_max:
            self.depth_spin.setValue(n_blocks)
        self.depth_spin.blockSignals(False)
        self.depth_spin.setSuffix(f" of {n_blocks}")
        self.strip.set_max_tokens(config.context_length)
        self._sync_selection_spins()

    def _sync_selection_spins(self) -> None:
        config = self.state.model.config if self.state.model is not None else self.state.config
        for spin, limit, value in ((self.layer_spin, config.n_layers, self.state.selected_layer),
                                   (self.head_spin, config.n_heads, self.state.selected_head)):
            spin.blockSignals(True)
            spin.setRange(0, max(0, limit - 1))
            spin.setValue(value)
            spin.blockSignals(False)

    def _on_selection(self, position: int) -> None:
        if self.tabs.currentIndex() == SUB_TABS.index("Predictions"):
            self.schedule_refresh()

    def _on_tab_changed(self, index: int) -> None:
        self._show_tab(index)
        self.schedule_refresh()

    # ---- requests ------------------------------------------------------------------------------
    @property
    def mask_mode(self) -> str:
        return self.mode_combo.currentData()

    def _next_probe(self, tokens: list[int]) -> EditProbe:
        """The edit the propagation view measures for the current tokens.

        A change of exactly one position since the last measurement is that edit (the user's own,
        undo included). After any other change (new text, insert, delete) the last probe is replayed
        on the new tokens at the same place, because two sequences of different lengths cannot be
        compared position by position.
        """
        previous, probe = self._shown_tokens, self._probe
        if previous is not None and len(previous) == len(tokens):
            changed = [i for i, (a, b) in enumerate(zip(previous, tokens)) if a != b]
            if len(changed) == 1:
                return EditProbe(tuple(previous), changed[0], tokens[changed[0]], True)
            if not changed and probe is not None and len(probe.base) == len(tokens):
                return probe
        position = self._probe_hint if self._probe_hint is not None else (probe.position if probe else len(tokens) // 2)
        position = min(max(0, position), len(tokens) - 1)
        vocab = self.state.model.config.vocab_size
        replacement = probe.new_token if probe is not None else (tokens[position] + 1) % vocab
        if replacement == tokens[position]:
            replacement = (tokens[position] + 1) % vocab
        return EditProbe(tuple(tokens), position, replacement, False)

    def _wanted(self, key_name: str, key: tuple) -> tuple | None:
        cached_key, _ = self._cache.get(key_name, (None, None))
        return None if cached_key == key else key

    def refresh(self) -> None:
        model, tokenizer, tokens = self.state.model, self.state.tokenizer, self.state.tokens
        if model is None:
            self.verdict.setText("Waiting for the model...")
            return
        if not tokens:
            self.verdict.setText("Type some text above: there are no tokens to edit.")
            return
        config = model.config
        if len(tokens) > config.context_length:
            self.show_error(f"{len(tokens)} tokens exceed {config.name}'s context length of {config.context_length}; "
                            "delete some tokens or shorten the text")
            return
        if max(tokens) >= config.vocab_size:
            self.show_error(f"token id {max(tokens)} is outside {config.name}'s vocabulary of {config.vocab_size}")
            return
        mode, n_blocks = self.mask_mode, min(self.depth_spin.value(), len(model.blocks))
        probe = self._next_probe(tokens)
        self._probe, self._shown_tokens, self._probe_hint = probe, tokens, None
        tab = SUB_TABS[self.tabs.currentIndex()]
        key_tokens = tuple(tokens)
        selected = self.strip.selected if 0 <= self.strip.selected < len(tokens) else len(tokens) - 1
        wanted = {"diff": self._wanted("diff", (probe, mode, n_blocks))}
        if tab == "Attention":
            wanted["attention"] = self._wanted("attention", (key_tokens, mode))
        elif tab == "Mask":
            wanted["mask"] = self._wanted("mask", (key_tokens, mode))
        elif tab == "Head split":
            split_tokens = max(2, min(len(tokens), HEAD_SPLIT_MAX_TOKENS))
            wanted["split"] = self._wanted("split", (self.state.seed, config.d_model, config.n_heads, split_tokens,
                                                     mode != "none"))
        elif tab == "Predictions":
            wanted["predictions"] = self._wanted("predictions", (key_tokens, selected, self.top_k_spin.value(),
                                                                 round(self.temperature_spin.value(), 4), mode))
        request = ViewRequest(
            diff_key=wanted.get("diff"),
            attention_key=wanted.get("attention"),
            mask_key=wanted.get("mask"),
            split_key=wanted.get("split"),
            predictions_key=wanted.get("predictions"),
        )
        if request == ViewRequest():
            return  # everything on screen is current
        self.strip.set_marked(probe.position)
        self.submit(lambda: compute_views(model, tokenizer, request), self.show_result, "token edit diff")

    # ---- results -> views ----------------------------------------------------------------------
    def show_result(self, result: ViewResult) -> None:
        request = result.request
        for name, key, value in (("diff", request.diff_key, result.diff),
                                 ("attention", request.attention_key, result.attention),
                                 ("mask", request.mask_key, result.masks),
                                 ("split", request.split_key, result.split),
                                 ("predictions", request.predictions_key, result.predictions)):
            if key is not None:
                self._cache[name] = (key, value)
        if result.mode_descriptions and not self._descriptions:
            self._descriptions = result.mode_descriptions
            for index in range(self.mode_combo.count()):
                self.mode_combo.setItemData(index, self._descriptions.get(self.mode_combo.itemData(index), ""),
                                            Qt.ItemDataRole.ToolTipRole)
        if request.diff_key is not None:
            self._show_diff()
        self._show_tab(self.tabs.currentIndex())
        self.result_shown.emit()

    def _cached(self, name: str) -> Any:
        return self._cache.get(name, (None, None))[1]

    def _show_tab(self, index: int) -> None:
        tab = SUB_TABS[index]
        if tab == "Mask":
            self._show_masks()
        elif tab == "Attention":
            self._show_attention()
        elif tab == "Head split":
            self._show_split()
        elif tab == "Predictions":
            self._show_predictions()

    def _show_diff(self) -> None:
        diff = self._cached("diff")
        if diff is None:
            return
        probe = self._probe
        values, exact, nan = diff.max_change, diff.exactly_unchanged, diff.nan_entries
        self.propagation_values, self.propagation_exact, self.propagation_nan = values, exact, nan
        positive = values[np.isfinite(values) & (values > 0)]
        low = math.floor(math.log10(positive.min())) if positive.size else -8
        high = math.ceil(math.log10(positive.max())) if positive.size else 0
        high = max(high, low + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            colour = np.where(values > 0, np.log10(np.where(values > 0, values, 1.0)), np.nan)
        # A no-break space: the heatmap shows plain spaces as the space-token glyph.
        row_labels = [label.replace(" ", "\u00a0") for label in diff.layer_labels]
        self.propagation_map.set_data(colour, row_labels=row_labels, col_labels=diff.token_labels,
                                      levels=(float(low), float(high)))
        self.propagation_map.colorbar.axis.setTicks([_log_ticks(low, high)])
        rows, cols = values.shape
        self._overlay_generation += 1
        self._draw_overlay()
        self.edit_column.setRect(QRectF(diff.edit_position, 0, 1, rows))

        if self.bar_row_combo.count() != rows or self.bar_row_combo.itemText(rows - 1) != diff.layer_labels[-1]:
            self.bar_row_combo.blockSignals(True)
            self.bar_row_combo.clear()
            self.bar_row_combo.addItems(list(diff.layer_labels))
            self.bar_row_combo.blockSignals(False)
        row = self._bar_row if self._bar_row is not None and self._bar_row < rows else rows - 1
        self.bar_row_combo.blockSignals(True)
        self.bar_row_combo.setCurrentIndex(row)
        self.bar_row_combo.blockSignals(False)
        self._show_bars(row)
        self._show_verdict(diff, probe)

    def _draw_overlay(self) -> None:
        """The hatch image, redrawn when the map is resized so its stripes keep their screen spacing."""
        exact, nan = self.propagation_exact, self.propagation_nan
        rows, cols = exact.shape
        view = self.propagation_map.plot.getViewBox()
        cell_px = _overlay_cell_px(view.width(), view.height(), rows, cols)
        key = (self._overlay_generation, cell_px, theme.current().name)
        if self._cached("diff") is None or self._overlay_key == key:
            return
        self._overlay_key = key
        self.propagation_overlay.setImage(_hatch_overlay(exact, nan, cell_px), autoLevels=False)
        self.propagation_overlay.setRect(QRectF(0, 0, cols, rows))

    def _show_verdict(self, diff, probe: EditProbe | None) -> None:
        palette = theme.current()
        t = diff.edit_position
        old, new = diff.token_labels[t], diff.edited_token_labels[t]
        what = "Edit" if probe is None or probe.measured_edit else "Probe edit"
        edit = f"{what} at position {t}: '{old}' → '{new}', mask <b>{diff.mask_mode}</b>, {diff.n_layers} block(s). "
        if t == 0:
            verdict = "No past to protect at position 0."
            colour = palette.text
        elif diff.past_exactly_unchanged:
            verdict = f"✔ positions 0–{t - 1} are bitwise unchanged (torch.equal) in every layer."
            colour = theme.current().role_color("tertiary")
        elif diff.leaks_into_past:
            first = diff.layer_labels[diff.first_leaking_layer]
            verdict = f"✘ the past moves: positions before {t} change from <b>{first}</b> on."
            colour = palette.warning
        else:
            verdict = "The past did not move, apart from NaN both runs share."
            colour = palette.warning
        nan_text = ""
        if diff.nan_entries.any():
            count = int(diff.nan_entries.sum())
            nan_text = f" <span style='color:{palette.warning}'>NaN in {count} cells (cross-hatched).</span>"
        self.verdict.setText(f"{edit}<span style='color:{colour}'><b>{verdict}</b></span>{nan_text}")
        probe_note = ""
        if probe is not None and not probe.measured_edit:
            probe_note = ("The sequence changed length or was retyped, so this compares it with one token replaced. "
                          "Replace a chip to measure your own edit. ")
        self.propagation_note.setText(probe_note + diff.note + "  Hatched cells: exactly 0.0 (torch.equal).")

    def _set_bar_row(self, row: int) -> None:
        if row < 0 or row >= self.propagation_values.shape[0] or self._cached("diff") is None:
            return
        self._bar_row = row
        if self.bar_row_combo.currentIndex() != row:
            self.bar_row_combo.blockSignals(True)
            self.bar_row_combo.setCurrentIndex(row)
            self.bar_row_combo.blockSignals(False)
        self._show_bars(row)

    def _show_bars(self, row: int) -> None:
        diff = self._cached("diff")
        values, exact, nan = self.propagation_values[row], self.propagation_exact[row], self.propagation_nan[row]
        count = len(values)
        positions = np.arange(count, dtype=float)
        moved = (values > 0) & ~nan
        positive = self.propagation_values[np.isfinite(self.propagation_values) & (self.propagation_values > 0)]
        floor = (math.floor(math.log10(positive.min())) - 1) if positive.size else -9
        top = (math.ceil(math.log10(positive.max()))) if positive.size else 0
        heights = np.zeros(count)
        heights[moved] = np.log10(values[moved]) - floor
        t = diff.edit_position
        before, at, after = theme.brush("warning"), theme.brush("secondary"), theme.brush("primary")
        brushes = [before] * min(t, count) + [at] + [after] * max(0, count - t - 1)
        self.bars.setOpts(x=positions, height=heights, y0=np.full(count, float(floor)), width=0.8, brushes=brushes,
                          pen=pg.mkPen(None))
        marker_y = floor + 0.25
        self.exact_markers.setData(positions[exact], np.full(int(exact.sum()), marker_y),
                                   pen=theme.pen("tertiary", width=2), brush=pg.mkBrush(None))
        self.nan_markers.setData(positions[nan & ~exact], np.full(int((nan & ~exact).sum()), marker_y),
                                 pen=theme.pen("warning", width=2.5), brush=theme.brush("warning"))
        self._bar_decades = (floor, top)
        self.bar_plot.setXRange(-0.6, count - 0.4, padding=0)
        _set_title(self.bar_plot, f"{diff.layer_labels[row]}: max |change| per position")
        self._update_bar_labels(values, exact, nan, floor)
        self._update_bar_ticks()
        self.bar_row_outline.setRect(QRectF(0, row, count, 1))
        self.bar_legend.setText("○ exactly 0.0 (torch.equal)   × NaN   "
                                "bars: before the edit (a leak) / the edit / after it")

    def _update_bar_labels(self, values: np.ndarray, exact: np.ndarray, nan: np.ndarray, floor: int) -> None:
        """Value labels above each bar for reading-sized sequences; a pool of items, reused."""
        count = len(values) if len(values) <= MAX_BAR_LABELS else 0
        while len(self._bar_labels) < count:
            label = pg.TextItem(anchor=(0, 0.5), angle=90)
            self.bar_plot.addItem(label)
            self._bar_labels.append(label)
        font = theme.font(0.8)
        for index, label in enumerate(self._bar_labels):
            label.setProperty("wanted", index < count)
            if index >= count:
                label.hide()
                continue
            value = float(values[index])
            text = format_change(value, bool(exact[index]))
            label.setText(text, color=theme.color("text"))
            label.setFont(font)
            height = math.log10(value) if value > 0 and not nan[index] else floor + 0.5
            label.setPos(index, height + 0.05)
            label.show()

    def _fit_bar_range(self) -> None:
        """Room above the bars for the upright value labels, in pixels; a plot too short for them drops them."""
        floor, top = self._bar_decades
        span = max(1e-6, top - floor)
        labels = [label for label in self._bar_labels if label.property("wanted")]
        view_px = self.bar_plot.getViewBox().height()
        headroom = 0.2
        if labels and view_px > 0:
            metrics = QFontMetrics(theme.font(0.8))
            label_px = max(metrics.horizontalAdvance(label.toPlainText()) for label in labels) + 8
            fits = view_px - label_px >= 0.5 * view_px  # the bars keep at least half the height
            for label in labels:
                label.setVisible(fits)  # hovering a bar still reads its value out
            if fits:
                headroom = span * label_px / (view_px - label_px)
        self.bar_plot.setYRange(floor, top + headroom, padding=0)

    def _update_bar_ticks(self) -> None:
        diff = self._cached("diff")
        if diff is None:
            return
        self._fit_bar_range()
        floor, top = self._bar_decades
        line = QFontMetrics(theme.font(0.9)).height()
        room = max(1, int(self.bar_plot.getViewBox().height() // (line * 1.2)))
        self.bar_plot.getAxis("left").setTicks([_log_ticks(floor, top, room)])
        labels = diff.token_labels
        metrics = QFontMetrics(theme.font(0.9))
        widest = max(metrics.height(), max(metrics.horizontalAdvance(f"{i} {s}") for i, s in enumerate(labels)) + 6)
        room = max(1, int(self.bar_plot.getViewBox().width() // widest))
        step = max(1, math.ceil(len(labels) / room))
        ticks = [(float(i), f"{i} {s}") for i, s in enumerate(labels) if i % step == 0]
        self.bar_plot.getAxis("bottom").setTicks([ticks])

    def _propagation_hovered(self, row: int, col: int, _value: float) -> None:
        diff = self._cached("diff")
        if diff is None or row >= self.propagation_values.shape[0] or col >= self.propagation_values.shape[1]:
            return
        value = float(self.propagation_values[row, col])
        text = format_change(value, bool(self.propagation_exact[row, col]))
        if self.propagation_nan[row, col]:
            text += " (NaN in a run: fully masked row)"
        self.propagation_map.readout.setText(
            f"{diff.layer_labels[row]}, position {col} '{diff.token_labels[col]}': max |change| = {text}")

    def _bars_hovered(self, scene_pos) -> None:
        diff = self._cached("diff")
        if diff is None:
            return
        index = int(round(self.bar_plot.getViewBox().mapSceneToView(scene_pos).x()))
        row = self._bar_row if self._bar_row is not None and self._bar_row < self.propagation_values.shape[0] else -1
        if 0 <= index < self.propagation_values.shape[1]:
            value = float(self.propagation_values[row, index])
            self.bar_readout.setText(f"position {index} '{diff.token_labels[index]}': "
                                     f"{format_change(value, bool(self.propagation_exact[row, index]))}")

    def _show_masks(self) -> None:
        masks = self._cached("mask")
        if not masks:
            return
        palette = theme.current()
        for heatmap, grid in zip(self.mask_maps, list(masks) + [None] * 3):
            if grid is None:
                heatmap.hide()
                continue
            heatmap.show()
            hidden = np.where(grid.in_denominator, MASK_DENOMINATOR_ONLY, MASK_HIDDEN)
            values = np.where(grid.visible, MASK_VISIBLE, hidden)
            _set_title(heatmap.plot, grid.title)
            rows = [f"⚠{label}" if empty else label for label, empty in zip(grid.query_labels, grid.empty_rows)]
            heatmap.set_data(values.astype(np.float32), row_labels=rows, col_labels=grid.key_labels, levels=(0.0, 1.0))
            self._style_mask_map(heatmap)
        notes = []
        for grid in masks:
            text = f"<b>{grid.title}</b>: {grid.note}"
            if grid.empty_rows.any():
                text += (f" <span style='color:{palette.warning}'>{int(grid.empty_rows.sum())} query row(s) see no key "
                         "(⚠): softmax 0/0 gives NaN.</span>")
            notes.append(text)
        masked, denominator, visible = (colour.name() for colour in self._mask_colours())
        swatch = "<span style='color:{}; font-size:large'>■</span>"
        self.mask_note.setText("<br>".join(notes) + f"<br>{swatch.format(visible)} can attend &nbsp; "
                               f"{swatch.format(denominator)} in the softmax denominator, "
                               "weight zeroed after it &nbsp; "
                               f"{swatch.format(masked)} masked &nbsp; ⚠ a query that sees nothing")

    @staticmethod
    def _mask_colours() -> tuple[QColor, QColor, QColor]:
        """masked, in the denominator only, can attend."""
        palette = theme.current()
        return QColor(palette.alternate).darker(112), theme.color("secondary"), QColor(palette.accent)

    def _style_mask_map(self, heatmap: Heatmap) -> None:
        """Categorical colours for a mask (the theme's continuous colormap would suggest a quantity)."""
        masked, denominator, visible = self._mask_colours()
        heatmap.colorbar.setColorMap(pg.ColorMap([0.0, 0.25, 0.26, 0.74, 0.75, 1.0],
                                                 [masked, masked, denominator, denominator, visible, visible]))
        heatmap.colorbar.hide()  # three categories read better from the legend in the caption

    def _mask_hovered(self, heatmap: Heatmap, row: int, col: int, value: float) -> None:
        meaning = {MASK_VISIBLE: "can attend", MASK_DENOMINATOR_ONLY: "in the softmax denominator, weight zeroed after",
                   MASK_HIDDEN: "masked"}.get(float(value), "")
        heatmap.readout.setText(f"query {row} '{heatmap.row_labels[row]}' → "
                                f"key {col} '{heatmap.col_labels[col]}': {meaning}")

    def _pick_head(self, layer: int, head: int) -> None:
        self.state.set_selected_layer(layer)
        self.state.set_selected_head(head)

    def _show_attention(self) -> None:
        maps = self._cached("attention")
        if maps is None:
            return
        layer = min(self.state.selected_layer, maps.weights.shape[0] - 1)
        head = min(self.state.selected_head, maps.weights.shape[1] - 1)
        weights = maps.weights[layer, head]
        self.attention_map.set_data(weights, row_labels=maps.query_labels, col_labels=maps.key_labels,
                                    levels=(0.0, 1.0))
        _set_title(self.attention_map.plot, f"block {layer}, head {head} ({maps.mask_mode} mask)")
        self.overview.set_maps(maps.weights, maps.query_labels)
        self.overview.select(layer, head)
        nan_text = " Some rows are NaN (a query that sees no key)." if maps.has_nan else ""
        self.attention_note.setText(f"Rows are queries, columns the keys they read; each row sums to 1.{nan_text} "
                                    "Hover for the exact weight.")

    def _show_split(self) -> None:
        split = self._cached("split")
        if split is None:
            return
        labels = [str(i) for i in range(split.n_tokens)]
        maps = (split.single_head_weights, split.multi_head_weights, split.wrong_reshape_weights)
        correct = f"{split.correct_difference:.1e}" if split.correct_difference else "0.0"
        captions = (
            "reference: softmax(q k^T / sqrt(d_head)) on columns 0..d_head-1",
            f"view(B,T,H,d).transpose(1,2): max |Δ| vs reference = <b>{correct}</b>",
            f"one view(B,H,T,d): max |Δ| vs reference = "
            f"<b style='color:{theme.current().warning}'>{split.wrong_difference:.3f}</b>",
        )
        for heatmap, weights, caption, text in zip(self.split_maps, maps, self.split_captions, captions):
            heatmap.set_data(weights, row_labels=labels, col_labels=labels, levels=(0.0, 1.0))
            caption.setText(text)
        differences = [np.abs(candidate - split.single_head_weights) for candidate in maps[1:]]  # display only
        top = max(float(np.nanmax(differences[1])), 1e-12)
        for heatmap, difference in zip(self.split_difference_maps, differences):
            heatmap.set_data(difference, row_labels=labels, col_labels=labels, levels=(0.0, top))
        self.split_note.setText(
            f"The reading's unit test on a fresh attention layer (d_model {split.d_model}, {split.n_heads} heads, "
            f"d_head {split.d_head}, {split.n_tokens} random input vectors, seed {split.seed}). {split.note}")

    def _show_predictions(self) -> None:
        predictions = self._cached("predictions")
        if predictions is None:
            return
        k = len(predictions.probabilities)
        ys = np.arange(k, dtype=float)
        self.prediction_bars.setOpts(x0=np.zeros(k), y=ys, width=predictions.probabilities, height=0.7,
                                     brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        self.predictions_plot.getAxis("left").setTicks([list(enumerate(predictions.labels))])
        top = float(predictions.probabilities.max()) if k else 1.0
        self.predictions_plot.setXRange(0, min(1.0, top * 1.25) or 1.0, padding=0)
        self.predictions_plot.setYRange(-0.6, k - 0.4, padding=0)
        while len(self.prediction_labels) < k:
            label = pg.TextItem(anchor=(0, 0.5))
            self.predictions_plot.addItem(label)
            self.prediction_labels.append(label)
        for index, label in enumerate(self.prediction_labels):
            if index >= k:
                label.hide()
                continue
            probability = float(predictions.probabilities[index])
            text = f"{probability:.3f}" if probability >= 1e-3 else f"{probability:.1e}"
            label.setText(text, color=theme.color("text"))
            label.setFont(theme.font(0.85))
            label.setPos(probability, index)
            label.show()
        context = "".join(predictions.context_labels[-24:])
        _set_title(self.predictions_plot,
                   f"Next token after position {predictions.position} (T = {predictions.temperature:g})")
        ellipsis = "…" if len(predictions.context_labels) > 24 else ""
        self.predictions_note.setText(f"Context seen: {ellipsis}{context}")

    # ---- theme, export, session ----------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()
        self.edit_column.setPen(theme.pen("secondary", width=max(2.0, theme.current().line_width * 0.75)))
        self.edit_column.setBrush(pg.mkBrush(None))
        self.bar_row_outline.setPen(theme.pen("text", width=1.5, style=Qt.PenStyle.DashLine))
        for heatmap in self.mask_maps:
            self._style_mask_map(heatmap)
        self.verdict.setFont(theme.font(1.05))
        if self._cached("diff") is not None:
            self._show_diff()
            self._show_tab(self.tabs.currentIndex())

    def export_targets(self) -> list[tuple[str, Any]]:
        targets: list[tuple[str, Any]] = [
            (self.title, self),
            ("Propagation: max |change| map", self.propagation_map.plot.getPlotItem()),
            ("Propagation: bars for one layer", self.bar_plot.getPlotItem()),
        ]
        for index, heatmap in enumerate(self.mask_maps):
            if heatmap.isVisibleTo(self) or index == 0:
                targets.append((f"Mask grid {index + 1}", heatmap.plot.getPlotItem()))
        targets += [
            ("Attention: selected head", self.attention_map.plot.getPlotItem()),
            ("Attention: all layers x heads", self.overview.plot.getPlotItem()),
            ("Head split: single head", self.split_maps[0].plot.getPlotItem()),
            ("Head split: multi-head head 0", self.split_maps[1].plot.getPlotItem()),
            ("Head split: wrong reshape", self.split_maps[2].plot.getPlotItem()),
            ("Head split: |multi-head - reference|", self.split_difference_maps[0].plot.getPlotItem()),
            ("Head split: |wrong reshape - reference|", self.split_difference_maps[1].plot.getPlotItem()),
            ("Next-token predictions", self.predictions_plot.getPlotItem()),
            ("Token strip", self.strip),
        ]
        return targets

    def settings(self) -> dict[str, Any]:
        return {
            "mask_mode": self.mask_mode,
            "n_blocks": self.depth_spin.value(),
            "sub_tab": SUB_TABS[self.tabs.currentIndex()],
            "temperature": self.temperature_spin.value(),
            "top_k": self.top_k_spin.value(),
            "bar_row": self._bar_row,
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        mode = data.get("mask_mode")
        index = self.mode_combo.findData(mode) if isinstance(mode, str) else -1
        widgets_values = []
        if index >= 0:
            widgets_values.append((self.mode_combo.setCurrentIndex, index, self.mode_combo))
            self._mode_chosen_by_user = True
        for key, spin in (("n_blocks", self.depth_spin), ("top_k", self.top_k_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                widgets_values.append((spin.setValue, value, spin))
        temperature = data.get("temperature")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and math.isfinite(temperature):
            widgets_values.append((self.temperature_spin.setValue, float(temperature), self.temperature_spin))
        tab = data.get("sub_tab")
        if isinstance(tab, str) and tab in SUB_TABS:
            widgets_values.append((self.tabs.setCurrentIndex, SUB_TABS.index(tab), self.tabs))
        for setter, value, widget in widgets_values:
            widget.blockSignals(True)
            setter(value)
            widget.blockSignals(False)
        row = data.get("bar_row")
        if (isinstance(row, int) and not isinstance(row, bool) and row >= 0) or row is None:
            self._bar_row = row
        self.schedule_refresh()


__all__ = ["TokensPanel", "MASK_MODE_CHOICES", "SUB_TABS", "format_change", "compute_views"]
