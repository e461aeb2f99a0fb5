"""A number is never cut: table cells elide with an ellipsis (whole text in the tooltip) and the legibility
rule flags digits hidden by wrapping, clipping, the table's edge or a one-line label too narrow."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QLabel, QStyleOptionViewItem, QTableWidget, QTableWidgetItem, QToolTip

from gui.legibility import cut_number_cells, cut_number_label
from gui.widgets.table_rows import fit_number_columns, never_cut_cells

NUMBER = "3,152,384"


def narrow_table(qtbot) -> QTableWidget:
    """A table as Qt makes it (word wrap on, one-line rows) with a column narrower than its number."""
    table = QTableWidget(2, 2)
    qtbot.addWidget(table)
    for row, (name, value) in enumerate((("token embeddings", NUMBER), ("head", "18,944,000"))):
        table.setItem(row, 0, QTableWidgetItem(name))
        table.setItem(row, 1, QTableWidgetItem(value))
        table.item(row, 1).setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    table.resize(400, 200)
    table.setColumnWidth(0, 120)
    table.setColumnWidth(1, table.fontMetrics().horizontalAdvance("3,152") + 8)
    table.show()
    qtbot.waitExposed(table)
    return table


def test_columns_sized_to_their_numbers_in_a_squeezed_table_are_cut_by_its_edge(qtbot):
    """The parameter tables as they were: each column as wide as its text, the table narrower than their sum,
    a horizontal scroll; the right-aligned number shows its first digits ("3,152") with no sign of the rest."""
    from gui.panels.common import fit_table, set_cell, table

    legend = table(("part", "parameters", "share"))
    legend.setRowCount(2)
    qtbot.addWidget(legend)
    for row, (name, value) in enumerate((("token embeddings", NUMBER), ("output head (untied)", "18,944,000"))):
        set_cell(legend, row, 0, name)
        set_cell(legend, row, 1, value, right=True)
        set_cell(legend, row, 2, "23.7%", right=True)
    legend.show()
    qtbot.waitExposed(legend)
    for column in range(3):
        legend.resizeColumnToContents(column)
    legend.setFixedWidth(legend.columnWidth(0) + legend.columnWidth(1) // 2)
    qtbot.waitUntil(lambda: legend.viewport().width() < legend.columnWidth(0) + legend.columnWidth(1))
    assert legend.visualRect(legend.model().index(0, 1)).right() > legend.viewport().width()  # "3,152" in view
    legend.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    found = cut_number_cells(legend)  # without a scroll bar nothing says there is more: the rule's finding
    assert {problem.where.split("cell ")[1][:6] for problem in found} == {"(0, 1)", "(1, 1)"}
    assert all(problem.what == "is cut by the table's right edge" for problem in found)
    legend.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    legend.setMinimumWidth(0)
    legend.setMaximumWidth(16_777_215)
    fit_table(legend)
    legend.resize(legend.minimumWidth(), legend.height())
    qtbot.waitUntil(lambda: legend.width() == legend.minimumWidth())
    assert cut_number_cells(legend) == []
    for row in range(2):
        for column in (1, 2):
            index = legend.model().index(row, column)
            assert legend.visualRect(index).right() <= legend.viewport().width()


@pytest.mark.qt_log_ignore("This plugin does not support raise")  # the offscreen platform, showing the tooltip
def test_an_eliding_cell_is_not_flagged_and_tips_its_whole_text(qtbot):
    table = narrow_table(qtbot)
    never_cut_cells(table)
    assert cut_number_cells(table) == []
    index = table.model().index(0, 1)
    option = QStyleOptionViewItem()
    option.rect = table.visualRect(index)
    option.font = table.font()
    center = option.rect.center()
    event = QHelpEvent(QEvent.Type.ToolTip, center, table.viewport().mapToGlobal(center))
    assert table.itemDelegate().helpEvent(event, table, option, index)
    assert QToolTip.text() == NUMBER
    QToolTip.hideText()


def test_clipping_without_an_ellipsis_and_the_tables_edge_are_flagged(qtbot):
    table = narrow_table(qtbot)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideNone)
    assert len(cut_number_cells(table)) == 2
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    table.setColumnWidth(0, 380)
    table.setColumnWidth(1, 200)  # starts in view, ends past the right edge
    assert {problem.what for problem in cut_number_cells(table)} == {"is cut by the table's right edge"}


def test_fitted_number_columns_keep_every_number_whole_however_narrow_the_table(qtbot):
    table = narrow_table(qtbot)
    fit_number_columns(table, elided_column=0)
    table.resize(50, 200)  # the minimum width wins over a squeeze
    qtbot.waitUntil(lambda: table.width() >= table.minimumWidth())
    for row in range(2):
        index = table.model().index(row, 1)
        assert table.visualRect(index).width() >= table.sizeHintForIndex(index).width()
    assert cut_number_cells(table) == []


def test_a_one_line_label_narrower_than_its_number_is_flagged(qtbot):
    label = QLabel("total 163,037,184")
    qtbot.addWidget(label)
    label.setFixedWidth(label.sizeHint().width() // 2)
    label.show()
    assert cut_number_label(label)
    label.setFixedWidth(label.sizeHint().width())
    assert cut_number_label(label) == []
    label.setWordWrap(True)  # wrapped labels: the clipped_label rule measures their lines
    label.setFixedWidth(20)
    assert cut_number_label(label) == []
