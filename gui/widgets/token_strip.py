"""The token strip: the current text as chips (position above, token below) that can be edited in place.

The strip only shows and asks. It never changes the lab's state itself: every edit is a signal
(`text_submitted`, `replace_requested`, `insert_requested`, `delete_requested`) that its owner turns
into an undoable change of `LabState`, and the owner hands the resulting tokens back with
`set_tokens`. That keeps one source of truth and lets Edit > Undo revert strip edits.

Chips are painted by one widget rather than made of one QWidget each: a 128-token text would
otherwise create and lay out 128 buttons on every edit, a visible stall. A text of 10,000 tokens stays
cheap the same way: chip widths are measured once per distinct label, a chip's texts are laid out
only when it is first painted, paints and clicks look up the chips of their rows by bisection, and a
hidden strip lays its chips out when it is shown, not on every change it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, QSize, QStringListModel, Qt, QTimer, Signal
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
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from core.display import TOKEN_GLYPHS, display_token
from core.limits import MAX_TEXT_CHARS
from gui import theme
from gui.widgets.chip_layout import ChipGeometry, ChipRects, ChipTexts, wrap_chips
from gui.widgets.flow_layout import FlowLayout, control_group

_FROM_GLYPH = {glyph: char for char, glyph in TOKEN_GLYPHS.items()}
TEXT_APPLY_DELAY_MS = 300  # typing pauses this long before the text is re-tokenized (one undo step per pause)
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


class TokenStrip(QWidget):
    """Text field, token chips and the replace / insert / delete controls of one token sequence."""

    text_submitted = Signal(str)  # text that the tokenizer encodes cleanly
    replace_requested = Signal(int, int)  # position, new token id
    insert_requested = Signal(int, int)  # position (the new token goes before it), token id
    delete_requested = Signal(int)  # position
    selection_changed = Signal(int)  # the selected position (-1: none)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("token-strip")
        self._tokenizer = None
        self._ids: list[int] = []
        self._max_tokens = 1 << 30
        self._trained: int | None = None
        self._vocab_labels: list[str] = []
        self._vocab_pending = False  # a new tokenizer's labels are made when first needed
        self._chips_pending = self._text_pending = False  # changes that wait for the strip to be shown
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)

        text_row = QHBoxLayout()
        self.text_caption = QLabel("Text")
        self.text_edit = QLineEdit()
        self.text_edit.setObjectName("token-text")
        self.text_edit.setPlaceholderText("Type text; it is re-tokenized as you type")
        self.text_edit.setToolTip("The input text. Characters the tokenizer does not know are refused; "
                                  "the last valid tokens stay.")
        self.text_edit.setClearButtonEnabled(True)
        self.text_edit.setMaxLength(MAX_TEXT_CHARS + 1)  # one over the bound, so a longer paste is refused, not cut
        self.text_caption.setBuddy(self.text_edit)
        text_row.addWidget(self.text_caption)
        text_row.addWidget(self.text_edit, 1)
        layout.addLayout(text_row)

        self.message_label = QLabel("")
        self.message_label.setObjectName("token-message")
        self.message_label.setTextFormat(Qt.TextFormat.PlainText)  # messages quote the user's text
        self.message_label.setWordWrap(True)
        self.message_label.hide()
        layout.addWidget(self.message_label)

        self.chips = ChipRow()
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll.setWidget(self.chips)
        layout.addWidget(self.scroll)
        self.past_label = QLabel("")  # which positions lie past the trained length, when some do
        self.past_label.setObjectName("token-past-trained")
        self.past_label.setWordWrap(True)
        self.past_label.hide()
        layout.addWidget(self.past_label)

        # A flow, not a row: the controls wrap on a narrow window instead of widening it.
        self.edit_row = FlowLayout()
        self.position_label = QLabel("")
        self.position_label.setMinimumWidth(QFontMetrics(theme.font()).horizontalAdvance("position 000") + 8)
        self.replace_combo = QComboBox()
        self.replace_combo.setObjectName("token-replace")
        self.replace_combo.setEditable(True)
        self.replace_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.replace_combo.setMaxVisibleItems(20)
        self.replace_combo.setMinimumContentsLength(10)
        self.replace_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.replace_combo.setToolTip("Pick or type the token that replaces the selected chip (Enter applies)")
        self._vocab_model = QStringListModel(self)
        self.replace_combo.setModel(self._vocab_model)
        completer = QCompleter(self._vocab_model, self)
        completer.setFilterMode(Qt.MatchFlag.MatchStartsWith)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseSensitive)
        completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.replace_combo.setCompleter(completer)
        replace_caption = QLabel("Replace with")
        replace_caption.setBuddy(self.replace_combo)
        self.insert_button = QPushButton("Insert")
        self.insert_button.setToolTip("Insert a copy of the chosen token before the selected position (Ins)")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected token (Del)")
        # The position on its own: at projector text it and the replacement would outgrow a lesson's side.
        self.add_control_group(self.position_label)
        self.add_control_group(replace_caption, self.replace_combo)
        self.add_control_group(self.insert_button, self.delete_button)
        layout.addLayout(self.edit_row)

        self._text_timer = QTimer(self)
        self._text_timer.setSingleShot(True)
        self._text_timer.setInterval(TEXT_APPLY_DELAY_MS)
        self._text_timer.timeout.connect(self.submit_text)
        self.text_edit.textEdited.connect(lambda _text: self._text_timer.start())
        self.text_edit.returnPressed.connect(self.submit_text)
        self.chips.chip_clicked.connect(self.select)
        # A resize (the sidebar or the lesson dock opening) rewraps the chips: the strip follows their height.
        self.chips.height_changed.connect(self._fit_scroll)
        self.chips.chip_activated.connect(self._open_replacement)
        self.chips.typed.connect(self._start_typing)
        self.chips.delete_pressed.connect(self.delete_requested)
        self.chips.insert_pressed.connect(lambda index: self._insert(index))
        self.replace_combo.activated.connect(self._on_vocab_picked)
        self.replace_combo.lineEdit().returnPressed.connect(self._on_replacement_typed)
        self.insert_button.clicked.connect(lambda: self._insert(self.chips.selected))
        self.delete_button.clicked.connect(lambda: self.delete_requested.emit(self.chips.selected)
                                           if 0 <= self.chips.selected < len(self._ids) else None)
        self._update_controls()
        self.apply_theme()

    # ---- owner -> strip ------------------------------------------------------------------------
    def add_control_group(self, *widgets: QWidget, spacing: int = 6) -> None:
        """Widgets for the edit row that stay together on one line (the owner's undo / redo, options)."""
        self.edit_row.addWidget(control_group(*widgets, spacing=spacing))

    def set_tokenizer(self, tokenizer) -> None:
        """Use this tokenizer for labels, the vocabulary list and text validation (a mark of an edit goes with the
        old one)."""
        if tokenizer is self._tokenizer and (tokenizer is None or self._vocab_labels or self._vocab_pending):
            return  # the same tokenizer (an edit of the text passes it again): its labels are those shown
        self.chips.set_marked(-1)
        self._tokenizer = tokenizer
        self._vocab_labels = []
        self._vocab_pending = True
        if self._waits_until_shown():
            self._chips_pending = True
            return
        self._show_chips()

    def set_tokens(self, ids: Sequence[int]) -> None:
        """Show these tokens. A mark of an edit goes with the tokens it was made on: the owner marks the new ones."""
        ids = [int(i) for i in ids]
        if ids != self._ids:
            self.chips.set_marked(-1)
        self._ids = ids
        if self._waits_until_shown():
            self._chips_pending = self._text_pending = True
            return
        self._show_chips()
        self._sync_text_with_tokens()

    def set_text(self, text: str) -> None:
        """Show text in the field without submitting it (the state's text changed elsewhere)."""
        if self.text_edit.text() != text:
            self.text_edit.setText(text)

    def set_max_tokens(self, count: int, trained_length: int | None = None) -> None:
        """The longest input the model accepts, and the length it was trained at (positions past it are marked)."""
        self._max_tokens = max(1, int(count))
        self._trained = trained_length
        if self._waits_until_shown():
            self._chips_pending = True
            return
        self._show_chips()

    def set_marked(self, position: int) -> None:
        self.chips.set_marked(position)

    def show_message(self, text: str, about: QWidget | None = None) -> None:
        """A refusal under the strip, outlining the field it is about (the text field unless told otherwise)."""
        self.message_label.setText(text)
        self.message_label.setStyleSheet(f"color: {theme.current().warning};")
        self.message_label.setVisible(bool(text))
        about = about or self.text_edit
        for field, kind in ((self.text_edit, "QLineEdit"), (self.replace_combo, "QComboBox")):
            outlined = bool(text) and field is about
            field.setStyleSheet(f"{kind} {{ border: 2px solid {theme.current().warning}; }}" if outlined else "")

    def clear_message(self) -> None:
        self.show_message("")

    @property
    def message(self) -> str:
        return self.message_label.text() if self.message_label.isVisible() or self.message_label.text() else ""

    @property
    def tokens(self) -> list[int]:
        return list(self._ids)

    @property
    def selected(self) -> int:
        return self.chips.selected

    @property
    def marked(self) -> int:
        """The position drawn as the last edit, or -1."""
        return self.chips.marked

    # ---- actions (also the programmatic API) ---------------------------------------------------
    def select(self, position: int) -> None:
        position = min(position, len(self._ids) - 1)
        self.chips.set_selected(position)
        self._update_controls()
        self.selection_changed.emit(position)

    def replace_at(self, position: int, token_id: int) -> bool:
        """The chip's replace action: ask for tokens[position] = token_id. False if refused."""
        if not 0 <= position < len(self._ids):
            self.show_message(f"there is no token at position {position}")
            return False
        if self._tokenizer is not None and not 0 <= token_id < self._tokenizer.vocab_size:
            self.show_message(f"token id {token_id} is outside the vocabulary (0..{self._tokenizer.vocab_size - 1})",
                              about=self.replace_combo)
            return False
        self.clear_message()
        if self.chips.selected != position:
            self.select(position)
        if self._ids[position] != token_id:
            self.replace_requested.emit(position, int(token_id))
        return True

    def replace_with_text(self, position: int, text: str) -> bool:
        """Replace the token at position by the token whose text (or chip label) is `text`."""
        token_id = self.token_id_for(text)
        if token_id is None:
            return False
        return self.replace_at(position, token_id)

    def token_id_for(self, text: str) -> int | None:
        """The id of a typed token (its text or its chip label); shows a message and returns None if unknown."""
        if self._tokenizer is None or not text:
            return None
        self._make_vocab_labels()
        if text in self._vocab_labels:
            return self._vocab_labels.index(text)
        candidates = [text, "".join(_FROM_GLYPH.get(c, c) for c in text)]
        for candidate in candidates:
            try:
                return int(self._tokenizer.id_of(candidate))
            except Exception:  # each tokenizer raises its own unknown-token error
                continue
        self.show_message(f"{text!r} is not a token of this vocabulary ({self._tokenizer.vocab_size} tokens); "
                          "pick one from the list", about=self.replace_combo)
        return None

    def submit_text(self) -> None:
        """Validate the field's text with the tokenizer; emit text_submitted only if it encodes cleanly."""
        self._text_timer.stop()
        text = self.text_edit.text()
        if self._tokenizer is None:
            return
        if len(text) > MAX_TEXT_CHARS:  # before tokenizing: a long text takes long and draws a chip per token
            self.show_message(f"Not applied: the text is longer than the {MAX_TEXT_CHARS:,} characters the lab takes. "
                              "The tokens below are the last valid ones.")
            return
        try:
            ids = self._tokenizer.encode(text)
        except Exception as error:  # each tokenizer raises its own unknown-token error
            self.show_message(f"Not applied: {error}. The tokens below are the last valid ones.")
            return
        if len(ids) > self._max_tokens:
            self.show_message(f"Not applied: {len(ids)} tokens exceed the {self._max_tokens} the model accepts. "
                              "The tokens below are the last valid ones.")
            return
        self.clear_message()
        self.text_submitted.emit(text)

    # ---- internals -----------------------------------------------------------------------------
    def _label(self, token_id: int) -> str:
        try:
            return display_token(self._tokenizer.token_text(int(token_id)))
        except Exception:  # an id the tokenizer cannot name still gets a chip
            return f"<{token_id}>"

    def _waits_until_shown(self) -> bool:
        """On a tab that is not on screen, in a window that is: the vocabulary, the chips and the text field wait
        until the strip is shown (every panel has a strip, and a new text of 10,000 tokens or GPT-2's 50,257
        labels would be laid out for no one)."""
        return not self.isVisible() and self.window().isVisible()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._chips_pending:
            self._chips_pending = False
            self._show_chips()
            if self.chips.selected >= 0:  # selected while hidden: scrolled to now
                self.chips.scroll_to_soon(self.chips.selected)
        if self._text_pending:
            self._text_pending = False
            self._sync_text_with_tokens()

    def _make_vocab_labels(self) -> None:
        if self._vocab_pending:
            self._vocab_pending = False
            tokenizer = self._tokenizer
            self._vocab_labels = [self._label(i) for i in range(tokenizer.vocab_size)] if tokenizer is not None else []
            self._vocab_model.setStringList(self._vocab_labels)

    def _show_chips(self) -> None:
        self._make_vocab_labels()
        known, ids = self._vocab_labels, self._ids  # every id's label, made once per tokenizer
        if self._tokenizer is None:
            labels = [str(i) for i in ids]
        elif not ids or (min(ids) >= 0 and max(ids) < len(known)):
            labels = list(map(known.__getitem__, ids))  # in C: a 10,000-token text costs no Python loop
        else:
            labels = [known[i] if 0 <= i < len(known) else self._label(i) for i in ids]
        self.chips.set_chips(self._ids, labels)
        past = self._trained is not None and len(self._ids) > self._trained
        self.chips.set_trained_length(self._trained if past else 1 << 30)
        self.past_label.setText(f"Positions {self._trained} and beyond (dashed) lie past the length the model was "
                                f"trained at ({self._trained}); its positions still place them." if past else "")
        self.past_label.setVisible(past)
        self._fit_scroll()
        self._update_controls()

    def _fit_scroll(self) -> None:
        """As tall as the chips need, between one and a few rows (fewer on a projector: the plots need room)."""
        row = self.chips.row_height()
        lines = 2 if theme.font_scale() > 1.2 else 3
        needed = self.chips.height() if self.chips.height() > 0 else row
        self.scroll.setMinimumHeight(min(needed, row * 2) + 2)
        self.scroll.setMaximumHeight(min(max(needed, row), row * lines) + 2)

    def _sync_text_with_tokens(self) -> None:
        """Chip edits change tokens, not text: show the decoded tokens unless the field already encodes to them."""
        if self._tokenizer is None or self._text_timer.isActive():
            return
        try:
            if self._tokenizer.encode(self.text_edit.text()) == self._ids:
                return
        except Exception:  # the field holds refused text; replace it by what the tokens say
            pass
        try:
            self.text_edit.setText(self._tokenizer.decode(self._ids))
        except Exception:  # ids the tokenizer cannot decode: leave the field as it is
            pass

    def _update_controls(self) -> None:
        index, count = self.chips.selected, len(self._ids)
        valid = 0 <= index < count
        self.position_label.setText(f"position {index}" if valid else "no chip selected")
        self.delete_button.setEnabled(valid)
        self.insert_button.setEnabled(valid and count < self._max_tokens)
        self.replace_combo.setEnabled(valid and self._tokenizer is not None)
        if valid and self._tokenizer is not None and 0 <= self._ids[index] < len(self._vocab_labels):
            self.replace_combo.blockSignals(True)
            self.replace_combo.setCurrentIndex(self._ids[index])
            self.replace_combo.blockSignals(False)

    def _open_replacement(self, index: int) -> None:
        self.select(index)
        self.replace_combo.setFocus()
        self.replace_combo.showPopup()

    def _start_typing(self, index: int, text: str) -> None:
        self.select(index)
        self.replace_combo.setFocus()
        self.replace_combo.setEditText(text)

    def _on_vocab_picked(self, row: int) -> None:
        if row >= 0:
            self.replace_at(self.chips.selected, row)

    def _on_replacement_typed(self) -> None:
        self.replace_with_text(self.chips.selected, self.replace_combo.currentText())

    def _insert(self, index: int) -> None:
        if not 0 <= index < len(self._ids):
            return
        if len(self._ids) >= self._max_tokens:
            self.show_message(f"Not inserted: the model's context holds {self._max_tokens} tokens.")
            return
        row = self.replace_combo.currentIndex()
        token_id = row if 0 <= row < len(self._vocab_labels) else self._ids[index]
        self.insert_requested.emit(index, token_id)

    def apply_theme(self) -> None:
        """Chips are painted with theme fonts: re-measure them when the theme or font scale changes."""
        self.chips.relayout()
        self._fit_scroll()
        self.position_label.setMinimumWidth(QFontMetrics(theme.font()).horizontalAdvance("position 000") + 8)
        if self.message_label.isVisible():
            self.show_message(self.message_label.text())


__all__ = ["TokenStrip", "ChipRow", "TEXT_APPLY_DELAY_MS"]
