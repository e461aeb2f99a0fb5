"""Attention: the weights of one head as a map, and every layer x head as small multiples to pick from.

An encoder-decoder has three kinds of attention, chosen above the map: the decoder's own (causal), the
cross-attention that reads the encoder's output (rows are decoder positions, columns source positions)
and the encoder's own (both ways). An encoder-only model's one kind attends both ways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.tokens.common import TokensControls, sync_layer_head_spins
from gui.panels.common import caption, sequence_refusal, set_title
from gui.widgets.heatmap import Heatmap
from gui.widgets.plot_titles import wrap_title


KIND_CHOICES = (("self", "decoder self-attention (causal)"), ("cross", "cross-attention (decoder × source)"),
                ("encoder", "encoder self-attention (both ways)"))
AXIS_LABELS = {"self": ("key", "query"), "cross": ("source position (key)", "decoder position (query)"),
               "encoder": ("source position (key)", "source position (query)")}


@dataclass(frozen=True)
class AttentionInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]
    mask_mode: str
    attention: str = "self"  # self, cross or encoder (core.experiments.attention_maps)


@dataclass(frozen=True)
class OverviewImage:
    """Every layer x head as one tiled image, each tile at most MAX_TILE_PX a side (block maxima)."""

    image: np.ndarray  # (L * pitch_q / f, H * pitch_k / f) float32, NaN in the gaps
    factor: int  # tokens per image pixel along each axis
    pitch_q: int  # rows of tokens from one layer's tile to the next (tile plus gap)
    pitch_k: int  # columns of tokens from one head's tile to the next


@dataclass(frozen=True)
class AttentionResult:
    maps: Any  # core AttentionMaps
    overview: OverviewImage


MAX_TILE_PX = 64  # a tile of the overview is at most this many pixels a side: 12 x 12 heads stay small
GAP_FRACTION = 0.08


def overview_image(weights: np.ndarray, max_tile: int = MAX_TILE_PX) -> OverviewImage:
    """weights (L, H, T, S) -> the tiled overview; a pixel of a large tile is the largest weight it covers,
    so a sharp head stays visible at any length. Built tile by tile: no full-size copy."""
    n_layers, n_heads, n_queries, n_keys = weights.shape
    factor = max(1, math.ceil(max(n_queries, n_keys) / max_tile))
    tile_q, tile_k = math.ceil(n_queries / factor), math.ceil(n_keys / factor)
    gap = max(1, round(max(tile_q, tile_k) * GAP_FRACTION))
    image = np.full((n_layers * (tile_q + gap) - gap, n_heads * (tile_k + gap) - gap), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            tile = weights[layer, head]  # (T, S)
            if factor > 1:
                padded = np.zeros((tile_q * factor, tile_k * factor), dtype=np.float32)
                padded[:n_queries, :n_keys] = tile
                tile = padded.reshape(tile_q, factor, tile_k, factor).max(axis=(1, 3))  # (T/f, S/f)
            r, c = layer * (tile_q + gap), head * (tile_k + gap)
            image[r:r + tile_q, c:c + tile_k] = tile
    return OverviewImage(image, factor, (tile_q + gap) * factor, (tile_k + gap) * factor)


def compute_attention(inputs: AttentionInputs, token) -> AttentionResult:
    from core.experiments.attention_maps import attention_maps

    mask_mode = inputs.mask_mode if inputs.attention == "self" else None  # the panel's mask is the stream's
    maps = attention_maps(inputs.model, list(inputs.tokens), mask_mode=mask_mode,
                          tokenizer_or_labels=inputs.tokenizer, attention=inputs.attention)
    token.check()
    return AttentionResult(maps, overview_image(maps.weights))


class TileOverview(QWidget):
    """All layers x heads as small multiples in one image (one ImageItem, not one plot per head)."""

    def __init__(self, on_pick, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_pick = on_pick
        self._shape = (0, 0, 0, 0)
        self._weights: np.ndarray | None = None
        self._labels: tuple[str, ...] = ()  # the queries'
        self._key_labels: tuple[str, ...] = ()
        self._layer_labels: tuple[str, ...] = ()
        self._pitch = (1, 1)  # tokens from one tile to the next: (layers, heads)
        self._last_scene_pos = None
        self.stale = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = wrap_title(pg.PlotWidget())
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
        self.readout.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)
        self.plot.scene().sigMouseMoved.connect(self._moved)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.getViewBox().sigResized.connect(self._update_ticks)
        self.apply_theme()

    def set_maps(self, weights: np.ndarray, overview: OverviewImage, labels: tuple[str, ...],
                 key_labels: tuple[str, ...] | None = None, layer_labels: tuple[str, ...] | None = None) -> None:
        """weights: (L, H, T, S) attention weights (read out on hover); overview: their tiled image; labels of the
        T queries, the S keys (the queries' by default) and the L layers ("block 0", ... by default)."""
        self._weights, self._labels, self._shape = weights, labels, weights.shape
        self._key_labels = labels if key_labels is None else key_labels
        self._layer_labels = layer_labels or tuple(f"block {layer}" for layer in range(weights.shape[0]))
        self._pitch = (overview.pitch_q, overview.pitch_k)
        rows, cols = overview.image.shape
        self.image.setImage(overview.image, autoLevels=False, levels=(0.0, 1.0))
        self.image.setLookupTable(theme.colormap().getLookupTable(nPts=256))
        self.image.setRect(QRectF(0, 0, cols * overview.factor, rows * overview.factor))  # in tokens
        self.plot.setRange(xRange=(0, cols * overview.factor), yRange=(0, rows * overview.factor), padding=0.02)
        self._update_ticks()

    def _update_ticks(self) -> None:
        """Block and head labels, every k-th one when the tiles are too small for all (12 x 12 heads of GPT-2)."""
        if self._weights is None:
            return
        n_layers, n_heads, n_queries, n_keys = self._shape
        (pitch_q, pitch_k), view = self._pitch, self.plot.getViewBox()
        metrics = QFontMetrics(theme.font(0.9))

        def step(count: int, extent_px: float, label_px: float) -> int:
            return max(1, math.ceil(count * label_px / max(1.0, extent_px)))

        head_step = step(n_heads, view.width(), metrics.horizontalAdvance(f"head {n_heads - 1}") + 8)
        layer_step = step(n_layers, view.height(), metrics.height() + 2)
        layer_ticks = [(layer * pitch_q + n_queries / 2, self._layer_labels[layer]) for layer in range(0, n_layers, layer_step)]
        head_ticks = [(head * pitch_k + n_keys / 2, f"head {head}" if head_step == 1 else str(head))
                      for head in range(0, n_heads, head_step)]
        left = self.plot.getAxis("left")
        left.setTicks([layer_ticks])
        # Sized to its names now ("encoder block 1" is wider than the axis's first guess, which grows a paint later).
        left.setWidth(max(metrics.horizontalAdvance(text) for _, text in layer_ticks) + metrics.height())
        self.plot.getAxis("bottom").setTicks([head_ticks])
        self.plot.setLabel("bottom", "" if head_step == 1 else "head")

    def select(self, layer: int, head: int) -> None:
        _, _, n_queries, n_keys = self._shape
        if not n_queries:
            return
        pitch_q, pitch_k = self._pitch
        left, top = head * pitch_k - 0.5, layer * pitch_q - 0.5
        self.selection.setRect(QRectF(left, top, n_keys + 1, n_queries + 1))

    def set_stale(self, stale: bool) -> None:
        self.stale = stale
        if stale:
            self.readout.setText(" ")

    def release_weights(self) -> None:
        """Hover reads the weights no more (the view dropped them while hidden); the drawn image stays."""
        self._weights = None

    def refresh_hover(self) -> None:
        if self._last_scene_pos is not None and self.plot.underMouse():
            self._moved(self._last_scene_pos)
        else:
            self.readout.setText(" ")

    def _cell(self, scene_pos) -> tuple[int, int, int, int] | None:
        if self._weights is None:
            return None
        point = self.plot.getViewBox().mapSceneToView(scene_pos)
        n_layers, n_heads, n_queries, n_keys = self._shape
        row, col = int(math.floor(point.y())), int(math.floor(point.x()))
        layer, query = divmod(row, self._pitch[0])
        head, key = divmod(col, self._pitch[1])
        if row < 0 or col < 0 or layer >= n_layers or head >= n_heads or query >= n_queries or key >= n_keys:
            return None
        return layer, head, query, key

    def _moved(self, scene_pos) -> None:
        self._last_scene_pos = scene_pos
        cell = self._cell(scene_pos)
        if cell is None or self.stale:
            self.readout.setText(" ")
            return
        layer, head, query, key = cell
        value = float(self._weights[layer, head, query, key])
        self.readout.setText(f"{self._layer_labels[layer]}, head {head}: query {query} '{self._labels[query]}' -> "
                             f"key {key} '{self._key_labels[key]}': {value:.6g}")

    def _clicked(self, event) -> None:
        cell = self._cell(event.scenePos())
        if cell is not None and not self.stale:
            self._on_pick(cell[0], cell[1])

    def apply_theme(self) -> None:
        theme.style_plot(self.plot)
        self.selection.setPen(theme.pen("highlight", width=max(2.0, theme.current().line_width)))
        self.readout.setFont(theme.font(0.95))
        if self._weights is not None:
            self.image.setLookupTable(theme.colormap().getLookupTable(nPts=256))
            self._update_ticks()


class AttentionView(View):
    name = "Attention"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_attention)

    def __init__(self, state, compute, controls: TokensControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.kind_combo = QComboBox()
        self.kind_combo.setObjectName("tokens-attention-kind")
        for kind, text in KIND_CHOICES:
            self.kind_combo.addItem(text, kind)
        self.kind_combo.setToolTip("An encoder-decoder attends three ways: the decoder to its own past, the decoder "
                                   "to the encoder's output of the source, and the encoder to the whole source")
        self.kind_caption = QLabel("Attention")
        self.kind_caption.setBuddy(self.kind_combo)
        row.addWidget(self.kind_caption)
        row.addWidget(self.kind_combo)
        self.layer_spin, self.head_spin = QSpinBox(), QSpinBox()
        self.layer_spin.setObjectName("tokens-layer")
        self.head_spin.setObjectName("tokens-head")
        for text, spin in (("Block", self.layer_spin), ("Head", self.head_spin)):
            label = QLabel(text)
            label.setBuddy(spin)
            spin.setKeyboardTracking(False)
            row.addWidget(label)
            row.addWidget(spin)
        self.note = caption("")
        row.addWidget(self.note, 1)
        self.add_controls(row)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.overview = TileOverview(self._pick_head)
        self.map = Heatmap(x_label="key", y_label="query", value_format="{:.8g}")
        self.map.plot.setMouseEnabled(x=False, y=False)
        splitter.addWidget(self.map)
        splitter.addWidget(self.overview)
        splitter.setSizes([600, 400])
        layout.addWidget(splitter, 1)
        self.kind_combo.currentIndexChanged.connect(self._kind_changed)
        self.layer_spin.valueChanged.connect(state.set_selected_layer)
        self.head_spin.valueChanged.connect(state.set_selected_head)
        # The selection only picks which computed head is drawn: no new computation.
        state.selected_layer_changed.connect(self._selection_changed)
        state.selected_head_changed.connect(self._selection_changed)
        state.config_changed.connect(self.sync_selection_spins)
        state.model_changed.connect(self.sync_selection_spins)
        self.readouts = [self.map.readout, self.overview.readout]
        self.stale_labels = [self.note]
        self.sync_selection_spins()

    @property
    def attention_kind(self) -> str:
        """The kind of attention shown: the stream's own unless an encoder-decoder's other kind is chosen."""
        model = self.state.model
        pair = model is not None and model.config.architecture == "encoder-decoder"
        return self.kind_combo.currentData() if pair else "self"

    def choose_kind(self, kind: str) -> None:
        index = self.kind_combo.findData(kind)
        if index >= 0:
            self.kind_combo.setCurrentIndex(index)

    def _kind_changed(self) -> None:
        self.sync_selection_spins()
        self.inputs_changed()

    def inputs(self) -> AttentionInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        return AttentionInputs(model, self.state.tokenizer, tuple(tokens), self.controls.mask_mode, self.attention_kind)

    def sync_selection_spins(self) -> None:
        config = self.state.model.config if self.state.model is not None else self.state.config
        pair = config.architecture == "encoder-decoder"
        self.kind_combo.setVisible(pair)
        self.kind_caption.setVisible(pair)
        sync_layer_head_spins(self.state, self.layer_spin, self.head_spin,
                              config.encoder_layers if self.attention_kind == "encoder" else None)

    def _selection_changed(self) -> None:
        self.sync_selection_spins()
        if self.result is not None and not self.is_stale:
            self._draw_selected()
            self.map.refresh_hover()

    def _pick_head(self, layer: int, head: int) -> None:
        self.state.set_selected_layer(layer)
        self.state.set_selected_head(head)

    def show_result(self, result: AttentionResult) -> None:
        maps = result.maps
        self.overview.set_maps(maps.weights, result.overview, maps.query_labels, maps.key_labels, maps.layer_labels)
        self._draw_selected()
        nan_text = " Some rows are NaN (a query that sees no key)." if maps.has_nan else ""
        what = {"cross": "Rows are decoder positions, columns the source positions they read from the encoder's "
                         "output (here the source is the same text); no mask: every row reads the whole source",
                "encoder": "Rows and columns are source positions: the encoder attends both ways, no mask",
                "self": "Rows are queries, columns the keys they read"}[maps.attention]
        both_ways = " An encoder attends both ways: a row reads later tokens too." \
            if maps.attention == "self" and maps.mask_mode == "none" else ""
        self.note.setText(f"{what}; each row sums to 1.{both_ways}{nan_text} Hover for the exact weight.")

    def _draw_selected(self) -> None:
        maps = self.result.maps
        layer = min(self.state.selected_layer, maps.weights.shape[0] - 1)
        head = min(self.state.selected_head, maps.weights.shape[1] - 1)
        # A copy: a view into the maps would keep all of them alive in the heatmap after the view drops them.
        self.map.set_data(maps.weights[layer, head].copy(), row_labels=maps.query_labels, col_labels=maps.key_labels,
                          levels=(0.0, 1.0))
        x_label, y_label = AXIS_LABELS[maps.attention]
        self.map.plot.setLabel("bottom", x_label)
        self.map.plot.setLabel("left", y_label)
        mask = "no" if maps.mask_mode == "none" else maps.mask_mode
        kind = "" if maps.title == "self-attention" else f"{maps.title}: "  # a decoder's one kind needs no name
        set_title(self.map.plot, f"{kind}{maps.layer_labels[layer]}, head {head} ({mask} mask)")
        self.overview.select(layer, head)

    def refresh_hover(self) -> None:
        self.map.refresh_hover()
        self.overview.refresh_hover()

    def on_release(self) -> None:
        self.overview.release_weights()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Attention: selected head", self.map.plot.getPlotItem()),
                ("Attention: all layers x heads", self.overview.plot.getPlotItem())]
