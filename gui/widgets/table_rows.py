"""Tables that keep a number of rows in view however their splitter or layout is squeezed."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidget

from gui.legibility import MIN_TABLE_ROWS


def keep_rows_in_view(table: QTableWidget, rows: int = MIN_TABLE_ROWS) -> None:
    """A table never shorter than its header and `rows` rows (all of them when it has fewer): it scrolls beyond.

    Call it again when the font or the row count changes: the heights follow both.
    """
    row_px = table.verticalHeader().defaultSectionSize()
    header_px = table.horizontalHeader().sizeHint().height()
    shown = min(max(1, table.rowCount()), rows)
    table.setMinimumHeight(header_px + shown * row_px + 2 * table.frameWidth()
                           + table.horizontalScrollBar().sizeHint().height())  # a wide table's scroll bar takes a row's place
