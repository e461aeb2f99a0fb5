"""Legends below the plot, never over its data.

pyqtgraph anchors a legend inside the view box, where it covers whatever curve runs under it (a flat
line at the top of the plot, the reference line a lesson asks about). Here a legend is a row of the plot
item's own layout, under the bottom axis: the data keeps the whole view box. Its entries flow onto as
many rows as the plot's width needs, so none is cut at a narrow width or a large text size.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt

LEGEND_ROW = 4  # the plot item's layout: 0 title, 1 top axis, 2 view box, 3 bottom axis
ENTRY_GAP_PX = 25  # between a column's widest entry and the next column


class FlowingLegend(pg.LegendItem):
    """A legend whose entries take as many columns as its plot's width holds, re-flowed on resize and on add."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        super().__init__(offset=None)
        self._plot = plot
        self._watcher = _ResizeWatcher(plot, self)
        title = getattr(plot, "_wrapping_title", None)  # gui.widgets.plot_titles: it keeps the plot's least height
        self._base_lines = title.min_lines if title is not None else None

    def sizeHint(self, which, constraint=None):  # noqa: N802 (Qt's name)
        """No least width of its own: a long entry must not widen the plot past its widget (its title would
        break inside words and its right side be cut); the entries flow onto rows instead."""
        hint = super().sizeHint(which, constraint) if constraint is not None else super().sizeHint(which)
        if which == Qt.SizeHint.MinimumSize:
            hint.setWidth(0)
        return hint

    def addItem(self, item, name) -> None:  # noqa: N802 (pyqtgraph's name)
        super().addItem(item, name)
        self.fit_columns()

    def fit_columns(self) -> None:
        plot_item = self._plot.getPlotItem()
        if plot_item is None or not self.items:  # the plot is being torn down, or nothing to flow yet
            return
        axis = plot_item.getAxis("left")
        room = max(1.0, self._plot.width() - 2 * (axis.width() if axis.isVisible() else 0))
        # A label's own text width: the legend's grid stretches the label item itself to its column.
        widest = max(sample.boundingRect().width() + label.item.boundingRect().width() + ENTRY_GAP_PX
                     for sample, label in self.items)
        columns = int(max(1, min(len(self.items), room // max(widest, 1.0))))
        if columns != self.columnCount:
            self.setColumnCount(columns)
        title = getattr(self._plot, "_wrapping_title", None)
        if title is not None and self._base_lines is not None:
            # The legend's rows, and a line of the gap they need, come out of the plot's least height, not out
            # of the curves' view (which keeps room for a tick label or two).
            lines = self._base_lines + -(-len(self.items) // columns) + 1
            if title.min_lines != lines:
                title.min_lines = lines
                title.fit()


class _ResizeWatcher(QObject):
    def __init__(self, plot: pg.PlotWidget, legend: FlowingLegend) -> None:
        super().__init__(plot)
        self._legend = legend
        plot.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.FontChange):
            self._legend.fit_columns()
        return False


def legend_below(plot: pg.PlotWidget) -> FlowingLegend:
    """The plot's legend, under its bottom axis; items added with a `name` join it as with addLegend()."""
    item = plot.getPlotItem()
    legend = FlowingLegend(plot)
    item.layout.addItem(legend, LEGEND_ROW, 1)
    item.layout.setAlignment(legend, Qt.AlignmentFlag.AlignHCenter)
    item.legend = legend  # PlotItem.addItem(..., name=...) adds to this legend
    return legend


__all__ = ["FlowingLegend", "legend_below"]
