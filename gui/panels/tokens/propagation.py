"""Propagation: edit a token and see, per layer and position, how far the residual stream moved.

"Unchanged" is only ever what `torch.equal` measured: those cells are hatched and read "0 (exact)";
a tiny leak such as 3.1e-08 is a number on a log colour scale, never rounded away. The inputs name
the edit itself (the chip edit that made the tokens, carried by `LabState.token_edit`); after a new
text, an insert or a delete, two sequences of different lengths cannot be compared position by
position, so the view measures a probe edit of one token at the same place and says so.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.tokens.common import TokensControls, hatch_overlay, log_ticks, overlay_cell_px
from gui.panels.common import caption, format_change, sequence_refusal, set_title
from gui.widgets.heatmap import Heatmap

SOURCE_CHOICES = ((False, "the unedited text in both runs (the decoder's mask alone)"),
                  (True, "each run's own text (the edit reaches the encoder too)"))
MAX_BAR_LABELS = 32  # value labels on the per-position bars up to this many positions
MIN_PLOT_LINES = 7  # the map and the bars keep room for a title, an axis and a few rows of ticks


class ResidualRunCache:
    """The last residual runs the worker made (core ResidualRun), so an edit runs only the edited sequence.

    Touched on the worker thread only; it rides along in the inputs (outside their equality)
    because the inputs are what the worker gets. A run is reused only when it `matches` the model,
    weights, ids, mask and depth now; a run of an older model simply ages out.
    """

    def __init__(self, size: int = 2) -> None:
        self._size = size
        self._runs: list = []

    def find(self, model, ids: tuple[int, ...], mask_mode: str, n_blocks: int):
        """A kept run that is exactly what the model computes now for these ids and settings, or None."""
        source = list(ids) if model.config.architecture == "encoder-decoder" else None
        return next((run for run in reversed(self._runs) if run.matches(model, ids, mask_mode, n_blocks, source)), None)

    def keep(self, *runs) -> None:
        for run in runs:
            if run is not None:
                self._runs = [kept for kept in self._runs if kept is not run][-(self._size - 1):] + [run]

    def clear(self) -> None:
        self._runs = []


@dataclass(frozen=True)
class PropagationInputs:
    model: Any
    tokenizer: Any
    base: tuple[int, ...]  # the sequence before the edit
    position: int  # the edited position t
    new_token: int
    measured_edit: bool  # True: the user's own edit; False: a probe after an insert, delete or new text
    mask_mode: str
    n_blocks: int
    runs: ResidualRunCache = field(compare=False, repr=False)
    edited_before: bool = True  # False: no edit of the sequence yet, the probe is the first computation
    edit_source: bool = False  # an encoder-decoder's encoder reads each run's own tokens (else the unedited ones)


def compute_propagation(inputs: PropagationInputs, token) -> Any:
    """Worker: the causal edit diff, running only the edited sequence when the unedited one was kept.

    Both runs are batches of one through the same code path, so "bitwise unchanged" means what it
    says; no panel shows the logits change, so the runs stop at the final norm.
    """
    from core.experiments.causal_edit import causal_edit_diff, residual_run

    reference = inputs.runs.find(inputs.model, inputs.base, inputs.mask_mode, inputs.n_blocks)
    if reference is None:
        reference = residual_run(inputs.model, list(inputs.base), mask_mode=inputs.mask_mode,
                                        n_blocks=inputs.n_blocks)
        token.check()
    diff = causal_edit_diff(inputs.model, list(inputs.base), inputs.position, inputs.new_token,
                            mask_mode=inputs.mask_mode, n_blocks=inputs.n_blocks, tokenizer_or_labels=inputs.tokenizer,
                            reference=reference, with_logits=False, edit_source=inputs.edit_source)
    inputs.runs.keep(diff.original_run, diff.edited_run)
    # The runs' tensors stay on the worker; the GUI thread gets the numbers only.
    diff = dataclasses.replace(diff, original_run=None, edited_run=None)
    return diff


class PropagationView(View):
    name = "Propagation"
    reads = frozenset({"model", "tokens", "tokenizer"})

    compute_fn = staticmethod(compute_propagation)
    probe_shown = Signal(int)  # the edited position of the result now on screen

    def __init__(self, state, compute, controls: TokensControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.runs = ResidualRunCache()
        self._bar_row: int | None = None  # the propagation row shown as bars (None: the last)
        self._bar_labels: list[pg.TextItem] = []
        self._bar_decades = (-8, 0)
        self._overlay_generation = 0
        self._overlay_key: tuple | None = None
        self.values = np.zeros((1, 1))  # the max_change the map shows, in float64
        self.exact = np.zeros((1, 1), dtype=bool)
        self.nan = np.zeros((1, 1), dtype=bool)
        controls.changed.connect(self.inputs_changed)

        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        self.source_combo = QComboBox()
        self.source_combo.setObjectName("tokens-propagation-source")
        for edit_source, text in SOURCE_CHOICES:
            self.source_combo.addItem(text, edit_source)
        self.source_combo.setToolTip("An encoder-decoder's encoder reads the text too: keep its source unedited to see "
                                     "the decoder's mask alone, or let each run's encoder read its own tokens")
        self.source_caption = QLabel("Encoder reads")
        self.source_caption.setBuddy(self.source_combo)
        source_row = QHBoxLayout()
        source_row.addWidget(self.source_caption)
        source_row.addWidget(self.source_combo)
        source_row.addStretch(1)
        layout.addLayout(source_row)
        self.source_combo.currentIndexChanged.connect(self.inputs_changed)
        state.model_changed.connect(self._show_source_choice)
        self._show_source_choice()
        self.verdict = caption("", rich=True)
        self.verdict.setObjectName("tokens-verdict")
        layout.addWidget(self.verdict)
        self.note = caption("")
        self.note.setObjectName("tokens-propagation-note")
        layout.addWidget(self.note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.map = Heatmap(x_label="position (original tokens)", y_label="stream after",
                           title="max |change| per layer and position (log scale)")
        self.map.plot.setMouseEnabled(x=False, y=False)
        self.map.plot.setAntialiasing(False)  # axis-aligned cells and bars: smoothing only costs time
        self.overlay = pg.ImageItem(axisOrder="row-major")
        self.overlay.setZValue(5)
        self.map.plot.addItem(self.overlay)
        self.map.plot.getViewBox().sigResized.connect(self._draw_overlay)
        self.edit_column = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.edit_column.setZValue(8)
        self.bar_row_outline = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.bar_row_outline.setZValue(9)
        self.map.plot.addItem(self.edit_column)
        # Where the positions past the model's trained length begin (shown only when the input reaches them).
        self.trained_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(theme.current().warning, width=2,
                                                                   style=Qt.PenStyle.DashLine))
        self.trained_line.setZValue(10)
        self.trained_line.hide()
        self.map.plot.addItem(self.trained_line)
        self.map.plot.addItem(self.bar_row_outline)
        self.map.hovered.connect(self._map_hovered)
        self.map.clicked.connect(lambda row, _col: self.set_bar_row(row))
        splitter.addWidget(self.map)

        bars_page = pg.QtWidgets.QWidget()
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
        self.bar_legend = QLabel("○ exactly 0.0 (torch.equal)   × NaN   "
                                 "bars: before the edit / the edit / after it")
        self.bar_legend.setWordWrap(True)  # at a large text scale the key takes two lines, not the panel's width
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
        self._bar_scene_pos = None
        self.bar_readout = QLabel(" ")
        self.bar_readout.setTextFormat(Qt.TextFormat.PlainText)
        bars_layout.addWidget(self.bar_plot, 1)
        bars_layout.addWidget(self.bar_readout)
        splitter.addWidget(bars_page)
        splitter.setSizes([300, 260])
        layout.addWidget(splitter, 1)
        self.bar_row_combo.currentIndexChanged.connect(lambda index: self.set_bar_row(index) if index >= 0 else None)
        self.readouts = [self.map.readout, self.bar_readout]
        self.stale_labels = [self.verdict, self.note]

    def _show_source_choice(self) -> None:
        """The encoder's source is a choice only for a model that has an encoder beside its token stream."""
        model = self.state.model
        pair = model is not None and model.config.architecture == "encoder-decoder"
        self.source_combo.setVisible(pair)
        self.source_caption.setVisible(pair)

    # ---- inputs --------------------------------------------------------------------------------
    def inputs(self) -> PropagationInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        edit = self.state.token_edit
        vocab = model.config.vocab_size
        if edit is not None and edit.kind == "replace" and len(edit.before) == len(tokens) \
                and 0 <= edit.position < len(tokens) and max(edit.before) < vocab:
            base, position, new_token, measured = edit.before, edit.position, tokens[edit.position], True
        else:
            # A probe: one token replaced where the last edit happened (or where the last probe was).
            shown = self.shown_inputs
            if edit is not None:
                position = edit.position
            elif shown is not None:
                position = shown.position
            else:
                position = len(tokens) // 2
            position = min(max(0, position), len(tokens) - 1)
            new_token = shown.new_token if shown is not None and shown.new_token < vocab else tokens[position] + 1
            if new_token == tokens[position]:
                new_token = tokens[position] + 1
            base, new_token, measured = tuple(tokens), new_token % vocab, False
        pair = model.config.architecture == "encoder-decoder"
        return PropagationInputs(model, self.state.tokenizer, tuple(base), position, int(new_token), measured,
                                 self.controls.mask_mode, self.controls.n_blocks(model), self.runs,
                                 edited_before=edit is not None, edit_source=pair and self.source_combo.currentData())

    # ---- showing -------------------------------------------------------------------------------
    def show_result(self, diff) -> None:
        values, exact, nan = diff.max_change, diff.exactly_unchanged, diff.nan_entries
        self.values, self.exact, self.nan = values, exact, nan
        positive = values[np.isfinite(values) & (values > 0)]
        low = math.floor(math.log10(positive.min())) if positive.size else -8
        high = math.ceil(math.log10(positive.max())) if positive.size else 0
        high = max(high, low + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            colour = np.where(values > 0, np.log10(np.where(values > 0, values, 1.0)), np.nan)
        # A no-break space: the heatmap shows plain spaces as the space-token glyph.
        row_labels = [label.replace(" ", "\u00a0") for label in diff.layer_labels]
        self.map.set_data(colour, row_labels=row_labels, col_labels=diff.token_labels, levels=(float(low), float(high)))
        self.map.colorbar.axis.setTicks([log_ticks(low, high)])
        rows, cols = values.shape
        self._overlay_generation += 1
        self._draw_overlay()
        self.edit_column.setRect(QRectF(diff.edit_position, 0, 1, rows))
        trained = self.shown_inputs.model.config.context_length if self.shown_inputs is not None else cols
        self.trained_line.setPos(trained)
        self.trained_line.setVisible(cols > trained)
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
        self._show_verdict(diff)
        self.probe_shown.emit(diff.edit_position)

    def refresh_hover(self) -> None:
        self.map.refresh_hover()
        if self._bar_scene_pos is not None and self.bar_plot.underMouse():
            self._bars_hovered(self._bar_scene_pos)

    def _draw_overlay(self) -> None:
        """The hatch image, redrawn when the map is resized so its stripes keep their screen spacing."""
        if self.result is None:
            return
        rows, cols = self.exact.shape
        view = self.map.plot.getViewBox()
        cell_px = overlay_cell_px(view.width(), view.height(), rows, cols)
        key = (self._overlay_generation, cell_px, theme.current().name)
        if self._overlay_key == key:
            return
        self._overlay_key = key
        self.overlay.setImage(hatch_overlay(self.exact, self.nan, cell_px), autoLevels=False)
        self.overlay.setRect(QRectF(0, 0, cols, rows))

    def _show_verdict(self, diff) -> None:
        palette = theme.current()
        inputs = self.shown_inputs
        t = diff.edit_position
        old, new = html.escape(diff.token_labels[t]), html.escape(diff.edited_token_labels[t])
        what = "Edit" if inputs.measured_edit else "Probe edit"
        edit = (f"{what} at position {t}: '{old}' → '{new}', mask <b>{html.escape(diff.mask_mode)}</b>, "
                f"{diff.n_layers} block(s). ")
        if t == 0:
            verdict, colour = "No past to protect at position 0.", palette.text
        elif diff.past_exactly_unchanged:
            verdict = f"✔ positions 0–{t - 1} are bitwise unchanged (torch.equal) in every layer."
            colour = palette.role_color("tertiary")
        elif diff.leaks_into_past and diff.source_edited:
            first = html.escape(diff.layer_labels[diff.first_leaking_layer])
            verdict = (f"Positions before {t} move from <b>{first}</b> on through cross-attention: the encoder read the "
                       "edited text, and the decoder reads all of it.")
            colour = palette.text
        elif diff.leaks_into_past and diff.bidirectional:
            first = html.escape(diff.layer_labels[diff.first_leaking_layer])
            verdict = (f"Every position can move: positions before {t} change from <b>{first}</b> on, as expected for "
                       "a bidirectional model (no causal mask).")
            colour = palette.text
        elif diff.leaks_into_past:
            first = html.escape(diff.layer_labels[diff.first_leaking_layer])
            verdict, colour = f"✘ the past moves: positions before {t} change from <b>{first}</b> on.", palette.warning
        else:
            verdict, colour = "The past did not move, apart from NaN both runs share.", palette.warning
        nan_text = ""
        if diff.nan_entries.any():
            count = int(diff.nan_entries.sum())
            nan_text = f" <span style='color:{palette.warning}'>NaN in {count} cells (cross-hatched).</span>"
        self.verdict.setText(f"{edit}<span style='color:{colour}'><b>{verdict}</b></span>{nan_text}")
        probe_note = ""
        if not inputs.measured_edit and not inputs.edited_before:
            probe_note = ("Nothing has been edited yet, so this compares the sequence with one token replaced. "
                          "Replace a chip to measure your own edit. ")
        elif not inputs.measured_edit:
            probe_note = ("The sequence changed length or was retyped, so this compares it with one token replaced. "
                          "Replace a chip to measure your own edit. ")
        self.note.setText(probe_note + diff.note + "  Hatched cells: exactly 0.0 (torch.equal).")

    def set_bar_row(self, row: int) -> None:
        if self.result is None or row < 0 or row >= self.values.shape[0]:
            return
        self._bar_row = row
        if self.bar_row_combo.currentIndex() != row:
            self.bar_row_combo.blockSignals(True)
            self.bar_row_combo.setCurrentIndex(row)
            self.bar_row_combo.blockSignals(False)
        self._show_bars(row)
        self.refresh_hover()

    def _show_bars(self, row: int) -> None:
        diff = self.result
        values, exact, nan = self.values[row], self.exact[row], self.nan[row]
        count = len(values)
        positions = np.arange(count, dtype=float)
        moved = (values > 0) & ~nan
        positive = self.values[np.isfinite(self.values) & (self.values > 0)]
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
        set_title(self.bar_plot, f"{diff.layer_labels[row]}: max |change| per position")
        self._update_bar_labels(values, exact, nan, floor)
        self._update_bar_ticks()
        self.bar_row_outline.setRect(QRectF(0, row, count, 1))

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
            label.setText(format_change(value, bool(exact[index])), color=theme.color("text"))
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
        diff = self.result
        if diff is None:
            return
        self._fit_bar_range()
        floor, top = self._bar_decades
        line = QFontMetrics(theme.font(0.9)).height()
        room = max(1, int(self.bar_plot.getViewBox().height() // (line * 1.2)))
        self.bar_plot.getAxis("left").setTicks([log_ticks(floor, top, room)])
        labels = diff.token_labels
        metrics = QFontMetrics(theme.font(0.9))
        widest = max(metrics.height(), max(metrics.horizontalAdvance(f"{i} {s}") for i, s in enumerate(labels)) + 6)
        room = max(1, int(self.bar_plot.getViewBox().width() // widest))
        step = max(1, math.ceil(len(labels) / room))
        ticks = [(float(i), f"{i} {s}") for i, s in enumerate(labels) if i % step == 0]
        self.bar_plot.getAxis("bottom").setTicks([ticks])

    def _map_hovered(self, row: int, col: int, _value: float) -> None:
        diff = self.result
        if diff is None or self.is_stale or row >= self.values.shape[0] or col >= self.values.shape[1]:
            self.map.readout.setText(" ")
            return
        text = format_change(float(self.values[row, col]), bool(self.exact[row, col]))
        if self.nan[row, col]:
            text += " (NaN in a run: fully masked row)"
        self.map.readout.setText(
            f"{diff.layer_labels[row]}, position {col} '{diff.token_labels[col]}': max |change| = {text}")

    def _bars_hovered(self, scene_pos) -> None:
        self._bar_scene_pos = scene_pos
        diff = self.result
        if diff is None or self.is_stale:
            self.bar_readout.setText(" ")
            return
        index = int(round(self.bar_plot.getViewBox().mapSceneToView(scene_pos).x()))
        row = self._bar_row if self._bar_row is not None and self._bar_row < self.values.shape[0] else -1
        if 0 <= index < self.values.shape[1]:
            value = float(self.values[row, index])
            self.bar_readout.setText(f"position {index} '{diff.token_labels[index]}': "
                                     f"{format_change(value, bool(self.exact[row, index]))}")
        else:
            self.bar_readout.setText(" ")

    def apply_theme(self) -> None:
        self.edit_column.setPen(theme.pen("secondary", width=max(2.0, theme.current().line_width * 0.75)))
        self.edit_column.setBrush(pg.mkBrush(None))
        self.bar_row_outline.setPen(theme.pen("text", width=1.5, style=Qt.PenStyle.DashLine))
        self.trained_line.setPen(pg.mkPen(theme.current().warning, width=2, style=Qt.PenStyle.DashLine))
        self.verdict.setFont(theme.font(1.05))
        # A plot squeezed under its own axis text shows nothing: below this the panel scrolls instead.
        line = QFontMetrics(theme.font()).lineSpacing()
        self.map.setMinimumHeight(MIN_PLOT_LINES * line)
        self.bar_plot.setMinimumHeight(MIN_PLOT_LINES * line)
        self._overlay_key = None
        super().apply_theme()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Propagation: max |change| map", self.map.plot.getPlotItem()),
                ("Propagation: bars for one layer", self.bar_plot.getPlotItem())]

    @property
    def bar_row(self) -> int | None:
        return self._bar_row

    def restore_bar_row(self, row: int | None) -> None:
        self._bar_row = row
        if self.result is not None and row is not None:
            self.set_bar_row(row)
