"""Score grids: the (m, n) grid for RoPE, additive sinusoidal and learned (random, untrained) encodings,
and the score against the offset m - n for all three: RoPE is constant along each diagonal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.positions.common import (
    EXACT_FORMAT,
    PairCache,
    PositionsControls,
    QueryKeySource,
    ScrubPosition,
    cache_static_parts,
    hide_stale_text,
    make_plot,
    plain_label,
    style_colorbars,
    style_legends,
)
from gui.widgets.heatmap import Heatmap
from gui.widgets.legend import legend_below


@dataclass(frozen=True)
class GridsInputs:
    source: QueryKeySource
    base: float
    scale: float
    n_positions: int
    pairs: PairCache = field(compare=False, repr=False)


@dataclass(frozen=True)
class GridsData:
    label: str  # where q and k came from
    base: float
    scale: float
    positions: np.ndarray  # (P,)
    rope: np.ndarray  # (P, P) R(m)q . R(n)k
    sinusoidal: np.ndarray  # (P, P) (q + PE[m]) . (k + PE[n])
    learned: np.ndarray  # (P, P) the same with a random (untrained) learned table


def compute_grids(inputs: GridsInputs, token) -> GridsData:
    from core.experiments import positions

    pair = inputs.pairs.pair(inputs.source)
    token.check()
    count = inputs.n_positions
    index = np.arange(count)  # (P,)
    d = pair.q.shape[0]
    rope = positions.rope_score_grid(pair.q, pair.k, index, inputs.base, inputs.scale)
    sinusoidal = positions.additive_score_grid(pair.q, pair.k, positions.sinusoidal_pe_table(count, d, inputs.base))
    learned_table = positions.random_learned_table(count, d, seed=inputs.source.seed)  # (P, d)
    learned = positions.additive_score_grid(pair.q, pair.k, learned_table)
    return GridsData(label=pair.label, base=inputs.base, scale=inputs.scale, positions=index, rope=rope.scores,
                     sinusoidal=sinusoidal.scores, learned=learned.scores)


class GridsView(View):
    name = "Score grids"
    reads = frozenset({"model", "tokens"})
    compute_fn = staticmethod(compute_grids)

    def __init__(self, state, compute, controls: PositionsControls, position: ScrubPosition,
                 channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.position = position
        self.pairs = PairCache()
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        self.grids_note = plain_label("RoPE is constant along each diagonal (one offset m - n); the additive "
                                      "encodings are not. Click a cell to move m and n there.")
        self.grids_note.setWordWrap(True)
        column.addWidget(self.grids_note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        grids = QSplitter(Qt.Orientation.Horizontal)
        self.rope_grid = Heatmap("key n", "query m", "RoPE", value_format=EXACT_FORMAT)
        self.sinusoidal_grid = Heatmap("key n", "query m", "sinusoidal (added)", value_format=EXACT_FORMAT)
        self.learned_grid = Heatmap("key n", "query m", "learned (random, untrained)", value_format=EXACT_FORMAT)
        self.grid_markers = []
        for heatmap in self.score_grids():
            heatmap.clicked.connect(lambda row, col: self.position.set(m=row, n=col))
            cache_static_parts(heatmap.plot)
            marker = pg.ScatterPlotItem(size=14, symbol="s")
            marker.setZValue(10)
            heatmap.plot.addItem(marker)
            self.grid_markers.append(marker)
            grids.addWidget(heatmap)
        # Small multiples share their rows (query m): only the first map labels them, which leaves the
        # others' titles room to wrap between words beside a lesson at projector scale.
        for heatmap in self.score_grids()[1:]:
            heatmap.plot.hideAxis("left")
        for index, share in enumerate((5, 4, 4)):  # the first map's share carries its axis: the three images match
            grids.setStretchFactor(index, share)
        grids.setSizes([500, 400, 400])
        splitter.addWidget(grids)
        self.offset_plot = make_plot("Score against offset m - n (query at m, every key n)", "offset m - n", "score")
        legend_below(self.offset_plot)
        self.offset_rope = self.offset_plot.plot([], [], name="RoPE")
        self.offset_sinusoidal = self.offset_plot.plot([], [], name="sinusoidal")
        self.offset_learned = self.offset_plot.plot([], [], name="learned (random)")
        for curve in (self.offset_rope, self.offset_sinusoidal, self.offset_learned):
            curve.curve.setSegmentedLineMode("on")  # redrawn on every move; see the scrubber
        self.offset_line = pg.InfiniteLine(angle=90, movable=False)
        self.offset_plot.addItem(self.offset_line)
        splitter.addWidget(self.offset_plot)
        splitter.setSizes([560, 340])
        column.addWidget(splitter, 1)
        controls.changed.connect(self.inputs_changed)
        position.moved.connect(self.redraw)

    def score_grids(self) -> tuple[Heatmap, Heatmap, Heatmap]:
        return self.rope_grid, self.sinusoidal_grid, self.learned_grid

    def inputs(self) -> GridsInputs | Refusal | None:
        source = self.controls.source(self.state)
        if isinstance(source, Refusal):
            return source
        return GridsInputs(source, self.controls.base, self.controls.scale, self.controls.n_positions, self.pairs)

    def show_result(self, data: GridsData) -> None:
        last = int(data.positions[-1])
        labels = [str(int(p)) for p in data.positions]
        for heatmap, grid in zip(self.score_grids(), (data.rope, data.sinusoidal, data.learned)):
            heatmap.set_data(grid, row_labels=labels, col_labels=labels)
        self.rope_grid.plot.setTitle(f"RoPE (base {data.base:g}, scale {data.scale:g})")
        every = np.concatenate([data.rope.ravel(), data.sinusoidal.ravel(), data.learned.ravel()])
        spread = float(every.max() - every.min()) or 1.0
        self.offset_plot.setXRange(-last, last, padding=0.02)
        self.offset_plot.setYRange(float(every.min()) - 0.05 * spread, float(every.max()) + 0.2 * spread, padding=0)
        self.redraw()

    def refresh_hover(self) -> None:
        for heatmap in self.score_grids():
            heatmap.refresh_hover()

    def redraw(self) -> None:
        """The markers and the offset curves at the current m, n: indexing only, on screen only."""
        data = None if self.is_stale else self.result
        if data is None or not self.isVisible():
            return
        m, n = self.position.m, self.position.n
        if max(m, n) >= len(data.positions):
            return
        for marker in self.grid_markers:
            marker.setData([n + 0.5], [m + 0.5])
        offsets = m - data.positions  # (P,)
        self.offset_rope.setData(offsets, data.rope[m])
        self.offset_sinusoidal.setData(offsets, data.sinusoidal[m])
        self.offset_learned.setData(offsets, data.learned[m])
        self.offset_line.setValue(m - n)
        self._update_titles()  # in the same update as the plots it names, never after them

    def _update_titles(self) -> None:
        self.offset_plot.setTitle(f"Score against offset m - n, query at m = {self.position.m} (every key n)")

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.redraw()  # the scrubber may have moved m and n while this was hidden

    def apply_theme(self) -> None:
        palette = theme.current()
        for marker in self.grid_markers:
            marker.setPen(pg.mkPen(theme.color("highlight"), width=max(2.0, palette.line_width)))
            marker.setBrush(pg.mkBrush(None))
            marker.setSize(round(10 + 2 * palette.line_width))
        for curve, role in ((self.offset_rope, "primary"), (self.offset_sinusoidal, "secondary"),
                            (self.offset_learned, "tertiary")):
            curve.setPen(theme.pen(role))
        self.offset_line.setPen(theme.pen("muted", width=max(1.0, palette.axis_width), style=Qt.PenStyle.DashLine))
        super().apply_theme()
        hide_stale_text(self)
        style_legends(self)
        style_colorbars(self)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            ("Score grid: RoPE (heatmap)", self.rope_grid.plot.getPlotItem()),
            ("Score grid: sinusoidal (heatmap)", self.sinusoidal_grid.plot.getPlotItem()),
            ("Score grid: learned (heatmap)", self.learned_grid.plot.getPlotItem()),
            ("Score against offset (plot)", self.offset_plot.getPlotItem()),
        ]
