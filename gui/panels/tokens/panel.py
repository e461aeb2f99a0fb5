"""Tokens & masks: edit a token and watch, layer by layer, which positions of the residual stream move.

The reading's central experiment made playable. The token strip on top edits the sequence (every
edit is an undoable change of `LabState.tokens` that carries its own position as a
`gui.state.TokenEdit`); the mask mode and depth beside it are read by every view. Each sub-tab is a
view of its own (gui/panels/tokens/*.py): only the one on screen computes, and one that is shown
again catches up with what changed while it was hidden.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import QToolButton, QWidget

from gui.panels.base import Panel
from gui.panels.reading_mode import ReadingMode
from gui.panels.tokens.attention import AttentionView
from gui.panels.tokens.common import TokensControls
from gui.panels.tokens.head_split import HeadSplitView
from gui.panels.tokens.mask import MaskView
from gui.panels.tokens.predictions import PredictionsView
from gui.panels.tokens.propagation import PropagationView
from gui.panels.tokens.reading import ReadingCausalView
from gui.panels.tokens.selection import TokenSelection
from gui.panels.tokens.worked_head import WorkedHeadView
from gui.state import TokenEdit
from gui.widgets.token_strip import TokenStrip
from gui.widgets.page_tabs import PageTabs

SUB_TABS = ("Propagation", "Mask", "Attention", "Head split", "One head", "Predictions")


class _SetTokensCommand(QUndoCommand):
    """A strip edit on the LabState's own undo stack; undo and redo are edits at the same position too."""

    def __init__(self, state, old: list[int], new: list[int], kind: str, position: int, text: str) -> None:
        super().__init__(text)
        self._state, self._old, self._new = state, list(old), list(new)
        self._kind, self._position = kind, position

    def redo(self) -> None:
        self._state.set_tokens(self._new, TokenEdit(self._kind, self._position, tuple(self._old)))

    def undo(self) -> None:
        reverse = {"replace": "replace", "insert": "delete", "delete": "insert"}[self._kind]
        self._state.set_tokens(self._old, TokenEdit(reverse, self._position, tuple(self._new)))


class TokensPanel(Panel):
    title = "Tokens & masks"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self._mode_chosen_by_user = False  # until then the mask follows the model's own (causal / none)
        layout = self.layout()
        self.strip = TokenStrip()
        layout.addWidget(self.strip)
        # Short captions (the stack's own actions say "Undo replace token 8", too wide on a projector);
        # what would be undone is in the tooltip.
        stack = state.undo_stack
        self.undo_button, self.redo_button = QToolButton(), QToolButton()
        for button, text, slot, enabled in ((self.undo_button, "Undo", stack.undo, stack.canUndo()),
                                            (self.redo_button, "Redo", stack.redo, stack.canRedo())):
            button.setText(text)
            button.setEnabled(enabled)
            button.clicked.connect(slot)
        self.strip.add_control_group(self.undo_button, self.redo_button)
        stack.canUndoChanged.connect(self.undo_button.setEnabled)
        stack.canRedoChanged.connect(self.redo_button.setEnabled)
        # Bound methods, not lambdas: Qt drops the connection when the panel goes, the state lives on.
        stack.undoTextChanged.connect(self._set_undo_tooltip)
        stack.redoTextChanged.connect(self._set_redo_tooltip)
        self._set_undo_tooltip(stack.undoText())
        self._set_redo_tooltip(stack.redoText())

        self.controls = TokensControls(self)
        self.mode_combo, self.depth_spin = self.controls.mode_combo, self.controls.depth_spin
        # Beside the edit buttons (wrapping below them only when the window is narrow): the plots need the height.
        self.strip.add_control_group(self.controls.mode_caption, self.mode_combo)
        self.strip.add_control_group(self.controls.depth_caption, self.depth_spin)

        prefix = f"{self.channel}/"
        self.propagation = self.add_view(PropagationView(state, compute, self.controls, prefix))
        self.mask = self.add_view(MaskView(state, compute, self.controls, prefix))
        self.attention = self.add_view(AttentionView(state, compute, self.controls, prefix))
        self.head_split = self.add_view(HeadSplitView(state, compute, self.controls, prefix))
        self.worked_head = self.add_view(WorkedHeadView(state, compute, self.controls, prefix))
        self.predictions = self.add_view(PredictionsView(state, compute, self.controls, lambda: self.strip.selected,
                                                         prefix))
        self.tabs = PageTabs()  # sized by the view on show, not the widest view
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        # The reading's script replaces the sub-tabs while checked; it reads none of the lab's state,
        # so leaving it shows the user's model, tokens and settings as they were.
        self.reading_view = self.add_view(ReadingCausalView(state, compute, prefix))
        self.reading_seed_spin = self.reading_view.reading_seed_spin
        self.reading_mode = ReadingMode(self.tabs, self.reading_view, "tokens-reading-toggle",
                                        "Show the reading's causal-mask script, run here with its seed and random "
                                        "inputs x ~ N(0,1); uncheck to return to your model and tokens", self)
        self.reading_check = self.reading_mode.check
        layout.addWidget(self.reading_mode.container, 1)
        # Names lessons and tests point at.
        self.verdict = self.propagation.verdict
        self.propagation_map = self.propagation.map
        self.bar_plot = self.propagation.bar_plot
        self.bar_legend = self.propagation.bar_legend
        self.layer_spin, self.head_spin = self.attention.layer_spin, self.attention.head_spin
        self.attention_kind_combo = self.attention.kind_combo
        self.propagation_source_combo = self.propagation.source_combo
        self.temperature_spin, self.top_k_spin = self.predictions.temperature_spin, self.predictions.top_k_spin

        self.strip.text_submitted.connect(self.state.set_text)
        self.strip.replace_requested.connect(self.replace_token)
        self.strip.insert_requested.connect(self.insert_token)
        self.strip.delete_requested.connect(self.delete_token)
        # The selected chip is the worked head's query and the predictions' position: one undoable selection.
        self.selection = TokenSelection(self.strip, state.undo_stack, self)
        self.selection.changed.connect(self.worked_head.set_query)
        self.selection.changed.connect(self.predictions.inputs_changed)
        self.worked_head.query_chosen.connect(self.selection.select)
        self.mode_combo.activated.connect(self._mode_chosen)
        self.propagation.probe_shown.connect(self.strip.set_marked)
        state.tokens_changed.connect(self._tokens_changed)
        state.text_changed.connect(self._text_changed)
        state.tokenizer_changed.connect(self._tokenizer_changed)
        state.model_changed.connect(self._sync_model_limits)
        state.config_changed.connect(self._sync_model_limits)
        self.strip.set_tokenizer(state.tokenizer)
        self.strip.set_tokens(state.tokens)
        self.strip.set_text(state.text)
        self._sync_model_limits()
        self.apply_theme()

    # ---- edits (strip -> state, undoable) --------------------------------------------------------
    # The signal's own text, not a query of the stack: the stack may be mid-destruction when it emits.
    def _set_undo_tooltip(self, text: str) -> None:
        self.undo_button.setToolTip(f"Undo {text}" if text else "Nothing to undo")

    def _set_redo_tooltip(self, text: str) -> None:
        self.redo_button.setToolTip(f"Redo {text}" if text else "Nothing to redo")

    def _push(self, old: list[int], new: list[int], kind: str, position: int, text: str) -> None:
        self.state.undo_stack.push(_SetTokensCommand(self.state, old, new, kind, position, text))

    def replace_token(self, position: int, token_id: int) -> None:
        old = self.state.tokens
        if not 0 <= position < len(old) or old[position] == token_id:
            return
        new = list(old)
        new[position] = int(token_id)
        self._push(old, new, "replace", position, f"replace token {position}")

    def insert_token(self, position: int, token_id: int) -> None:
        old = self.state.tokens
        position = min(max(0, position), len(old))
        self._push(old, old[:position] + [int(token_id)] + old[position:], "insert", position,
                   f"insert token at {position}")

    def delete_token(self, position: int) -> None:
        old = self.state.tokens
        if not 0 <= position < len(old):
            return
        if len(old) == 1:
            self.strip.show_message("Not deleted: the sequence needs at least one token.")
            return
        new = old[:position] + old[position + 1:]
        self._push(old, new, "delete", min(position, len(new) - 1), f"delete token {position}")
        self.selection.set_quietly(min(position, len(new) - 1))

    # ---- state -> strip and controls -------------------------------------------------------------
    def _tokens_changed(self) -> None:
        self.strip.set_tokens(self.state.tokens)

    def _text_changed(self) -> None:
        self.strip.set_text(self.state.text)
        if self.state.text_problem:
            self.strip.show_message(self.state.text_problem)
        else:
            self.strip.clear_message()

    def _tokenizer_changed(self) -> None:
        self.strip.set_tokenizer(self.state.tokenizer)

    def _mode_chosen(self, _index: int) -> None:
        self._mode_chosen_by_user = True

    def _sync_model_limits(self) -> None:
        model = self.state.model
        config = model.config if model is not None else self.state.config
        self.controls.blockSignals(True)  # one `changed` for the whole sync, below
        if not self._mode_chosen_by_user:
            self.mode_combo.setCurrentIndex(self.mode_combo.findData("causal" if config.self_attention_causal else "none"))
        n_blocks = len(model.blocks) if model is not None else config.n_layers
        at_max = self.depth_spin.value() == self.depth_spin.maximum()
        self.depth_spin.setRange(1, max(1, n_blocks))
        if at_max:
            self.depth_spin.setValue(n_blocks)
        self.depth_spin.setSuffix(f" of {n_blocks}")
        self.controls.blockSignals(False)
        self.controls.changed.emit()
        self.strip.set_max_tokens(config.accepted_length, config.context_length)

    @property
    def mask_mode(self) -> str:
        return self.controls.mask_mode

    def current_view(self):
        return self.reading_view if self.reading_script else self.tabs.currentWidget()

    @property
    def reading_script(self) -> bool:
        return self.reading_mode.on

    def set_reading_script(self, on: bool) -> None:
        """Show the reading's script instead of the sub-tabs (on), or the sub-tabs again."""
        self.reading_mode.set_on(on)

    # ---- theme, export, session ----------------------------------------------------------------
    def export_targets(self) -> list[tuple[str, Any]]:
        return [*super().export_targets(), ("Token strip", self.strip)]

    def settings(self) -> dict[str, Any]:
        return {
            "mask_mode": self.mask_mode,
            "n_blocks": self.depth_spin.value(),
            "sub_tab": SUB_TABS[self.tabs.currentIndex()],
            "temperature": self.temperature_spin.value(),
            "top_k": self.top_k_spin.value(),
            "bar_row": self.propagation.bar_row,
            "attention": self.attention.kind_combo.currentData(),
            "edit_source": self.propagation.source_combo.currentData(),
            **self.worked_head.settings(),
            "reading_script": self.reading_script,
            "reading_seed": self.reading_seed_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        self.worked_head.restore_settings(data)
        self.selection.set_quietly(self.worked_head.query_position)
        mode = data.get("mask_mode")
        index = self.mode_combo.findData(mode) if isinstance(mode, str) else -1
        if index >= 0:
            self.mode_combo.setCurrentIndex(index)
            self._mode_chosen_by_user = True
        for key, spin in (("n_blocks", self.depth_spin), ("top_k", self.top_k_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.setValue(value)
        temperature = data.get("temperature")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and math.isfinite(temperature):
            self.temperature_spin.setValue(float(temperature))
        tab = data.get("sub_tab")
        if isinstance(tab, str) and tab in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(tab))
        if isinstance(data.get("edit_source"), bool):
            self.propagation.source_combo.setCurrentIndex(self.propagation.source_combo.findData(data["edit_source"]))
        kind = data.get("attention")
        if isinstance(kind, str):
            self.attention.choose_kind(kind)
        row = data.get("bar_row")
        if (isinstance(row, int) and not isinstance(row, bool) and row >= 0) or row is None:
            self.propagation.restore_bar_row(row)
        seed = data.get("reading_seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            self.reading_seed_spin.setValue(seed)
        # Settings that do not ask for the reading's script (a lesson step's) show the sub-tabs they set up.
        self.set_reading_script(data.get("reading_script") is True)
