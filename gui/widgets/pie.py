"""A nested pie (sunburst) as a pyqtgraph item: an inner ring of parts, an outer ring splitting some of them.

`NestedPieItem` draws QPainterPath wedges in data coordinates (radius 1 for the inner ring), so it
lives in a ViewBox with a locked aspect ratio (`PieView` sets one up) and exports to PNG and SVG
through the scene like any other plot item. Hovering a wedge pulls it out, brightens it and shows
its label, count and share in a text item; `hover_key(key)` does the same from code.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, QTimer, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPainterPath, QPolygonF

from core.display import format_share, short_count
from gui import theme

INNER_RADIUS = 1.0  # the inner ring is a full pie of this radius
OUTER_GAP = 0.03
OUTER_WIDTH = 0.42
PULL_OUT = 0.08  # how far a hovered wedge moves out along its middle angle
VIEW_MARGIN = 0.12
OUTER_REACH = INNER_RADIUS + OUTER_GAP + OUTER_WIDTH
LEAD_GAP = 0.12  # from the outer ring to the column of labels beside the pie, in radii
LEAD_PX = 12  # pixels kept between a side label's end and the view's edge
MIN_PIE_WIDTH = 0.4  # of the view's width: longer labels are shortened before the pie gets narrower
MIN_PIE_RADIUS_PX = 40  # the shortest labels still too wide: the pie shrinks to this, not further
MIN_VIEW_PX = 220
MIN_LABELED_SHARE = 0.03  # a wedge this large always has a label: on it, or beside the pie
STEPS_PER_TURN = 360  # arc segments per full circle: smooth at any export size


@dataclass(frozen=True)
class PieSlice:
    """One wedge. Outer slices name the inner slice they split (`parent`); inner ones leave it empty."""

    key: str
    label: str
    value: int
    color: QColor
    parent: str = ""
    short_label: str = ""  # written on the wedge when it has room; `label` otherwise


@dataclass(frozen=True)
class _Wedge:
    slice: PieSlice
    ring: int  # 0 inner, 1 outer
    start: float  # turns clockwise from 12 o'clock, in [0, 1]
    span: float  # turns
    r0: float
    r1: float

    @property
    def middle(self) -> float:
        return self.start + self.span / 2


def _point(radius: float, turns: float) -> QPointF:
    # The view's y axis points up; turning clockwise from 12 o'clock is (sin, cos).
    angle = 2 * math.pi * turns
    return QPointF(radius * math.sin(angle), radius * math.cos(angle))


def wedge_path(r0: float, r1: float, start: float, span: float, offset: float = 0.0) -> QPainterPath:
    """An annular sector (a plain sector when r0 is 0), optionally moved `offset` outward."""
    path = QPainterPath()
    if span >= 1.0 - 1e-12 and r0 == 0:
        path.addEllipse(QPointF(0, 0), r1, r1)
        return path
    steps = max(2, math.ceil(STEPS_PER_TURN * span))
    dx, dy = offset * math.sin(2 * math.pi * (start + span / 2)), offset * math.cos(2 * math.pi * (start + span / 2))
    angles = [2 * math.pi * (start + span * i / steps) for i in range(steps + 1)]
    outer = [QPointF(dx + r1 * math.sin(a), dy + r1 * math.cos(a)) for a in angles]
    inner = [QPointF(dx + r0 * math.sin(a), dy + r0 * math.cos(a)) for a in reversed(angles)] if r0 > 0 else [QPointF(dx, dy)]
    # One polygon, not a lineTo per point: every void call into PySide6 6.12 on Python 3.11 drops a
    # reference to None, and hundreds per wedge run None's count down fast.
    path.addPolygon(QPolygonF(outer + inner))
    path.closeSubpath()
    return path


def readable_text_color(background: QColor) -> QColor:
    """Black or white, whichever contrasts more with the wedge (WCAG relative luminance)."""

    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    luminance = 0.2126 * channel(background.redF()) + 0.7152 * channel(background.greenF()) + 0.0722 * channel(background.blueF())
    return QColor("#000000") if luminance > 0.22 else QColor("#ffffff")


def format_count(n: float) -> str:
    """124,439,808 -> '124.4M'; small counts are written out."""
    return short_count(n)


class NestedPieItem(pg.GraphicsObject):
    """Wedges for the inner and outer ring, wedge labels where they fit, and a hover readout."""

    sigHovered = Signal(str)  # key of the hovered wedge, "" when the mouse leaves

    def __init__(self) -> None:
        super().__init__()
        self.inner: list[PieSlice] = []
        self.outer: list[PieSlice] = []
        self.total = 0
        self.hovered = ""
        self.stale = False  # the wedges describe inputs that have changed: no readout until new data
        self._wedges: list[_Wedge] = []
        self._paths: dict[str, QPainterPath] = {}
        self._labels: dict[str, pg.TextItem] = {}  # one per wedge key ever shown, re-used across data
        self.lead_lines: list[tuple[QPointF, QPointF, QPointF]] = []  # wedge edge, elbow, side label
        self._fitting = False
        self._refit = False
        self.readout = pg.TextItem("", anchor=(0.5, 0.5))
        self.readout.setParentItem(self)
        self.readout.setZValue(10)
        self.readout.hide()
        self.setAcceptHoverEvents(True)

    # ---- data ----------------------------------------------------------------------------------
    def set_data(self, inner: Sequence[PieSlice], outer: Sequence[PieSlice] = ()) -> None:
        """Inner slices fill the circle in order; outer slices sit over their parent, in order."""
        self.prepareGeometryChange()
        self.inner = [s for s in inner if s.value > 0]
        self.outer = [s for s in outer if s.value > 0]
        self.total = sum(s.value for s in self.inner)
        self._wedges = []
        starts: dict[str, float] = {}
        position = 0.0
        for piece in self.inner:
            span = piece.value / self.total if self.total else 0.0
            self._wedges.append(_Wedge(piece, 0, position, span, 0.0, INNER_RADIUS))
            starts[piece.key] = position
            position += span
        r0, r1 = INNER_RADIUS + OUTER_GAP, INNER_RADIUS + OUTER_GAP + OUTER_WIDTH
        for piece in self.outer:
            if piece.parent not in starts:
                raise ValueError(f"outer slice {piece.key!r} names no inner slice {piece.parent!r}")
            span = piece.value / self.total
            self._wedges.append(_Wedge(piece, 1, starts[piece.parent], span, r0, r1))
            starts[piece.parent] += span
        if self.hovered not in self.keys():
            self.hovered = ""
        self._rebuild_paths()
        self._update_labels()
        self._update_readout()
        self.update()

    def keys(self) -> list[str]:
        return [w.slice.key for w in self._wedges]

    def value(self, key: str) -> int:
        return self._wedge(key).slice.value

    def share(self, key: str) -> float:
        return self.value(key) / self.total if self.total else 0.0

    def wedge_center(self, key: str) -> QPointF:
        """The middle of a wedge, in the item's coordinates (for hovering it from a test)."""
        wedge = self._wedge(key)
        radius = (wedge.r0 + wedge.r1) / 2 if wedge.ring else 0.6 * wedge.r1
        return _point(radius, wedge.middle)

    def _wedge(self, key: str) -> _Wedge:
        for wedge in self._wedges:
            if wedge.slice.key == key:
                return wedge
        raise KeyError(key)

    def _rebuild_paths(self) -> None:
        self._paths = {
            w.slice.key: wedge_path(w.r0, w.r1, w.start, w.span, PULL_OUT if w.slice.key == self.hovered else 0.0)
            for w in self._wedges
        }

    def wedge_path_at_rest(self, key: str) -> QPainterPath:
        """A wedge's outline when it is not hovered (the hovered one is drawn pulled out)."""
        wedge = self._wedge(key)
        return wedge_path(wedge.r0, wedge.r1, wedge.start, wedge.span)

    # ---- hover ---------------------------------------------------------------------------------
    def key_at(self, pos: QPointF) -> str:
        """The wedge under an item-coordinate point ("" for none); the outer ring is checked first."""
        for wedge in sorted(self._wedges, key=lambda w: -w.ring):
            if self._paths[wedge.slice.key].contains(pos):
                return wedge.slice.key
        return ""

    def hover_key(self, key: str) -> None:
        """Highlight a wedge and show its numbers ("" clears)."""
        if key and key not in self.keys():
            raise KeyError(key)
        if key == self.hovered:
            return
        self.prepareGeometryChange()
        self.hovered = key
        self._rebuild_paths()
        self._update_labels()
        self._update_readout()
        self.update()
        self.sigHovered.emit(key)

    def readout_text(self) -> str:
        return self.readout.toPlainText() if self.hovered else ""

    def set_stale(self, stale: bool) -> None:
        """While stale the pie reads nothing out (its numbers belong to inputs that have changed)."""
        self.stale = stale
        if stale:
            self.hover_key("")

    def hoverEvent(self, event) -> None:  # pyqtgraph's scene hover, not Qt's
        if event.isExit() or self.stale:
            self.hover_key("")
            return
        self.hover_key(self.key_at(event.pos()))

    def _update_readout(self) -> None:
        if not self.hovered:
            self.readout.hide()
            return
        wedge = self._wedge(self.hovered)
        piece = wedge.slice
        self.readout.setText(f"{piece.label}\n{piece.value:,} parameters\n{format_share(self.share(piece.key))} of {format_count(self.total)}")
        self.readout.setColor(theme.color("text"))
        self.readout.fill = pg.mkBrush(_with_alpha(theme.color("base"), 235))
        self.readout.border = pg.mkPen(theme.color("text"), width=1)
        self.readout.setFont(theme.font(0.95, bold=True))
        # Centred on the wedge, then pushed inside the view: the pie fills its view, so a box beside
        # an edge wedge would be cut off (at projector font sizes it is wider than half the pie).
        centre = self.wedge_center(piece.key) + _point(PULL_OUT, wedge.middle)
        self.readout.setAnchor((0, 0))
        view = self.getViewBox()
        if isinstance(view, pg.ViewBox):
            (x0, x1), (y0, y1) = view.viewRange()
            pixel_x, pixel_y = view.viewPixelSize()
            text = self.readout.textItem.boundingRect()
            width, height = text.width() * pixel_x, text.height() * pixel_y
            left = max(x0, min(centre.x() - width / 2, x1 - width))  # the start of the text wins
            top = min(max(y0 + height, centre.y() + height / 2), y1)  # y points up: the box hangs below `top`
            self.readout.setPos(QPointF(left, top))
        else:
            self.readout.setPos(centre)
        self.readout.show()

    # ---- labels on the wedges ------------------------------------------------------------------
    def _update_labels(self) -> None:
        shown = set()
        for wedge in self._wedges:
            key = wedge.slice.key
            label = self._labels.get(key)
            if label is None:
                label = self._labels[key] = pg.TextItem("", anchor=(0.5, 0.5))
                label.setParentItem(self)
                label.setZValue(5)
            offset = PULL_OUT if key == self.hovered else 0.0
            radius = (wedge.r0 + wedge.r1) / 2 if wedge.ring else (0.62 if wedge.span < 0.999 else 0.0)
            label.setPos(_point(radius + offset, wedge.middle))
            label.setFont(theme.font(0.95, bold=True))
            shown.add(key)
        for key, label in self._labels.items():
            if key not in shown:
                label.hide()
        self.fit_labels()

    def fit_labels(self) -> None:
        """Write a label on its wedge where its whole box fits there; else, for a wedge of at least
        MIN_LABELED_SHARE, beside the pie with a lead line, the view widened so that the labels fit in it."""
        if self._fitting:
            self._refit = True  # the view changed size while the labels were placed: place them again after
            return
        self._fitting = True
        try:
            for _ in range(3):  # the view's own range change calls back; a resize in between asks again
                self._refit = False
                view = self.getViewBox()
                self._fit_labels(view if isinstance(view, pg.ViewBox) else None)
                if not self._refit:
                    break
        finally:
            self._fitting = False

    def _fit_labels(self, view: pg.ViewBox | None) -> None:
        # Before the item is in a ViewBox, getViewBox() answers with the GraphicsView.
        pixel_x, pixel_y = view.viewPixelSize() if view is not None else (0.0, 0.0)
        self.prepareGeometryChange()
        self.lead_lines = []
        outside: list[_Wedge] = []
        for wedge in self._wedges:
            key = wedge.slice.key
            label = self._labels[key]
            label.setAnchor((0.5, 0.5))
            label.setText(self._label_text(wedge, inside=True))
            label.setColor(readable_text_color(wedge.slice.color))
            label.hide()
            if pixel_x <= 0 or pixel_y <= 0:
                continue
            text = label.textItem.boundingRect()
            width, height = text.width() * pixel_x, text.height() * pixel_y
            offset = PULL_OUT if key == self.hovered else 0.0
            # The first place along the wedge's middle where the whole box lies inside the wedge.
            radii = [(wedge.r0 + wedge.r1) / 2] if wedge.ring else ([0.0] if wedge.span >= 0.999 else [0.62, 0.5, 0.4, 0.3])
            for radius in radii:
                centre = _point(radius + offset, wedge.middle)
                box = QRectF(centre.x() - width / 2, centre.y() - height / 2, width, height)
                if self._paths[key].contains(box):
                    label.setPos(centre)
                    label.show()
                    break
            else:
                if wedge.span >= MIN_LABELED_SHARE:
                    outside.append(wedge)
        if view is not None and outside:
            self._place_outside(view, outside)
        elif view is not None:
            self._set_reach(view, 0.0)

    def _label_text(self, wedge: _Wedge, inside: bool, style: int = 0) -> str:
        """On the wedge: the short name over the share. Beside the pie, style 0: the name and share on one
        line; 1: the short name; 2: the short name over the share (the narrowest)."""
        short = wedge.slice.short_label or wedge.slice.label
        share = format_share(wedge.span)
        if inside or style == 2:
            return f"{short}\n{share}"
        return f"{wedge.slice.label if style == 0 else short} {share}"

    def _place_outside(self, view: pg.ViewBox, wedges: list[_Wedge]) -> None:
        """Labels in a column on each side of the pie, spread so they never overlap, joined to their wedges."""
        room = view.width() * (0.5 - MIN_PIE_WIDTH / 2) - LEAD_PX  # pixels for the labels on either side, at first
        for style in range(3):  # the first that fits, narrower each time
            for wedge in wedges:
                label = self._labels[wedge.slice.key]
                label.setColor(theme.color("text"))
                label.setText(self._label_text(wedge, inside=False, style=style))
            sizes = {w.slice.key: self._labels[w.slice.key].textItem.boundingRect() for w in wedges}
            widest = max(size.width() for size in sizes.values())
            if widest <= room:
                break
        if widest > view.width() / 2 - MIN_PIE_RADIUS_PX - LEAD_PX:
            self._place_below(view, wedges)  # a view too narrow for labels beside the pie: a key under it
            return
        right = [w for w in wedges if math.sin(2 * math.pi * w.middle) >= 0]
        left = [w for w in wedges if w not in right]
        scale = self._set_reach(view, widest + LEAD_PX)  # data units per pixel
        column = OUTER_REACH + LEAD_GAP
        for side, sign in ((right, 1.0), (left, -1.0)):
            # Top to bottom, each label as near its wedge's height as the one above allows.
            order = sorted(side, key=lambda w: -math.cos(2 * math.pi * w.middle))
            heights = [sizes[w.slice.key].height() * scale for w in order]
            wanted = [_point(OUTER_REACH, w.middle).y() for w in order]
            ys, limit = [], math.inf
            for want, height in zip(wanted, heights, strict=True):
                y = min(want, limit - height / 2)
                ys.append(y)
                limit = y - height / 2
            (_x0, _x1), (y0, _y1) = view.viewRange()
            low = y0 - (ys[-1] - heights[-1] / 2) if ys else 0.0  # how far the last one hangs below the view
            if low > 0:
                ys = [y + low for y in ys]
            for wedge, y in zip(order, ys, strict=True):
                label = self._labels[wedge.slice.key]
                label.setAnchor((0.0, 0.5) if sign > 0 else (1.0, 0.5))
                anchor = QPointF(sign * column, y)
                label.setPos(anchor)
                label.show()
                edge = _point(wedge.r1 + (PULL_OUT if wedge.slice.key == self.hovered else 0.0), wedge.middle)
                elbow = QPointF(sign * (column - LEAD_GAP / 2), y)
                self.lead_lines.append((edge, elbow, anchor))
        self.update()

    def _place_below(self, view: pg.ViewBox, wedges: list[_Wedge]) -> None:
        """Labels in one column under the pie, each behind a swatch of its wedge's colour."""
        width, height = max(1.0, view.width()), max(1.0, view.height())
        room = width
        shown_on = self.scene().views() if self.scene() is not None else []
        if shown_on:  # the widget's own width, should the view box not have taken it yet
            room = max(1.0, min(width, shown_on[0].viewport().width() - 2.0))
        for wedge in wedges:
            label = self._labels[wedge.slice.key]
            label.setAnchor((0.0, 0.0))
            for style in range(3):  # the first that fits the width, narrower each time
                text = html.escape(self._label_text(wedge, inside=False, style=style)).replace("\n", "<br>")
                label.setHtml(f"<span style='color:{wedge.slice.color.name()}'>■</span> "
                              f"<span style='color:{theme.color('text').name()}'>{text}</span>")
                if label.textItem.boundingRect().width() <= room - LEAD_PX:
                    break
        stack = sum(self._labels[w.slice.key].textItem.boundingRect().height() for w in wedges)
        reach = OUTER_REACH + PULL_OUT + VIEW_MARGIN
        scale = max(2 * reach / width, 2 * reach / max(1.0, height - stack))
        top = reach
        bottom = top - height * scale
        half_x = width * scale / 2
        (x0, x1), (y0, y1) = view.viewRange()
        if abs(x0 + half_x) > 1e-9 * half_x or abs(y1 - top) > 1e-9 * top or abs(y0 - bottom) > 1e-9 * top:
            view.setRange(xRange=(-half_x, half_x), yRange=(bottom, top), padding=0)
        y = -reach
        for wedge in wedges:
            label = self._labels[wedge.slice.key]
            label.setPos(QPointF(-half_x + LEAD_PX * scale / 2, y))
            label.show()
            y -= label.textItem.boundingRect().height() * scale
        self.update()

    def _set_reach(self, view: pg.ViewBox, side_px: float) -> float:
        """Widen the view for labels `side_px` wide on each side of the pie; returns data units per pixel."""
        width, height = max(1.0, view.width()), max(1.0, view.height())
        reach = OUTER_REACH + PULL_OUT + VIEW_MARGIN
        # The pie shrinks for its labels, down to MIN_PIE_RADIUS_PX: a narrow view at projector sizes.
        room_x = max(width / 2 - side_px, min(width / 2, MIN_PIE_RADIUS_PX))
        scale = max(reach / room_x, reach / (height / 2))
        half_x, half_y = width * scale / 2, height * scale / 2
        (x0, x1), (y0, y1) = view.viewRange()
        if abs(x1 - x0 - 2 * half_x) > 1e-9 * half_x or abs(y1 - y0 - 2 * half_y) > 1e-9 * half_y:
            view.setRange(xRange=(-half_x, half_x), yRange=(-half_y, half_y), padding=0)
        return scale

    # ---- drawing -------------------------------------------------------------------------------
    def boundingRect(self) -> QRectF:
        reach = OUTER_REACH + max(PULL_OUT, LEAD_GAP)
        rect = QRectF(-reach, -reach, 2 * reach, 2 * reach)
        for points in self.lead_lines:
            for point in points:
                rect = rect.united(QRectF(point, point).adjusted(-0.01, -0.01, 0.01, 0.01))
        return rect

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        for piece in self._paths.values():
            path.addPath(piece)
        return path

    def paint(self, painter: QPainter, *args) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        separator = pg.mkPen(theme.color("base"), width=max(1.5, theme.current().axis_width))
        separator.setCosmetic(True)
        hover_edge = pg.mkPen(theme.color("text"), width=2.5)
        hover_edge.setCosmetic(True)
        # The hovered wedge last, so its outline lies over its neighbours.
        for wedge in sorted(self._wedges, key=lambda w: w.slice.key == self.hovered):
            key = wedge.slice.key
            color = QColor(wedge.slice.color)
            if key == self.hovered:
                color = color.lighter(118)
            painter.setBrush(pg.mkBrush(color))
            painter.setPen(hover_edge if key == self.hovered else separator)
            painter.drawPath(self._paths[key])
        if self.lead_lines:
            lead = pg.mkPen(theme.color("text"), width=max(1.0, theme.current().axis_width * 0.6))
            lead.setCosmetic(True)
            painter.setPen(lead)
            painter.setBrush(pg.mkBrush(None))
            for edge, elbow, anchor in self.lead_lines:
                painter.drawPolyline(QPolygonF([edge, elbow, anchor]))


def _with_alpha(color: QColor, alpha: int) -> QColor:
    result = QColor(color)
    result.setAlpha(alpha)
    return result


class PieView(pg.PlotWidget):
    """A PlotWidget holding one NestedPieItem: no axes, locked aspect, no mouse panning or zoom."""

    def __init__(self, title: str = "", parent=None) -> None:
        super().__init__(parent)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        for axis in ("left", "bottom"):
            self.hideAxis(axis)
        self.setAspectLocked(True, ratio=1.0)
        reach = INNER_RADIUS + OUTER_GAP + OUTER_WIDTH + PULL_OUT + VIEW_MARGIN
        self.setRange(xRange=(-reach, reach), yRange=(-reach, reach), padding=0)
        self.setMinimumSize(MIN_VIEW_PX, MIN_VIEW_PX)
        if title:
            self.setTitle(title)
        self.pie = NestedPieItem()
        self.addItem(self.pie)
        self.getViewBox().sigResized.connect(self.pie.fit_labels)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        pie = self.__dict__.get("pie")  # pyqtgraph resizes the view while it is being built
        if pie is not None:  # once the view box has taken its new size (the plot item's layout follows)
            QTimer.singleShot(0, self, pie.fit_labels)

    def set_title(self, title: str) -> None:
        self.setTitle(title)
        theme.style_plot(self)
        self._fit_title()

    def _fit_title(self) -> None:
        """At least as wide as the title: a wider title would widen the plot past the widget and cut the pie."""
        label = self.getPlotItem().titleLabel
        title_px = label.item.boundingRect().width() if label.text else 0.0
        key_px = QFontMetrics(theme.font(0.95, bold=True)).horizontalAdvance("■ attention")
        self.setMinimumWidth(max(MIN_VIEW_PX, round(title_px) + 16, key_px + 4 * LEAD_PX))

    def set_stale(self, stale: bool) -> None:
        self.pie.set_stale(stale)

    def restyle(self) -> None:
        """Re-colour text for the theme (the wedge colours come with the data)."""
        theme.style_plot(self)
        self._fit_title()  # and wide enough for a key line under the pie (its share wraps below it)
        self.pie._update_labels()
        self.pie._update_readout()
        self.pie.update()


__all__ = ["NestedPieItem", "PieSlice", "PieView", "wedge_path", "format_count", "format_share", "readable_text_color"]
