"""What the Generate views share: the undoable append / remove of a token (the shared helpers are in gui.panels.common)."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand

from gui.state import TokenEdit


class SetTokensCommand(QUndoCommand):
    """An append or a removal at the end of the sequence, undoable like the token strip's edits."""

    def __init__(self, state, old: list[int], new: list[int], text: str) -> None:
        super().__init__(text)
        self._state, self._old, self._new = state, list(old), list(new)

    def redo(self) -> None:
        self._apply(self._old, self._new)

    def undo(self) -> None:
        self._apply(self._new, self._old)

    def _apply(self, before: list[int], after: list[int]) -> None:
        kind = "insert" if len(after) > len(before) else "delete"
        position = min(len(before), len(after)) if kind == "insert" else len(after) - 1
        self._state.set_tokens(after, TokenEdit(kind, max(0, position), tuple(before)))


__all__ = ["SetTokensCommand"]
