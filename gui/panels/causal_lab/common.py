"""What the causal lab's views share: the answer and foil tokens, the corrupted input, plots and labels."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLineEdit, QSpinBox, QWidget

from gui.panels.common import token_label
from gui.widgets.token_strip import TokenStrip

MAX_TOKEN_CHARS = 200  # an answer or foil: one token's text
LAST = -1  # a position spin's special value: the last token
POSITION_TIP = ("a decoder's logits there score the next token, an encoder's the token that belongs at that position "
                "(a blank it fills in)")


def position_spin(name: str, tip: str) -> QSpinBox:
    """A position picker whose lowest value reads "last" (the last token, whatever the text's length)."""
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(LAST, 0)
    spin.setSpecialValueText("last")
    spin.setValue(LAST)
    spin.setToolTip(tip)
    return spin


def chosen_position(spin: QSpinBox, n_tokens: int) -> int:
    """The position a spin picks in a text of n_tokens: "last" is the last, a larger value is clamped to it."""
    value = spin.value()
    return n_tokens - 1 if value == LAST else min(value, n_tokens - 1)


def parse_token(text: str, tokenizer, vocab_size: int, role: str) -> tuple[int | None, str]:
    """(token id, "") for a token's text or #ID; (None, "") for an empty optional field; (None, why) otherwise."""
    stripped = text.strip()
    if not text:
        return None, ""
    if len(text) > MAX_TOKEN_CHARS:
        return None, f"the {role} is {len(text)} characters long; give one token (at most {MAX_TOKEN_CHARS} characters)"
    if stripped.startswith("#") and stripped[1:].isdigit() and len(stripped) < 12:
        token_id = int(stripped[1:])
        if token_id >= vocab_size:
            return None, f"the {role} id {token_id} is outside the vocabulary (0..{vocab_size - 1})"
        return token_id, ""
    if tokenizer is None:
        return None, f"this model has no tokenizer: give the {role} as #ID (0..{vocab_size - 1})"
    try:
        token_id = tokenizer.id_of(text)
    except Exception:  # noqa: BLE001 (each tokenizer raises its own UnknownTokenError); encode is the fallback
        token_id = None
    if token_id is None:
        try:
            encoded = tokenizer.encode(text)
        except Exception as error:  # noqa: BLE001 (a character the vocabulary lacks)
            return None, f"the {role} {text!r} cannot be encoded: {error}"
        if len(encoded) != 1:
            return None, f"the {role} {text!r} is {len(encoded)} tokens; give exactly one token (or #ID)"
        token_id = encoded[0]
    if not 0 <= token_id < vocab_size:
        return None, f"the {role} id {token_id} is outside the model's vocabulary (0..{vocab_size - 1})"
    return int(token_id), ""


class CausalControls(QObject):
    """The answer and foil tokens and the corrupted input, shared by the views; `changed` on any edit."""

    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.answer_edit = QLineEdit()
        self.answer_edit.setObjectName("causal-answer")
        self.answer_edit.setMaxLength(MAX_TOKEN_CHARS + 1)
        self.answer_edit.setToolTip("The answer token whose logit is measured: its text, or #ID; "
                                    "empty: the model's top prediction on the clean input")
        self.answer_edit.setPlaceholderText("top prediction")
        self.foil_edit = QLineEdit()
        self.foil_edit.setObjectName("causal-foil")
        self.foil_edit.setMaxLength(MAX_TOKEN_CHARS + 1)
        self.foil_edit.setToolTip("Optional foil token: the metric is the answer's logit minus the foil's (text or #ID)")
        for edit in (self.answer_edit, self.foil_edit):
            # About a dozen characters: room for a word token or #ID, and the row stays one line on a projector.
            edit.setMaximumWidth(edit.fontMetrics().horizontalAdvance("top prediction") + 16)
        self.corrupt_strip = TokenStrip()
        self.corrupt_strip.setObjectName("causal-corrupt-strip")
        self.corrupt_strip.text_caption.setText("Corrupted")
        self.corrupt_strip.text_edit.setToolTip("The corrupted input: edit tokens of the clean one (same length)")
        self.corrupt_ids: list[int] = []
        self._clean: list[int] = []
        self._tokenizer = None
        self.answer_edit.textChanged.connect(lambda _text: self.changed.emit())
        self.foil_edit.textChanged.connect(lambda _text: self.changed.emit())
        strip = self.corrupt_strip
        strip.replace_requested.connect(self._replace)
        strip.insert_requested.connect(self._insert)
        strip.delete_requested.connect(self._delete)
        strip.text_submitted.connect(self._text)

    # ---- the corrupted input -------------------------------------------------------------------
    def set_clean(self, tokenizer, clean: Sequence[int]) -> None:
        """A new clean input: the corrupted one becomes it, with the earlier edits kept where they still fit."""
        old_clean, old_corrupt = self._clean, self.corrupt_ids
        edits = {t: token for t, token in enumerate(old_corrupt)
                 if len(old_corrupt) == len(old_clean) and t < len(old_clean) and token != old_clean[t]}
        self._clean = [int(i) for i in clean]
        self._tokenizer = tokenizer
        corrupted = list(self._clean)
        for position, token in edits.items():
            if position < len(corrupted):
                corrupted[position] = token
        self.corrupt_strip.set_tokenizer(tokenizer)
        self._set_corrupt(corrupted)

    def reset_corrupt(self) -> None:
        self._set_corrupt(list(self._clean))

    def _set_corrupt(self, ids: list[int]) -> None:
        changed = ids != self.corrupt_ids
        self.corrupt_ids = ids
        self.corrupt_strip.set_tokens(ids)
        for position, token in enumerate(ids):
            if position >= len(self._clean) or token != self._clean[position]:
                self.corrupt_strip.set_marked(position)
                break
        else:
            self.corrupt_strip.set_marked(-1)
        if changed:
            self.changed.emit()

    def _replace(self, position: int, token: int) -> None:
        ids = list(self.corrupt_ids)
        ids[position] = token
        self._set_corrupt(ids)

    def _insert(self, position: int, token: int) -> None:
        ids = list(self.corrupt_ids)
        ids.insert(max(0, position), token)
        self._set_corrupt(ids)

    def _delete(self, position: int) -> None:
        ids = list(self.corrupt_ids)
        if 0 <= position < len(ids):
            del ids[position]
            self._set_corrupt(ids)

    def _text(self, text: str) -> None:
        if self._tokenizer is None:
            return
        try:
            ids = list(self._tokenizer.encode(text))
        except Exception as error:  # noqa: BLE001 (a character the vocabulary lacks: each tokenizer's own error)
            self.corrupt_strip.show_message(str(error))
            return
        self.corrupt_strip.clear_message()
        self._set_corrupt(ids)

    # ---- the tokens measured -------------------------------------------------------------------
    def answer_and_foil(self, tokenizer, vocab_size: int) -> tuple[int | None, int | None, str]:
        """(answer or None for the top prediction, foil or None, "") or (None, None, why not)."""
        answer, problem = parse_token(self.answer_edit.text(), tokenizer, vocab_size, "answer")
        if problem:
            return None, None, problem
        foil, problem = parse_token(self.foil_edit.text(), tokenizer, vocab_size, "foil")
        if problem:
            return None, None, problem
        return answer, foil, ""

    def metric_text(self, tokenizer, answer: int, foil: int | None) -> str:
        """The metric in words, for the answer the result used (an empty answer field: the top prediction)."""
        text = f"logit({token_label(tokenizer, answer)})"
        return text + (f" - logit({token_label(tokenizer, foil)})" if foil is not None else "")
