"""The model as a block diagram: a QGraphicsView that draws the layout core.diagram_layout computes.

The view only draws and answers the pointer: `diagram_parts(config, seq_len)` (core.diagram_layout)
places every box and arrow in lines of text, and the view scales that to the font.

"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontInfo, QFontMetricsF, QPainter, QPainterPath, QPen, QPolygonF, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QWidget,
)

from core.diagram_layout import EXPERT_SHADOW, Diagram, Link, Part, describe_part
from gui import theme
from gui.theme import MIN_TEXT_PX

MIN_VIEW_SCALE = 0.55  # below this the view scrolls sideways rather than shrinking text further
# Shrinking to the width stops where the smallest text (a box's detail line, a marker) would fall under
# the legibility rule's MIN_TEXT_PX, or, for text smaller than that at full size (a laptop at 100%), under
# MIN_SHRUNK_TEXT_PX: a wide encoder-decoder scrolls sideways instead.
MIN_SHRUNK_TEXT_PX = 10
SMALLEST_TEXT = 0.8  # relative size of the smallest font the diagram draws (theme.font(relative))
KIND_COLORS = {  # Okabe-Ito indices (theme.series_color); None: the theme's muted grey
    "attention": 0, "cross_attention": 0, "memory": 0,
    "norm": 1, "final_norm": 1,
    "ffn": 2, "ffn_gate": 2, "ffn_up": 2, "ffn_down": 2, "ffn_multiply": 2, "experts": 2,
    "router": 3,
    "token_embedding": 4, "position_embedding": 4, "head": 4,
}


def kind_color(kind: str) -> QColor:
    index = KIND_COLORS.get(kind)
    if index is None:
        return theme.color("muted")
    return theme.series_color(index)



ABOVE = frozenset({"router", "cross_attention"})  # parts whose annotation is written above the box, not beside it

class PartItem(QGraphicsPathItem):
    """A box (or circle) of the diagram: reports hover and clicks to its view."""

    def __init__(self, part: Part, path: QPainterPath, view: BlockDiagramView) -> None:
        super().__init__(path)
        self.part = part
        self._view = view
        self.base_pen = QPen()
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def set_highlighted(self, on: bool) -> None:
        if on:
            pen = QPen(theme.color("accent"), self.base_pen.widthF() * 2.2)
            self.setPen(pen)
        else:
            self.setPen(self.base_pen)

    def hoverEnterEvent(self, event) -> None:
        self._view.set_hovered(self.part)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event) -> None:
        self._view.set_hovered(None)
        super().hoverLeaveEvent(event)

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._view.part_clicked.emit(self.part)
            event.accept()
            return
        super().mousePressEvent(event)


class BlockDiagramView(QGraphicsView):
    """Draws a Diagram; hover a part for its description, click it to ask for the panel that studies it."""

    part_hovered = Signal(object)  # Part, or None when the mouse left every part
    part_clicked = Signal(object)  # Part

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("block-diagram")
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.setMouseTracking(True)
        self.diagram: Diagram | None = None
        self.items: dict[str, PartItem] = {}
        self.hovered: Part | None = None
        self.annotations: dict[str, str] = {}  # part key -> a short reading beside it (the followed token)
        self.annotation_items: dict[str, QGraphicsSimpleTextItem] = {}
        self.unit = 16.0  # pixels per line of text, set from the theme font on every rebuild

    # ---- public --------------------------------------------------------------------------------
    def set_diagram(self, diagram: Diagram) -> None:
        another_model = self.diagram is None or self.diagram.config.name != diagram.config.name
        self.diagram = diagram
        self.rebuild()
        if another_model:  # a new model starts at its input; a changed depth keeps the place being read
            self.verticalScrollBar().setValue(0)
            self.horizontalScrollBar().setValue(0)

    def rebuild(self) -> None:
        """Redraw the whole scene (a new config, new T, or a new theme / font scale)."""
        scene = self.scene()
        hovered_key = self.hovered.key if self.hovered is not None else None
        scene.clear()
        self.items = {}
        self.annotation_items = {}
        diagram = self.diagram
        self.setBackgroundBrush(QBrush(theme.color("base")))
        if diagram is None:
            return
        self.unit = QFontMetricsF(theme.font()).height()
        for part in diagram.parts:
            if part.kind == "block":
                self._draw_part(part, z=0)
        for link in diagram.links:
            self._draw_link(link)
        for part in diagram.parts:
            if part.kind != "block":
                self._draw_part(part, z=3 if part.kind.endswith("_marker") else 2)
        u = self.unit
        scene.setSceneRect(QRectF(0, 0, diagram.width * u, diagram.height * u))
        self._draw_annotations()
        if hovered_key in self.items:
            self.hovered = self.items[hovered_key].part
            self.items[hovered_key].set_highlighted(True)
        else:
            self.hovered = None
        self.fit()

    def set_annotations(self, annotations: dict[str, str]) -> None:
        """Write a short text beside each part named (keys not drawn are skipped); {} removes them all."""
        self.annotations = dict(annotations)
        for item in self.annotation_items.values():
            self.scene().removeItem(item)
        self.annotation_items = {}
        self._draw_annotations()

    def _draw_annotations(self) -> None:
        u = self.unit
        for key, text in self.annotations.items():
            if key not in self.items:
                continue
            part = self.items[key].part
            label = QGraphicsSimpleTextItem(text)
            label.setFont(theme.font(0.82, bold=True))
            label.setBrush(QBrush(theme.color("primary")))
            label.setZValue(4)
            bounds = label.boundingRect()
            rect = self._rect(part)
            # A ⊕ is read on the stream's free side; a box on the stream, beside it on the branch side.
            side = -part.branch_side if part.kind == "add" else part.branch_side
            gap = 0.45 * u
            if part.kind in ABOVE:  # beside these sit the next box or the memory bus: their reading goes above
                label.setPos(rect.left(), rect.top() - 0.15 * u - bounds.height())
            else:
                x = rect.right() + gap if side > 0 else rect.left() - gap - bounds.width()
                label.setPos(x, rect.center().y() - bounds.height() / 2)
            self.scene().addItem(label)
            self.annotation_items[key] = label

    def fit(self) -> None:
        """Full size when it fits the width; shrink to the width down to MIN_VIEW_SCALE, then scroll."""
        rect = self.sceneRect()
        if rect.width() <= 0:
            return
        available = max(1.0, self.viewport().width() - 2)
        scale = min(1.0, max(self.min_scale(), available / rect.width()))
        self.setTransform(QTransform.fromScale(scale, scale))

    @staticmethod
    def min_scale() -> float:
        """How far the diagram may shrink: its smallest text stays legible."""
        smallest = max(1, QFontInfo(theme.font(SMALLEST_TEXT)).pixelSize())
        floor = MIN_TEXT_PX if smallest >= MIN_TEXT_PX else min(smallest, MIN_SHRUNK_TEXT_PX)
        return min(1.0, max(MIN_VIEW_SCALE, floor / smallest))

    def set_hovered(self, part: Part | None) -> None:
        if self.hovered is not None and self.hovered.key in self.items:
            self.items[self.hovered.key].set_highlighted(False)
        self.hovered = part
        if part is not None and part.key in self.items:
            self.items[part.key].set_highlighted(True)
        self.part_hovered.emit(part)

    def hover_key(self, key: str) -> Part:
        """Do what hovering the part with this key does (for keyboard users and tests)."""
        part = self.items[key].part
        self.set_hovered(part)
        return part

    def item_center(self, key: str):
        """The part's centre in viewport pixels (for tests that move the real mouse)."""
        return self.mapFromScene(self.items[key].sceneBoundingRect().center())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    # ---- drawing -------------------------------------------------------------------------------
    def _rect(self, part: Part) -> QRectF:
        x, y, w, h = part.rect
        u = self.unit
        return QRectF(x * u, y * u, w * u, h * u)

    def _draw_part(self, part: Part, z: float) -> None:
        current = theme.current()
        rect = self._rect(part)
        u = self.unit
        path = QPainterPath()
        round_kinds = ("add", "ffn_multiply")
        if part.kind in round_kinds:
            path.addEllipse(rect)
        else:
            radius = 0.15 * u if part.kind == "block" else 0.35 * u
            path.addRoundedRect(rect, radius, radius)
        item = PartItem(part, path, self)
        color = kind_color(part.kind)
        width = max(1.2, current.line_width * 0.75)
        pen = QPen(color, width)
        fill = QColor(color)
        fill.setAlpha(40)
        base = theme.color("base")
        if part.kind == "block":
            pen = QPen(theme.color("grid"), max(1.0, current.axis_width), Qt.PenStyle.DashLine)
            fill = QColor(theme.current().alternate)
            fill.setAlpha(120)
        elif part.kind in ("ellipsis", "position_note"):
            pen = QPen(theme.color("muted"), width, Qt.PenStyle.DotLine)
            fill = QColor(base)
        elif part.kind in ("input", "output", "memory") and part.kind != "memory":
            fill = QColor(theme.current().alternate)
        elif part.kind in round_kinds:
            pen = QPen(theme.color("text"), width)
            fill = QColor(base)
        elif part.kind.endswith("_marker"):
            pen = QPen(theme.color("highlight"), width)
            fill = QColor(base)
        if part.kind not in ("block", "ellipsis", "position_note") and fill.alpha() < 255:
            # Opaque boxes: the stream and arrows pass behind them, never through their text.
            fill = _blend(base, color, fill.alpha() / 255)
        item.base_pen = pen
        item.setPen(pen)
        item.setBrush(QBrush(fill))
        item.setZValue(z)
        item.setToolTip(_plain(describe_part(part, self.diagram.seq_len)))
        self.scene().addItem(item)
        self.items[part.key] = item
        if part.kind == "experts":
            # Two offset copies behind the box read as "a stack of experts".
            for step in (2, 1):
                shadow = QGraphicsPathItem(path.translated(EXPERT_SHADOW * u * step, -EXPERT_SHADOW * u * step))
                shadow.setPen(pen)
                shadow.setBrush(QBrush(fill))
                shadow.setZValue(z - 0.1 * step)
                self.scene().addItem(shadow)
        self._draw_text(part, item, rect)

    def _draw_text(self, part: Part, item: PartItem, rect: QRectF) -> None:
        text_color = theme.color("text")
        if part.kind == "add":
            self._centered(item, "+", theme.font(1.25, bold=True), text_color, rect, rect.center().y())
            return
        if part.kind == "ffn_multiply":
            self._centered(item, "×", theme.font(1.15, bold=True), text_color, rect, rect.center().y())
            return
        if part.kind == "block":
            self._frame_title(part, item)
            return
        muted = part.kind in ("ellipsis", "position_note")
        color = theme.color("muted") if muted else text_color
        if part.kind.endswith("_marker"):
            self._centered(item, part.label, theme.font(0.8, bold=True), theme.color("highlight"), rect, rect.center().y())
            return
        title_font = theme.font(1.0, bold=True)
        detail_font = theme.font(0.82)
        title_h = QFontMetricsF(title_font).height()
        detail_h = QFontMetricsF(detail_font).height() if part.detail else 0.0
        if rect.height() < title_h + detail_h:  # a small box keeps its title only
            detail_h = 0.0
        top = rect.center().y() - (title_h + detail_h) / 2
        self._centered(item, part.label, title_font, color, rect, top + title_h / 2)
        if detail_h:
            self._centered(item, part.detail, detail_font, theme.color("muted") if not muted else color, rect,
                           top + title_h + detail_h / 2)

    def _frame_title(self, part: Part, item: PartItem) -> None:
        """'Block 3 · 1.45B parameters' in the header on the branch side; only the name when room is short."""
        u = self.unit
        x, y, w, h = part.text_rect or part.rect
        room = QRectF(x * u, y * u, w * u, h * u)
        title = QGraphicsSimpleTextItem(f"{part.label}  ·  {part.detail}", item)
        title.setFont(theme.font(0.9, bold=True))
        title.setBrush(QBrush(theme.color("muted")))
        if title.boundingRect().width() > room.width():
            title.setText(part.label)
        bounds = title.boundingRect()
        scale = min(1.0, room.width() / max(1.0, bounds.width()))
        title.setScale(scale)
        left = room.right() - bounds.width() * scale if part.branch_side > 0 else room.left()
        title.setPos(left, room.center().y() - bounds.height() * scale / 2)

    def _centered(self, parent: QGraphicsItem, text: str, font, color: QColor, rect: QRectF, center_y: float) -> None:
        """Text centred in rect at center_y, shrunk (never clipped) when wider than the box."""
        item = QGraphicsSimpleTextItem(text, parent)
        item.setFont(font)
        item.setBrush(QBrush(color))
        bounds = item.boundingRect()
        room = max(1.0, rect.width() - 0.5 * self.unit)
        scale = min(1.0, room / max(1.0, bounds.width()))
        item.setScale(scale)
        item.setPos(rect.center().x() - bounds.width() * scale / 2, center_y - bounds.height() * scale / 2)

    def _draw_link(self, link: Link) -> None:
        current = theme.current()
        u = self.unit
        points = [QPointF(x * u, y * u) for x, y in link.points]
        if link.kind == "stream":
            color, width, style = theme.color("text"), max(2.0, current.line_width * 1.3), Qt.PenStyle.SolidLine
        elif link.kind == "cross":
            color, width, style = theme.color("primary"), max(1.5, current.line_width), Qt.PenStyle.SolidLine
        elif link.kind == "tied":
            color, width, style = theme.color("highlight"), max(1.5, current.line_width * 0.8), Qt.PenStyle.DashLine
        else:
            color, width, style = theme.color("text"), max(1.2, current.line_width * 0.7), Qt.PenStyle.SolidLine
        path = QPainterPath(points[0])
        for point in points[1:]:
            path.lineTo(point)
        line = QGraphicsPathItem(path)
        pen = QPen(color, width, style)
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
        line.setPen(pen)
        line.setZValue(1)
        self.scene().addItem(line)
        if link.arrow and len(points) >= 2:
            self._arrowhead(points[-2], points[-1], color, width)
        if link.label:
            a, b = points[1], points[2]  # the tied link's long vertical run
            label = QGraphicsSimpleTextItem(link.label)
            label.setFont(theme.font(0.9, bold=True))
            label.setBrush(QBrush(color))
            bounds = label.boundingRect()
            pad = 0.2 * u
            middle = QPointF((a.x() + b.x()) / 2, (a.y() + b.y()) / 2)
            backdrop = QGraphicsRectItem(QRectF(middle.x() - bounds.width() / 2 - pad, middle.y() - bounds.height() / 2,
                                                bounds.width() + 2 * pad, bounds.height()))
            backdrop.setBrush(QBrush(theme.color("base")))
            backdrop.setPen(QPen(Qt.PenStyle.NoPen))
            backdrop.setZValue(1.5)
            label.setPos(middle.x() - bounds.width() / 2, middle.y() - bounds.height() / 2)
            label.setZValue(1.6)
            self.scene().addItem(backdrop)
            self.scene().addItem(label)

    def _arrowhead(self, start: QPointF, end: QPointF, color: QColor, width: float) -> None:
        dx, dy = end.x() - start.x(), end.y() - start.y()
        length = math.hypot(dx, dy)
        if length == 0:
            return
        ux, uy = dx / length, dy / length
        size = max(0.42 * self.unit, 2.6 * width)
        half = size * 0.5
        base = QPointF(end.x() - ux * size, end.y() - uy * size)
        left = QPointF(base.x() - uy * half, base.y() + ux * half)
        right = QPointF(base.x() + uy * half, base.y() - ux * half)
        polygon = QPolygonF([end, left, right])
        path = QPainterPath()
        path.addPolygon(polygon)
        path.closeSubpath()
        head = QGraphicsPathItem(path)
        head.setPen(QPen(Qt.PenStyle.NoPen))
        head.setBrush(QBrush(color))
        head.setZValue(2.5)
        self.scene().addItem(head)


class DiagramPicture(QWidget):
    """The whole diagram as one widget, for File > Export (the view itself shows only what is scrolled in)."""

    def __init__(self, view: BlockDiagramView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.setObjectName("block-diagram-picture")

    def sync_size(self) -> None:
        rect = self.view.sceneRect()
        self.resize(max(16, round(rect.width())), max(16, round(rect.height())))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        try:
            painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
            painter.fillRect(QRectF(self.rect()), theme.color("base"))
            self.view.scene().render(painter, QRectF(self.rect()), self.view.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        finally:
            painter.end()


def _blend(base: QColor, color: QColor, amount: float) -> QColor:
    return QColor(
        round(base.red() + (color.red() - base.red()) * amount),
        round(base.green() + (color.green() - base.green()) * amount),
        round(base.blue() + (color.blue() - base.blue()) * amount),
    )


def _plain(rich: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", rich.replace("<br>", "\n")).replace("&nbsp;", " ")


__all__ = ["BlockDiagramView", "DiagramPicture", "PartItem", "kind_color"]
