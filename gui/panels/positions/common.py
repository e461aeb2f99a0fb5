"""What the Positions views share: the q/k source controls, the scrubbed positions m and n, formats, plots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from core.choices import POSITIONAL_DISPLAY_NAMES
from gui import theme
from gui.panels.base import Refusal
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.heatmap import Heatmap
from gui.widgets.log_axis import log_ready_axes
from gui.widgets.plot_titles import MIN_PLOT_LINES, wrap_title

SOURCE_RANDOM = "random q, k (seeded)"
SOURCE_MODEL = "from the current model"
EXACT_FORMAT = "{:.7g}"  # heatmaps hold float32: seven significant digits are all there is
DEFAULT_POSITIONS = 128


# ---- formats ---------------------------------------------------------------------------------------
def format_difference(value: float) -> str:
    """Float noise must read as noise (1.2e-07), never as a rounded 0; only an exact zero says 0."""
    return "0 (exactly)" if value == 0.0 else f"{value:.2e}"


def format_wavelength(positions: float) -> str:
    """6.28, 62.8, 628, 6,283: whole positions once they are long, never 6.28e+03 for a student to decode."""
    return f"{positions:.3g}" if positions < 1000 else f"{positions:,.0f}"


def positional_name(kind: str) -> str:
    return POSITIONAL_DISPLAY_NAMES.get(kind, kind)


def diagonal_trace(grid: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(query positions m, grid[m, m - offset]) along one diagonal of a (P, P) grid."""
    values = np.diagonal(grid, offset=-offset)
    start = max(offset, 0)
    return np.arange(start, start + values.shape[0]), values


def even(value: int) -> int:
    """RoPE and sinusoids pair dimensions: a typed odd width means the even one below it."""
    return value - value % 2


# ---- plots and controls ----------------------------------------------------------------------------
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


def make_plot(title: str, bottom: str, left: str, min_lines: int = MIN_PLOT_LINES) -> pg.PlotWidget:
    plot = pg.PlotWidget(axisItems=log_ready_axes())
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setTitle(title)
    plot.setLabel("bottom", bottom)
    plot.setLabel("left", left)
    plot.showGrid(x=True, y=True, alpha=0.25)
    cache_static_parts(plot)
    return wrap_title(plot, min_lines)


def make_spin(low: int, high: int, value: int, tip: str, step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setValue(value)
    spin.setToolTip(tip)
    spin.setKeyboardTracking(False)
    return spin


def labelled(row: QHBoxLayout | FlowLayout, text: str, widget: QWidget) -> QLabel:
    caption = QLabel(text)
    caption.setBuddy(widget)
    caption.setToolTip(widget.toolTip())
    if isinstance(row, FlowLayout):
        row.addWidget(control_group(caption, widget))  # a caption never wraps away from its control
    else:
        row.addWidget(caption)
        row.addWidget(widget)
    return caption


def style_legends(root: QWidget) -> None:
    for plot in root.findChildren(pg.PlotWidget):
        legend = plot.getPlotItem().legend
        if legend is not None:  # curves stay readable where the legend covers them
            legend.setBrush(theme.brush("base", alpha=215))
            legend.setPen(pg.mkPen(None))


def style_colorbars(root: QWidget) -> None:
    """Colour-bar ticks in the theme's text colour and font, with room for "-0.000" at any font scale."""
    tick_font = theme.font(0.9)
    width = QFontMetrics(tick_font).horizontalAdvance("-0.000") + 20
    palette = theme.current()
    for heatmap in root.findChildren(Heatmap):
        axis = heatmap.colorbar.axis
        axis.setPen(pg.mkPen(palette.text, width=palette.axis_width))
        axis.setTextPen(pg.mkPen(palette.text))
        axis.setStyle(tickFont=tick_font)
        axis.setWidth(width)


# ---- where q and k come from -------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryKeySource:
    """Everything that picks the (q, k) pair: a seeded random pair, or one head of a RoPE model."""

    from_model: bool
    seed: int = 0  # random pair only
    d: int = 0
    model: Any = None  # model pair only (compared by identity: a new model is a new source)
    tokens: tuple[int, ...] = ()
    layer: int = 0
    head: int = 0
    query_token: int = 0
    key_token: int = 0


class PairCache:
    """The last (source, pair) a view's worker made: a base or scale edit does not rerun the model.

    Owned by one view and passed in its inputs outside their equality; touched on the worker only.
    """

    def __init__(self) -> None:
        self._source: QueryKeySource | None = None
        self._pair = None

    def pair(self, source: QueryKeySource):
        if self._source != source or self._pair is None:
            self._pair = query_key_pair(source)
            self._source = source
        return self._pair


def query_key_pair(source: QueryKeySource):
    """The content vectors for a source (worker thread: torch)."""
    from core.experiments import positions

    if not source.from_model:
        return positions.seeded_qk(source.seed, source.d)
    import torch

    model = source.model
    device = next(model.parameters()).device
    tokens = torch.tensor(source.tokens, device=device)  # (T,)
    return positions.model_qk(model, tokens, source.layer, source.head, source.query_token, source.key_token)


def model_rope_problem(model, tokens) -> str:
    """Why q and k cannot come from this model and text, or "" when they can."""
    if model is None:
        return "No model is loaded yet."
    config = model.config
    if config.positional != "rope":
        return (f"{config.name} uses {positional_name(config.positional)} positions, not RoPE; load a RoPE model "
                "(the tiny-llama preset) to take q and k from it.")
    if not tokens:
        return "The input text has no tokens."
    if max(tokens[: config.context_length]) >= config.vocab_size:
        return f"Token id {max(tokens)} is outside {config.name}'s vocabulary of {config.vocab_size}."
    return ""


class PositionsControls(QObject):
    """The panel's shared controls: q/k source, seed, d, layer/head/tokens, base, scale and positions P.

    `changed` fires when any of them does; the views read them through `source()` and the properties.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.source_combo = QComboBox()
        self.source_combo.setObjectName("positions-source")
        self.source_combo.addItems([SOURCE_RANDOM, SOURCE_MODEL])
        self.source_combo.setToolTip("Where q and k come from: the reading's random pair, or a trained head")
        self.seed_spin = make_spin(0, 2**31 - 1, 0, "Seed of the random q, k (0 with d 8 is the reading's pair)")
        self.d_spin = make_spin(2, 256, 8, "Width d of q and k (even: RoPE rotates pairs)", step=2)
        self.layer_spin = make_spin(0, 0, 0, "Layer whose q and k are taken")
        self.head_spin = make_spin(0, 0, 0, "Query head (its key comes from the key/value head serving it)")
        self.query_token_spin = make_spin(0, 0, 0, "Token whose query vector q is taken (its position in the text)")
        self.key_token_spin = make_spin(0, 0, 0, "Token whose key vector k is taken")
        self.base_spin = QDoubleSpinBox()
        self.base_spin.setRange(2.0, 1e8)
        self.base_spin.setDecimals(0)
        self.base_spin.setValue(10000.0)
        self.base_spin.setSingleStep(1000.0)
        self.base_spin.setKeyboardTracking(False)
        self.base_spin.setToolTip(
            "RoPE base: pair i turns base^(-2i/d) radians per position (also the sinusoids' base)")
        self.scale_spin = QDoubleSpinBox()
        self.scale_spin.setRange(0.25, 64.0)
        self.scale_spin.setDecimals(2)
        self.scale_spin.setSingleStep(0.5)
        self.scale_spin.setValue(1.0)
        self.scale_spin.setKeyboardTracking(False)
        self.scale_spin.setToolTip("Position interpolation: positions are divided by this factor before rotating, "
                                   "so a longer context maps into the trained angle range (\"stretching the context\")")
        self.positions_spin = make_spin(8, 512, DEFAULT_POSITIONS, "Positions 0..P-1 the scrubber and the grids cover")
        self.source_combo.currentIndexChanged.connect(self.changed)
        for spin in self.spins().values():
            spin.valueChanged.connect(self.changed)

    def spins(self) -> dict[str, QSpinBox | QDoubleSpinBox]:
        """The numeric controls under their session keys."""
        return {
            "seed": self.seed_spin, "d": self.d_spin, "layer": self.layer_spin, "head": self.head_spin,
            "query_token": self.query_token_spin, "key_token": self.key_token_spin, "base": self.base_spin,
            "scale": self.scale_spin, "positions": self.positions_spin,
        }

    @property
    def from_model(self) -> bool:
        return self.source_combo.currentIndex() == 1

    @property
    def base(self) -> float:
        return float(self.base_spin.value())

    @property
    def scale(self) -> float:
        return float(self.scale_spin.value())

    @property
    def n_positions(self) -> int:
        return self.positions_spin.value()

    def source(self, state) -> QueryKeySource | Refusal:
        """The (q, k) source the controls pick, for the state's model and tokens; a Refusal if it cannot be used."""
        if not self.from_model:
            return QueryKeySource(False, seed=self.seed_spin.value(), d=even(self.d_spin.value()))
        model, tokens = state.model, state.tokens
        problem = model_rope_problem(model, tokens)
        if problem:
            return Refusal(f"{problem} Or choose the random q, k above.")
        tokens = tuple(tokens[: model.config.context_length])
        last = len(tokens) - 1
        config = model.config
        return QueryKeySource(True, model=model, tokens=tokens, layer=min(self.layer_spin.value(), config.n_layers - 1),
                              head=min(self.head_spin.value(), config.n_heads - 1),
                              query_token=min(self.query_token_spin.value(), last),
                              key_token=min(self.key_token_spin.value(), last))


class ScrubPosition(QObject):
    """The query position m and key position n the scrubber and the grids point at.

    Not an input of any computation: every score they can reach is computed at once, and moving
    them only indexes those arrays. `moved` fires when either changes.
    """

    moved = Signal()

    def __init__(self, controls: PositionsControls, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._controls = controls
        self.m = 3  # the reading's first pair: m = 3, n = 1
        self.n = 1
        controls.positions_spin.valueChanged.connect(lambda _value: self.set())

    @property
    def last(self) -> int:
        return self._controls.n_positions - 1

    def set(self, m: int | None = None, n: int | None = None, locked: bool = False) -> None:
        """Move m and/or n (clamped to 0..P-1); locked, moving one moves the other by the same amount."""
        last = self.last
        new_m = self.m if m is None else int(m)
        new_n = self.n if n is None else int(n)
        if locked and (m is None) != (n is None):
            offset = self.m - self.n
            if m is not None:
                new_m = min(max(new_m, max(0, offset)), last + min(0, offset))
                new_n = new_m - offset
            else:
                new_n = min(max(new_n, max(0, -offset)), last - max(0, offset))
                new_m = new_n + offset
        new_m, new_n = min(max(new_m, 0), last), min(max(new_n, 0), last)
        if (new_m, new_n) != (self.m, self.n):
            self.m, self.n = new_m, new_n
            self.moved.emit()


def hide_stale_text(view) -> None:
    """After a re-style while stale (the base shows the old result again in the new style), hide its numbers again."""
    if not view.is_stale:
        return
    for label in view.readouts:
        label.setText(" ")
    for label in view.stale_labels:
        label.setText("")
    view.on_stale()


def plain_label(text: str = "", name: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if name:
        label.setObjectName(name)
    return label
