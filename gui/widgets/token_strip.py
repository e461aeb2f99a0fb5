"""The token strip: the current text as chips (position above, token below) that can be edited in place.

The strip only shows and asks. It never changes the lab's state itself: every edit is a signal
(`text_submitted`, `replace_requested`, `insert_requested`, `delete_requested`) that its owner turns
into an undoable change of `LabState`, and the owner hands the resulting tokens back with
`set_tokens`. That keeps one source of truth and lets Edit > Undo revert strip edits.

Chips are painted by one widget (gui.widgets.chip_row) rather than made of one QWidget each: a 128-token
text would otherwise create and lay out 128 buttons on every edit, a visible stall. A strip on a tab that is
not on screen holds a new tokenizer and text until it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.display import TOKEN_GLYPHS, display_token
from core.limits import MAX_TEXT_CHARS
from gui import theme
from gui.widgets.chip_row import ChipRow
from gui.widgets.flow_layout import FlowLayout, control_group

_FROM_GLYPH = {glyph: char for char, glyph in TOKEN_GLYPHS.items()}
TEXT_APPLY_DELAY_MS = 300  # typing pauses this long before the text is re-tokenized (one undo step per pause)


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
