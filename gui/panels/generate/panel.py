"""Generate: sample the next token step by step, and watch the KV cache that makes each step cheap.

Two views (one module each): Sampling draws the next token from the current tokens with temperature,
top-k and top-p and appends it for every panel; KV cache prefills the tokens, decodes the last ones
against each layer's cache, and proves the logits equal a recompute of the whole sequence.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtWidgets import QWidget

from gui.panels.base import Panel
from gui.panels.common import TrainedMaskWarning
from gui.panels.generate.kv_cache import KVCacheView
from gui.panels.generate.sampling import SamplingView
from gui.widgets.page_tabs import PageTabs

SUB_TABS = ("Sampling", "KV cache")


class GeneratePanel(Panel):
    title = "Generate"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        prefix = f"{self.channel}/"
        self.sampling = self.add_view(SamplingView(state, compute, prefix))
        self.kv_cache = self.add_view(KVCacheView(state, compute, prefix))
        self.tabs = PageTabs()  # sized by the view on show, not the widest view
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        self.trained_mask_warning = TrainedMaskWarning(state)  # above every draw the student reads
        self.layout().addWidget(self.trained_mask_warning)
        self.layout().addWidget(self.tabs, 1)
        # Names lessons and tests point at.
        s, k = self.sampling, self.kv_cache
        self.temperature_spin, self.top_k_spin, self.top_p_spin = s.temperature_spin, s.top_k_spin, s.top_p_spin
        self.seed_spin, self.draw_spin = s.seed_spin, s.draw_spin
        self.sample_button, self.step_back_button = s.sample_button, s.step_back_button
        self.sampling_plot, self.entropy_label, self.draw_label = s.plot, s.entropy_label, s.draw_label
        self.context_label = s.context_label
        self.decode_steps_spin, self.proof_label, self.bytes_label = k.decode_steps_spin, k.proof_label, k.bytes_label
        self.steps_table, self.layers_table, self.variants_table = k.steps_table, k.layers_table, k.variants_table
        self.apply_theme()

    def current_view(self):
        return self.tabs.currentWidget()

    def settings(self) -> dict[str, Any]:
        return {
            "sub_tab": SUB_TABS[self.tabs.currentIndex()],
            "temperature": self.temperature_spin.value(),
            "top_k": self.top_k_spin.value(),
            "top_p": self.top_p_spin.value(),
            "seed": self.seed_spin.value(),
            "decode_steps": self.decode_steps_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        for key, spin in (("top_k", self.top_k_spin), ("seed", self.seed_spin), ("decode_steps", self.decode_steps_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.setValue(value)  # the spin box clamps it to its range
        for key, spin in (("temperature", self.temperature_spin), ("top_p", self.top_p_spin)):
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                spin.setValue(float(value))
        tab = data.get("sub_tab")
        if isinstance(tab, str) and tab in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(tab))
