"""One head, worked by hand: q, every k, q.k, the scale, the mask, the softmax and weights . v for one query,
beside the model's own head output and the verdict that they are equal."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHeaderView,
    QLabel,
    QSpinBox,
    QSplitter,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.experiments.worked_head_text import (TOP_KEYS, head_text, key_cells, key_headers, key_rows, keys_caption,
                                             tolerance_text, vector_cells, vector_headers, vectors_caption)
from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.tokens.common import TokensControls, sync_layer_head_spins
from gui.panels.common import caption, sequence_refusal
from gui.widgets.flow_layout import FlowLayout, control_group

MIN_ROWS = 5  # rows each table keeps in view
RESIZE_ROWS = 64  # rows a column's width is measured on: the numbers' widths vary little, 1,024 rows add nothing
LAST_TOKEN = -1  # the query spin's special value: follow the last token as the text changes
# The steps a student may leave out, as the combo names them; which are offered depends on the model.
OMIT_CHOICES: tuple[tuple[str, str], ...] = (
    ("", "nothing"),
    ("scale", "the 1/\u221ad_head scale"),
    ("mask", "the mask"),
    ("rope", "the RoPE rotation"),
    ("alibi", "the ALiBi penalty"),
)


@dataclass(frozen=True)
class WorkedHeadInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]
    layer: int
    head: int
    query: int
    mask_mode: str
    omit: str  # "" or one of core.experiments.worked_head.OMITTABLE_STEPS


def compute_worked_head(inputs: WorkedHeadInputs, token) -> Any:
    from core.experiments.worked_head import worked_head

    return worked_head(inputs.model, list(inputs.tokens), inputs.layer, inputs.head, inputs.query,
                       mask_mode=inputs.mask_mode, omit=(inputs.omit,) if inputs.omit else (),
                       tokenizer_or_labels=inputs.tokenizer)


class NumberTable(QAbstractTableModel):
    """Rows of plain-text cells; one column may carry a bar (a fraction of the cell's width) under its text."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.headers: list[str] = []
        self.row_headers: list[str] = []
        self.cells: list[list[str]] = []
        self.bars: dict[int, list[float]] = {}  # column -> fraction 0..1 per row
        self.muted_rows: set[int] = set()

    def set_rows(self, headers: list[str], row_headers: list[str], cells: list[list[str]],
                 bars: dict[int, list[float]] | None = None, muted_rows: set[int] | None = None) -> None:
        self.beginResetModel()
        self.headers, self.row_headers, self.cells = headers, row_headers, cells
        self.bars, self.muted_rows = bars or {}, muted_rows or set()
        self.endResetModel()

    def clear(self) -> None:
        self.set_rows(self.headers, [], [])

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.cells)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.headers)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.cells[index.row()][index.column()]
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and index.row() in self.muted_rows:
            return QColor(theme.current().muted)
        if role == Qt.ItemDataRole.UserRole:
            return self.bars.get(index.column(), [None] * len(self.cells))[index.row()]
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.headers[section] if section < len(self.headers) else None
        return self.row_headers[section] if section < len(self.row_headers) else None


class BarDelegate(QStyledItemDelegate):
    """Draws a cell's bar (UserRole, 0..1) in the theme's accent colour behind its number."""

    def paint(self, painter, option, index) -> None:
        fraction = index.data(Qt.ItemDataRole.UserRole)
        if isinstance(fraction, float) and fraction > 0:
            color = QColor(theme.current().accent)
            color.setAlpha(90)
            rect = QRectF(option.rect).adjusted(2, 3, -2, -3)
            rect.setWidth(rect.width() * min(1.0, fraction))
            painter.fillRect(rect, color)
        super().paint(painter, option, index)


def make_table(name: str) -> tuple[QTableView, NumberTable]:
    view, model = QTableView(), NumberTable()
    view.setObjectName(name)
    view.setModel(model)
    view.setItemDelegate(BarDelegate(view))
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setWordWrap(False)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    view.horizontalHeader().setResizeContentsPrecision(RESIZE_ROWS)
    # Fixed row heights (set from the font in apply_theme): measuring 1,024 rows one by one would stall a redraw.
    view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    return view, model


class WorkedHeadView(View):
    name = "One head"
    query_chosen = Signal(int)  # the user chose a query position here (LAST_TOKEN: the last token)
    reads = frozenset({"model", "tokens", "tokenizer", "selected_layer", "selected_head"})
    compute_fn = staticmethod(compute_worked_head)

    def __init__(self, state, compute, controls: TokensControls, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.selected_key: int | None = None  # the key whose vectors are listed; None: the largest weight
        controls.changed.connect(self.inputs_changed)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()  # wraps on a narrow window or at a large text scale
        self.layer_spin, self.head_spin, self.query_spin = QSpinBox(), QSpinBox(), QSpinBox()
        self.layer_spin.setObjectName("worked-layer")
        self.head_spin.setObjectName("worked-head")
        self.query_spin.setObjectName("worked-query")
        self.query_spin.setSpecialValueText("last token")
        self.query_spin.setRange(LAST_TOKEN, 0)
        self.query_spin.setValue(LAST_TOKEN)
        self.query_spin.setToolTip("The token whose query is worked through, the chip selected in the strip above; "
                                   "'last token' (no chip selected) follows the text")
        self.omit_combo = QComboBox()
        self.omit_combo.setObjectName("worked-omit")
        self.omit_combo.setToolTip("Leave one step out of the hand computation and watch the equality break")
        self.all_keys_box = QCheckBox("All keys")
        self.all_keys_box.setObjectName("worked-all-keys")
        self.all_keys_box.setToolTip(f"List every key in order, not only the {TOP_KEYS} with the largest weights")
        for text, widget in (("Block", self.layer_spin), ("Head", self.head_spin), ("Query", self.query_spin),
                             ("Leave out", self.omit_combo)):
            label = QLabel(text)
            label.setBuddy(widget)
            if isinstance(widget, QSpinBox):
                widget.setKeyboardTracking(False)
            row.addWidget(control_group(label, widget))
        row.addWidget(self.all_keys_box)
        self.add_controls(row)
        self.verdict_label = caption("")
        self.verdict_label.setObjectName("worked_verdict")
        self.head_caption = caption("")
        self.head_caption.setObjectName("worked_head_caption")
        layout.addWidget(self.verdict_label)
        layout.addWidget(self.head_caption)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        left, right = QWidget(), QWidget()
        left_layout, right_layout = QVBoxLayout(left), QVBoxLayout(right)
        left_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.setContentsMargins(0, 0, 0, 0)
        self.keys_caption = caption("")
        self.keys_caption.setObjectName("worked_keys_caption")
        self.keys_table, self.keys_model = make_table("worked_keys_table")
        self.keys_table.setToolTip("Click a key to list its k and v beside q")
        self.vectors_caption = caption("")
        self.vectors_caption.setObjectName("worked_vectors_caption")
        self.vectors_table, self.vectors_model = make_table("worked_vectors_table")
        self.vectors_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.keys_table.horizontalHeader().setStretchLastSection(True)  # the weight bars take the spare width
        left_layout.addWidget(self.keys_caption)
        left_layout.addWidget(self.keys_table, 1)
        right_layout.addWidget(self.vectors_caption)
        right_layout.addWidget(self.vectors_table, 1)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([480, 620])  # the vectors table is the wider one
        layout.addWidget(splitter, 1)
        self.tolerance_caption = caption("")
        self.tolerance_caption.setObjectName("worked_tolerance_caption")
        layout.addWidget(self.tolerance_caption)
        self._key_rows: list[int] = []  # key index of each row of the keys table

        self.layer_spin.valueChanged.connect(state.set_selected_layer)
        self.head_spin.valueChanged.connect(state.set_selected_head)
        self.query_spin.valueChanged.connect(self._query_spun)
        self.omit_combo.currentIndexChanged.connect(self.inputs_changed)
        self.all_keys_box.toggled.connect(self._redraw)
        self.keys_table.clicked.connect(self._key_clicked)
        state.selected_layer_changed.connect(self.sync_controls)
        state.selected_head_changed.connect(self.sync_controls)
        state.config_changed.connect(self.sync_controls)
        state.model_changed.connect(self.sync_controls)
        state.tokens_changed.connect(self.sync_controls)
        self.stale_labels = [self.verdict_label, self.head_caption, self.keys_caption, self.vectors_caption,
                             self.tolerance_caption]
        self.sync_controls()

    # ---- controls ------------------------------------------------------------------------------
    def sync_controls(self) -> None:
        sync_layer_head_spins(self.state, self.layer_spin, self.head_spin)
        config = self.state.model.config if self.state.model is not None else self.state.config
        # The query range follows the text; a query past the new end falls back to the last token.
        self.query_spin.blockSignals(True)
        self.query_spin.setMaximum(max(0, len(self.state.tokens) - 1))
        self.query_spin.blockSignals(False)
        offered = {"", "scale", "mask", config.positional}
        current = self.omit_combo.currentData() or ""
        self.omit_combo.blockSignals(True)
        self.omit_combo.clear()
        for step, label in OMIT_CHOICES:
            if step in offered:
                self.omit_combo.addItem(label, step)
        self.omit_combo.setCurrentIndex(max(0, self.omit_combo.findData(current)))
        self.omit_combo.blockSignals(False)
        self.inputs_changed()

    def _query_spun(self, value: int) -> None:
        self.query_chosen.emit(value)
        self.inputs_changed()

    def set_query(self, position: int) -> None:
        """Follow the strip's selected chip (LAST_TOKEN or below: none selected, the last token)."""
        self.query_spin.blockSignals(True)
        self.query_spin.setValue(max(LAST_TOKEN, position))
        self.query_spin.blockSignals(False)
        self.inputs_changed()

    @property
    def query_position(self) -> int:
        """The query spin's value: a position, or LAST_TOKEN."""
        return self.query_spin.value()

    @property
    def query(self) -> int | None:
        """The chosen query position, or None for the last token."""
        value = self.query_spin.value()
        return None if value == LAST_TOKEN else value

    def settings(self) -> dict[str, Any]:
        return {"worked_query": self.query, "worked_omit": self.omit_combo.currentData() or "",
                "worked_all_keys": self.all_keys_box.isChecked()}

    def restore_settings(self, data: dict[str, Any]) -> None:
        query = data.get("worked_query", LAST_TOKEN)
        if query is None or (isinstance(query, int) and not isinstance(query, bool) and query >= 0):
            # The panel selects the matching chip; a restored query is no undo step of its own.
            self.set_query(LAST_TOKEN if query is None else min(query, self.query_spin.maximum()))
        omit = data.get("worked_omit")
        if isinstance(omit, str) and self.omit_combo.findData(omit) >= 0:
            self.omit_combo.setCurrentIndex(self.omit_combo.findData(omit))
        all_keys = data.get("worked_all_keys")
        if isinstance(all_keys, bool):
            self.all_keys_box.setChecked(all_keys)

    # ---- the view contract -----------------------------------------------------------------------
    def inputs(self) -> WorkedHeadInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        config = model.config
        layer = min(self.state.selected_layer, len(model.blocks) - 1)
        head = min(self.state.selected_head, config.n_heads - 1)
        query = len(tokens) - 1 if self.query is None else min(self.query, len(tokens) - 1)
        omit = self.omit_combo.currentData() or ""
        return WorkedHeadInputs(model, self.state.tokenizer, tuple(tokens), layer, head, query,
                                self.controls.mask_mode, omit)

    def on_stale(self) -> None:
        # No number of the old inputs stays readable: the tables empty with the captions.
        self.keys_model.clear()
        self.vectors_model.clear()

    def show_result(self, worked) -> None:
        self.selected_key = None
        self._draw(worked)

    def _redraw(self) -> None:
        if self.result is not None and not self.is_stale:
            self._draw(self.result)

    def _key_clicked(self, index: QModelIndex) -> None:
        if self.result is None or self.is_stale or not 0 <= index.row() < len(self._key_rows):
            return
        self.selected_key = self._key_rows[index.row()]
        self._draw_vectors(self.result)

    def _draw(self, worked) -> None:
        palette = theme.current()
        self.verdict_label.setText(f"Hand result {worked.verdict}")
        self.verdict_label.setStyleSheet(f"color: {palette.text if worked.equal else palette.warning};")
        self.verdict_label.setFont(theme.font(1.15, bold=True))
        self.head_caption.setText(head_text(worked))
        self._draw_keys(worked)
        self._draw_vectors(worked)
        self.tolerance_caption.setText(tolerance_text(worked))

    def _draw_keys(self, worked) -> None:
        rows = key_rows(worked, self.all_keys_box.isChecked())
        self._key_rows = rows
        cells, bars, muted = [], [], set()
        for row, key in enumerate(rows):
            cells.append(key_cells(worked, key))
            weight = float(worked.weights[key])
            bars.append(0.0 if math.isnan(weight) else weight)
            if not worked.visible[key] or worked.zeroed_after_softmax[key]:
                muted.add(row)
        headers = key_headers(worked)
        self.keys_model.set_rows(headers, [f"key {k}" for k in rows], cells, {len(headers) - 1: bars}, muted)
        self.keys_caption.setText(keys_caption(worked, rows))

    def _draw_vectors(self, worked) -> None:
        key = self.selected_key
        if key is None:
            key = int(worked.keys_by_weight()[0])
        self.vectors_model.set_rows(vector_headers(worked, key), [f"dim {i}" for i in range(worked.d_head)],
                                    vector_cells(worked, key))
        self.vectors_caption.setText(vectors_caption(worked, key))

    def refresh_hover(self) -> None:
        """No hover readouts: the selected key is redrawn with the result."""

    def apply_theme(self) -> None:
        row_px = QFontMetrics(theme.font(0.95)).height() + 6
        for table in (self.keys_table, self.vectors_table):
            table.setFont(theme.font(0.95))
            table.verticalHeader().setDefaultSectionSize(row_px)
            # At least MIN_ROWS rows in view: where the window is short the panel scrolls instead of the
            # tables shrinking to a row or two.
            chrome = (table.horizontalHeader().sizeHint().height() + table.horizontalScrollBar().sizeHint().height()
                      + 2 * table.frameWidth())
            table.setMinimumHeight(chrome + MIN_ROWS * row_px)
        super().apply_theme()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("One head: keys", self.keys_table), ("One head: vectors", self.vectors_table)]
