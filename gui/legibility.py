"""The legibility rule at projector scale: text readable from the back row, controls big enough to hit,
no label dropped.

No text is drawn under MIN_TEXT_PX pixels (a scaled-down drawing's text counted at its drawn size), no
control (button, check box, spin box, combo box, slider, text field) is under MIN_CONTROL_PX pixels
across, and nothing that carries a lesson is dropped or cut: every pie wedge of MIN_LABELED_SHARE or more
has a visible label inside the view, labels do not overlap, a table shows all its rows or at least
MIN_TABLE_ROWS of them with a scroll bar, an axis is as wide as its tick labels, a plot item (title, axes,
colour bar) is no wider than its widget, which would cut its right side, a plot is no lower than
MIN_PLOT_LINES lines of text and its data area no lower than MIN_VIEW_LINES, tick
labels an axis chose itself (a colour bar's too) do not run into each other, its title wraps between words,
never inside one,
and a wrapped label has the height of all its lines. A number is never cut: a table cell or a label whose
digits do not fit is
elided with "…" (its whole text in the tooltip), never wrapped into a row that hides the rest, clipped by
its column or by the table's edge.
`legibility_problems(window)` lists what breaks the rule among the widgets on screen.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontInfo, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QScrollBar,
    QSlider,
    QTabBar,
    QWidget,
)

from gui.theme import MIN_CONTROL_PX, MIN_TEXT_PX

MIN_TABLE_ROWS = 3  # a table shorter than its rows scrolls, and shows at least this many
TEXT_WIDGETS = (QLabel, QAbstractButton, QLineEdit, QComboBox, QAbstractSpinBox, QTabBar)
CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QSlider, QLineEdit)


@dataclass(frozen=True)
class Problem:
    kind: str  # "text", "control", or "dropped" (a label left out, cut off or covered)
    where: str  # the widget's objectName, else its class and text
    pixels: int
    what: str = ""  # for "dropped": what is missing

    def __str__(self) -> str:
        if self.kind == "dropped":
            return f"{self.where}: {self.what}"
        limit = MIN_TEXT_PX if self.kind == "text" else MIN_CONTROL_PX
        return f"{self.where}: {self.kind} {self.pixels} px, under {limit} px"


def text_px(font: QFont) -> int:
    return QFontInfo(font).pixelSize()


def describe(widget: QWidget) -> str:
    """The widget's objectName, else its class, text or tip and the nearest named parent."""
    if widget.objectName():
        return widget.objectName()
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    text = text or widget.toolTip()
    parent = widget.parentWidget()
    while parent is not None and not parent.objectName():
        parent = parent.parentWidget()
    inside = f" in {parent.objectName()}" if parent is not None else ""
    return f"{type(widget).__name__} {text[:30]!r}{inside}" if text else f"{type(widget).__name__}{inside}"


def control_px(widget: QWidget) -> int:
    """How big a control is to hit: a slider's thickness, else the smaller side."""
    if isinstance(widget, QSlider):
        return widget.height() if widget.orientation() == Qt.Orientation.Horizontal else widget.width()
    return min(widget.width(), widget.height())


def shows_text(widget: QWidget) -> bool:
    if isinstance(widget, (QLabel, QAbstractButton)):
        return bool(widget.text().strip())
    return True


def legibility_problems(root: QWidget) -> list[Problem]:
    """What breaks the rule among the visible widgets under `root` and the text of their plots."""
    problems: list[Problem] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not widget.isVisible() or isinstance(widget, QScrollBar) or isinstance(
                widget.parentWidget(), (QScrollBar, QTabBar, QLineEdit, QAbstractSpinBox)):
            continue  # scroll bars, a tab bar's scroll arrows, a text field's clear button: the style's parts
        if isinstance(widget, TEXT_WIDGETS) and shows_text(widget) and text_px(widget.font()) < MIN_TEXT_PX:
            problems.append(Problem("text", describe(widget), text_px(widget.font())))
        if isinstance(widget, QLabel):
            problems += clipped_label(widget) + cut_number_label(widget)
        if isinstance(widget, CONTROLS) and control_px(widget) < MIN_CONTROL_PX:
            problems.append(Problem("control", describe(widget), control_px(widget)))
        if isinstance(widget, QGraphicsView) and widget.scene() is not None:
            problems += plot_text_problems(widget)
            problems += dropped_plot_labels(widget)
        if isinstance(widget, pg.PlotWidget):
            problems += cut_plot(widget) + squashed_plot(widget) + squashed_view(widget) + broken_title(widget)
            problems += legend_over_data(widget) + crowded_ticks(widget)
        if isinstance(widget, QAbstractItemView) and not isinstance(widget.parentWidget(), QComboBox):
            problems += hidden_rows(widget) + cut_number_cells(widget)
    return problems


def hidden_rows(table: QAbstractItemView) -> list[Problem]:
    """A table that neither shows all its rows nor at least MIN_TABLE_ROWS of them with a scroll bar."""
    model = table.model()
    if model is None or not hasattr(table, "rowHeight") or model.rowCount() == 0:
        return []
    rows = model.rowCount()
    row_px = max(1, max(table.rowHeight(row) for row in range(min(rows, 50))))
    shown = table.viewport().height() // row_px
    bar = table.verticalScrollBar()
    scrolls = bar.isVisible() and bar.maximum() > 0
    if shown >= rows or (scrolls and shown >= MIN_TABLE_ROWS):
        return []
    return [Problem("dropped", describe(table), shown, f"shows {shown} of {rows} rows" + ("" if scrolls else " and cannot scroll"))]


MAX_CELLS_CHECKED = 400  # the cells in view of a long table, at most: a rule run must stay quick


def has_digit(text: str) -> bool:
    return any(character.isdigit() for character in text)


def cut_number_cells(table: QAbstractItemView) -> list[Problem]:
    """Cells in view whose digits are cut without an ellipsis: wrapped into a row lower than their lines (the
    rest of the number is hidden below), clipped with eliding off, or cut by the table's right edge."""
    model = table.model()
    if model is None or not hasattr(table, "rowAt") or model.rowCount() == 0:
        return []
    viewport = table.viewport().rect()
    first = max(0, table.rowAt(0))
    last = table.rowAt(viewport.height() - 1)
    last = model.rowCount() - 1 if last < 0 else last
    problems: list[Problem] = []
    checked = 0
    for row in range(first, last + 1):
        for column in range(model.columnCount()):
            if table.isColumnHidden(column) if hasattr(table, "isColumnHidden") else False:
                continue
            index = model.index(row, column)
            text = index.data(Qt.ItemDataRole.DisplayRole)
            if text is None or not has_digit(str(text)):
                continue
            checked += 1
            if checked > MAX_CELLS_CHECKED:
                return problems
            rect = table.visualRect(index)
            if rect.width() <= 0 or rect.left() >= viewport.right() or rect.right() <= viewport.left():
                continue  # scrolled out of view entirely: the scroll bar says there is more
            name = f"{describe(table)} cell ({row}, {column}) {str(text)[:30]!r}"
            bar = getattr(table, "horizontalScrollBar", lambda: None)()
            scrolls = bar is not None and bar.isVisible() and bar.maximum() > 0
            if rect.right() > viewport.right() + 1 and not scrolls:  # a scroll bar at least says there is more
                problems.append(Problem("dropped", name, rect.width(), "is cut by the table's right edge"))
                continue
            needed = table.sizeHintForIndex(index).width()  # one line, the delegate's margins and swatch included
            if needed <= rect.width() + 1:
                continue
            wraps = getattr(table, "wordWrap", lambda: False)()
            if wraps:
                font = index.data(Qt.ItemDataRole.FontRole) or table.font()
                lines = QFontMetrics(font).boundingRect(0, 0, max(1, rect.width()), 100_000,
                                                         int(Qt.TextFlag.TextWrapAnywhere), str(text)).height()
                if lines > rect.height():
                    problems.append(Problem("dropped", name, rect.width(),
                                            f"wrapped in a {rect.height()} px row that shows one line of {lines} px: digits are hidden"))
            elif table.textElideMode() == Qt.TextElideMode.ElideNone:
                problems.append(Problem("dropped", name, rect.width(), f"{needed} px of text clipped in {rect.width()} px without an ellipsis"))
    return problems


def cut_number_label(label: QLabel) -> list[Problem]:
    """A one-line label narrower than its text with digits: a label never elides, so the number is cut."""
    if label.wordWrap() or not has_digit(label.text()) or label.width() <= 0:
        return []
    needed = label.sizeHint().width()
    if needed <= label.width() + 1:
        return []
    return [Problem("dropped", describe(label), label.width(), f"text {needed} px wide in {label.width()} px: its digits are cut")]


def dropped_plot_labels(view: QGraphicsView) -> list[Problem]:
    """Pie wedges without their label, labels outside the view or on top of each other, axes narrower than
    their tick labels."""
    from gui.widgets.pie import MIN_LABELED_SHARE, NestedPieItem

    where = view.objectName() or type(view).__name__
    problems = []
    visible = QRectF(view.viewport().rect())
    for item in view.scene().items():
        if not item.isVisible():
            continue
        if isinstance(item, NestedPieItem):
            boxes = []
            for key in item.keys():
                label = item._labels.get(key)
                if item.share(key) < MIN_LABELED_SHARE:
                    continue
                name = f"{where} wedge {key!r} ({item.share(key):.1%})"
                if label is None or not label.isVisible() or not label.textItem.toPlainText().strip():
                    problems.append(Problem("dropped", name, 0, "has no label"))
                    continue
                # Less the text's document margin: blank, and where two labels stacked edge to edge meet.
                margin = label.textItem.document().documentMargin()
                box = view.mapFromScene(label.sceneBoundingRect()).boundingRect().adjusted(margin, margin, -margin, -margin)
                if not visible.contains(QRectF(box)):
                    problems.append(Problem("dropped", name, 0, f"label {box.getRect()} is cut by the view {visible.getRect()}"))
                if any(QRectF(box).intersects(QRectF(other)) for other in boxes):
                    problems.append(Problem("dropped", name, 0, "label overlaps another label"))
                boxes.append(box)
        elif isinstance(item, pg.AxisItem) and item.style.get("showValues", True) and item.orientation in ("left", "right"):
            if item._tickLevels and item.linkedView() is not None:
                # Labels the plot chose (token names): pyqtgraph drops those that would overlap, silently.
                low, high = sorted(item.linkedView().viewRange()[1])
                shown = [v for v, _text in item._tickLevels[0] if low <= v <= high]
                line = QFontMetrics(item.style.get("tickFont") or item.font()).height()
                if len(shown) * line > item.height() + 1:
                    problems.append(Problem("dropped", f"{where} {item.orientation} axis", int(item.height()),
                                            f"{len(shown)} tick labels of {line} px in {item.height():.0f} px: some are left out"))
            if item.fixedWidth is not None and item.textWidth > item.fixedWidth - max(0, item.style["tickLength"]):
                problems.append(Problem("dropped", f"{where} {item.orientation} axis", int(item.textWidth),
                                        f"tick labels {item.textWidth} px wide in a {item.fixedWidth} px axis"))
    return problems


def cut_plot(plot: pg.PlotWidget) -> list[Problem]:
    """A plot item wider than its widget: its right side (title end, last ticks, colour bar) is cut off."""
    where = plot.objectName() or describe(plot)
    item = plot.getPlotItem()
    room = plot.viewport().width()
    # Shown wider than the widget, or held to it with a part (an axis, a colour bar) under the width its
    # labels need: either way something is cut. Each part's own minimum: asking the layout re-lays it out.
    squeezed = [part.geometry().width() - part.minimumWidth() for part in
                (item.layout.itemAt(index) for index in range(item.layout.count()))
                if part.isVisible() and part.geometry().width() > 0]
    over = max(item.geometry().width() - room, -min(squeezed, default=0.0))
    if over <= 1:
        return []
    return [Problem("dropped", where, round(room + over), f"plot {room + over:.0f} px wide in a {room} px view: its right side is cut")]


def clipped_label(label: QLabel) -> list[Problem]:
    """A word-wrapped label laid out lower than its lines: its last lines are cut off."""
    if not label.wordWrap() or not label.text().strip() or label.width() <= 0:
        return []
    needed = label.heightForWidth(label.width())
    if needed <= label.height() + 1:
        return []
    return [Problem("dropped", describe(label), label.height(), f"wrapped text {needed} px high in {label.height()} px: its last lines are cut")]


def broken_title(plot: pg.PlotWidget) -> list[Problem]:
    """A plot title wrapped inside a word ("sinuso" / "idal"): the plot is narrower than the word."""
    label = plot.getPlotItem().titleLabel
    if not label.isVisible():
        return []
    document = label.item.document()
    document.documentLayout().documentSize()  # laid out at its text width now, as it is drawn
    problems = []
    block = document.begin()
    while block.isValid():
        text, layout = block.text(), block.layout()
        for index in range(layout.lineCount() - 1):
            line = layout.lineAt(index)
            end = line.textStart() + line.textLength()
            if 0 < end < len(text) and not text[end - 1].isspace() and not text[end].isspace() and text[end - 1] not in "-/":
                word = text[text.rfind(" ", 0, end) + 1:(text.find(" ", end) + 1 or len(text) + 1) - 1]
                problems.append(Problem("dropped", plot.objectName() or describe(plot), round(plot.width()),
                                        f"title word {word!r} broken across lines in a {plot.width()} px plot"))
        block = block.next()
    return problems


def squashed_plot(plot: pg.PlotWidget) -> list[Problem]:
    """A plot lower than MIN_PLOT_LINES lines of text: its title and axes leave no room for the curves."""
    from gui.widgets.plot_titles import MIN_PLOT_LINES, min_plot_height

    least = min_plot_height(MIN_PLOT_LINES)
    if plot.height() >= least - 1:
        return []
    where = plot.objectName() or describe(plot)
    return [Problem("dropped", where, plot.height(), f"plot {plot.height()} px high, under {MIN_PLOT_LINES} lines of text ({least} px)")]


def squashed_view(plot: pg.PlotWidget) -> list[Problem]:
    """A plot whose title, axes and legend leave its data area under MIN_VIEW_LINES lines of text high: the
    curves or cells are a sliver under their labels."""
    from gui.widgets.plot_titles import MIN_VIEW_LINES, min_view_height

    box = plot.getPlotItem().vb
    least = min_view_height()
    if not box.isVisible() or box.height() >= least - 1 or plot.height() <= 0:
        return []
    where = plot.objectName() or describe(plot)
    return [Problem("dropped", where, round(box.height()),
                    f"data area {box.height():.0f} px high, under {MIN_VIEW_LINES} lines of text ({least} px)")]


def overlap_problems(root: QWidget) -> list[Problem]:
    """Parts drawn over each other and left axes shorter than their names, among the visible widgets under `root`.

    Not yet in legibility_problems: views of the Tokens and Positions panels still hold a map to a fixed height
    under what its plot and readout need, and break it; the Causal lab and Families views do not."""
    problems: list[Problem] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if widget.isVisible():
            problems += overlapping_parts(widget)
            if isinstance(widget, pg.PlotWidget):
                problems += cut_axis_name(widget)
    return problems


def overlapping_parts(widget: QWidget) -> list[Problem]:
    """Widgets of one row or column drawn over each other: the layout had less room than their least sizes (a
    wrapped label lower than its lines asked for one line, and the plot above it ran under it)."""
    from PySide6.QtWidgets import QBoxLayout

    layout = widget.layout()
    if not isinstance(layout, QBoxLayout):
        return []
    parts = [item.widget() for item in (layout.itemAt(index) for index in range(layout.count()))
             if item.widget() is not None and item.widget().isVisible()]
    problems = []
    for first, second in zip(parts, parts[1:]):
        overlap = first.geometry().intersected(second.geometry())
        if overlap.width() > 1 and overlap.height() > 1:
            problems.append(Problem("dropped", describe(second), overlap.height(),
                                    f"drawn over {describe(first)} ({overlap.width()} x {overlap.height()} px)"))
    return problems


def cut_axis_name(plot: pg.PlotWidget) -> list[Problem]:
    """A left axis whose name, written along it, is longer than the axis: both its ends are cut off."""
    axis = plot.getPlotItem().getAxis("left")
    if not axis.isVisible() or not axis.labelText or not axis.label.isVisible():
        return []
    name = axis.label.boundingRect().width()
    if name <= axis.height() + 1:
        return []
    where = plot.objectName() or describe(plot)
    return [Problem("dropped", f"{where} left axis", round(axis.height()),
                    f"its name {axis.labelText[:30]!r} is {name:.0f} px long on a {axis.height():.0f} px axis: cut")]


def crowded_ticks(plot: pg.PlotWidget) -> list[Problem]:
    """An axis that chose its own ticks (values, a colour bar's scale) with more labels than its length holds:
    pyqtgraph always draws its first level of labels, on top of each other if need be."""
    where = plot.objectName() or describe(plot)
    problems = []
    for axis in plot.scene().items():
        if not isinstance(axis, pg.AxisItem) or not axis.isVisible() or axis._tickLevels is not None:
            continue
        if not axis.style.get("showValues", True) or axis.orientation not in ("left", "right"):
            continue
        length = axis.height()
        low, high = sorted(axis.range)
        if length <= 1 or high <= low:
            continue
        levels = axis.tickValues(low, high, length)
        if not levels:
            continue
        shown = sorted(value for value in levels[0][1] if low <= value <= high)
        # pyqtgraph's own measure of a label: its font's line, less the 20% it trims.
        line = QFontMetrics(axis.style.get("tickFont") or axis.font()).height() * 0.8
        gap = min((b - a for a, b in zip(shown, shown[1:])), default=high - low) * length / (high - low)
        if gap < line - 0.5:
            problems.append(Problem("dropped", f"{where} {axis.orientation} axis", round(length),
                                    f"{len(shown)} tick labels of {line:.0f} px, {gap:.0f} px apart: they overlap"))
    return problems


def plot_text_problems(view: QGraphicsView) -> list[Problem]:
    """Tick labels and text items of a plot that are too small."""
    where = view.objectName() or type(view).__name__
    problems = []
    for item in view.scene().items():
        if not item.isVisible():
            continue
        if isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
            font = item.style.get("tickFont") or item.font()
            if text_px(font) < MIN_TEXT_PX:
                problems.append(Problem("text", f"{where} {item.orientation} ticks", text_px(font)))
        elif isinstance(item, pg.TextItem) and item.textItem.toPlainText().strip():
            if text_px(item.textItem.font()) < MIN_TEXT_PX:
                problems.append(Problem("text", f"{where} label {item.textItem.toPlainText()[:20]!r}", text_px(item.textItem.font())))
        elif isinstance(item, (QGraphicsSimpleTextItem, QGraphicsTextItem)) and not isinstance(view, pg.GraphicsView):
            # A drawing of its own (the block diagram), which the view may scale down: text at its drawn size.
            text = item.text() if isinstance(item, QGraphicsSimpleTextItem) else item.toPlainText()
            drawn = round(text_px(item.font()) * view.transform().m22() * item.sceneTransform().m22())
            if text.strip() and drawn < MIN_TEXT_PX:
                problems.append(Problem("text", f"{where} text {text[:20]!r}", drawn))
    return problems


__all__ = ["MIN_CONTROL_PX", "MIN_TABLE_ROWS", "MIN_TEXT_PX", "Problem", "broken_title", "clipped_label", "cut_number_cells", "cut_number_label", "cut_plot", "dropped_plot_labels", "hidden_rows",
           "crowded_ticks",
           "cut_axis_name", "legibility_problems", "overlap_problems", "overlapping_parts", "squashed_plot", "squashed_view"]


def legend_over_data(plot: pg.PlotWidget) -> list[Problem]:
    """A legend drawn inside the view box over a plotted point or line: it hides the data it names."""
    item = plot.getPlotItem()
    legend = item.legend
    if legend is None or not legend.isVisible() or not legend.items:
        return []
    box = legend.sceneBoundingRect()
    if not box.intersects(item.vb.sceneBoundingRect()):
        return []
    covered = []
    for curve in item.listDataItems():
        if not curve.isVisible():
            continue
        xs, ys = curve.getData()
        if xs is None or len(xs) == 0:
            continue
        # The curve's points and the midpoints of its segments, in scene coordinates.
        points = [(float(x), float(y)) for x, y in zip(xs, ys) if x == x and y == y]
        points += [((a[0] + b[0]) / 2, (a[1] + b[1]) / 2) for a, b in zip(points, points[1:])]
        if any(box.contains(item.vb.mapViewToScene(pg.Point(x, y))) for x, y in points):
            covered.append(curve.name() or type(curve).__name__)
    if not covered:
        return []
    where = plot.objectName() or describe(plot)
    return [Problem("dropped", where, round(box.width()), f"the legend covers the plotted {', '.join(covered)}")]
