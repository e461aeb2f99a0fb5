"""Features: a sparse autoencoder's features on the lab's model, opened one by one and steered with.

The SAE and the feature are shared by the two views: the dashboard (contexts, histogram, logit
effects, search and the text's features) and steering (the edit's effect on the next token and the
continuation). Only the view on screen computes.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from gui.panels.base import Panel
from gui.panels.common import labelled
from gui.panels.features.controls import FeatureControls
from gui.panels.features.dashboard import DashboardView
from gui.panels.features.steering import SteeringView
from gui.panels.features.training import TrainView
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.page_tabs import PageTabs

SUB_TABS = ("Feature", "Steer", "Train")


class FeaturesPanel(Panel):
    title = "Features"
    refresh_on = frozenset()

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.controls = FeatureControls(self)
        row = FlowLayout()
        labelled(row, "SAE", self.controls.sae_combo)
        labelled(row, "feature", self.controls.feature_spin)
        holder = QWidget()
        holder.setLayout(row)
        self.layout().addWidget(holder)
        prefix = f"{self.channel}/"
        self.dashboard = self.add_view(DashboardView(state, compute, self.controls, prefix))
        self.steering = self.add_view(SteeringView(state, compute, self.controls, prefix))
        self.training = self.add_view(TrainView(state, compute, self.controls.add_sae, prefix))
        self.tabs = PageTabs()
        self.tabs.setObjectName("features-tabs")
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        self.layout().addWidget(self.tabs, 1)
        self.feature_spin = self.controls.feature_spin
        self.alpha_spin, self.ablate_box = self.steering.alpha_spin, self.steering.ablate_box
        self.apply_theme()

    def current_view(self):
        return self.tabs.currentWidget()

    def settings(self) -> dict[str, Any]:
        return {"tab": self.tabs.tabText(self.tabs.currentIndex()), "sae": self.controls.sae_combo.currentText(),
                "feature": self.feature_spin.value(), "alpha": self.alpha_spin.value(),
                "ablate": self.ablate_box.isChecked(),
                "search": [self.dashboard.first_spin.value(), self.dashboard.last_spin.value()]}

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        index = self.controls.sae_combo.findText(data["sae"]) if isinstance(data.get("sae"), str) else -1
        if index >= 0:
            self.controls.sae_combo.setCurrentIndex(index)
        for key, spin in (("feature", self.feature_spin), ("alpha", self.alpha_spin)):
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e9:
                spin.setValue(int(value) if key == "feature" else float(value))
        if isinstance(data.get("ablate"), bool):
            self.ablate_box.setChecked(data["ablate"])
        search = data.get("search")
        if (isinstance(search, list) and len(search) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 100_000 for v in search)):
            self.dashboard.select(*search)
        if data.get("tab") in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(data["tab"]))
