"""A plot title that wraps onto further lines where it is wider than its plot.

pyqtgraph gives a title a minimum width of its whole line, so a long title (projector text, a lesson
beside the panel) makes the plot item wider than its widget and cuts its right side off: the end of
the title, the last tick label, part of the curve. A plot also keeps MIN_PLOT_LINES text lines of
height (more by what its title wraps onto), so that a crowded panel scrolls instead of squashing it.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QRectF, Qt, QTimer
from PySide6.QtGui import QFontMetrics, QTextOption

from gui import theme

TITLE_MARGIN_PX = 8  # kept free beside the title
MIN_PLOT_LINES = 5  # a title, an axis label, its ticks and a few lines of curve
MIN_VIEW_LINES = 2  # the data area itself, whatever the title, axes and legend take


def min_plot_height(lines: int = MIN_PLOT_LINES) -> int:
    """The least height of a plot at the current text size."""
    return lines * QFontMetrics(theme.font()).lineSpacing()


def min_view_height(lines: int = MIN_VIEW_LINES) -> int:
    """The least height of a plot's data area (its view box) at the current text size."""
    return lines * QFontMetrics(theme.font()).lineSpacing()


class WrappingTitle(QObject):
    """Keeps plot's title within the plot's width, and the plot min_lines text lines high: re-fitted after
    resizes and new titles (a theme change sets the title again), once per pass of the event loop however
    many came in it (a model switch sets a plot's title, axes and size several times; a fit lays the plot out)."""

    def __init__(self, plot: pg.PlotWidget, min_lines: int = MIN_PLOT_LINES) -> None:
        super().__init__(plot)
        self.plot = plot
        self.min_lines = min_lines
        self.label = plot.getPlotItem().titleLabel
        self._line_height: float | None = None  # the title row's height before it first wrapped
        self._fitting = False
        self._refit_pending = False
        self.fits = 0  # how many times the title was fitted (tests count them)
        self.readable_width = 0  # see _keep_width
        option = QTextOption(Qt.AlignmentFlag.AlignHCenter)
        # Between words where it can; inside a word only where one word is wider than the plot.
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.label.item.document().setDefaultTextOption(option)
        set_text = self.label.setText

        def set_and_fit(text, **style):
            set_text(text, **style)
            self.request_fit()

        self.label.setText = set_and_fit  # every setTitle goes through here
        plot.viewport().installEventFilter(self)  # the viewport: it has its new size when told
        item = plot.getPlotItem()
        item.geometryChanged.connect(self._overflow)
        item.vb.sigResized.connect(self._overflow)  # a legend's new row or a wider axis takes height from the data
        # An axis (a colour bar's too) widens once it has measured its tick labels, as it paints: its new
        # minimum moves nothing in a plot item already held to its widget's width, so it is watched itself.
        for part in (item.layout.itemAt(index) for index in range(item.layout.count())):
            for axis in (part, getattr(part, "axis", None)):
                if isinstance(axis, pg.AxisItem):
                    self._watch_width(axis)
        self._keep_height(0)

    def _watch_width(self, axis: pg.AxisItem) -> None:
        update_width = axis._updateWidth

        def update_and_check() -> None:
            update_width()
            self._overflow()

        axis._updateWidth = update_and_check  # pyqtgraph sets an axis's width through here

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Resize:
            self.request_fit()
        return False

    def request_fit(self) -> None:
        """Fit once the calls that change the plot in this pass of the event loop are done."""
        if not self._refit_pending:
            self._refit_pending = True
            QTimer.singleShot(0, self, self._refit)

    def fit(self) -> None:
        """Fit now (a pending request is then answered by this fit)."""
        self._refit_pending = False
        if self._fitting or self.plot.getPlotItem() is None:  # torn down before a deferred refit ran
            return
        self._fitting = True
        self.fits += 1
        try:
            self._fit()
        finally:
            self._fitting = False

    def _overflow(self) -> None:
        """The plot item outgrew the widget after all (its axes widened once their ticks were measured), or its
        data area was squeezed under MIN_VIEW_LINES (a legend's row, an axis grown higher)."""
        item = self.plot.getPlotItem()
        if self._fitting or item is None:
            return
        room = self.plot.viewport().width()
        needed = max(item.geometry().width(), item.effectiveSizeHint(Qt.SizeHint.MinimumSize).width())
        box, least = item.vb.geometry().height(), self._least_view_height()
        squeezed = 0 < item.geometry().height() and box < least - 1 and (
            self.plot.minimumHeight() < self.plot.height() - box + least)
        if needed > room + 1 or squeezed:
            self.request_fit()  # once the layout or the paint that widened it is done

    def _refit(self) -> None:
        if self._refit_pending:  # not answered by a fit since
            self.fit()

    def _fit(self) -> None:
        item = self.plot.getPlotItem()
        text = self.label.item
        # The title spans the view box's column: the plot's width less what lies beside that column.
        laid_out = item.geometry().width() > 0 and self.label.geometry().width() > 0
        # Beside it, the larger of what is shown and what the other columns need: an axis or a colour bar
        # that measured its labels needs more than it was last given.
        beside = (max(item.geometry().width() - self.label.geometry().width(),
                      item.effectiveSizeHint(Qt.SizeHint.MinimumSize).width() - self.label.minimumWidth()) if laid_out else
                  sum(axis.width() for axis in (item.getAxis("left"), item.getAxis("right")) if axis.isVisible()))
        self._keep_width(beside)
        room = max(1, self.plot.viewport().width() - math.ceil(beside) - TITLE_MARGIN_PX)
        text.setTextWidth(-1)  # its one-line width
        if not self.label.isVisible():  # setTitle(None) folded the title's row away
            self._keep_height(0)
            return
        if text.boundingRect().width() > room:
            text.setTextWidth(room)
            if self._line_height is None:
                self._line_height = self.label.maximumHeight()  # what setTitle gives one line
            height = max(self._line_height, math.ceil(text.boundingRect().height()))
        else:
            height = self._line_height
        if height is not None:
            self.label.setMaximumHeight(height)
            item.layout.setRowFixedHeight(0, height)
        self._keep_height(0 if height is None or self._line_height is None else height - self._line_height)
        self.label.updateMin()
        self.label.resizeEvent(None)
        # A plot item cannot be set narrower than its minimum: one set while the title was long stays too wide.
        shown = item.geometry()
        if shown.width() > self.plot.viewport().width():
            item.setGeometry(QRectF(shown.x(), shown.y(), self.plot.viewport().width(), shown.height()))
        item.layout.activate()  # its axes and colour bar take their new widths now, not at the next paint


    def _widest_word(self) -> float:
        """The width of the title's widest word, in the title's own (styled) font."""
        document = self.label.item.document()
        option = document.defaultTextOption()
        words_only = QTextOption(option)
        words_only.setWrapMode(QTextOption.WrapMode.WordWrap)
        width = document.textWidth()
        document.setDefaultTextOption(words_only)
        document.setTextWidth(1)  # every word on a line of its own
        widest = document.idealWidth()
        document.setTextWidth(width)
        document.setDefaultTextOption(option)
        return widest

    def _keep_width(self, beside: float) -> None:
        """The plot's readable width: beside its axes and colour bar, room for the title's widest word (so it wraps
        between words, never inside one), for the bottom axis's name, and for MIN_VIEW_LINES of data. Not a
        minimum (plots side by side in a row would widen the panel): a TurningSplitter reads it to put its panes
        one above the other where they do not have it side by side."""
        axis = self.plot.getPlotItem().getAxis("bottom")
        name = axis.label.boundingRect().width() if axis.isVisible() and axis.labelText else 0.0
        word = self._widest_word() + TITLE_MARGIN_PX if self.label.isVisible() else 0.0
        self.readable_width = math.ceil(beside + max(word, name, min_view_height()))

    def _least_view_height(self) -> int:
        """MIN_VIEW_LINES, a line for each label a plot set on its left axis itself (a row of bars per token:
        pyqtgraph leaves out, silently, the labels that do not fit), and the length of the axis's name, which is
        written along it and cut at both ends where the axis is shorter."""
        axis = self.plot.getPlotItem().getAxis("left")
        if not axis.isVisible():
            return min_view_height()
        labels = len(axis._tickLevels[0]) if axis._tickLevels else 0
        line = QFontMetrics(axis.style.get("tickFont") or axis.font()).height()
        name = axis.label.boundingRect().width() if axis.labelText else 0.0
        return max(min_view_height(), labels * line, math.ceil(name))

    def _keep_height(self, wrapped_px: float) -> None:
        """The plot's least height: min_lines of text and the lines its title wrapped onto, and at least what its
        title, axes and legend take (measured as laid out: they keep their heights whatever the plot's) with
        MIN_VIEW_LINES of data under them."""
        least = min_plot_height(self.min_lines) + math.ceil(wrapped_px)
        item = self.plot.getPlotItem()
        if item is not None and item.geometry().height() > 0 and self.plot.height() > 0:
            beside_data = self.plot.height() - item.vb.geometry().height()
            least = max(least, math.ceil(beside_data) + self._least_view_height())
        if self.plot.minimumHeight() != least:
            self.plot.setMinimumHeight(least)


def readable_width(widget) -> int:
    """The widest readable width (see WrappingTitle._keep_width) of the plots in `widget`, itself included."""
    plots = [widget, *widget.findChildren(pg.PlotWidget)]
    return max((plot._wrapping_title.readable_width for plot in plots if hasattr(plot, "_wrapping_title")), default=0)


def wrap_title(plot: pg.PlotWidget, min_lines: int = MIN_PLOT_LINES) -> pg.PlotWidget:
    plot._wrapping_title = WrappingTitle(plot, min_lines)
    return plot


def fit_title(plot: pg.PlotWidget) -> None:
    """Fit a wrapped title (and the plot's least height) again, after a change that sets no title."""
    plot._wrapping_title.fit()


__all__ = ["MIN_PLOT_LINES", "MIN_VIEW_LINES", "WrappingTitle", "fit_title", "min_plot_height", "min_view_height",
           "readable_width", "wrap_title"]
