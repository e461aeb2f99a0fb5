"""Tables that keep a number of rows in view however their splitter or layout is squeezed, and cells that
never cut a number: a cell too narrow for its text elides it visibly ("…") and its tooltip holds it whole."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QTableWidget,
    QToolTip,
)

from gui.legibility import MIN_TABLE_ROWS

ELIDED_COLUMN_CHARS = 8  # an eliding (label) column keeps room for this many characters before its "…"


def keep_rows_in_view(table: QTableWidget, rows: int = MIN_TABLE_ROWS) -> None:
    """A table never shorter than its header and `rows` rows (all of them when it has fewer): it scrolls beyond.

    Call it again when the font or the row count changes: the heights follow both.
    """
    row_px = table.verticalHeader().defaultSectionSize()
    header_px = table.horizontalHeader().sizeHint().height()
    shown = min(max(1, table.rowCount()), rows)
    table.setMinimumHeight(header_px + shown * row_px + 2 * table.frameWidth()
                           + table.horizontalScrollBar().sizeHint().height())  # a wide table's scroll bar takes a row's place


class WholeTextTipDelegate(QStyledItemDelegate):
    """Draws cells as usual; a cell whose text does not fit (drawn elided) shows its whole text as its tooltip."""

    def helpEvent(self, event, view, option: QStyleOptionViewItem, index: QModelIndex) -> bool:
        if event is not None and event.type() == QEvent.Type.ToolTip and index.isValid() and not index.data(Qt.ItemDataRole.ToolTipRole):
            text = index.data(Qt.ItemDataRole.DisplayRole)
            if text is not None and self.sizeHint(option, index).width() > option.rect.width():
                QToolTip.showText(event.globalPos(), str(text), view)
                return True
        return super().helpEvent(event, view, option, index)


def never_cut_cells(table: QAbstractItemView) -> None:
    """Cells on one line, elided with "…" when too narrow (never wrapped into a row that hides the rest of
    a number, never clipped mid-digit), the whole text in the tooltip."""
    if isinstance(table, QTableView):
        table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    if not isinstance(table.itemDelegate(), WholeTextTipDelegate):
        table.setItemDelegate(WholeTextTipDelegate(table))


def fit_number_columns(table: QTableView, elided_column: int = 0, scrolls: bool = False) -> None:
    """Every column but `elided_column` as wide as its widest text by its font's metrics; `elided_column` takes
    the rest and elides; the table is never narrower than that, so no number needs a scroll to be read whole.
    A table of many columns that `scrolls` keeps its sideways scroll bar instead of that least width."""
    never_cut_cells(table)
    header = table.horizontalHeader()
    header.setStretchLastSection(False)
    columns = table.model().columnCount() if table.model() is not None else 0
    least = 0
    for column in range(columns):
        if column == elided_column:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
            continue
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        least += max(table.sizeHintForColumn(column), header.sectionSizeHint(column))
    if 0 <= elided_column < columns:
        least += min(max(table.sizeHintForColumn(elided_column), header.sectionSizeHint(elided_column)),
                     QFontMetrics(table.font()).horizontalAdvance("M" * ELIDED_COLUMN_CHARS))
    if scrolls:
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        return
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setMinimumWidth(least + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width())
