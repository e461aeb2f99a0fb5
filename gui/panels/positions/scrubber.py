"""RoPE scrubber: drag the query position m and the key position n; the score R(m)q . R(n)k follows the drag.

"Lock offset" moves both together: the RoPE trace against m is flat, the additive sinusoidal one on
the same q and k drifts (the reading's 12.03 -> 8.25 -> 7.08 at offset 2). Each (even, odd) pair is
drawn as a rotating arrow, and ||R(m)q|| against m shows rotations keep lengths (exercise 5).

Why a drag never calls torch: the core scrubber functions are sub-millisecond but do their rotations
with torch ops, and torch belongs to the worker. So the worker computes every score the handles can
reach at once (the full (P, P) grids, the rotated pairs at every position, the norms), and a drag
only indexes those arrays; the source, base, scale or P changing is a new computation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QCheckBox, QGraphicsItem, QLabel, QSlider, QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.positions.common import (
    PairCache,
    PositionsControls,
    QueryKeySource,
    ScrubPosition,
    diagonal_trace,
    format_difference,
    format_wavelength,
    hide_stale_text,
    make_plot,
    plain_label,
    style_legends,
)
from gui.widgets.flow_layout import FlowLayout, control_group, wrapping_group
from gui.widgets.legend import legend_below

MAX_ARROW_PAIRS = 8  # more circles than this are unreadable at projector scale
ARROW_PLOT_LINES = 8  # title, legend, circles of two lines' height, labels of two lines


@dataclass(frozen=True)
class ScrubberInputs:
    source: QueryKeySource
    base: float
    scale: float
    n_positions: int  # positions 0..P-1 the handles reach
    pairs: PairCache = field(compare=False, repr=False)


@dataclass(frozen=True)
class ScrubberData:
    """Everything the handles can reach: a drag only indexes these arrays."""

    q: np.ndarray  # (d,) content vectors, before rotation
    k: np.ndarray  # (d,)
    label: str
    base: float
    scale: float
    positions: np.ndarray  # (P,)
    rope: np.ndarray  # (P, P) R(m)q . R(n)k
    sinusoidal: np.ndarray  # (P, P) (q + PE[m]) . (k + PE[n])
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


def compute_scrubber(inputs: ScrubberInputs, token) -> ScrubberData:
    from core.experiments import positions

    pair = inputs.pairs.pair(inputs.source)
    token.check()
    base, scale = inputs.base, inputs.scale
    index = np.arange(inputs.n_positions)  # (P,)
    rope = positions.rope_score_grid(pair.q, pair.k, index, base, scale)
    d = pair.q.shape[0]
    table = positions.sinusoidal_pe_table(inputs.n_positions, d, base)  # (P, d)
    sinusoidal = positions.additive_score_grid(pair.q, pair.k, table)
    token.check()
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
        rotated_q=np.stack([arrows.rotated for arrows in q_arrows]),  # (P, d/2, 2)
        rotated_k=np.stack([arrows.rotated for arrows in k_arrows]),  # (P, d/2, 2)
        wavelengths=q_arrows[0].wavelengths,
        q_norms=q_norms.norms,
        k_norms=k_norms.norms,
        q_norm=q_norms.original_norm,
        k_norm=k_norms.original_norm,
        q_norm_drift=float(np.abs(q_norms.norms - q_norms.original_norm).max()),
        k_norm_drift=float(np.abs(k_norms.norms - k_norms.original_norm).max()),
        longest_pair=float(max(np.hypot(*q_arrows[0].original.T).max(), np.hypot(*k_arrows[0].original.T).max())),
    )


def _circle_outlines(centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    angle = np.linspace(0, 2 * np.pi, 65)
    xs = (centres[:, None] + np.cos(angle)[None, :])
    ys = np.broadcast_to(np.sin(angle), xs.shape)
    gap = np.full((centres.shape[0], 1), np.nan)  # NaN breaks the line between circles
    return np.hstack([xs, gap]).ravel(), np.hstack([ys, gap]).ravel()


@dataclass(frozen=True)
class ArrowLayout:
    slots: int  # how many circles
    spacing: float  # between circle centres, in data units (a circle's radius is 1)
    y_range: tuple[float, float]  # what the view must show: the legend above, the labels below
    label_y: float  # where the labels hang from


CIRCLE_GAP = 2.6  # centre to centre at the least: circles of radius 1 with room between them
LABEL_ROOM = 1.1  # a label's width and a tenth between neighbours


def arrow_layout(width_px: float, height_px: float, label_px: float, labels_px: float, legend_px: float,
                 n_pairs: int) -> ArrowLayout:
    """Circles and labels that fit a plot of width_px x height_px: labels (label_px wide, labels_px high)
    side by side under their circles, the legend (legend_px high) above. The view is aspect-locked, so a
    short plot sets the scale: the circles then move apart instead of their labels running into each other."""
    slots = int(min(MAX_ARROW_PAIRS, n_pairs, max(2, width_px // (LABEL_ROOM * label_px))))
    slots = max(1, slots)
    text_px = labels_px + legend_px
    top, label_y, bottom_gap = 1.1, -1.15, 0.05  # in data units: the circle's top and the labels' hanging point
    circles_units = top - label_y + bottom_gap  # the view's height less the legend's and the labels' pixels
    per_unit = max((height_px - text_px) / circles_units, 1.0)  # px per data unit: the labels are never cut
    spacing = max(CIRCLE_GAP, LABEL_ROOM * label_px / per_unit)
    width_units = spacing * (slots - 1) + CIRCLE_GAP
    per_unit = min(per_unit, max(width_px, 1.0) / width_units)
    return ArrowLayout(slots, spacing, (label_y - labels_px / per_unit - bottom_gap, top + legend_px / per_unit), label_y)


class ScrubberView(View):
    name = "RoPE scrubber"
    reads = frozenset({"model", "tokens"})
    compute_fn = staticmethod(compute_scrubber)

    def __init__(self, state, compute, controls: PositionsControls, position: ScrubPosition,
                 channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.position = position
        self.pairs = PairCache()
        self._syncing = False
        self._drawn_offset: int | None = None
        self._drawn_trace_source: ScrubberData | None = None
        self._arrow_pairs = np.arange(0)
        self._arrow_centres = np.arange(0, dtype=float)
        self._arrow_unit = 1.0
        self._arrow_shape: ArrowLayout | None = None
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        column.addLayout(self._build_sliders())
        column.addWidget(self._build_plots(), 1)
        # Below the splitters, which give a wrapped label no more height than one line's: here it has its lines.
        column.addWidget(self.norm_label)
        self._cache_static_items()
        self.stale_labels = [self.rope_score_label, self.sinusoidal_score_label, self.norm_label]
        controls.changed.connect(self.inputs_changed)
        controls.positions_spin.valueChanged.connect(self._positions_range_changed)
        position.moved.connect(self._position_moved)
        self._positions_range_changed()

    # ---- construction ----------------------------------------------------------------------------
    def _build_sliders(self) -> QVBoxLayout:
        self.m_slider = QSlider(Qt.Orientation.Horizontal)
        self.m_slider.setObjectName("positions-m")
        self.n_slider = QSlider(Qt.Orientation.Horizontal)
        self.n_slider.setObjectName("positions-n")
        for slider, tip in ((self.m_slider, "query position m"), (self.n_slider, "key position n")):
            slider.setToolTip(f"Drag the {tip}")
            slider.setRange(0, self.position.last)
        self.m_slider.setValue(self.position.m)
        self.n_slider.setValue(self.position.n)
        self.m_slider.valueChanged.connect(lambda value: self._handle_moved("m", value))
        self.n_slider.valueChanged.connect(lambda value: self._handle_moved("n", value))
        self.m_caption, self.n_caption = plain_label(), plain_label()
        self.lock_check = QCheckBox("lock offset m - n")
        self.lock_check.setObjectName("positions-lock")
        self.lock_check.setToolTip("Move m and n together: the offset stays fixed, and so does the RoPE score")
        self.lock_check.toggled.connect(lambda _on: self._update_titles())
        self.rope_caption = QLabel("RoPE R(m)q·R(n)k =")
        self.rope_caption.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.rope_score_label = plain_label(name="positions-rope-score")
        self.rope_score_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A checkbox, not a label: trained q and k are short next to the sinusoids (|PE| ~ sqrt(d/2)),
        # and hiding the additive curves lets the y axis fit the RoPE scores alone.
        self.compare_sinusoidal_check = QCheckBox("sinusoidal (q+PE[m])·(k+PE[n]) =")
        self.compare_sinusoidal_check.setObjectName("positions-compare-sinusoidal")
        self.compare_sinusoidal_check.setChecked(True)
        self.compare_sinusoidal_check.setToolTip("Also draw the additive sinusoidal encoding on the same q and k")
        self.compare_sinusoidal_check.toggled.connect(self._comparison_toggled)
        self.sinusoidal_score_label = plain_label(name="positions-sinusoidal-score")
        self.sinusoidal_score_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.offset_label = plain_label(name="positions-offset")
        # The sliders take a row of their own; the scores follow in groups that wrap onto a second
        # row only where the text scale needs it, so the panel is never wider than its widest group.
        handles = FlowLayout()
        for caption, slider in ((self.m_caption, self.m_slider), (self.n_caption, self.n_slider)):
            handles.addWidget(control_group(caption, slider, grow=True))  # one row where it fits, else one each
        scores = FlowLayout(spacing=18)
        # A score stays beside its formula where the row has room, and goes below it where it has not.
        for pair in ((self.rope_caption, self.rope_score_label), (self.compare_sinusoidal_check, self.sinusoidal_score_label)):
            scores.addWidget(wrapping_group(*pair))
        for single in (self.offset_label, self.lock_check):
            scores.addWidget(control_group(single))
        sliders = QVBoxLayout()
        sliders.setSpacing(2)
        sliders.addLayout(handles)
        sliders.addLayout(scores)
        self._update_captions()
        return sliders

    @staticmethod
    def _movable_line(plot: pg.PlotWidget, role: str) -> pg.InfiniteLine:
        line = pg.InfiniteLine(angle=90, movable=True)
        line.setZValue(20)
        line.setToolTip("Drag to move this position")
        plot.addItem(line)
        line.role = role  # which theme colour restyles it
        return line

    def _build_plots(self) -> QSplitter:
        self.trace_plot = make_plot("Score against m at a fixed offset m - n", "query position m", "score")
        legend_below(self.trace_plot)
        self.trace_rope = self.trace_plot.plot([], [], name="RoPE")
        self.trace_sinusoidal = self.trace_plot.plot([], [], name="sinusoidal (added)")
        self.trace_markers = pg.ScatterPlotItem(size=12)
        self.trace_plot.addItem(self.trace_markers)
        self.m_line = self._movable_line(self.trace_plot, "primary")
        self.m_line.sigPositionChanged.connect(lambda line: self._line_moved("m", line))
        self.m_line.sigPositionChangeFinished.connect(lambda _line: self._sync_handles())

        self.row_plot = make_plot("Score against key position n, query at m", "key position n", "score")
        self.row_rope = self.row_plot.plot([], [])
        self.row_sinusoidal = self.row_plot.plot([], [])
        self.row_markers = pg.ScatterPlotItem(size=12)
        self.row_plot.addItem(self.row_markers)
        self.n_line = self._movable_line(self.row_plot, "secondary")
        self.n_line.sigPositionChanged.connect(lambda line: self._line_moved("n", line))
        self.n_line.sigPositionChangeFinished.connect(lambda _line: self._sync_handles())

        # Its legend, circles and two-line labels need more than a curve's plot: ARROW_PLOT_LINES of height.
        self.arrow_plot = make_plot("Each (even, odd) pair rotates: q at m, k at n", "", "", min_lines=ARROW_PLOT_LINES)
        self.arrow_plot.showGrid(x=False, y=False)
        self.arrow_plot.setAspectLocked(True)
        self.arrow_plot.setMouseEnabled(x=False, y=False)
        self.arrow_plot.hideAxis("bottom")
        self.arrow_plot.hideAxis("left")
        self.arrow_plot.getViewBox().sigResized.connect(self._arrow_plot_resized)
        legend_below(self.arrow_plot)
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

        self.norm_plot = make_plot("Rotation keeps lengths: ‖R(m)q‖ against m", "position", "length")
        legend_below(self.norm_plot)
        self.q_norm_curve = self.norm_plot.plot([], [], name="‖R(m) q‖")
        self.k_norm_curve = self.norm_plot.plot([], [], name="‖R(n) k‖")
        self.norm_m_line = pg.InfiniteLine(angle=90, movable=False)
        self.norm_plot.addItem(self.norm_m_line)
        self.norm_label = plain_label(name="positions-norm-readout")
        self.norm_label.setWordWrap(True)

        # Splitters keep the four plots at equal shares whatever their size hints (and let a lecturer resize them).
        top, bottom = QSplitter(Qt.Orientation.Horizontal), QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.trace_plot)
        top.addWidget(self.row_plot)
        bottom.addWidget(self.arrow_plot)
        bottom.addWidget(self.norm_plot)
        plots = QSplitter(Qt.Orientation.Vertical)
        plots.addWidget(top)
        plots.addWidget(bottom)
        for splitter in (top, bottom, plots):
            splitter.setChildrenCollapsible(False)
            splitter.setSizes([500, 500])
        return plots

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
        for curve in (self.trace_rope, self.trace_sinusoidal, self.row_rope, self.row_sinusoidal):
            curve.curve.setSegmentedLineMode("on")

    # ---- inputs and result -----------------------------------------------------------------------
    def inputs(self) -> ScrubberInputs | Refusal | None:
        source = self.controls.source(self.state)
        if isinstance(source, Refusal):
            return source
        return ScrubberInputs(source, self.controls.base, self.controls.scale, self.controls.n_positions, self.pairs)

    def show_result(self, data: ScrubberData) -> None:
        last = int(data.positions[-1])
        for plot in (self.trace_plot, self.row_plot, self.norm_plot):
            plot.setXRange(0, last, padding=0.02)
        self._fit_score_axes()
        self.q_norm_curve.setData(data.positions, data.q_norms)
        self.k_norm_curve.setData(data.positions, data.k_norms)
        biggest = max(data.q_norm, data.k_norm)
        self.norm_plot.setYRange(0, biggest * 1.15, padding=0)
        self.norm_label.setText(
            f"‖q‖ = {data.q_norm:.10f}, ‖k‖ = {data.k_norm:.10f}; largest change over m = 0..{last}: "
            f"{format_difference(data.q_norm_drift)} and {format_difference(data.k_norm_drift)} "
            "(rotations keep lengths)"
        )
        self._drawn_trace_source = None
        self._layout_arrow_slots(data)
        self.redraw()

    @property
    def data(self) -> ScrubberData | None:
        """The shown result, while it is current (None while stale or refused)."""
        return None if self.is_stale else self.result

    def _fit_score_axes(self) -> None:
        """Fixed y ranges per result (a drag must not make the axes jump), fitting the curves shown."""
        data = self.result
        if data is None:
            return
        compared = self.compare_sinusoidal_check.isChecked()
        shown = np.concatenate([data.rope.ravel(), data.sinusoidal.ravel()]) if compared else data.rope
        low, high = float(shown.min()), float(shown.max())
        pad = 0.05 * (high - low or 1.0)
        for plot in (self.trace_plot, self.row_plot):
            plot.setYRange(low - pad, high + pad, padding=0)

    def _comparison_toggled(self, compared: bool) -> None:
        for item in (self.trace_sinusoidal, self.row_sinusoidal):
            item.setVisible(compared)
        self._fit_score_axes()
        self.redraw()

    # ---- rotating pairs ----------------------------------------------------------------------------
    def _arrow_layout(self, data: ScrubberData) -> ArrowLayout:
        """What fits the arrow plot now, at the current font size (at most MAX_ARROW_PAIRS circles)."""
        text = self.pair_labels[0].textItem  # the labels' own font and margins, whatever set them
        metrics = QFontMetrics(text.font())
        margin = text.document().documentMargin()
        widest = max(data.wavelengths.shape[0] * 2 - 1, 1)
        label_px = metrics.horizontalAdvance(f"dims {widest - 1}-{widest}") + 2 * margin
        view = self.arrow_plot.getViewBox().geometry()
        labels_px = 2 * metrics.lineSpacing() + 2 * margin
        return arrow_layout(view.width(), view.height(), label_px, labels_px, 0.0,  # the legend is below the view
                            data.wavelengths.shape[0])

    def _arrow_plot_resized(self) -> None:
        data = self.result
        if data is None:
            return
        if self._arrow_layout(data) != self._arrow_shape:
            self._layout_arrow_slots(data)
            self.redraw()

    def _layout_arrow_slots(self, data: ScrubberData) -> None:
        n_pairs = data.wavelengths.shape[0]
        shape = self._arrow_shape = self._arrow_layout(data)
        if n_pairs <= shape.slots:
            self._arrow_pairs = np.arange(n_pairs)
        else:  # fast, middle and slow pairs: the spread of frequencies is the point
            self._arrow_pairs = np.unique(np.round(np.linspace(0, n_pairs - 1, shape.slots)).astype(int))
        self._arrow_centres = np.arange(self._arrow_pairs.shape[0]) * shape.spacing
        self._arrow_unit = 1.0 / max(data.longest_pair, 1e-12)  # the longest pair reaches the circle
        circle_x, circle_y = _circle_outlines(self._arrow_centres)
        self.arrow_circles.setData(circle_x, circle_y, connect="finite")
        for slot, label in enumerate(self.pair_labels):
            if slot < self._arrow_pairs.shape[0]:
                pair = int(self._arrow_pairs[slot])
                label.setText(f"dims {2 * pair}-{2 * pair + 1}\nλ {format_wavelength(data.wavelengths[pair])}")
                label.setPos(float(self._arrow_centres[slot]), shape.label_y)
                label.show()
            else:
                label.hide()
        right = float(self._arrow_centres[-1]) + CIRCLE_GAP / 2
        self.arrow_plot.setRange(xRange=(-CIRCLE_GAP / 2, right), yRange=shape.y_range, padding=0)

    # ---- dragging ------------------------------------------------------------------------------------
    def _handle_moved(self, which: str, value: int) -> None:
        if self._syncing:
            return
        self.position.set(**{which: value}, locked=self.lock_check.isChecked())
        self._sync_handles()  # a locked offset may have stopped the handle short of where it was dragged

    def _line_moved(self, which: str, line: pg.InfiniteLine) -> None:
        if self._syncing:
            return
        self.position.set(**{which: int(round(line.value()))}, locked=self.lock_check.isChecked())

    def _positions_range_changed(self, *_args) -> None:
        last = self.position.last
        self._syncing = True
        try:
            for slider in (self.m_slider, self.n_slider):
                slider.setMaximum(last)
            for line in (self.m_line, self.n_line):
                line.setBounds((0, last))
        finally:
            self._syncing = False
        self._sync_handles()

    def _position_moved(self) -> None:
        self._sync_handles()
        self.redraw()

    def _sync_handles(self) -> None:
        m, n = self.position.m, self.position.n
        self._syncing = True
        try:
            for slider, value in ((self.m_slider, m), (self.n_slider, n)):
                if slider.value() != value:
                    slider.setValue(value)
            for line, value in ((self.m_line, m), (self.n_line, n)):
                if line.value() != value and not line.moving:
                    line.setValue(value)
        finally:
            self._syncing = False
        self._update_captions()

    def _update_captions(self) -> None:
        m, n = self.position.m, self.position.n
        self.m_caption.setText(f"query m = {m}")
        self.n_caption.setText(f"key n = {n}")
        self.offset_label.setText(f"m - n = {m - n}")

    def shown_scores(self) -> tuple[float, float]:
        """(RoPE, sinusoidal) score at the current m, n, as displayed."""
        data = self.result
        m, n = self.position.m, self.position.n
        return float(data.rope[m, n]), float(data.sinusoidal[m, n])

    def locked_traces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(m, RoPE, sinusoidal) of the trace currently drawn for offset m - n."""
        xs, rope = self.trace_rope.getData()
        _, sinusoidal = self.trace_sinusoidal.getData()
        return xs, rope, sinusoidal

    def redraw(self) -> None:
        """Update what a drag changes by indexing the shown arrays: nothing while stale, no plots while hidden."""
        data = self.data
        if data is None:
            return
        m, n = self.position.m, self.position.n
        if max(m, n) >= len(data.positions):
            return  # positions beyond the shown result: the pending one redraws
        rope_score, sinusoidal_score = self.shown_scores()
        self.rope_score_label.setText(f"{rope_score:.10f}")
        self.sinusoidal_score_label.setText(f"{sinusoidal_score:.10f}")
        if not self.isVisible():
            return  # hidden plots would cost a third of a frame; showEvent draws them
        if self._drawn_offset != m - n or self._drawn_trace_source is not data:
            xs, rope = diagonal_trace(data.rope, m - n)
            _, sinusoidal = diagonal_trace(data.sinusoidal, m - n)
            self.trace_rope.setData(xs, rope)
            self.trace_sinusoidal.setData(xs, sinusoidal)
            self._drawn_offset, self._drawn_trace_source = m - n, data
            self._update_titles()  # in the same update as the trace it names, never after it
        marked = 2 if self.compare_sinusoidal_check.isChecked() else 1
        brushes = [theme.brush("primary"), theme.brush("secondary")][:marked]
        self.trace_markers.setData([m, m][:marked], [rope_score, sinusoidal_score][:marked], brush=brushes)
        self.row_rope.setData(data.positions, data.rope[m])
        self.row_sinusoidal.setData(data.positions, data.sinusoidal[m])
        self.row_markers.setData([n, n][:marked], [rope_score, sinusoidal_score][:marked], brush=brushes)
        self.norm_m_line.setValue(m)
        pairs, centres = self._arrow_pairs, self._arrow_centres
        for vectors, curve, tips in ((data.rotated_q[m], self.q_arrows, self.q_tips),
                                     (data.rotated_k[n], self.k_arrows, self.k_tips)):
            tip_x = centres + vectors[pairs, 0] * self._arrow_unit  # (S,)
            tip_y = vectors[pairs, 1] * self._arrow_unit  # (S,)
            segment_x = np.column_stack([centres, tip_x]).ravel()  # (2S,)
            segment_y = np.column_stack([np.zeros_like(tip_y), tip_y]).ravel()  # (2S,)
            curve.setData(segment_x, segment_y)
            tips.setData(tip_x, tip_y)

    def _update_titles(self) -> None:
        lock = " (locked)" if self.lock_check.isChecked() else ""
        self.trace_plot.setTitle(f"Score against m at offset m - n = {self.position.m - self.position.n}{lock}")

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self._sync_handles()  # the grids may have moved m and n while this was hidden
        self.redraw()

    # ---- theme, export -----------------------------------------------------------------------------
    def apply_theme(self) -> None:
        palette = theme.current()
        for curve, role in ((self.trace_rope, "primary"), (self.trace_sinusoidal, "secondary"),
                            (self.row_rope, "primary"), (self.row_sinusoidal, "secondary"),
                            (self.q_norm_curve, "primary"), (self.q_arrows, "primary"), (self.k_arrows, "secondary")):
            curve.setPen(theme.pen(role))
        self.k_norm_curve.setPen(theme.pen("secondary", style=Qt.PenStyle.DashLine))
        self.arrow_circles.setPen(theme.pen("grid", width=max(1.0, palette.axis_width)))
        for tips, role in ((self.q_tips, "primary"), (self.k_tips, "secondary")):
            tips.setBrush(theme.brush(role))
            tips.setPen(pg.mkPen(None))
            tips.setSize(round(8 + 2 * palette.line_width))
        for markers in (self.trace_markers, self.row_markers):
            markers.setPen(theme.pen("text", width=1.5))
            markers.setSize(round(9 + 2 * palette.line_width))
        for line in (self.m_line, self.n_line):
            line.setPen(theme.pen(line.role, width=palette.line_width + 1, style=Qt.PenStyle.DashLine))
            line.setHoverPen(theme.pen("highlight", width=palette.line_width + 3))
        self.norm_m_line.setPen(theme.pen("muted", width=max(1.0, palette.axis_width), style=Qt.PenStyle.DashLine))
        for label in self.pair_labels:
            label.setColor(theme.color("text"))
            label.setFont(theme.font(0.85))
        if self.result is not None:  # the labels' new size moves the circles apart or closer
            self._layout_arrow_slots(self.result)
        big = theme.font(1.3, bold=True)
        # Widths fixed for the widest text a drag can produce, so a drag never re-lays out the page.
        wide = QFontMetrics(big).horizontalAdvance("-000.0000000000 ")
        for label, role in ((self.rope_score_label, "primary"), (self.sinusoidal_score_label, "secondary")):
            label.setFont(big)
            label.setFixedWidth(wide)
            label.setStyleSheet(f"color: {theme.color(role).name()};")
        plain = QFontMetrics(theme.font())
        self.set_label_minimum_height(self.norm_label, 2 * plain.lineSpacing())  # its two lines: the plots keep their place
        self.offset_label.setFixedWidth(plain.horizontalAdvance("m - n = -0000   "))
        for caption in (self.m_caption, self.n_caption):
            caption.setFixedWidth(plain.horizontalAdvance("query m = 0000  "))
        super().apply_theme()  # restyles the plots, then shows the result again in the new pens
        hide_stale_text(self)
        style_legends(self)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            ("RoPE scrubber: score at a fixed offset (plot)", self.trace_plot.getPlotItem()),
            ("RoPE scrubber: score against key position (plot)", self.row_plot.getPlotItem()),
            ("RoPE scrubber: rotating pairs (plot)", self.arrow_plot.getPlotItem()),
            ("RoPE scrubber: norms (plot)", self.norm_plot.getPlotItem()),
        ]
