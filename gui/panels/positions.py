"""Positions: attention cannot see order until positions are added, and RoPE makes scores depend on m - n alone.

Four sub-tabs:
- RoPE scrubber: drag the query position m and the key position n (sliders, or the dashed lines on
  the plots); the score R(m)q . R(n)k updates while dragging. "Lock offset" moves both together:
  the RoPE trace against m is flat, the additive sinusoidal one on the same q and k drifts (the
  reading's 12.03 -> 8.25 -> 7.08 at offset 2). Each (even, odd) pair is drawn as a rotating arrow,
  and ||R(m)q|| against m shows rotations keep lengths (exercise 5).
- Score grids: the (m, n) grid for RoPE, additive sinusoidal and learned (random, untrained)
  encodings, and the score against the offset m - n for all three.
- Encodings: the sinusoidal table with each pair's wavelength and a row's fingerprint, the current
  model's learned position table, the ALiBi penalty per head.
- Permutation: |attn(shuffled x) - shuffle(attn(x))| per position for no encoding, sinusoidal,
  learned (untrained: exercise 4) and RoPE.

Why a drag never calls torch: the core scrubber functions are sub-millisecond but do their
rotations with torch ops, and torch belongs to the worker. So the worker computes every score the
sliders can reach at once (the full (P, P) grids, the rotated pairs at every position, the norms),
and a drag only indexes those arrays; base, scale, q/k source or the position range changing
submits a new job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGraphicsItem,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gui import theme
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.panels.base import Panel
from gui.widgets.heatmap import Heatmap

SOURCE_RANDOM = "random q, k (seeded)"
SOURCE_MODEL = "from the current model"
SUB_TABS = ("RoPE scrubber", "Score grids", "Encodings", "Permutation")
PERMUTATION_ENCODINGS = ("none", "sinusoidal", "learned", "rope")  # the order core returns them in
ENCODING_CAPTIONS = {
    "none": "no encoding",
    "sinusoidal": "sinusoidal (added)",
    "learned": "learned (random, untrained)",
    "rope": "RoPE (rotates q, k)",
}
POSITIONAL_NAMES = {"rope": "RoPE", "alibi": "ALiBi", "learned": "learned", "sinusoidal": "sinusoidal", "none": "no"}
MAX_ARROW_PAIRS = 8  # more circles than this are unreadable at projector scale
ZERO_FLOOR_LOG10 = -17.0  # where an exactly-zero difference is drawn on the log axis
DEFAULT_PERMUTATION_HINT = "e.g. 3 1 5 0 2 4"
EXACT_FORMAT = "{:.7g}"  # heatmaps hold float32: seven significant digits are all there is


# ---- requests and results (built on the GUI thread, computed on the worker) -----------------------
@dataclass(frozen=True)
class PositionsRequest:
    source: str  # SOURCE_RANDOM or SOURCE_MODEL
    seed: int
    d: int  # width of the random q, k
    model: Any  # the current torch model (only read when source is SOURCE_MODEL)
    tokens: tuple[int, ...]
    layer: int
    head: int
    query_token: int
    key_token: int
    base: float
    scale: float
    n_positions: int  # the scrubber's and grids' positions 0..P-1
    encoding_d_model: int  # width of the sinusoidal heatmap
    alibi_heads: int
    alibi_length: int
    permutation_length: int
    permutation_d_model: int
    permutation_seed: int
    permutation: tuple[int, ...] | None  # None: core's default shuffle for this length


@dataclass(frozen=True)
class ScrubberData:
    """Everything the sliders can reach: a drag only indexes these arrays."""

    q: np.ndarray  # (d,) content vectors, before rotation
    k: np.ndarray  # (d,)
    label: str
    base: float
    scale: float
    positions: np.ndarray  # (P,)
    rope: np.ndarray  # (P, P) R(m)q . R(n)k
    sinusoidal: np.ndarray  # (P, P) (q + PE[m]) . (k + PE[n])
    learned: np.ndarray  # (P, P) the same with a random (untrained) learned table
    rotated_q: np.ndarray  # (P, d/2, 2) q's pairs rotated to each position
    rotated_k: np.ndarray  # (P, d/2, 2)
    wavelengths: np.ndarray  # (d/2,) positions per full turn of each pair
    q_norms: np.ndarray  # (P,) ||R(m)q||
    k_norms: np.ndarray  # (P,)
    q_norm: float  # ||q||
    k_norm: float
    q_norm_drift: float  # max over positions of | ||R(m)q|| - ||q|| |: rounding only
    k_norm_drift: float
    longest_pair: float  # length of the longest (even, odd) pair of q or k: the arrows' scale


@dataclass(frozen=True)
class EncodingsData:
    sinusoidal: Any  # core SinusoidalHeatmap
    learned: Any  # core LearnedPositionTable, or None
    learned_note: str  # why there is no learned table
    alibi: Any  # core AlibiMatrices


@dataclass(frozen=True)
class PositionsResult:
    scrubber: ScrubberData
    encodings: EncodingsData
    permutation: Any  # core PermutationEquivariance


_worker_cache: dict[str, tuple[Any, Any]] = {}  # part -> (inputs, result); touched on the worker thread only


def _cached(part: str, key: tuple, build):
    # One entry per part: editing the permutation must not redo the grids, and vice versa.
    entry = _worker_cache.get(part)
    if entry is not None and entry[0] == key:
        return entry[1]
    value = build()
    _worker_cache[part] = (key, value)
    return value


def _query_key_pair(request: PositionsRequest):
    from core.experiments import positions

    if request.source == SOURCE_MODEL:
        import torch

        model = request.model
        if model is None:
            raise positions.PositionsError("no model is loaded yet; wait for it or use the random q, k")
        device = next(model.parameters()).device
        tokens = torch.tensor(request.tokens[: model.config.context_length], device=device)  # (T,)
        return positions.model_qk(model, tokens, request.layer, request.head, request.query_token, request.key_token)
    return positions.seeded_qk(request.seed, request.d)


def _scrubber_data(request: PositionsRequest) -> ScrubberData:
    from core.experiments import positions

    pair_key = (
        (request.source, request.model, request.tokens, request.layer, request.head, request.query_token,
         request.key_token)
        if request.source == SOURCE_MODEL
        else (request.source, request.seed, request.d)
    )
    pair = _cached("pair", pair_key, lambda: _query_key_pair(request))
    base, scale, count = request.base, request.scale, request.n_positions
    index = np.arange(count)
    rope = positions.rope_score_grid(pair.q, pair.k, index, base, scale)
    d = pair.q.shape[0]
    sinusoidal = positions.additive_score_grid(pair.q, pair.k, positions.sinusoidal_pe_table(count, d, base))
    learned_table = positions.random_learned_table(count, d, seed=request.seed)
    learned = positions.additive_score_grid(pair.q, pair.k, learned_table)
    q_arrows = [positions.rotation_arrows(pair.q, float(m), base, scale) for m in index]
    k_arrows = [positions.rotation_arrows(pair.k, float(n), base, scale) for n in index]
    q_norms = positions.rope_norms(pair.q, index, base, scale)
    k_norms = positions.rope_norms(pair.k, index, base, scale)
    return ScrubberData(
        q=pair.q,
        k=pair.k,
        label=pair.label,
        base=base,
        scale=scale,
        positions=index,
        rope=rope.scores,
        sinusoidal=sinusoidal.scores,
        learned=learned.scores,
        rotated_q=np.stack([arrows.rotated for arrows in q_arrows]),
        rotated_k=np.stack([arrows.rotated for arrows in k_arrows]),
        wavelengths=q_arrows[0].wavelengths,
        q_norms=q_norms.norms,
        k_norms=k_norms.norms,
        q_norm=q_norms.original_norm,
        k_norm=k_norms.original_norm,
        q_norm_drift=float(np.abs(q_norms.norms - q_norms.original_norm).max()),
        k_norm_drift=float(np.abs(k_norms.norms - k_norms.original_norm).max()),
        longest_pair=float(max(np.hypot(*q_arrows[0].original.T).max(), np.hypot(*k_arrows[0].original.T).max())),
    )


def _encodings_data(request: PositionsRequest) -> EncodingsData:
    from core.experiments import positions

    sinusoidal = positions.sinusoidal_heatmap(request.n_positions, request.encoding_d_model)
    model = request.model
    learned, note = None, ""
    if model is None:
        note = "No model is loaded yet."
    elif model.config.positional != "learned":
        kind = POSITIONAL_NAMES.get(model.config.positional, model.config.positional)
        note = (f"{model.config.name} uses {kind} positions, so it has no learned table. "
                "Load a model with learned positions (the tiny-gpt preset) to see one.")
    else:
        learned = positions.learned_position_table(model)
    alibi = positions.alibi_matrix(request.alibi_heads, request.alibi_length)
    return EncodingsData(sinusoidal=sinusoidal, learned=learned, learned_note=note, alibi=alibi)


def compute_positions(request: PositionsRequest) -> PositionsResult:
    """The worker's job: each part is recomputed only when its own inputs changed."""
    from core.experiments import positions

    scrubber_key = (
        request.source, request.seed, request.d, request.model if request.source == SOURCE_MODEL else None,
        request.tokens if request.source == SOURCE_MODEL else None, request.layer, request.head,
        request.query_token, request.key_token, request.base, request.scale, request.n_positions,
    )
    scrubber = _cached("scrubber", scrubber_key, lambda: _scrubber_data(request))
    encodings_key = (request.n_positions, request.encoding_d_model, request.model, request.alibi_heads,
                     request.alibi_length)
    encodings = _cached("encodings", encodings_key, lambda: _encodings_data(request))
    permutation_key = (request.permutation_length, request.permutation_d_model, request.permutation_seed,
                       request.permutation)
    permutation = _cached(
        "permutation",
        permutation_key,
        lambda: positions.permutation_equivariance(
            None, seed=request.permutation_seed, T=request.permutation_length,
            d_model=request.permutation_d_model, perm=request.permutation,
        ),
    )
    return PositionsResult(scrubber=scrubber, encodings=encodings, permutation=permutation)


# ---- small helpers (GUI thread) --------------------------------------------------------------------
def parse_permutation(text: str, length: int) -> tuple[int, ...]:
    """The order typed by the user ("3 1 5 0 2 4", commas allowed); ValueError says what is wrong."""
    parts = text.replace(",", " ").split()
    example = " ".join(str(i) for i in reversed(range(length)))
    if not parts:
        raise ValueError(f"Type the new order of the {length} positions, separated by spaces (e.g. {example}).")
    values = []
    for part in parts:
        try:
            values.append(int(part))
        except ValueError:
            raise ValueError(
                f"{part!r} is not a position number; type whole numbers 0..{length - 1} (e.g. {example})."
            ) from None
    if len(values) != length:
        raise ValueError(f"The order has {len(values)} entries but there are {length} tokens (T = {length}); "
                         f"give each of 0..{length - 1} once.")
    outside = sorted({v for v in values if not 0 <= v < length})
    if outside:
        raise ValueError(f"{', '.join(map(str, outside))} is outside 0..{length - 1}; give each position once.")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        missing = sorted(set(range(length)) - set(values))
        raise ValueError(f"{', '.join(map(str, repeated))} appears more than once and {', '.join(map(str, missing))} "
                         "is missing; a shuffle uses every position exactly once.")
    return tuple(values)


def format_difference(value: float) -> str:
    """Float noise must read as noise (1.2e-07), never as a rounded 0; only an exact zero says 0."""
    return "0 (exactly)" if value == 0.0 else f"{value:.2e}"


def format_wavelength(positions: float) -> str:
    """6.28, 62.8, 628, 6,283: whole positions once they are long, never 6.28e+03 for a student to decode."""
    return f"{positions:.3g}" if positions < 1000 else f"{positions:,.0f}"


def diagonal_trace(grid: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(query positions m, grid[m, m - offset]) along one diagonal of a (P, P) grid."""
    values = np.diagonal(grid, offset=-offset)
    start = max(offset, 0)
    return np.arange(start, start + values.shape[0]), values


def _circle_outlines(centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    angle = np.linspace(0, 2 * np.pi, 65)
    xs = (centres[:, None] + np.cos(angle)[None, :])
    ys = np.broadcast_to(np.sin(angle), xs.shape)
    gap = np.full((centres.shape[0], 1), np.nan)  # NaN breaks the line between circles
    return np.hstack([xs, gap]).ravel(), np.hstack([ys, gap]).ravel()


def cache_static_parts(plot: pg.PlotWidget) -> None:
    """Keep axes (with their grid lines) and the title as pixmaps between paints.

    A drag changes only curves and markers, yet every repaint of the view replays each axis's tick
    text: about 4 ms per axis, most of a 33 ms frame. Cached, an axis is redrawn only when its own
    range, font or pen changes (AxisItem calls update() then, which drops the pixmap).
    """
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    item.titleLabel.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


class PositionsPanel(Panel):
    title = "Positions"
    refresh_on = frozenset({"config", "model", "tokens"})

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.result: PositionsResult | None = None
        self.scrubber: ScrubberData | None = None
        self.m = 3  # the reading's first pair: m = 3, n = 1
        self.n = 1
        self._syncing = False
        self._valid_permutation: tuple[int, ...] | None = None
        self._shown_encodings: EncodingsData | None = None
        self._shown_permutation = None
        self._drawn_offset: int | None = None
        self._drawn_trace_source: ScrubberData | None = None
        self._title_timer = QTimer(self)
        self._title_timer.setSingleShot(True)
        self._title_timer.setInterval(80)
        self._title_timer.timeout.connect(self._update_titles)
        layout = self.layout()

        layout.addLayout(self._build_source_controls())
        self.tabs = QTabWidget()
        self.tabs.setObjectName("positions-tabs")
        self.tabs.addTab(self._build_scrubber_tab(), SUB_TABS[0])
        self.tabs.addTab(self._build_grids_tab(), SUB_TABS[1])
        self.tabs.addTab(self._build_encodings_tab(), SUB_TABS[2])
        self.tabs.addTab(self._build_permutation_tab(), SUB_TABS[3])
        layout.addWidget(self.tabs, 1)
        self.tabs.currentChanged.connect(lambda _index: self._redraw_scrubber())
        self._update_source_availability()
        self._cache_static_items()
        self.apply_theme()

    # ---- construction ----------------------------------------------------------------------------
    def _spin(self, low: int, high: int, value: int, tip: str, step: int = 1) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setSingleStep(step)
        spin.setValue(value)
        spin.setToolTip(tip)
        spin.setKeyboardTracking(False)
        spin.valueChanged.connect(self.schedule_refresh)
        return spin

    @staticmethod
    def _labelled(row: QHBoxLayout | FlowLayout, text: str, widget: QWidget) -> QWidget:
        caption = QLabel(text)
        caption.setBuddy(widget)
        caption.setToolTip(widget.toolTip())
        if isinstance(row, FlowLayout):
            row.addWidget(control_group(caption, widget))  # a caption never wraps away from its control
        else:
            row.addWidget(caption)
            row.addWidget(widget)
        return caption

    def _build_source_controls(self) -> QVBoxLayout:
        column = QVBoxLayout()
        column.setSpacing(4)
        first, second = QHBoxLayout(), QHBoxLayout()
        self.source_combo = QComboBox()
        self.source_combo.setObjectName("positions-source")
        self.source_combo.addItems([SOURCE_RANDOM, SOURCE_MODEL])
        self.source_combo.setToolTip("Where q and k come from: the reading's random pair, or a trained head")
        self.source_combo.currentIndexChanged.connect(self._source_changed)
        self._labelled(first, "q, k:", self.source_combo)

        self.random_controls = QWidget()
        random_row = QHBoxLayout(self.random_controls)
        random_row.setContentsMargins(0, 0, 0, 0)
        self.seed_spin = self._spin(0, 2**31 - 1, 0, "Seed of the random q, k (0 with d 8 is the reading's pair)")
        self.d_spin = self._spin(2, 256, 8, "Width d of q and k (even: RoPE rotates pairs)", step=2)
        self._labelled(random_row, "seed", self.seed_spin)
        self._labelled(random_row, "d", self.d_spin)
        first.addWidget(self.random_controls)

        self.model_controls = QWidget()
        model_row = QHBoxLayout(self.model_controls)
        model_row.setContentsMargins(0, 0, 0, 0)
        self.layer_spin = self._spin(0, 0, 0, "Layer whose q and k are taken")
        self.head_spin = self._spin(0, 0, 0, "Query head (its key comes from the key/value head serving it)")
        self.query_token_spin = self._spin(0, 0, 0, "Token whose query vector q is taken (its position in the text)")
        self.key_token_spin = self._spin(0, 0, 0, "Token whose key vector k is taken")
        self._labelled(model_row, "layer", self.layer_spin)
        self._labelled(model_row, "head", self.head_spin)
        self._labelled(model_row, "q token", self.query_token_spin)
        self._labelled(model_row, "k token", self.key_token_spin)
        first.addWidget(self.model_controls)
        self.model_controls.hide()
        first.addStretch(1)
        self.source_label = QLabel("")
        self.source_label.setObjectName("positions-source-label")
        # Long model labels must not widen the panel past a projector screen; the tooltip keeps the whole text.
        self.source_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.source_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

        self.base_spin = QDoubleSpinBox()
        self.base_spin.setRange(2.0, 1e8)
        self.base_spin.setDecimals(0)
        self.base_spin.setValue(10000.0)
        self.base_spin.setSingleStep(1000.0)
        self.base_spin.setKeyboardTracking(False)
        self.base_spin.setToolTip(
            "RoPE base: pair i turns base^(-2i/d) radians per position (also the sinusoids' base)")
        self.base_spin.valueChanged.connect(self.schedule_refresh)
        self.scale_spin = QDoubleSpinBox()
        self.scale_spin.setRange(0.25, 64.0)
        self.scale_spin.setDecimals(2)
        self.scale_spin.setSingleStep(0.5)
        self.scale_spin.setValue(1.0)
        self.scale_spin.setKeyboardTracking(False)
        self.scale_spin.setToolTip("Position interpolation: positions are divided by this factor before rotating, "
                                   "so a longer context maps into the trained angle range (\"stretching the context\")")
        self.scale_spin.valueChanged.connect(self.schedule_refresh)
        self.positions_spin = self._spin(8, 512, 128, "Positions 0..P-1 the scrubber and the grids cover")
        self._labelled(second, "RoPE base", self.base_spin)
        self._labelled(second, "interpolation scale", self.scale_spin)
        self._labelled(second, "positions P", self.positions_spin)
        second.addWidget(self.source_label, 1)
        column.addLayout(first)
        column.addLayout(second)
        return column

    def _plot(self, title: str, bottom: str, left: str) -> pg.PlotWidget:
        plot = pg.PlotWidget()
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setTitle(title)
        plot.setLabel("bottom", bottom)
        plot.setLabel("left", left)
        plot.showGrid(x=True, y=True, alpha=0.25)
        cache_static_parts(plot)
        return plot

    def _movable_line(self, plot: pg.PlotWidget, role: str) -> pg.InfiniteLine:
        line = pg.InfiniteLine(angle=90, movable=True)
        line.setZValue(20)
        line.setToolTip("Drag to move this position")
        plot.addItem(line)
        line.role = role  # which theme colour restyles it
        return line

    def _build_scrubber_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        sliders = QGridLayout()
        self.m_slider = QSlider(Qt.Orientation.Horizontal)
        self.m_slider.setObjectName("positions-m")
        self.n_slider = QSlider(Qt.Orientation.Horizontal)
        self.n_slider.setObjectName("positions-n")
        for slider, tip in ((self.m_slider, "query position m"), (self.n_slider, "key position n")):
            slider.setToolTip(f"Drag the {tip}")
            slider.setRange(0, 127)
        self.m_slider.setValue(self.m)
        self.n_slider.setValue(self.n)
        self.m_slider.valueChanged.connect(lambda value: self.set_positions(m=value))
        self.n_slider.valueChanged.connect(lambda value: self.set_positions(n=value))
        self.m_caption = QLabel()
        self.n_caption = QLabel()
        self.lock_check = QCheckBox("lock offset m - n")
        self.lock_check.setObjectName("positions-lock")
        self.lock_check.setToolTip("Move m and n together: the offset stays fixed, and so does the RoPE score")
        self.lock_check.toggled.connect(lambda _on: self._redraw_scrubber())
        self.rope_caption = QLabel("RoPE R(m)q·R(n)k =")
        self.rope_caption.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.rope_score_label = QLabel("")
        self.rope_score_label.setObjectName("positions-rope-score")
        self.rope_score_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A checkbox, not a label: trained q and k are short next to the sinusoids (|PE| ~ sqrt(d/2)),
        # and hiding the additive curves lets the y axis fit the RoPE scores alone.
        self.compare_sinusoidal_check = QCheckBox("sinusoidal (q+PE[m])·(k+PE[n]) =")
        self.compare_sinusoidal_check.setObjectName("positions-compare-sinusoidal")
        self.compare_sinusoidal_check.setChecked(True)
        self.compare_sinusoidal_check.setToolTip("Also draw the additive sinusoidal encoding on the same q and k")
        self.compare_sinusoidal_check.toggled.connect(self._comparison_toggled)
        self.sinusoidal_score_label = QLabel("")
        self.sinusoidal_score_label.setObjectName("positions-sinusoidal-score")
        self.sinusoidal_score_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.offset_label = QLabel("")
        self.offset_label.setObjectName("positions-offset")
        # Each score sits on its handle's row: two lines in all, so the plots keep the height.
        sliders.addWidget(self.m_caption, 0, 0)
        sliders.addWidget(self.m_slider, 0, 1)
        sliders.addWidget(self.rope_caption, 0, 2)
        sliders.addWidget(self.rope_score_label, 0, 3)
        sliders.addWidget(self.lock_check, 0, 4)
        sliders.addWidget(self.n_caption, 1, 0)
        sliders.addWidget(self.n_slider, 1, 1)
        sliders.addWidget(self.compare_sinusoidal_check, 1, 2, alignment=Qt.AlignmentFlag.AlignRight)
        sliders.addWidget(self.sinusoidal_score_label, 1, 3)
        sliders.addWidget(self.offset_label, 1, 4)
        sliders.setColumnStretch(1, 1)
        column.addLayout(sliders)

        self.trace_plot = self._plot("Score against m at a fixed offset m - n", "query position m", "score")
        self.trace_plot.addLegend(offset=(10, 5), colCount=2)
        self.trace_rope = self.trace_plot.plot([], [], name="RoPE")
        self.trace_sinusoidal = self.trace_plot.plot([], [], name="sinusoidal (added)")
        self.trace_markers = pg.ScatterPlotItem(size=12)
        self.trace_plot.addItem(self.trace_markers)
        self.m_line = self._movable_line(self.trace_plot, "primary")
        self.m_line.sigPositionChanged.connect(lambda line: self._line_moved("m", line))
        self.m_line.sigPositionChangeFinished.connect(lambda _line: self._snap_lines())

        self.row_plot = self._plot("Score against key position n, query at m", "key position n", "score")
        self.row_rope = self.row_plot.plot([], [])
        self.row_sinusoidal = self.row_plot.plot([], [])
        self.row_markers = pg.ScatterPlotItem(size=12)
        self.row_plot.addItem(self.row_markers)
        self.n_line = self._movable_line(self.row_plot, "secondary")
        self.n_line.sigPositionChanged.connect(lambda line: self._line_moved("n", line))
        self.n_line.sigPositionChangeFinished.connect(lambda _line: self._snap_lines())

        self.arrow_plot = self._plot("Each (even, odd) pair rotates: q at m, k at n", "", "")
        self.arrow_plot.showGrid(x=False, y=False)
        self.arrow_plot.setAspectLocked(True)
        self.arrow_plot.setMouseEnabled(x=False, y=False)
        self.arrow_plot.hideAxis("bottom")
        self.arrow_plot.hideAxis("left")
        self.arrow_plot.getViewBox().sigResized.connect(self._arrow_plot_resized)
        self.arrow_plot.addLegend(offset=(10, 5), colCount=2)
        self.arrow_circles = self.arrow_plot.plot([], [])
        self.q_arrows = self.arrow_plot.plot([], [], connect="pairs", name="R(m) q")
        self.k_arrows = self.arrow_plot.plot([], [], connect="pairs", name="R(n) k")
        self.q_tips = pg.ScatterPlotItem(size=11)
        self.k_tips = pg.ScatterPlotItem(size=11)
        self.arrow_plot.addItem(self.q_tips)
        self.arrow_plot.addItem(self.k_tips)
        self.pair_labels = []
        for _ in range(MAX_ARROW_PAIRS):
            label = pg.TextItem("", anchor=(0.5, 0.0))
            self.arrow_plot.addItem(label)
            self.pair_labels.append(label)

        self.norm_plot = self._plot("Rotation keeps lengths: ‖R(m)q‖ against m", "position", "length")
        self.norm_plot.addLegend(offset=(10, 5), colCount=2)
        self.q_norm_curve = self.norm_plot.plot([], [], name="‖R(m) q‖")
        self.k_norm_curve = self.norm_plot.plot([], [], name="‖R(n) k‖")
        self.norm_m_line = pg.InfiniteLine(angle=90, movable=False)
        self.norm_plot.addItem(self.norm_m_line)
        self.norm_label = QLabel("")
        self.norm_label.setObjectName("positions-norm-readout")
        self.norm_label.setWordWrap(True)

        # Splitters keep the four views at equal shares whatever their size hints (and let a lecturer resize them).
        top, bottom = QSplitter(Qt.Orientation.Horizontal), QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.trace_plot)
        top.addWidget(self.row_plot)
        norm_box = QWidget()
        norm_column = QVBoxLayout(norm_box)
        norm_column.setContentsMargins(0, 0, 0, 0)
        norm_column.addWidget(self.norm_plot, 1)
        norm_column.addWidget(self.norm_label)
        bottom.addWidget(self.arrow_plot)
        bottom.addWidget(norm_box)
        plots = QSplitter(Qt.Orientation.Vertical)
        plots.addWidget(top)
        plots.addWidget(bottom)
        for splitter in (top, bottom, plots):
            splitter.setChildrenCollapsible(False)
            splitter.setSizes([500, 500])
        column.addWidget(plots, 1)
        self._update_slider_captions()
        return page

    def _build_grids_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        self.grids_note = QLabel("RoPE is constant along each diagonal (one offset m - n); the additive encodings "
                                 "are not. "
                                 "Click a cell to move m and n there.")
        self.grids_note.setWordWrap(True)
        column.addWidget(self.grids_note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        grids = QSplitter(Qt.Orientation.Horizontal)
        self.rope_grid = Heatmap("key n", "query m", "RoPE", value_format=EXACT_FORMAT)
        self.sinusoidal_grid = Heatmap("key n", "query m", "sinusoidal (added)", value_format=EXACT_FORMAT)
        self.learned_grid = Heatmap("key n", "query m", "learned (random, untrained)", value_format=EXACT_FORMAT)
        self.grid_markers = []
        for heatmap in self.score_grids():
            heatmap.clicked.connect(lambda row, col: self.set_positions(m=row, n=col, locked=False))
            cache_static_parts(heatmap.plot)
            marker = pg.ScatterPlotItem(size=14, symbol="s")
            marker.setZValue(10)
            heatmap.plot.addItem(marker)
            self.grid_markers.append(marker)
            grids.addWidget(heatmap)
        splitter.addWidget(grids)
        self.offset_plot = self._plot("Score against offset m - n (query at m, every key n)", "offset m - n", "score")
        self.offset_plot.addLegend(offset=(10, 5), colCount=3)
        self.offset_rope = self.offset_plot.plot([], [], name="RoPE")
        self.offset_sinusoidal = self.offset_plot.plot([], [], name="sinusoidal")
        self.offset_learned = self.offset_plot.plot([], [], name="learned (random)")
        self.offset_line = pg.InfiniteLine(angle=90, movable=False)
        self.offset_plot.addItem(self.offset_line)
        splitter.addWidget(self.offset_plot)
        splitter.setSizes([560, 340])
        column.addWidget(splitter, 1)
        return page

    def _build_encodings_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        controls = FlowLayout()
        config_width = max(2, self.state.config.d_model - self.state.config.d_model % 2)
        self.encoding_width_spin = self._spin(2, 1024, config_width, "Width d_model of the sinusoidal table", step=2)
        self.fingerprint_spin = QSpinBox()
        self.fingerprint_spin.setRange(0, 127)
        self.fingerprint_spin.setValue(3)
        self.fingerprint_spin.setToolTip("The position whose row (its fingerprint) is drawn; or click the table")
        self.fingerprint_spin.valueChanged.connect(lambda _v: self._redraw_fingerprint())
        self.alibi_heads_spin = self._spin(1, 64, 8, "Heads of the ALiBi layer: each gets its own slope")
        self.alibi_length_spin = self._spin(2, 256, 24, "Positions of the ALiBi matrix")
        self.alibi_head_combo = QComboBox()
        self.alibi_head_combo.setToolTip("Which head's penalty to show")
        self.alibi_head_combo.currentIndexChanged.connect(lambda _i: self._redraw_alibi())
        self._labelled(controls, "sinusoid d_model", self.encoding_width_spin)
        self._labelled(controls, "fingerprint of position", self.fingerprint_spin)
        self._labelled(controls, "ALiBi heads", self.alibi_heads_spin)
        self._labelled(controls, "T", self.alibi_length_spin)
        self._labelled(controls, "show", self.alibi_head_combo)
        column.addLayout(controls)

        columns = QSplitter(Qt.Orientation.Horizontal)
        left = QSplitter(Qt.Orientation.Vertical)
        self.sinusoid_map = Heatmap("dimension", "position", "Sinusoidal table PE[pos, dim]", value_format=EXACT_FORMAT)
        self.sinusoid_map.clicked.connect(lambda row, _col: self.fingerprint_spin.setValue(row))
        left.addWidget(self.sinusoid_map)
        self.fingerprint_plot = self._plot("Fingerprint of one position", "dimension", "PE")
        self.fingerprint_bars = pg.BarGraphItem(x=[0], height=[0], width=0.8)
        self.fingerprint_plot.addItem(self.fingerprint_bars)
        left.addWidget(self.fingerprint_plot)
        self.wavelength_plot = self._plot("Wavelength of each (sin, cos) pair", "pair i (dims 2i, 2i+1)", "wavelength")
        self.wavelength_plot.setLogMode(x=False, y=True)
        self.wavelength_curve = self.wavelength_plot.plot([], [], symbol="o", symbolSize=6)
        left.addWidget(self.wavelength_plot)
        left.setSizes([420, 220, 220])
        columns.addWidget(left)

        right = QSplitter(Qt.Orientation.Vertical)
        learned_box = QWidget()
        learned_column = QVBoxLayout(learned_box)
        learned_column.setContentsMargins(0, 0, 0, 0)
        self.learned_note = QLabel("")
        self.learned_note.setWordWrap(True)
        self.learned_note.setObjectName("positions-learned-note")
        self.learned_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        learned_column.addWidget(self.learned_note)
        self.learned_map = Heatmap("dimension", "position", "Learned positions of the model",
                                   value_format=EXACT_FORMAT)
        learned_column.addWidget(self.learned_map, 1)
        right.addWidget(learned_box)
        self.alibi_map = Heatmap("key position", "query position", "ALiBi penalty added to scores",
                                 value_format=EXACT_FORMAT)
        right.addWidget(self.alibi_map)
        right.setSizes([430, 430])
        columns.addWidget(right)
        column.addWidget(columns, 1)
        return page

    def _build_permutation_tab(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        controls = FlowLayout()
        self.permutation_length_spin = self._spin(2, 64, 6, "Number of tokens T shuffled")
        self.permutation_length_spin.valueChanged.connect(self._permutation_length_changed)
        self.permutation_width_spin = self._spin(2, 512, 32, "Width d_model of the attention layer", step=2)
        self.permutation_seed_spin = self._spin(0, 2**31 - 1, 0, "Seed of the layer's weights, x and the learned table")
        self.permutation_edit = QLineEdit()
        self.permutation_edit.setObjectName("positions-permutation")
        self.permutation_edit.setPlaceholderText(DEFAULT_PERMUTATION_HINT)
        self.permutation_edit.setToolTip("The shuffle: new position i takes the token from position perm[i]")
        self.permutation_edit.editingFinished.connect(self._permutation_edited)
        self.shuffle_button = QPushButton("New shuffle")
        self.shuffle_button.setToolTip("Draw another random order of the T positions")
        self.shuffle_button.clicked.connect(self._draw_shuffle)
        self._labelled(controls, "T", self.permutation_length_spin)
        self._labelled(controls, "d_model", self.permutation_width_spin)
        self._labelled(controls, "seed", self.permutation_seed_spin)
        self.permutation_edit.setMinimumWidth(QFontMetrics(self.permutation_edit.font()).horizontalAdvance("0" * 28))
        self._labelled(controls, "order", self.permutation_edit)
        controls.addWidget(self.shuffle_button)
        column.addLayout(controls)
        self.permutation_message = QLabel("")
        self.permutation_message.setObjectName("positions-permutation-message")
        self.permutation_message.setWordWrap(True)
        self.permutation_message.hide()
        column.addWidget(self.permutation_message)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.permutation_plot = self._plot("|attn(shuffled x) - shuffle(attn(x))| per position (log scale)",
                                           "position", "max |difference|")
        self.permutation_plot.setMouseEnabled(x=False, y=False)
        self.permutation_plot.addLegend(offset=(10, 5), colCount=len(PERMUTATION_ENCODINGS))
        self.permutation_bars = {}
        for encoding in PERMUTATION_ENCODINGS:
            bars = pg.BarGraphItem(x=[0], height=[0], width=0.2, name=ENCODING_CAPTIONS[encoding])
            self.permutation_plot.addItem(bars)
            self.permutation_bars[encoding] = bars
        self.noise_line = pg.InfiniteLine(angle=0, movable=False, label="float noise limit",
                                          labelOpts={"position": 0.95, "anchors": [(1, 1), (1, 1)]})
        self.permutation_plot.addItem(self.noise_line)
        splitter.addWidget(self.permutation_plot)
        self.permutation_table = QTableWidget(len(PERMUTATION_ENCODINGS), 3)
        self.permutation_table.setObjectName("positions-permutation-table")
        self.permutation_table.setHorizontalHeaderLabels(["encoding", "max |difference|", "what it means"])
        self.permutation_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.permutation_table.verticalHeader().hide()
        self.permutation_table.horizontalHeader().setStretchLastSection(True)
        self.permutation_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for row, encoding in enumerate(PERMUTATION_ENCODINGS):
            for col in range(3):
                text = ENCODING_CAPTIONS[encoding] if col == 0 else ""
                self.permutation_table.setItem(row, col, QTableWidgetItem(text))
        splitter.addWidget(self.permutation_table)
        splitter.setSizes([640, 180])
        column.addWidget(splitter, 1)
        return page

    def _cache_static_items(self) -> None:
        """Pixmap-cache what a drag never changes (legends, circles, labels, norm curves); see cache_static_parts."""
        cached = QGraphicsItem.CacheMode.DeviceCoordinateCache
        for plot in self.findChildren(pg.PlotWidget):
            legend = plot.getPlotItem().legend
            if legend is not None:
                legend.setCacheMode(cached)
        for item in (self.arrow_circles, self.q_norm_curve, self.k_norm_curve, *self.pair_labels):
            item.setCacheMode(cached)
        # Curves redrawn on every move: Qt strokes an antialiased thick polyline as one path (about
        # 1 ms for 512 points); as separate segments it is several times faster, and with opaque
        # pens the overlapping joints do not show.
        for curve in (self.trace_rope, self.trace_sinusoidal, self.row_rope, self.row_sinusoidal,
                      self.offset_rope, self.offset_sinusoidal, self.offset_learned):
            curve.curve.setSegmentedLineMode("on")

    # ---- sources -----------------------------------------------------------------------------------
    def model_rope_problem(self) -> str:
        """Why q and k cannot come from the current model, or "" when they can."""
        model = self.state.model
        if model is None:
            return "No model is loaded yet."
        config = model.config
        if config.positional != "rope":
            kind = POSITIONAL_NAMES.get(config.positional, config.positional)
            return (f"{config.name} uses {kind} positions, not RoPE; load a RoPE model "
                    "(the tiny-llama preset) to take q and k from it.")
        if not self.state.tokens:
            return "The input text has no tokens."
        return ""

    def _update_source_availability(self) -> None:
        problem = self.model_rope_problem()
        item = self.source_combo.model().item(1)
        item.setEnabled(not problem)
        item.setToolTip(problem or "q and k of one head of the current RoPE model, un-rotated to their content")
        if problem and self.source_combo.currentIndex() == 1:
            self.source_combo.setCurrentIndex(0)
        model = self.state.model
        if model is not None:
            config = model.config
            tokens = min(len(self.state.tokens), config.context_length)
            for spin, high in ((self.layer_spin, config.n_layers - 1), (self.head_spin, config.n_heads - 1),
                               (self.query_token_spin, max(0, tokens - 1)), (self.key_token_spin, max(0, tokens - 1))):
                spin.blockSignals(True)
                spin.setMaximum(high)
                spin.blockSignals(False)

    def _source_changed(self, index: int) -> None:
        from_model = index == 1
        self.random_controls.setVisible(not from_model)
        self.model_controls.setVisible(from_model)
        model = self.state.model
        if from_model and model is not None and model.config.positional == "rope":
            # Start from the model's own formula; the spins then ask "what if it were stretched".
            for spin, value in ((self.base_spin, model.config.rope_base), (self.scale_spin, model.config.rope_scale)):
                spin.blockSignals(True)
                spin.setValue(value)
                spin.blockSignals(False)
            last_token = max(0, len(self.state.tokens) - 1)
            for spin, value in ((self.layer_spin, self.state.selected_layer),
                                (self.head_spin, self.state.selected_head),
                                (self.key_token_spin, 0), (self.query_token_spin, last_token)):
                spin.blockSignals(True)
                spin.setValue(value)
                spin.blockSignals(False)
        self.schedule_refresh()

    # ---- state -> request ----------------------------------------------------------------------------
    def current_request(self) -> PositionsRequest:
        return PositionsRequest(
            source=SOURCE_MODEL if self.source_combo.currentIndex() == 1 else SOURCE_RANDOM,
            seed=self.seed_spin.value(),
            d=self.d_spin.value() - self.d_spin.value() % 2,
            model=self.state.model,
            tokens=tuple(self.state.tokens),
            layer=self.layer_spin.value(),
            head=self.head_spin.value(),
            query_token=self.query_token_spin.value(),
            key_token=self.key_token_spin.value(),
            base=float(self.base_spin.value()),
            scale=float(self.scale_spin.value()),
            n_positions=self.positions_spin.value(),
            encoding_d_model=self.encoding_width_spin.value() - self.encoding_width_spin.value() % 2,
            alibi_heads=self.alibi_heads_spin.value(),
            alibi_length=self.alibi_length_spin.value(),
            permutation_length=self.permutation_length_spin.value(),
            permutation_d_model=self.permutation_width_spin.value() - self.permutation_width_spin.value() % 2,
            permutation_seed=self.permutation_seed_spin.value(),
            permutation=self._valid_permutation,
        )

    def refresh(self) -> None:
        self._update_source_availability()
        request = self.current_request()
        self.submit(lambda: compute_positions(request), self.show_result, "positions")

    # ---- result -> views ---------------------------------------------------------------------------
    def show_result(self, result: PositionsResult) -> None:
        self.result = result
        if result.scrubber is not self.scrubber:
            self._show_scrubber(result.scrubber)
        if result.encodings is not self._shown_encodings:
            self._show_encodings(result.encodings)
        if result.permutation is not self._shown_permutation:
            self._show_permutation(result.permutation)
        self.result_shown.emit()

    def _show_scrubber(self, data: ScrubberData) -> None:
        self.scrubber = data
        last = int(data.positions[-1])
        self.source_label.setText(data.label)  # base and scale stand in their own boxes
        self.source_label.setToolTip(f"{data.label}; base {data.base:g}, scale {data.scale:g}")
        self._syncing = True
        try:
            for slider in (self.m_slider, self.n_slider):
                slider.setMaximum(last)
            for line in (self.m_line, self.n_line):
                line.setBounds((0, last))
        finally:
            self._syncing = False
        self.m, self.n = min(self.m, last), min(self.n, last)
        self._sync_handles()
        self.fingerprint_spin.setMaximum(last)

        for plot in (self.trace_plot, self.row_plot):
            plot.setXRange(0, last, padding=0.02)
        self._fit_score_axes()
        both = np.concatenate([data.rope.ravel(), data.sinusoidal.ravel()])
        all_three = np.concatenate([both, data.learned.ravel()])
        spread = float(all_three.max() - all_three.min()) or 1.0
        self.offset_plot.setXRange(-last, last, padding=0.02)
        self.offset_plot.setYRange(float(all_three.min()) - 0.05 * spread, float(all_three.max()) + 0.2 * spread,
                                   padding=0)

        labels = [str(int(p)) for p in data.positions]
        for heatmap, grid in zip(self.score_grids(), (data.rope, data.sinusoidal, data.learned)):
            heatmap.set_data(grid, row_labels=labels, col_labels=labels)
        self.rope_grid.plot.setTitle(f"RoPE (base {data.base:g}, scale {data.scale:g})")

        self.q_norm_curve.setData(data.positions, data.q_norms)
        self.k_norm_curve.setData(data.positions, data.k_norms)
        biggest = max(data.q_norm, data.k_norm)
        self.norm_plot.setXRange(0, last, padding=0.02)
        self.norm_plot.setYRange(0, biggest * 1.6, padding=0)  # top: room for the legend
        self.norm_label.setText(
            f"‖q‖ = {data.q_norm:.10f}, ‖k‖ = {data.k_norm:.10f}; largest change over m = 0..{last}: "
            f"{format_difference(data.q_norm_drift)} and {format_difference(data.k_norm_drift)} "
            "(rotations keep lengths)"
        )
        self._layout_arrow_slots(data)
        self._redraw_scrubber()

    def _fit_score_axes(self) -> None:
        """Fixed y ranges per result (a drag must not make the axes jump), fitting the curves shown."""
        data = self.scrubber
        if data is None:
            return
        compared = self.compare_sinusoidal_check.isChecked()
        shown = np.concatenate([data.rope.ravel(), data.sinusoidal.ravel()]) if compared else data.rope
        low, high = float(shown.min()), float(shown.max())
        pad = 0.05 * (high - low or 1.0)
        for plot in (self.trace_plot, self.row_plot):
            plot.setYRange(low - pad, high + 4 * pad, padding=0)  # top: room for the legend

    def _comparison_toggled(self, compared: bool) -> None:
        for item in (self.trace_sinusoidal, self.row_sinusoidal):
            item.setVisible(compared)
        self._fit_score_axes()
        self._redraw_scrubber()

    def _arrow_slots_that_fit(self) -> int:
        """As many circles as their labels have room for at the current font size (at most MAX_ARROW_PAIRS)."""
        label_width = QFontMetrics(theme.font(0.85)).horizontalAdvance("dims 126-127 ")
        room = max(self.arrow_plot.width(), 400)
        return int(min(MAX_ARROW_PAIRS, max(3, room // (label_width * 1.1))))

    def _arrow_plot_resized(self) -> None:
        data = self.scrubber
        if data is None or not hasattr(self, "_arrow_pairs"):
            return
        wanted = min(self._arrow_slots_that_fit(), data.wavelengths.shape[0])
        if wanted != self._arrow_pairs.shape[0]:
            self._layout_arrow_slots(data)
            self._redraw_scrubber()

    def _layout_arrow_slots(self, data: ScrubberData) -> None:
        n_pairs = data.wavelengths.shape[0]
        slots = self._arrow_slots_that_fit()
        if n_pairs <= slots:
            self._arrow_pairs = np.arange(n_pairs)
        else:  # fast, middle and slow pairs: the spread of frequencies is the point
            self._arrow_pairs = np.unique(np.round(np.linspace(0, n_pairs - 1, slots)).astype(int))
        self._arrow_centres = np.arange(self._arrow_pairs.shape[0]) * 2.6
        self._arrow_unit = 1.0 / max(data.longest_pair, 1e-12)  # the longest pair reaches the circle
        circle_x, circle_y = _circle_outlines(self._arrow_centres)
        self.arrow_circles.setData(circle_x, circle_y, connect="finite")
        for slot, label in enumerate(self.pair_labels):
            if slot < self._arrow_pairs.shape[0]:
                pair = int(self._arrow_pairs[slot])
                label.setText(f"dims {2 * pair}-{2 * pair + 1}\nλ {format_wavelength(data.wavelengths[pair])}")
                label.setPos(float(self._arrow_centres[slot]), -1.15)
                label.show()
            else:
                label.hide()
        right = float(self._arrow_centres[-1]) + 1.3
        self.arrow_plot.setRange(xRange=(-1.3, right), yRange=(-2.3, 1.9), padding=0)  # top: room for the legend

    # ---- dragging ------------------------------------------------------------------------------------
    def set_positions(self, m: int | None = None, n: int | None = None, locked: bool | None = None) -> None:
        """Move the query and/or key position; with the offset locked, moving one moves the other."""
        if self._syncing:
            return
        last = self.m_slider.maximum()
        new_m = self.m if m is None else int(m)
        new_n = self.n if n is None else int(n)
        lock = self.lock_check.isChecked() if locked is None else locked
        if lock and (m is None) != (n is None):
            offset = self.m - self.n
            if m is not None:
                new_m = min(max(new_m, max(0, offset)), last + min(0, offset))
                new_n = new_m - offset
            else:
                new_n = min(max(new_n, max(0, -offset)), last - max(0, offset))
                new_m = new_n + offset
        new_m, new_n = min(max(new_m, 0), last), min(max(new_n, 0), last)
        changed = (new_m, new_n) != (self.m, self.n)
        self.m, self.n = new_m, new_n
        self._sync_handles()
        if changed:
            self._redraw_scrubber()

    def _line_moved(self, which: str, line: pg.InfiniteLine) -> None:
        if self._syncing:
            return
        value = int(round(line.value()))
        self.set_positions(**{which: value})

    def _snap_lines(self) -> None:
        self._sync_handles()

    def _sync_handles(self) -> None:
        self._syncing = True
        try:
            for slider, value in ((self.m_slider, self.m), (self.n_slider, self.n)):
                if slider.value() != value:
                    slider.setValue(value)
            for line, value in ((self.m_line, self.m), (self.n_line, self.n)):
                if line.value() != value and not line.moving:
                    line.setValue(value)
        finally:
            self._syncing = False
        self._update_slider_captions()

    def _update_slider_captions(self) -> None:
        self.m_caption.setText(f"query m = {self.m}")
        self.n_caption.setText(f"key n = {self.n}")

    def shown_scores(self) -> tuple[float, float]:
        """(RoPE, sinusoidal) score at the current m, n, as displayed."""
        data = self.scrubber
        return float(data.rope[self.m, self.n]), float(data.sinusoidal[self.m, self.n])

    def locked_traces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(m, RoPE, sinusoidal) of the trace currently drawn for offset m - n."""
        xs, rope = self.trace_rope.getData()
        _, sinusoidal = self.trace_sinusoidal.getData()
        return xs, rope, sinusoidal

    def _redraw_scrubber(self) -> None:
        """Update what a drag changes, on the sub-tab in view only: hidden items would cost a third of a frame."""
        data = self.scrubber
        if data is None:
            return
        m, n = self.m, self.n
        if max(m, n) >= len(data.positions):
            return  # a restored m or n beyond the positions on screen: the pending result redraws
        offset = m - n
        rope_score, sinusoidal_score = self.shown_scores()
        self.rope_score_label.setText(f"{rope_score:.10f}")
        self.sinusoidal_score_label.setText(f"{sinusoidal_score:.10f}")
        self.offset_label.setText(f"m - n = {offset}")
        self._title_timer.start()
        shown = self.tabs.currentIndex()
        if shown == 0:
            self._redraw_scrubber_plots(data, m, n)
        elif shown == 1:
            self._redraw_grid_markers(data, m, n)

    def _redraw_scrubber_plots(self, data: ScrubberData, m: int, n: int) -> None:
        rope_score, sinusoidal_score = self.shown_scores()
        if self._drawn_offset != m - n or self._drawn_trace_source is not data:
            xs, rope = diagonal_trace(data.rope, m - n)
            _, sinusoidal = diagonal_trace(data.sinusoidal, m - n)
            self.trace_rope.setData(xs, rope)
            self.trace_sinusoidal.setData(xs, sinusoidal)
            self._drawn_offset, self._drawn_trace_source = m - n, data
        marked = 2 if self.compare_sinusoidal_check.isChecked() else 1
        self.trace_markers.setData([m, m][:marked], [rope_score, sinusoidal_score][:marked],
                                   brush=self._marker_brushes()[:marked])
        self.row_rope.setData(data.positions, data.rope[m])
        self.row_sinusoidal.setData(data.positions, data.sinusoidal[m])
        self.row_markers.setData([n, n][:marked], [rope_score, sinusoidal_score][:marked],
                                 brush=self._marker_brushes()[:marked])
        self.norm_m_line.setValue(m)
        pairs = self._arrow_pairs
        centres = self._arrow_centres
        for vectors, curve, tips in ((data.rotated_q[m], self.q_arrows, self.q_tips),
                                     (data.rotated_k[n], self.k_arrows, self.k_tips)):
            tip_x = centres + vectors[pairs, 0] * self._arrow_unit
            tip_y = vectors[pairs, 1] * self._arrow_unit
            segment_x = np.column_stack([centres, tip_x]).ravel()
            segment_y = np.column_stack([np.zeros_like(tip_y), tip_y]).ravel()
            curve.setData(segment_x, segment_y)
            tips.setData(tip_x, tip_y)

    def _redraw_grid_markers(self, data: ScrubberData, m: int, n: int) -> None:
        for marker in self.grid_markers:
            marker.setData([n + 0.5], [m + 0.5])
        offsets = m - data.positions
        self.offset_rope.setData(offsets, data.rope[m])
        self.offset_sinusoidal.setData(offsets, data.sinusoidal[m])
        self.offset_learned.setData(offsets, data.learned[m])
        self.offset_line.setValue(m - n)

    def _update_titles(self) -> None:
        # Titles re-lay out their plot, so a drag updates them once it pauses (a timer), not per move.
        lock = " (locked)" if self.lock_check.isChecked() else ""
        self.trace_plot.setTitle(f"Score against m at offset m - n = {self.m - self.n}{lock}")
        self.offset_plot.setTitle(f"Score against offset m - n, query at m = {self.m} (every key n)")

    @staticmethod
    def _marker_brushes() -> list:
        return [theme.brush("primary"), theme.brush("secondary")]

    def score_grids(self) -> tuple[Heatmap, Heatmap, Heatmap]:
        return self.rope_grid, self.sinusoidal_grid, self.learned_grid

    # ---- encodings -------------------------------------------------------------------------------------
    def _show_encodings(self, data: EncodingsData) -> None:
        self._shown_encodings = data
        table = data.sinusoidal.table
        positions = [str(p) for p in range(table.shape[0])]
        self.sinusoid_map.set_data(table, row_labels=positions, col_labels=[str(d) for d in range(table.shape[1])],
                                   levels=(-1.0, 1.0))
        self.wavelength_curve.setData(np.arange(data.sinusoidal.wavelengths.shape[0]), data.sinusoidal.wavelengths)
        self._redraw_fingerprint()
        if data.learned is None:
            self.learned_note.setText(data.learned_note)
            self.learned_map.hide()
        else:
            learned = data.learned.table
            self.learned_note.setText(f"{data.learned.label}. Rows of a trained table vary smoothly with position; "
                                      "an untrained one is noise.")
            self.learned_map.set_data(learned, row_labels=[str(p) for p in range(learned.shape[0])],
                                      col_labels=[str(d) for d in range(learned.shape[1])])
            self.learned_map.show()
        heads = data.alibi.head_labels
        current = self.alibi_head_combo.currentIndex()
        self.alibi_head_combo.blockSignals(True)
        self.alibi_head_combo.clear()
        self.alibi_head_combo.addItems(list(heads))
        self.alibi_head_combo.setCurrentIndex(min(max(current, 0), len(heads) - 1))
        self.alibi_head_combo.blockSignals(False)
        self._redraw_alibi()

    def _redraw_fingerprint(self) -> None:
        data = self._shown_encodings
        if data is None:
            return
        table = data.sinusoidal.table
        row = min(self.fingerprint_spin.value(), table.shape[0] - 1)
        self.fingerprint_bars.setOpts(x=np.arange(table.shape[1]), height=table[row], width=0.8,
                                      brush=theme.brush("primary"), pen=pg.mkPen(None))
        self.fingerprint_plot.setTitle(f"Fingerprint of position {row}: its row of the table")
        self.fingerprint_plot.setYRange(-1.1, 1.15, padding=0)

    def _redraw_alibi(self) -> None:
        data = self._shown_encodings
        if data is None:
            return
        head = max(0, self.alibi_head_combo.currentIndex())
        bias = data.alibi.bias[head]
        labels = [str(p) for p in range(bias.shape[0])]
        self.alibi_map.set_data(bias, row_labels=labels, col_labels=labels)
        self.alibi_map.plot.setTitle(f"ALiBi penalty, {data.alibi.head_labels[head]}")

    # ---- permutation -----------------------------------------------------------------------------------
    def _permutation_edited(self) -> None:
        text = self.permutation_edit.text()
        try:
            order = parse_permutation(text, self.permutation_length_spin.value())
        except ValueError as problem:
            self.permutation_message.setText(f"{problem} The last result stays on screen.")
            self.permutation_message.setStyleSheet(f"color: {theme.current().warning};")
            self.permutation_message.show()
            return
        self.permutation_message.hide()
        self.permutation_message.setText("")
        if order != self._valid_permutation:
            self._valid_permutation = order
            self.schedule_refresh()

    def _permutation_length_changed(self, _length: int) -> None:
        self._valid_permutation = None  # core draws its default shuffle for the new length
        self.permutation_message.hide()

    def _draw_shuffle(self) -> None:
        length = self.permutation_length_spin.value()
        order = np.random.default_rng().permutation(length)
        while length > 1 and (order == np.arange(length)).all():  # the identity would test nothing
            order = np.random.default_rng().permutation(length)
        self.permutation_edit.setText(" ".join(str(int(i)) for i in order))
        self._permutation_edited()

    def _show_permutation(self, data) -> None:
        self._shown_permutation = data
        order = tuple(int(i) for i in data.permutation)
        if not self.permutation_message.isVisible():
            self.permutation_edit.setText(" ".join(map(str, order)))
        length = len(order)
        tolerance_log = math.log10(data.noise_tolerance)
        positive = data.per_position[data.per_position > 0]
        smallest = math.floor(float(np.log10(positive.min()))) if positive.size else 0
        # Bars grow from two decades below the smallest difference; an exact zero gets its own "0" floor.
        has_zero = bool((data.per_position == 0).any())
        floor = ZERO_FLOOR_LOG10 if has_zero else float(min(smallest, math.floor(tolerance_log)) - 2)
        count = len(data.encodings)
        width = 0.8 / count
        for slot, encoding in enumerate(data.encodings):
            bars = self.permutation_bars.get(encoding)
            if bars is None:
                continue
            values = data.per_position[slot]
            logs = np.where(values > 0, np.log10(np.maximum(values, 1e-300)), floor)
            xs = np.arange(length) - 0.4 + width * (slot + 0.5)
            bars.setOpts(x=xs, y0=np.full(length, floor), height=logs - floor, width=width * 0.95,
                         brush=pg.mkBrush(theme.series_color(slot)), pen=pg.mkPen(None))
        self.noise_line.setValue(tolerance_log)
        # Headroom of two decades above the tallest bar: the one-row legend sits there, over no bar.
        top = max(0.0, math.ceil(float(np.log10(np.maximum(data.per_position.max(), 1e-300))) + 0.5)) + 2
        self.permutation_plot.setYRange(floor, top, padding=0)
        self.permutation_plot.setXRange(-0.6, length - 0.4, padding=0)
        step = 2 if top - floor > 10 else 1
        ticks = [(float(p), f"1e{int(p)}") for p in range(int(floor) + 1, int(top) + 1) if (p - int(top)) % step == 0]
        if has_zero:
            ticks.insert(0, (floor, "0"))
        self.permutation_plot.getAxis("left").setTicks([ticks])
        self.permutation_plot.getAxis("bottom").setTicks([[(float(i), str(i)) for i in range(length)]])
        # A long order would widen the plot past the screen; the order box above shows it anyway.
        shown_order = f", order {' '.join(map(str, order))}" if length <= 10 else f", T = {length}"
        self.permutation_plot.setTitle(f"|attn(shuffled x) - shuffle(attn(x))| per position{shown_order}")
        for slot, encoding in enumerate(data.encodings):
            if slot >= self.permutation_table.rowCount():
                self.permutation_table.setRowCount(slot + 1)
            value = float(data.max_diff[slot])
            blind = bool(data.equivariant[slot])
            meaning = ("order-blind: shuffling the input only shuffles the output (float noise)" if blind
                       else "sees order: the shuffled input gives different outputs")
            for col, text in enumerate((ENCODING_CAPTIONS.get(encoding, encoding), format_difference(value), meaning)):
                item = self.permutation_table.item(slot, col)
                if item is None:
                    item = QTableWidgetItem()
                    self.permutation_table.setItem(slot, col, item)
                item.setText(text)
        # Fonts come from the theme: the application font reaches the table only after this runs.
        self.permutation_table.setFont(theme.font())
        self.permutation_table.horizontalHeader().setFont(theme.font())
        self.permutation_table.resizeColumnsToContents()

    def permutation_figures(self) -> dict[str, float]:
        """Max |difference| per encoding, as shown."""
        data = self._shown_permutation
        if data is None:
            return {}
        return {encoding: float(value) for encoding, value in zip(data.encodings, data.max_diff)}

    # ---- theme, export, session ------------------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()  # also restyles the Heatmap widgets
        self._style_colorbars()
        for plot in self.findChildren(pg.PlotWidget):
            legend = plot.getPlotItem().legend
            if legend is not None:  # curves stay readable where the legend covers them
                legend.setBrush(theme.brush("base", alpha=215))
                legend.setPen(pg.mkPen(None))
        for marker in self.grid_markers:
            marker.setPen(pg.mkPen(theme.color("highlight"), width=max(2.0, theme.current().line_width)))
            marker.setBrush(pg.mkBrush(None))
            marker.setSize(round(10 + 2 * theme.current().line_width))
        pens = (
            (self.trace_rope, "primary"), (self.trace_sinusoidal, "secondary"), (self.row_rope, "primary"),
            (self.row_sinusoidal, "secondary"), (self.offset_rope, "primary"), (self.offset_sinusoidal, "secondary"),
            (self.offset_learned, "tertiary"), (self.q_norm_curve, "primary"), (self.q_arrows, "primary"),
            (self.k_arrows, "secondary"), (self.wavelength_curve, "primary"),
        )
        for curve, role in pens:
            curve.setPen(theme.pen(role))
        self.k_norm_curve.setPen(theme.pen("secondary", style=Qt.PenStyle.DashLine))
        self.wavelength_curve.setSymbolBrush(theme.brush("primary"))
        self.wavelength_curve.setSymbolPen(theme.pen("primary", width=1))
        self.arrow_circles.setPen(theme.pen("grid", width=max(1.0, theme.current().axis_width)))
        for tips, role in ((self.q_tips, "primary"), (self.k_tips, "secondary")):
            tips.setBrush(theme.brush(role))
            tips.setPen(pg.mkPen(None))
            tips.setSize(round(8 + 2 * theme.current().line_width))
        for markers in (self.trace_markers, self.row_markers):
            markers.setPen(theme.pen("text", width=1.5))
            markers.setSize(round(9 + 2 * theme.current().line_width))
        for line in (self.m_line, self.n_line):
            line.setPen(theme.pen(line.role, width=theme.current().line_width + 1, style=Qt.PenStyle.DashLine))
            line.setHoverPen(theme.pen("highlight", width=theme.current().line_width + 3))
        for line in (self.norm_m_line, self.offset_line):
            line.setPen(theme.pen("muted", width=max(1.0, theme.current().axis_width), style=Qt.PenStyle.DashLine))
        dashed = theme.pen("muted", width=max(1.0, theme.current().axis_width), style=Qt.PenStyle.DashLine)
        self.noise_line.setPen(dashed)
        self.noise_line.label.setColor(theme.color("text"))
        self.noise_line.label.setFont(theme.font(0.9))
        for label in self.pair_labels:
            label.setColor(theme.color("text"))
            label.setFont(theme.font(0.85))
        big = theme.font(1.3, bold=True)
        self.rope_score_label.setFont(big)
        self.sinusoidal_score_label.setFont(big)
        # Widths fixed for the widest text a drag can produce, so a drag never re-lays out the page.
        wide = QFontMetrics(big).horizontalAdvance("-000.0000000000 ")
        self.rope_score_label.setFixedWidth(wide)
        self.sinusoidal_score_label.setFixedWidth(wide)
        plain = QFontMetrics(theme.font())
        self.offset_label.setFixedWidth(plain.horizontalAdvance("m - n = -0000   "))
        for caption in (self.m_caption, self.n_caption):
            caption.setFixedWidth(plain.horizontalAdvance("query m = 0000  "))
        self.rope_score_label.setStyleSheet(f"color: {theme.color('primary').name()};")
        self.sinusoidal_score_label.setStyleSheet(f"color: {theme.color('secondary').name()};")
        self.permutation_table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
        if self.permutation_message.isVisible():
            self.permutation_message.setStyleSheet(f"color: {theme.current().warning};")
        if self._shown_permutation is not None:
            self._show_permutation(self._shown_permutation)
        if self._shown_encodings is not None:
            self._redraw_fingerprint()
        if self.scrubber is not None:
            self._layout_arrow_slots(self.scrubber)
        self._redraw_scrubber()

    def _style_colorbars(self) -> None:
        """Colour-bar ticks in the theme's text colour and font, with room for "-0.000" at any font scale."""
        tick_font = theme.font(0.9)
        width = QFontMetrics(tick_font).horizontalAdvance("-0.000") + 20
        for heatmap in self.findChildren(Heatmap):
            axis = heatmap.colorbar.axis
            axis.setPen(pg.mkPen(theme.current().text, width=theme.current().axis_width))
            axis.setTextPen(pg.mkPen(theme.current().text))
            axis.setStyle(tickFont=tick_font)
            axis.setWidth(width)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            (self.title, self),
            ("RoPE scrubber: score at a fixed offset (plot)", self.trace_plot.getPlotItem()),
            ("RoPE scrubber: score against key position (plot)", self.row_plot.getPlotItem()),
            ("RoPE scrubber: rotating pairs (plot)", self.arrow_plot.getPlotItem()),
            ("RoPE scrubber: norms (plot)", self.norm_plot.getPlotItem()),
            ("Score grid: RoPE (heatmap)", self.rope_grid.plot.getPlotItem()),
            ("Score grid: sinusoidal (heatmap)", self.sinusoidal_grid.plot.getPlotItem()),
            ("Score grid: learned (heatmap)", self.learned_grid.plot.getPlotItem()),
            ("Score against offset (plot)", self.offset_plot.getPlotItem()),
            ("Sinusoidal table (heatmap)", self.sinusoid_map.plot.getPlotItem()),
            ("Fingerprint of a position (plot)", self.fingerprint_plot.getPlotItem()),
            ("Sinusoid wavelengths (plot)", self.wavelength_plot.getPlotItem()),
            ("Learned position embeddings (heatmap)", self.learned_map.plot.getPlotItem()),
            ("ALiBi penalty (heatmap)", self.alibi_map.plot.getPlotItem()),
            ("Permutation differences (plot)", self.permutation_plot.getPlotItem()),
            ("Permutation table", self.permutation_table),
        ]

    def _spins(self) -> dict[str, QSpinBox | QDoubleSpinBox]:
        return {
            "seed": self.seed_spin, "d": self.d_spin, "layer": self.layer_spin, "head": self.head_spin,
            "query_token": self.query_token_spin, "key_token": self.key_token_spin, "base": self.base_spin,
            "scale": self.scale_spin, "positions": self.positions_spin, "encoding_d_model": self.encoding_width_spin,
            "fingerprint": self.fingerprint_spin, "alibi_heads": self.alibi_heads_spin,
            "alibi_length": self.alibi_length_spin, "permutation_length": self.permutation_length_spin,
            "permutation_d_model": self.permutation_width_spin, "permutation_seed": self.permutation_seed_spin,
        }

    def settings(self) -> dict[str, Any]:
        data: dict[str, Any] = {key: spin.value() for key, spin in self._spins().items()}
        data.update(
            source="model" if self.source_combo.currentIndex() == 1 else "random",
            m=self.m,
            n=self.n,
            lock_offset=self.lock_check.isChecked(),
            compare_sinusoidal=self.compare_sinusoidal_check.isChecked(),
            permutation=list(self._valid_permutation) if self._valid_permutation is not None else None,
            tab=self.tabs.tabText(self.tabs.currentIndex()),
        )
        return data

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        # The source first: choosing the model source resets base, scale, layer, head and tokens to the
        # model's, and the saved values below must win over those defaults.
        if data.get("source") == "model" and not self.model_rope_problem():
            self.source_combo.setCurrentIndex(1)
        elif data.get("source") == "random":
            self.source_combo.setCurrentIndex(0)
        for key, spin in self._spins().items():
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if isinstance(spin, QSpinBox) and value != int(value):
                    continue
                spin.blockSignals(True)
                spin.setValue(int(value) if isinstance(spin, QSpinBox) else float(value))
                spin.blockSignals(False)
        if isinstance(data.get("lock_offset"), bool):
            self.lock_check.setChecked(data["lock_offset"])
        if isinstance(data.get("compare_sinusoidal"), bool):
            self.compare_sinusoidal_check.setChecked(data["compare_sinusoidal"])
        permutation = data.get("permutation")
        if isinstance(permutation, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in permutation):
            try:
                self._valid_permutation = parse_permutation(" ".join(map(str, permutation)),
                                                            self.permutation_length_spin.value())
            except ValueError:
                self._valid_permutation = None
        tab = data.get("tab")
        if tab in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(tab))
        positions_m, positions_n = data.get("m"), data.get("n")
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (positions_m, positions_n)):
            self.m_slider.setMaximum(max(self.m_slider.maximum(), positions_m, positions_n))
            self.n_slider.setMaximum(self.m_slider.maximum())
            self.set_positions(m=positions_m, n=positions_n, locked=False)
        self.schedule_refresh()


__all__ = ["PositionsPanel", "parse_permutation", "format_difference", "compute_positions", "PositionsRequest"]
