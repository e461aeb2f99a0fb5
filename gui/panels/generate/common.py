"""What the Generate views share: the sequence check, table helpers, the undoable append / remove of a token, and
the warning that a model was trained with a leaky mask."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import QLabel

from core.choices import MASK_MODE_LABELS
from gui import theme
from gui.panels.parameters.common import fit_table, set_cell, table
from gui.panels.tokens.common import caption, sequence_refusal, set_title
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


def trained_mask_warning(model) -> str:
    """One line for a model trained with a leaky mask (its training.json says so), or "" for a causal one."""
    mode = getattr(model, "trained_mask_mode", "causal")
    if mode == "causal":
        return ""
    return (f"Leaky training mask: {MASK_MODE_LABELS.get(mode, mode)}, recorded in its training.json; expect worse text "
            "than its training loss suggests.")


LEAKY_MASK_WHY = ("It learned with the next token in view; generation runs with the causal mask and hides it, so the "
                  "model meets a task it never trained on (Train > Compare pitfalls measures how much worse).")


class TrainedMaskWarning(QLabel):
    """The leaky-training warning of the lab's current model, above generated text; hidden for a causal model."""

    def __init__(self, state, parent=None) -> None:
        super().__init__("", parent)
        self._state = state
        self.setObjectName("trained-mask-warning")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        state.model_changed.connect(self.follow_model)
        self.apply_theme()
        self.follow_model()

    def follow_model(self) -> None:
        text = trained_mask_warning(self._state.model)
        self.setText(text)
        self.setToolTip(LEAKY_MASK_WHY if text else "")
        self.setVisible(bool(text))

    def apply_theme(self) -> None:
        self.setStyleSheet(f"color: {theme.current().warning};")
        self.setFont(theme.font(1.0, bold=True))


__all__ = ["SetTokensCommand", "TrainedMaskWarning", "trained_mask_warning", "caption", "fit_table", "sequence_refusal", "set_cell", "set_title", "table"]
