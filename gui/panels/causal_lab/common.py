"""What the causal lab's views share: the answer and foil tokens, the corrupted input, plots and labels."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLineEdit, QSpinBox, QWidget

from gui.panels.common import note_label, token_label
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


def same_reading(old_tokenizer, new_tokenizer, ids: Sequence[int]) -> bool:
    """Whether the ids name the same tokens under both tokenizers (a model with its own copy of one vocabulary)."""
    if old_tokenizer is new_tokenizer:
        return True
    if old_tokenizer is None or new_tokenizer is None or old_tokenizer.vocab_size != new_tokenizer.vocab_size:
        return False
    try:
        return all(old_tokenizer.token_text(int(i)) == new_tokenizer.token_text(int(i)) for i in set(ids))
    except Exception:  # noqa: BLE001 (an id one of them cannot name)
        return False


def _at(positions: Sequence[int]) -> str:
    shown = ", ".join(str(p) for p in positions[:6]) + (", ..." if len(positions) > 6 else "")
    return f"the edit{'s' if len(positions) > 1 else ''} at position{'s' if len(positions) > 1 else ''} {shown}"


def follow_clean(old_clean: Sequence[int], old_corrupt: Sequence[int], clean: Sequence[int], same_vocabulary: bool,
                 edit=None) -> tuple[list[int], str]:
    """The corrupted input for a new clean one, and a one-line note when edits of the old one were dropped.

    The edits follow only where their place is unambiguous: the same vocabulary, and a clean input of the
    same length (positions line up), changed by one known insertion or deletion (`edit`, a TokenEdit of the
    old clean input: the edits after it shift), or retyped so that each edit lies wholly before or wholly
    after what changed. Otherwise the corrupted input restarts as a copy of the clean one, and the note says
    which edits went.
    """
    old_clean, old_corrupt, clean = list(old_clean), list(old_corrupt), [int(i) for i in clean]
    if old_corrupt == old_clean:
        return clean, ""  # no edits: the copy stays a copy
    if clean == old_clean:
        # The same ids (a model with its own copy of the vocabulary; a session's tokens read by its model at last).
        return old_corrupt, ""
    if len(old_corrupt) != len(old_clean):
        return clean, ("Corrupted input reset to the clean text: it had a different number of tokens from the clean "
                       "one, so its edits have no place in the new clean text.")
    edits = {t: token for t, (token, was) in enumerate(zip(old_corrupt, old_clean)) if token != was}
    if not same_vocabulary:
        verb = "do" if len(edits) > 1 else "does"
        return clean, (f"Corrupted input reset to the clean text: the new model reads another vocabulary, so "
                       f"{_at(sorted(edits))} {verb} not carry over.")
    moved: dict[int, int] = {}
    lost: list[int] = []
    if len(clean) == len(old_clean):
        moved = edits
    elif (edit is not None and edit.kind in ("insert", "delete") and tuple(edit.before) == tuple(old_clean)
          and len(clean) == len(old_clean) + (1 if edit.kind == "insert" else -1)):
        for position, token in edits.items():
            if position < edit.position:
                moved[position] = token
            elif edit.kind == "insert":
                moved[position + 1] = token
            elif position == edit.position:
                lost.append(position)
            else:
                moved[position - 1] = token
    else:
        # A retyped text: the tokens before the first change keep their positions, those after the last one shift
        # by the change in length. An edit in both (a run of one repeated token) or in neither has no clear place.
        prefix = next((n for n, (a, b) in enumerate(zip(old_clean, clean)) if a != b), min(len(old_clean), len(clean)))
        suffix = next((n for n, (a, b) in enumerate(zip(reversed(old_clean), reversed(clean))) if a != b),
                      min(len(old_clean), len(clean)))
        shift = len(clean) - len(old_clean)
        unplaced = [t for t in edits if (t < prefix) == (t >= len(old_clean) - suffix)]
        if unplaced:
            verb = "have" if len(unplaced) > 1 else "has"
            return clean, (f"Corrupted input reset to the clean text: the clean text changed from {len(old_clean)} to "
                           f"{len(clean)} tokens, so {_at(sorted(unplaced))} {verb} no clear place in it.")
        moved = {(t if t < prefix else t + shift): token for t, token in edits.items()}
    corrupted = list(clean)
    for position, token in moved.items():
        corrupted[position] = token
    note = f"The corrupted input lost {_at(lost)}: its token was deleted from the clean text." if lost else ""
    return corrupted, note


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
        # What a new clean text or model reset among these inputs, in one line; cleared at the next change.
        self.note_label = note_label("causal-note")
        self._resetting = False
        self._restored: tuple[list[int], list[int]] | None = None  # (clean, corrupt) waiting for that clean input
        self.answer_edit.textChanged.connect(self._field_edited)
        self.foil_edit.textChanged.connect(self._field_edited)
        strip = self.corrupt_strip
        strip.replace_requested.connect(self._replace)
        strip.insert_requested.connect(self._insert)
        strip.delete_requested.connect(self._delete)
        strip.text_submitted.connect(self._text)

    # ---- the note ------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.note_label.setText(text)

    def _field_edited(self, _text: str = "") -> None:
        if not self._resetting:
            self.say("")
        self.changed.emit()

    def follow_model(self, tokenizer, vocab_size: int, name: str) -> None:
        """A new model: an answer or foil it cannot read goes back to its default, and the note says so."""
        parts = []
        for role, edit, default in (("answer", self.answer_edit, "the top prediction"),
                                    ("foil", self.foil_edit, "none")):
            text = edit.text()
            if text and parse_token(text, tokenizer, vocab_size, role)[1]:
                self._resetting = True
                try:
                    edit.clear()
                finally:
                    self._resetting = False
                parts.append(f"{role} {text!r} reset to {default}: {name} has no such single token")
        if parts:  # after a reset of the corrupted input by the new model's tokenizer, in the same line
            sentence = "; ".join(parts)
            self.say(" ".join(filter(None, (self.note_label.text(), sentence[0].upper() + sentence[1:] + "."))))

    # ---- the corrupted input -------------------------------------------------------------------
    @property
    def clean_ids(self) -> list[int]:
        return list(self._clean)

    def restore_corrupt(self, corrupt: list[int], clean: list[int]) -> None:
        """A saved corrupted input with the clean ids it was made on: set now if those are the clean ids, else kept
        until they are (a session's model, built after the session is read, reads its text into them)."""
        self._restored = None
        if clean == self._clean:
            self._set_corrupt(corrupt)
        else:
            self._restored = (clean, corrupt)

    def set_clean(self, tokenizer, clean: Sequence[int], edit=None) -> None:
        """A new clean input (or a tokenizer): the corrupted one follows it where that is unambiguous (see
        follow_clean), else restarts as a copy of it, and the note says which edits went."""
        clean = [int(i) for i in clean]
        if clean == self._clean and tokenizer is self._tokenizer:
            return
        old_clean, old_corrupt, old_tokenizer = self._clean, self.corrupt_ids, self._tokenizer
        self._clean, self._tokenizer = clean, tokenizer
        vocabulary = same_reading(old_tokenizer, tokenizer, [*old_clean, *old_corrupt])
        corrupted, note = follow_clean(old_clean, old_corrupt, clean, vocabulary, edit)
        restored, self._restored = self._restored, None
        if restored is not None and restored[0] == clean:
            corrupted, note = restored[1], ""
        self.corrupt_strip.set_tokenizer(tokenizer)
        if clean != old_clean or corrupted != old_corrupt:
            self.say(note)
        self._set_corrupt(corrupted)

    def reset_corrupt(self) -> None:
        self.say("")
        self._restored = None  # the student's edit wins over a saved one still waiting
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
        self.say("")
        self._restored = None  # the student's edit wins over a saved one still waiting
        ids = list(self.corrupt_ids)
        ids[position] = token
        self._set_corrupt(ids)

    def _insert(self, position: int, token: int) -> None:
        self.say("")
        self._restored = None  # the student's edit wins over a saved one still waiting
        ids = list(self.corrupt_ids)
        ids.insert(max(0, position), token)
        self._set_corrupt(ids)

    def _delete(self, position: int) -> None:
        self.say("")
        self._restored = None  # the student's edit wins over a saved one still waiting
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
        self.say("")
        self._restored = None
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
