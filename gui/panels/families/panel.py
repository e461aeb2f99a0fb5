"""Families: what an encoder, an encoder-decoder and a mixture of experts do that a decoder does not.

Fill in the blank and Router read the lab's text (the strip on top edits it); Cross-attention reads a source of
its own, so the strip is hidden on that tab. Each sub-tab is a view that needs its family's model and offers to
load it; when a model arrives that the tab on screen cannot use but another tab can, the panel turns to that tab.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from gui.panels.base import Panel
from gui.panels.families.common import EditHistory
from gui.panels.families.cross_attention import CrossAttentionView
from gui.panels.families.fill_blank import FillBlankView
from gui.panels.families.router import RouterView
from gui.state import TokenEdit
from gui.widgets.page_tabs import PageTabs
from gui.widgets.token_strip import TokenStrip

SUB_TABS = ("Fill in the blank", "Cross-attention", "Router")


class FamiliesPanel(Panel):
    title = "Families"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        layout = self.layout()
        self.strip = TokenStrip()
        self.strip.setObjectName("families-strip")
        layout.addWidget(self.strip)
        self.history = EditHistory(state, self)  # before the views: it follows an edit before they ask for inputs
        prefix = f"{self.channel}/"
        self.fill_view = self.add_view(FillBlankView(state, compute, self.history, prefix))
        self.cross_view = self.add_view(CrossAttentionView(state, compute, prefix))
        self.router_view = self.add_view(RouterView(state, compute, prefix))
        self.tabs = PageTabs()
        self.tabs.setObjectName("families-tabs")
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        layout.addWidget(self.tabs, 1)
        self.tabs.currentChanged.connect(self._tab_changed)
        # Names lessons and tests point at.
        self.blank_spin, self.fill_top_spin = self.fill_view.blank_spin, self.fill_view.top_spin
        self.fill_texts, self.fill_verdict = self.fill_view.texts_label, self.fill_view.verdict_label
        self.fill_table, self.fill_plot = self.fill_view.table, self.fill_view.plot
        self.source_edit = self.cross_view.source_edit
        self.step_button, self.run_button = self.cross_view.step_button, self.cross_view.run_button
        self.reset_button = self.cross_view.reset_button
        self.cross_layer_spin, self.cross_head_combo = self.cross_view.layer_spin, self.cross_view.head_combo
        self.cross_output, self.cross_map, self.cross_steps = (self.cross_view.output_label, self.cross_view.map,
                                                               self.cross_view.steps_table)
        self.router_layer_spin = self.router_view.layer_spin
        self.active_label, self.load_summary = self.router_view.active_label, self.router_view.load_label
        self.router_map, self.load_plot = self.router_view.map, self.router_view.load_plot

        self.strip.text_submitted.connect(state.set_text)
        self.strip.replace_requested.connect(self._replace)
        self.strip.insert_requested.connect(self._insert)
        self.strip.delete_requested.connect(self._delete)
        state.tokens_changed.connect(self._tokens_changed)
        state.tokenizer_changed.connect(self._tokens_changed)
        state.text_changed.connect(lambda: self.strip.set_text(state.text))
        state.model_changed.connect(self._follow_family)
        self._tokens_changed()
        self.strip.set_text(state.text)
        self.apply_theme()

    # ---- the lab's text ------------------------------------------------------------------------
    def _tokens_changed(self) -> None:
        self.strip.set_tokenizer(self.state.tokenizer)
        self.strip.set_tokens(self.state.tokens)
        # The mark is the edit the fill-in-the-blank view compares: none after a new text, tokenizer or model.
        before = self.history.before
        edited = [t for t, (old, new) in enumerate(zip(before, self.state.tokens)) if old != new] if before else []
        self.strip.set_marked(edited[0] if edited else -1)

    def _replace(self, position: int, token: int) -> None:
        before = self.state.tokens
        tokens = list(before)
        tokens[position] = token
        self.state.set_tokens(tokens, TokenEdit("replace", position, tuple(before)))

    def _insert(self, position: int, token: int) -> None:
        before = self.state.tokens
        tokens = list(before)
        tokens.insert(max(0, position), token)
        self.state.set_tokens(tokens, TokenEdit("insert", max(0, position), tuple(before)))

    def _delete(self, position: int) -> None:
        before = self.state.tokens
        if 0 <= position < len(before):
            tokens = list(before)
            del tokens[position]
            self.state.set_tokens(tokens, TokenEdit("delete", position, tuple(before)))

    # ---- tabs ----------------------------------------------------------------------------------
    def _tab_changed(self, _index: int = -1) -> None:
        self.strip.setVisible(self.tabs.currentWidget() is not self.cross_view)

    def current_view(self):
        return self.tabs.currentWidget()

    def _follow_family(self) -> None:
        """A new model: the strip marks positions past its trained length; a model the tab on screen cannot use, but
        another tab can, turns to that tab."""
        model = self.state.model
        if model is None:
            return
        self.strip.set_max_tokens(model.config.accepted_length, model.config.context_length)  # past it: dashed
        from core.experiments.cross_attention import seq2seq_problem
        from core.experiments.fill_mask import encoder_problem
        from core.experiments.routing import moe_problem

        fits = {self.fill_view: not encoder_problem(model.config), self.cross_view: not seq2seq_problem(model.config),
                self.router_view: not moe_problem(model.config)}
        if fits[self.current_view()]:
            return
        for view, fit in fits.items():
            if fit:
                self.tabs.setCurrentWidget(view)
                return

    # ---- session -------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {
            "tab": self.tabs.tabText(self.tabs.currentIndex()),
            "blank": self.blank_spin.value(),
            "top_k": self.fill_top_spin.value(),
            "source": self.source_edit.text(),
            "steps": self.cross_view.steps,
            "cross_layer": self.cross_layer_spin.value(),
            "cross_head": self.cross_head_combo.currentData(),
            "router_layer": self.router_layer_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        for key, spin in (("blank", self.blank_spin), ("top_k", self.fill_top_spin),
                          ("cross_layer", self.cross_layer_spin), ("router_layer", self.router_layer_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.setValue(value)
        if isinstance(data.get("source"), str):
            self.source_edit.setText(data["source"][: self.source_edit.maxLength()])
        steps = data.get("steps")
        if isinstance(steps, int) and not isinstance(steps, bool):
            self.cross_view.set_steps(steps)
        head = data.get("cross_head")
        if isinstance(head, int) and not isinstance(head, bool):
            index = self.cross_head_combo.findData(head)
            if index >= 0:
                self.cross_head_combo.setCurrentIndex(index)
        if data.get("tab") in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(data["tab"]))
