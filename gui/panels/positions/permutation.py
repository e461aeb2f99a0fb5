"""Permutation: |attn(shuffled x) - shuffle(attn(x))| per position for no encoding, sinusoidal, learned
(untrained: exercise 4) and RoPE; float noise means the layer is blind to order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.choices import PERMUTATION_ENCODING_CAPTIONS, PERMUTATION_ENCODINGS
from gui import theme
from gui.panels.base import View
from gui.panels.positions.common import (
    even,
    format_difference,
    hide_stale_text,
    labelled,
    make_plot,
    make_spin,
    plain_label,
)
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.legend import legend_below
from gui.widgets.table_rows import keep_rows_in_view, never_cut_cells

ZERO_FLOOR_LOG10 = -17.0  # where an exactly-zero difference is drawn on the log axis
DEFAULT_PERMUTATION_HINT = "e.g. 3 1 5 0 2 4"
MAX_ORDER_IN_TITLE = 10  # a longer order would widen the plot past the screen; the order box shows it anyway


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


@dataclass(frozen=True)
class PermutationInputs:
    length: int  # tokens T
    d_model: int
    seed: int  # the layer's weights, x and the learned table
    permutation: tuple[int, ...] | None  # None: core's default shuffle for this length


def compute_permutation(inputs: PermutationInputs, token) -> Any:
    from core.experiments import positions

    return positions.permutation_equivariance(None, seed=inputs.seed, T=inputs.length, d_model=inputs.d_model,
                                              perm=inputs.permutation)


class PermutationView(View):
    name = "Permutation"
    compute_fn = staticmethod(compute_permutation)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.valid_permutation: tuple[int, ...] | None = None
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.permutation_length_spin = make_spin(2, 64, 6, "Number of tokens T shuffled")
        self.permutation_width_spin = make_spin(2, 512, 32, "Width d_model of the attention layer", step=2)
        self.permutation_seed_spin = make_spin(0, 2**31 - 1, 0, "Seed of the layer's weights, x and the learned table")
        self.permutation_edit = QLineEdit()
        self.permutation_edit.setObjectName("positions-permutation")
        self.permutation_edit.setPlaceholderText(DEFAULT_PERMUTATION_HINT)
        self.permutation_edit.setToolTip("The shuffle: new position i takes the token from position perm[i]")
        self.permutation_edit.editingFinished.connect(self._permutation_edited)
        self.shuffle_button = QPushButton("New shuffle")
        self.shuffle_button.setToolTip("Draw another random order of the T positions")
        self.shuffle_button.clicked.connect(self._draw_shuffle)
        labelled(row, "T", self.permutation_length_spin)
        labelled(row, "d_model", self.permutation_width_spin)
        labelled(row, "seed", self.permutation_seed_spin)
        self.permutation_edit.setMinimumWidth(QFontMetrics(self.permutation_edit.font()).horizontalAdvance("0" * 28))
        labelled(row, "order", self.permutation_edit)
        row.addWidget(self.shuffle_button)
        self.add_controls(row)
        self.permutation_message = plain_label(name="positions-permutation-message")
        self.permutation_message.setWordWrap(True)
        self.permutation_message.hide()
        column.addWidget(self.permutation_message)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.permutation_plot = make_plot("|attn(shuffled x) - shuffle(attn(x))| per position (log scale)",
                                          "position", "max |difference|")
        self.permutation_plot.setMouseEnabled(x=False, y=False)
        legend_below(self.permutation_plot)
        self.permutation_bars = {}
        for encoding in PERMUTATION_ENCODINGS:
            bars = pg.BarGraphItem(x=[0], height=[0], width=0.2, name=PERMUTATION_ENCODING_CAPTIONS[encoding])
            self.permutation_plot.addItem(bars)
            self.permutation_bars[encoding] = bars
        self.noise_line = pg.InfiniteLine(angle=0, movable=False, label="float noise limit",
                                          labelOpts={"position": 0.95, "anchors": [(1, 1), (1, 1)]})
        self.permutation_plot.addItem(self.noise_line)
        self._decade_range: tuple[float, float, bool] | None = None  # (floor, top, has_zero) of the bars shown
        self.permutation_plot.getViewBox().sigResized.connect(self._place_decade_ticks)
        splitter.addWidget(self.permutation_plot)
        self.permutation_table = QTableWidget(len(PERMUTATION_ENCODINGS), 3)
        never_cut_cells(self.permutation_table)
        self.permutation_table.setObjectName("positions-permutation-table")
        self.permutation_table.setHorizontalHeaderLabels(["encoding", "max |difference|", "what it means"])
        self.permutation_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.permutation_table.verticalHeader().hide()
        self.permutation_table.horizontalHeader().setStretchLastSection(True)
        self.permutation_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for table_row, encoding in enumerate(PERMUTATION_ENCODINGS):
            for col in range(3):
                text = PERMUTATION_ENCODING_CAPTIONS[encoding] if col == 0 else ""
                self.permutation_table.setItem(table_row, col, QTableWidgetItem(text))
        splitter.addWidget(self.permutation_table)
        self.permutation_summary = plain_label(name="positions-permutation-summary")  # the table's verdict in words
        self.permutation_summary.setWordWrap(True)
        self.stale_labels = [self.permutation_summary]
        splitter.setSizes([640, 180])
        column.addWidget(splitter, 1)
        column.addWidget(self.permutation_summary)
        self.permutation_length_spin.valueChanged.connect(self._length_changed)
        for spin in (self.permutation_width_spin, self.permutation_seed_spin):
            spin.valueChanged.connect(self.inputs_changed)

    def spins(self) -> dict[str, QSpinBox]:
        """This view's numeric controls under their session keys."""
        return {"permutation_length": self.permutation_length_spin, "permutation_d_model": self.permutation_width_spin,
                "permutation_seed": self.permutation_seed_spin}

    # ---- inputs --------------------------------------------------------------------------------
    def inputs(self) -> PermutationInputs:
        return PermutationInputs(self.permutation_length_spin.value(), even(self.permutation_width_spin.value()),
                                 self.permutation_seed_spin.value(), self.valid_permutation)

    def set_permutation(self, order: tuple[int, ...] | None) -> None:
        """Take a checked order (or None: core's default shuffle for the length) as the input."""
        self.valid_permutation = order
        self.permutation_message.hide()
        self.permutation_message.setText("")
        self.inputs_changed()

    def _permutation_edited(self) -> None:
        try:
            order = parse_permutation(self.permutation_edit.text(), self.permutation_length_spin.value())
        except ValueError as problem:
            self.permutation_message.setText(f"{problem} The last result stays on screen.")
            self.permutation_message.setStyleSheet(f"color: {theme.current().warning};")
            self.permutation_message.show()
            return
        self.set_permutation(order)

    def _length_changed(self, _length: int) -> None:
        self.set_permutation(None)  # core draws its default shuffle for the new length

    def _draw_shuffle(self) -> None:
        length = self.permutation_length_spin.value()
        generator = np.random.default_rng()
        order = generator.permutation(length)
        while length > 1 and (order == np.arange(length)).all():  # the identity would test nothing
            order = generator.permutation(length)
        self.permutation_edit.setText(" ".join(str(int(i)) for i in order))
        self._permutation_edited()

    def on_stale(self) -> None:
        for table_row in range(self.permutation_table.rowCount()):
            for col in (1, 2):
                item = self.permutation_table.item(table_row, col)
                if item is not None:
                    item.setText("")
        if self.valid_permutation is None and self.permutation_message.isHidden():
            self.permutation_edit.clear()  # the default order for the new inputs is not known yet

    # ---- showing -------------------------------------------------------------------------------
    def show_result(self, data) -> None:
        order = tuple(int(i) for i in data.permutation)
        if self.permutation_message.isHidden():
            self.permutation_edit.setText(" ".join(map(str, order)))
        length = len(order)
        tolerance_log = math.log10(data.noise_tolerance)
        positive = data.per_position[data.per_position > 0]
        smallest = math.floor(float(np.log10(positive.min()))) if positive.size else 0
        # Bars grow from two decades below the smallest difference; an exact zero gets its own "0" floor.
        has_zero = bool((data.per_position == 0).any())
        floor = ZERO_FLOOR_LOG10 if has_zero else float(min(smallest, math.floor(tolerance_log)) - 2)
        width = 0.8 / len(data.encodings)
        for slot, encoding in enumerate(data.encodings):
            bars = self.permutation_bars.get(encoding)
            if bars is None:
                continue
            values = data.per_position[slot]  # (T,)
            logs = np.where(values > 0, np.log10(np.maximum(values, 1e-300)), floor)  # (T,)
            xs = np.arange(length) - 0.4 + width * (slot + 0.5)  # (T,)
            bars.setOpts(x=xs, y0=np.full(length, floor), height=logs - floor, width=width * 0.95,
                         brush=pg.mkBrush(theme.series_color(slot)), pen=pg.mkPen(None))
        self.noise_line.setValue(tolerance_log)
        # Headroom of two decades above the tallest bar: the one-row legend sits there, over no bar.
        top = max(0.0, math.ceil(float(np.log10(np.maximum(data.per_position.max(), 1e-300))) + 0.5)) + 2
        self.permutation_plot.setYRange(floor, top, padding=0)
        self.permutation_plot.setXRange(-0.6, length - 0.4, padding=0)
        self._decade_range = (floor, top, has_zero)
        self._place_decade_ticks()
        self.permutation_plot.getAxis("bottom").setTicks([[(float(i), str(i)) for i in range(length)]])
        in_title = length <= MAX_ORDER_IN_TITLE
        shown_order = f", order {' '.join(map(str, order))}" if in_title else f", T = {length}"
        self.permutation_plot.setTitle(f"|attn(shuffled x) - shuffle(attn(x))| per position{shown_order}")
        for slot, encoding in enumerate(data.encodings):
            if slot >= self.permutation_table.rowCount():
                self.permutation_table.setRowCount(slot + 1)
                keep_rows_in_view(self.permutation_table, slot + 1)
            blind = bool(data.equivariant[slot])
            meaning = ("order-blind: shuffling the input only shuffles the output (float noise)" if blind
                       else "sees order: the shuffled input gives different outputs")
            caption = PERMUTATION_ENCODING_CAPTIONS.get(encoding, encoding)
            texts = (caption, format_difference(float(data.max_diff[slot])), meaning)
            for col, text in enumerate(texts):
                item = self.permutation_table.item(slot, col)
                if item is None:
                    item = QTableWidgetItem()
                    self.permutation_table.setItem(slot, col, item)
                item.setText(text)
        self.permutation_summary.setText(permutation_summary(data))
        # Fonts come from the theme: the application font reaches the table only after this runs.
        self.permutation_table.setFont(theme.font())
        self.permutation_table.horizontalHeader().setFont(theme.font())
        self.permutation_table.resizeColumnsToContents()

    def _place_decade_ticks(self) -> None:
        """Every decade labelled where the plot is tall enough, else every 2nd, 3rd ...: no label dropped."""
        if self._decade_range is None:
            return
        floor, top, has_zero = self._decade_range
        decades = max(1, int(top) - int(floor))
        label_px = QFontMetrics(theme.font(0.9)).height() * 1.4  # a label and the gap pyqtgraph wants beside it
        height_px = max(1.0, self.permutation_plot.getViewBox().height())
        step = max(1, math.ceil(decades * label_px / height_px))
        ticks = [(float(p), f"1e{int(p)}") for p in range(int(floor) + 1, int(top) + 1) if (p - int(top)) % step == 0]
        if has_zero:
            ticks.insert(0, (floor, "0"))
        self.permutation_plot.getAxis("left").setTicks([ticks])

    def figures(self) -> dict[str, float]:
        """Max |difference| per encoding, as shown (nothing while stale)."""
        data = None if self.is_stale else self.result
        if data is None:
            return {}
        return {encoding: float(value) for encoding, value in zip(data.encodings, data.max_diff)}

    def apply_theme(self) -> None:
        dashed = theme.pen("muted", width=max(1.0, theme.current().axis_width), style=Qt.PenStyle.DashLine)
        self.noise_line.setPen(dashed)
        self.noise_line.label.setColor(theme.color("text"))
        self.noise_line.label.setFont(theme.font(0.9))
        self.permutation_table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
        keep_rows_in_view(self.permutation_table, self.permutation_table.rowCount())  # every encoding's row: the lesson compares them
        if not self.permutation_message.isHidden():
            self.permutation_message.setStyleSheet(f"color: {theme.current().warning};")
        super().apply_theme()  # shows the result again: bars in the new series colours
        hide_stale_text(self)
        legend = self.permutation_plot.getPlotItem().legend
        legend.setBrush(theme.brush("base", alpha=215))
        legend.setPen(pg.mkPen(None))

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Permutation differences (plot)", self.permutation_plot.getPlotItem()),
                ("Permutation table", self.permutation_table)]


def permutation_summary(data) -> str:
    """Each encoding's largest difference against the float-noise limit, and how far the added sinusoids lift it."""
    parts = []
    for encoding, value, blind in zip(data.encodings, data.max_diff, data.equivariant):
        verdict = "within float noise" if blind else "above float noise"
        parts.append(f"{PERMUTATION_ENCODING_CAPTIONS.get(encoding, encoding)}: {format_difference(float(value))} ({verdict})")
    text = f"Largest difference, float-noise limit {format_difference(float(data.noise_tolerance))}: " + "; ".join(parts) + "."
    by_name = dict(zip(data.encodings, (float(v) for v in data.max_diff)))
    if by_name.get("none", 0.0) > 0.0 and by_name.get("sinusoidal", 0.0) > 0.0:
        decades = math.log10(by_name["sinusoidal"] / by_name["none"])
        text += f" Adding sinusoids lifts it {decades:.1f} orders of magnitude above no encoding."
    elif by_name.get("none") == 0.0 and by_name.get("sinusoidal", 0.0) > 0.0:
        text += " Without an encoding the difference is exactly 0.0."
    return text
