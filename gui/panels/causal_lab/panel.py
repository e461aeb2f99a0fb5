"""Causal lab: what a trained model does inside, by clicking; every figure checked.

The clean input is the lab's text (the strip on top edits it); the corrupted one is made by
replacing tokens of it in the second strip. The answer and foil tokens are shared by attribution
and patching. Each sub-tab is a view of its own: only the one on screen computes.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from gui.panels.base import Panel
from gui.panels.causal_lab.ablation import AblationView, ffns_text, heads_text, parse_parts
from gui.panels.causal_lab.attribution import AttributionView
from gui.panels.causal_lab.common import CausalControls
from gui.panels.causal_lab.induction import InductionView
from gui.panels.causal_lab.patching import PatchingView
from gui.state import TokenEdit
from gui.widgets.page_tabs import PageTabs
from gui.widgets.token_strip import TokenStrip

SUB_TABS = ("Attribution", "Patching", "Ablation", "Induction")


class CausalLabPanel(Panel):
    title = "Causal lab"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        layout = self.layout()
        self.clean_strip = TokenStrip()
        self.clean_strip.setObjectName("causal-clean-strip")
        self.clean_strip.text_caption.setText("Clean")
        # The clean chips are edited in the Tokens panel or by typing here: no second row of edit buttons,
        # which leaves the maps their height at projector scale.
        for index in range(self.clean_strip.edit_row.count()):
            item = self.clean_strip.edit_row.itemAt(index)
            if item.widget() is not None:
                item.widget().hide()
        layout.addWidget(self.clean_strip)
        self.controls = CausalControls(self)
        self.corrupt_strip = self.controls.corrupt_strip
        self.reset_button = QPushButton("Copy clean")
        self.reset_button.setToolTip("Make the corrupted input the clean one again")
        self.reset_button.clicked.connect(self.controls.reset_corrupt)
        self.corrupt_strip.add_control_group(self.reset_button)
        self.answer_edit, self.foil_edit = self.controls.answer_edit, self.controls.foil_edit
        for text, edit in (("answer", self.answer_edit), ("minus foil", self.foil_edit)):
            caption = QLabel(text)
            caption.setBuddy(edit)
            caption.setToolTip(edit.toolTip())
            self.corrupt_strip.add_control_group(caption, edit)
        layout.addWidget(self.corrupt_strip)
        layout.addWidget(self.controls.note_label)

        prefix = f"{self.channel}/"
        self.attribution_view = self.add_view(AttributionView(state, compute, self.controls, prefix))
        self.patching_view = self.add_view(PatchingView(state, compute, self.controls, prefix))
        self.ablation_view = self.add_view(AblationView(state, compute, prefix))
        self.induction_view = self.add_view(InductionView(state, compute, prefix))
        self.tabs = PageTabs()
        self.tabs.setObjectName("causal-lab-tabs")
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        layout.addWidget(self.tabs, 1)
        self.tabs.currentChanged.connect(self._show_inputs_of_view)
        self._show_inputs_of_view()
        # Names lessons and tests point at.
        self.patch_map = self.patching_view.patch_map
        self.patching_summary = self.patching_view.summary_label
        self.patching_checks = self.patching_view.checks_label
        self.patching_site = self.patching_view.site_combo
        self.patching_position = self.patching_view.position_spin
        self.attribution_summary = self.attribution_view.summary_label
        self.heads_map = self.attribution_view.heads_map
        self.ablation_summary = self.ablation_view.summary_label
        self.induction_summary = self.induction_view.summary_label
        self.induction_map = self.induction_view.induction_map

        self.clean_strip.text_submitted.connect(state.set_text)
        self.clean_strip.replace_requested.connect(self._replace_clean)
        self.clean_strip.insert_requested.connect(self._insert_clean)
        self.clean_strip.delete_requested.connect(self._delete_clean)
        state.tokens_changed.connect(self._clean_changed)
        state.tokenizer_changed.connect(self._clean_changed)
        state.text_changed.connect(lambda: self.clean_strip.set_text(state.text))
        state.model_changed.connect(self._follow_model)
        self._clean_changed()
        self.clean_strip.set_text(state.text)
        self.apply_theme()

    # ---- the clean input (the lab's tokens) ----------------------------------------------------
    def _clean_changed(self) -> None:
        self.clean_strip.set_tokenizer(self.state.tokenizer)
        self.clean_strip.set_tokens(self.state.tokens)
        self.controls.set_clean(self.state.tokenizer, self.state.tokens, self.state.token_edit)

    def _follow_model(self) -> None:
        model = self.state.model
        if model is not None:
            config = model.config
            self.controls.follow_model(self.state.tokenizer, config.vocab_size, config.name)
            for strip in (self.clean_strip, self.controls.corrupt_strip):  # positions past the trained length: dashed
                strip.set_max_tokens(config.accepted_length, config.context_length)

    def _replace_clean(self, position: int, token: int) -> None:
        tokens = list(self.state.tokens)
        tokens[position] = token
        self.state.set_tokens(tokens, TokenEdit("replace", position, tuple(self.state.tokens)))

    def _insert_clean(self, position: int, token: int) -> None:
        tokens = list(self.state.tokens)
        tokens.insert(max(0, position), token)
        self.state.set_tokens(tokens, TokenEdit("insert", max(0, position), tuple(self.state.tokens)))

    def _delete_clean(self, position: int) -> None:
        tokens = list(self.state.tokens)
        if 0 <= position < len(tokens):
            del tokens[position]
            self.state.set_tokens(tokens, TokenEdit("delete", position, tuple(self.state.tokens)))

    def _show_inputs_of_view(self) -> None:
        """Only the inputs the view on show reads, so its result keeps the height (at projector scale the two
        strips take half the window): Ablation reads no corrupted input or answer, Induction neither text (it
        makes its own repeats)."""
        view = self.tabs.currentWidget()
        self.corrupt_strip.setVisible(view in (self.attribution_view, self.patching_view))
        self.clean_strip.setVisible(view is not self.induction_view)

    # ---- the corrupted input -------------------------------------------------------------------
    def corrupt_at(self, position: int, token: int) -> None:
        """Replace the corrupted input's token at `position` (lessons and tests)."""
        self.corrupt_strip.replace_at(position, token)

    def current_view(self):
        return self.tabs.currentWidget()

    # ---- session -------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {
            "tab": self.tabs.tabText(self.tabs.currentIndex()),
            "answer": self.answer_edit.text(),
            "foil": self.foil_edit.text(),
            "corrupt": list(self.controls.corrupt_ids),
            "clean": list(self.controls.clean_ids),
            "site": self.patching_view.site,
            "metric_position": self.patching_view.position_spin.value(),
            "heads": heads_text(self.ablation_view.heads_picker.selected()),
            "ffns": ffns_text(layer for layer, _column in self.ablation_view.ffns_picker.selected()),
            "ablation": self.ablation_view.mode_combo.currentData(),
            "period": self.induction_view.period_spin.value(),
            "seed": self.induction_view.seed_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        for key, edit in (("answer", self.answer_edit), ("foil", self.foil_edit)):
            if isinstance(data.get(key), str):
                edit.setText(data[key][: edit.maxLength()])
        # "L1H0, L2H3" and "0, 2": the pickers tick what the model has of them.
        if isinstance(data.get("heads"), str):
            self.ablation_view.heads_picker.set_selected(parse_parts(data["heads"], "")[0])
        if isinstance(data.get("ffns"), str):
            self.ablation_view.ffns_picker.set_selected((layer, 0) for layer in parse_parts("", data["ffns"])[1])
        corrupt = data.get("corrupt")
        if (isinstance(corrupt, list) and len(corrupt) <= 100_000
                and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in corrupt)):
            clean = data.get("clean")
            if (isinstance(clean, list) and len(clean) <= 100_000
                    and all(isinstance(t, int) and not isinstance(t, bool) for t in clean)):
                self.controls.restore_corrupt([int(t) for t in corrupt], [int(t) for t in clean])
            else:
                self.controls._set_corrupt([int(t) for t in corrupt])
        for key, combo in (("site", self.patching_view.site_combo), ("ablation", self.ablation_view.mode_combo)):
            index = combo.findData(data.get(key))
            if index >= 0:
                combo.setCurrentIndex(index)
        for key, spin in (("period", self.induction_view.period_spin), ("seed", self.induction_view.seed_spin),
                          ("metric_position", self.patching_view.position_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.setValue(value)
        if data.get("tab") in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(data["tab"]))
