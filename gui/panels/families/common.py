"""What the families panel's views share: the text before the last edit of the lab's tokens."""

from __future__ import annotations

from PySide6.QtCore import QObject

from gui.state import LabState


class EditHistory(QObject):
    """The lab's tokens before their last edit, when that edit kept their number (a replacement, a retyped
    character): the fill-in-the-blank view compares both texts. Made before the views, so that it has
    followed a change of the tokens before any view asks for its inputs."""

    def __init__(self, state: LabState, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._tokenizer = state.tokenizer
        self._tokens = tuple(state.tokens)
        self.before: tuple[int, ...] | None = None
        state.tokens_changed.connect(self._tokens_changed)
        state.tokenizer_changed.connect(self._tokenizer_changed)

    def _tokens_changed(self) -> None:
        tokens, tokenizer = tuple(self._state.tokens), self._state.tokenizer
        same_reading = tokenizer is self._tokenizer and len(tokens) == len(self._tokens)
        # Ids of another tokenizer, or of a text that grew or shrank, do not line up position by position.
        self.before = self._tokens if same_reading and tokens != self._tokens else None
        self._tokenizer, self._tokens = tokenizer, tokens

    def _tokenizer_changed(self) -> None:
        if self._state.tokenizer is not self._tokenizer:
            self.before = None
            self._tokenizer, self._tokens = self._state.tokenizer, tuple(self._state.tokens)
