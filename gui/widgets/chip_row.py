"""The token chips of a strip in wrapped rows, painted by one widget (see gui.widgets.token_strip).

A text of 10,000 tokens stays cheap: chip widths are measured once per distinct label, a chip's texts are laid out
only when it is first painted, paints and clicks look up the chips of their rows by bisection, and a hidden row lays
its chips out when it is shown, not on every change it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFontMetrics,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QResizeEvent,
    QStaticText,
)
from PySide6.QtWidgets import QScrollArea, QSizePolicy, QToolTip, QWidget

from gui import theme
from gui.widgets.chip_layout import ChipGeometry, ChipRects, ChipTexts, wrap_chips

FEW_CHIPS = 64  # changed chips repainted one by one; more are repainted with the whole strip


class ChipRow(QWidget):
    """Token chips in wrapped rows; click selects, double-click or Enter asks for a replacement."""

    chip_clicked = Signal(int)
    chip_activated = Signal(int)  # double-click / Enter / F2: open the replacement editor
    typed = Signal(int, str)  # printable text typed while a chip is selected
    delete_pressed = Signal(int)
    insert_pressed = Signal(int)
    height_changed = Signal()  # the chips rewrapped into another number of rows

    GAP = 4

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("token chips")
        self._labels: list[str] = []
        self._ids: list[int] = []
        self._selected = -1
        self._marked = -1  # the position of the last edit, drawn in the highlight colour
        self._trained = 1 << 30  # positions from here on lie past the model's trained length: dashed, numbered in warning
        self._geometry = ChipGeometry(ChipRects(), 0)
        self._texts, self._index_texts = ChipTexts(), ChipTexts()  # of the chips painted so far
        self._widths: dict[str, int] = {}  # chip width by label, at the fonts of _fonts_key
        self._fonts_key: tuple[str, str] | None = None
        self._layout_width = -1
        self._layout_pending = False  # chips handed over while hidden: laid out when shown
        self._reveal = -1  # a chip to scroll into view once laid out (the first past the trained length)

    # ---- data ----------------------------------------------------------------------------------
    def set_chips(self, ids: Sequence[int], labels: Sequence[str]) -> None:
        old_labels, old_rects = self._labels, self._geometry.rects
        self._ids, self._labels = list(ids), list(labels)
        if self._selected >= len(self._labels):
            self._selected = len(self._labels) - 1
        if self._layout_pending or not self.isVisible():
            self._defer_layout()
            return
        same_width = self._layout_width == self.width()
        self._layout_width = self.width()
        changed = [(old, new) for old, new in zip(old_labels, self._labels) if old != new]
        if (same_width and len(old_labels) == len(self._labels) == len(old_rects)
                and self._chip_widths([old for old, _ in changed]) == self._chip_widths([new for _, new in changed])):
            geometry = self._geometry  # a replacement of the same width at the same strip width: nothing moves
        else:
            geometry = self._compute_geometry(max(60, self.width()))
        if geometry.rects == old_rects and len(old_labels) == len(self._labels):
            # A replacement of the same width: repaint only the chips whose text changed.
            self._geometry = geometry
            changed_at = [index for index, (old, new) in enumerate(zip(old_labels, self._labels)) if old != new]
            if len(changed_at) > FEW_CHIPS:  # a retokenized text: one repaint of what is on screen, not a region a chip
                self._texts.clear()
                self.update()
                return
            for index in changed_at:
                self._texts.drop(index)
                self._update_chip(index)
            return
        self._apply_geometry(geometry)

    def set_selected(self, index: int) -> None:
        if index != self._selected:
            previous, self._selected = self._selected, index
            self._update_chip(previous)
            self._update_chip(index)
            if 0 <= index < len(self._geometry.rects) and not self._layout_pending:
                self._ensure_visible(self._geometry.rects[index])

    def set_marked(self, index: int) -> None:
        if index != self._marked:
            previous, self._marked = self._marked, index
            self._update_chip(previous)
            self._update_chip(index)

    def set_trained_length(self, length: int) -> None:
        if length != self._trained:
            self._trained = length
            self.update()
            if length < len(self._labels):  # the first dashed chip may lie below the strip's visible rows
                self.scroll_to_soon(length)

    def scroll_to_soon(self, index: int) -> None:
        """Bring this chip into the strip's rows once the scroll area has taken the chips' new height."""
        self._reveal = index
        QTimer.singleShot(0, self, self._reveal_if_laid_out)

    def _reveal_if_laid_out(self) -> None:
        if 0 <= self._reveal < len(self._geometry.rects) and not self._layout_pending and self.isVisible():
            self._ensure_visible(self._geometry.rects[self._reveal])
            self._reveal = -1

    @property
    def selected(self) -> int:
        return self._selected

    @property
    def marked(self) -> int:
        return self._marked

    def chip_rect(self, index: int) -> QRect:
        self._lay_out_if_pending()
        return self._geometry.rects[index]

    # ---- geometry ------------------------------------------------------------------------------
    def _fonts(self):
        return theme.font(), theme.font(0.72)

    def relayout(self) -> None:
        if not self.isVisible():
            self._defer_layout()
            return
        self._layout_pending = False
        self._layout_width = self.width()
        self._apply_geometry(self._compute_geometry(max(60, self.width())))

    def _defer_layout(self) -> None:
        """A hidden strip measures nothing: the chips are laid out once, when it is shown (or asked where a chip is)."""
        self._layout_pending = True
        self._texts.clear()

    def _lay_out_if_pending(self) -> None:
        if self._layout_pending:
            self._layout_pending = False
            self._layout_width = self.width()
            self._apply_geometry(self._compute_geometry(max(60, self.width())))

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._layout_pending:
            self.relayout()
            if 0 <= self._selected < len(self._geometry.rects):  # selected while hidden: scrolled to now
                self._ensure_visible(self._geometry.rects[self._selected])
        if self._reveal >= 0:
            QTimer.singleShot(0, self, self._reveal_if_laid_out)

    def _apply_geometry(self, geometry: ChipGeometry) -> None:
        self._geometry = geometry
        self._texts.clear()  # the labels may have changed: each chip's text is laid out again when painted
        if self.minimumHeight() != geometry.height:
            self.setFixedHeight(geometry.height)
            self.height_changed.emit()
        self.update()

    def _check_fonts(self) -> None:
        """Forget texts and widths measured at other fonts (a theme or text-size change)."""
        key = tuple(font.key() for font in self._fonts())
        if key != self._fonts_key:
            self._fonts_key = key
            self._texts.clear()
            self._index_texts.clear()
            self._widths.clear()

    def _chip_text(self, index: int) -> QStaticText:
        return self._texts.get(index, self._labels[index], self._fonts()[0])

    def _index_text(self, index: int) -> QStaticText:
        return self._index_texts.get(index, str(index), self._fonts()[1])

    def _update_chip(self, index: int) -> None:
        if 0 <= index < len(self._geometry.rects):
            index_height = QFontMetrics(self._fonts()[1]).height()
            self.update(self._geometry.rects[index].adjusted(-2, -index_height - 2, 2, 2))

    def row_height(self) -> int:
        """The height of one row of chips (index line, chip, gaps) at the current font."""
        chip_metrics, index_metrics = (QFontMetrics(font) for font in self._fonts())
        return index_metrics.height() + chip_metrics.height() + max(4, chip_metrics.height() // 3) + self.GAP * 2

    def _chip_widths(self, labels: Sequence[str]) -> list[int]:
        """Each label's chip width: its text, padded, at least its index's and its own height."""
        self._check_fonts()
        widths = self._widths
        missing = [label for label in dict.fromkeys(labels) if label not in widths]
        if missing:  # a text of 10,000 characters has a few dozen distinct labels: each is measured once
            chip_font, index_font = self._fonts()
            chip_metrics, index_metrics = QFontMetrics(chip_font), QFontMetrics(index_font)
            pad = max(4, chip_metrics.height() // 3)
            least = max(index_metrics.horizontalAdvance("000") + 4, chip_metrics.height() + pad)
            for label in missing:
                widths[label] = max(chip_metrics.horizontalAdvance(label) + 2 * pad, least)
        return [widths[label] for label in labels]

    def _compute_geometry(self, width: int) -> ChipGeometry:
        chip_metrics, index_metrics = (QFontMetrics(font) for font in self._fonts())
        chip_height = chip_metrics.height() + max(4, chip_metrics.height() // 3)
        return wrap_chips(self._chip_widths(self._labels), width, self.GAP, index_metrics.height(), chip_height)

    def sizeHint(self) -> QSize:
        return QSize(400, max(self._geometry.height, 40))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != self._layout_width:
            self.relayout()

    def index_at(self, point: QPoint) -> int:
        self._lay_out_if_pending()
        index_height = QFontMetrics(self._fonts()[1]).height()
        for index in self._geometry.rects.between(point.y(), point.y(), index_height):
            if self._geometry.rects[index].adjusted(-self.GAP // 2, -index_height, self.GAP // 2, 0).contains(point):
                return index
        return -1

    def _ensure_visible(self, rect: QRect) -> None:
        scroll = self.parentWidget().parentWidget() if self.parentWidget() else None
        if isinstance(scroll, QScrollArea):
            scroll.ensureVisible(rect.center().x(), rect.center().y(), 10, rect.height())

    # ---- painting ------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        self._lay_out_if_pending()
        self._check_fonts()
        painter = QPainter(self)
        palette = theme.current()
        chip_font, index_font = self._fonts()
        index_height = QFontMetrics(index_font).height()
        exposed = event.rect()
        accent, highlight = QColor(palette.accent), theme.color("highlight")
        text_color, muted = QColor(palette.text), QColor(palette.muted)
        rects = self._geometry.rects
        visible = [i for i in rects.between(exposed.top(), exposed.bottom(), index_height)
                   if rects[i].adjusted(0, -index_height, 0, 0).intersects(exposed)]
        # Grouped by font and pen: switching the painter's state per chip costs more than the drawing.
        painter.setFont(index_font)
        painter.setPen(muted)
        warning = QColor(palette.warning)
        for index in visible:
            rect = self._geometry.rects[index]
            if index == self._selected or index >= self._trained:
                painter.setPen(accent if index == self._selected else warning)
            above = QRect(rect.x(), rect.y() - index_height, rect.width(), index_height)
            self._draw_centered(painter, self._index_text(index), above)
            if index == self._selected or index >= self._trained:
                painter.setPen(muted)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        plain_pen, plain_brush = QPen(theme.color("grid"), 1.2), QColor(palette.alternate)
        painter.setPen(plain_pen)
        painter.setBrush(plain_brush)
        special = {self._selected, self._marked}
        for index in visible:
            rect = QRectF(self._geometry.rects[index]).adjusted(0.5, 0.5, -0.5, -0.5)
            if index in special:
                selected, marked = index == self._selected, index == self._marked
                painter.setPen(QPen(highlight if marked else accent, 2.5 if marked else 1.2))
                painter.setBrush(accent if selected else plain_brush)
                painter.drawRoundedRect(rect, 4.0, 4.0)
                painter.setPen(plain_pen)
                painter.setBrush(plain_brush)
            elif index >= self._trained:
                painter.setPen(QPen(warning, 1.2, Qt.PenStyle.DashLine))
                painter.drawRoundedRect(rect, 4.0, 4.0)
                painter.setPen(plain_pen)
            else:
                painter.drawRoundedRect(rect, 4.0, 4.0)
        painter.setFont(chip_font)
        painter.setPen(text_color)
        for index in visible:
            if index == self._selected:
                painter.setPen(QColor("#ffffff"))
            self._draw_centered(painter, self._chip_text(index), self._geometry.rects[index])
            if index == self._selected:
                painter.setPen(text_color)
        if not self._labels:
            painter.setPen(muted)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no tokens: type some text above")
        painter.end()

    @staticmethod
    def _draw_centered(painter: QPainter, text: QStaticText, rect: QRect) -> None:
        size = text.size()
        painter.drawStaticText(QPointF(rect.x() + (rect.width() - size.width()) / 2,
                                       rect.y() + (rect.height() - size.height()) / 2), text)

    # ---- input ---------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position().toPoint())
        if index >= 0:
            self.setFocus()
            self.chip_clicked.emit(index)
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position().toPoint())
        if index >= 0:
            self.chip_activated.emit(index)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position().toPoint())
        if index >= 0:
            QToolTip.showText(event.globalPosition().toPoint(),
                              f"position {index}: {self._labels[index]} (id {self._ids[index]})\n"
                              "double-click or type to replace; Del deletes, Ins inserts a copy", self)
        else:
            QToolTip.hideText()
        super().mouseMoveEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, count, index = event.key(), len(self._labels), self._selected
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right) and count:
            step = -1 if key == Qt.Key.Key_Left else 1
            self.chip_clicked.emit(min(count - 1, max(0, index + step)))
        elif key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and 0 <= index < count:
            self.delete_pressed.emit(index)
        elif key == Qt.Key.Key_Insert and 0 <= index < count:
            self.insert_pressed.emit(index)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_F2) and 0 <= index < count:
            self.chip_activated.emit(index)
        elif event.text() and event.text().isprintable() and 0 <= index < count:
            self.typed.emit(index, event.text())
        else:
            super().keyPressEvent(event)
