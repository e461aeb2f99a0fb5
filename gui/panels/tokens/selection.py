"""The token strip's selected chip as one undoable selection that the Tokens views follow.

Selecting a chip (a click, the arrow keys) and choosing a query in the One head view are the same
change: the chip and the view's query always name the same position. A change is one step on the
lab's undo stack; a run of selections in a row (arrow keys walking the strip) merges into one step,
as a layer or head chosen with a spin box does not flood the stack either.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand

NO_SELECTION = -1  # no chip selected: the views read the last token
_MERGE_ID = 0x70C5  # QUndoCommand.id(): consecutive selections merge into one step


class _SelectTokenCommand(QUndoCommand):
    def __init__(self, selection: TokenSelection, old: int, new: int) -> None:
        super().__init__(f"select token {new}" if new >= 0 else "select the last token")
        self._selection, self._old, self._new = selection, old, new

    def id(self) -> int:
        return _MERGE_ID

    def mergeWith(self, other: QUndoCommand) -> bool:
        if other.id() != self.id():
            return False
        self._new = other._new
        self.setText(other.text())
        self.setObsolete(self._new == self._old)  # walked back to where it started: no step at all
        return True

    def redo(self) -> None:
        self._apply(self._new)

    def undo(self) -> None:
        self._apply(self._old)

    def _apply(self, position: int) -> None:
        # The stack outlives a closed panel; its selection is gone with the panel.
        if shiboken6.isValid(self._selection):
            self._selection.apply(position)


class TokenSelection(QObject):
    """The selected position of a TokenStrip, changed through the undo stack; `changed` says where it is now."""

    changed = Signal(int)  # the selected position, NO_SELECTION for none

    def __init__(self, strip, undo_stack, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._strip, self._stack = strip, undo_stack
        self._position = strip.selected
        self._applying = False
        strip.selection_changed.connect(self._strip_selected)

    @property
    def position(self) -> int:
        return self._position

    def select(self, position: int) -> None:
        """A user's choice of position (NO_SELECTION: the last token): one undo step."""
        position = max(NO_SELECTION, int(position))
        if position != self._position:
            self._stack.push(_SelectTokenCommand(self, self._position, position))

    def set_quietly(self, position: int) -> None:
        """Select without an undo step: the position follows another change (a deletion, a restored session)."""
        self.apply(max(NO_SELECTION, int(position)))

    def apply(self, position: int) -> None:
        self._applying = True
        try:
            if self._strip.selected != position:
                self._strip.select(position)
        finally:
            self._applying = False
        self._position = self._strip.selected  # the strip clamps a position past the last chip
        self.changed.emit(self._position)

    def _strip_selected(self, position: int) -> None:
        if not self._applying:
            self.select(position)


__all__ = ["NO_SELECTION", "TokenSelection"]
