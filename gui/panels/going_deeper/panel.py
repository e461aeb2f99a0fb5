"""Going deeper, measured: stretching the context after training, and the 2017 block updated part by part.

Both views use models of their own (the bundled context models, the ladder's record), not the lab's text: the
panel has no token strip. It sits right after Positions in the tab order, since Stretching is about positions;
clicking a rung of the Ladder makes that rung's model the lab's model.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from gui.panels.base import Panel
from gui.panels.going_deeper.ladder import LadderView
from gui.panels.going_deeper.stretching import MAX_SCALE_STEP, MIN_SCALE_STEP, SCALE_STEPS_PER_UNIT, StretchingView
from gui.widgets.page_tabs import PageTabs

SUB_TABS = ("Stretching", "Ladder")
MIN_SCALE, MAX_SCALE = MIN_SCALE_STEP / SCALE_STEPS_PER_UNIT, MAX_SCALE_STEP / SCALE_STEPS_PER_UNIT


class GoingDeeperPanel(Panel):
    title = "Going deeper"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        prefix = f"{self.channel}/"
        self.stretching_view = self.add_view(StretchingView(state, compute, prefix))
        self.ladder_view = self.add_view(LadderView(state, compute, prefix))
        self.tabs = PageTabs()
        self.tabs.setObjectName("going-deeper-tabs")
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        self.layout().addWidget(self.tabs, 1)
        # Names lessons and tests point at.
        self.scale_slider, self.stretching_plot = self.stretching_view.scale_slider, self.stretching_view.plot
        self.stretching_table, self.stretching_summary = self.stretching_view.table, self.stretching_view.summary_label
        self.ladder_plot, self.ladder_table = self.ladder_view.plot, self.ladder_view.table
        self.ladder_summary = self.ladder_view.summary_label
        self.rung_combo, self.open_button = self.ladder_view.rung_combo, self.ladder_view.open_button
        self.apply_theme()

    def current_view(self):
        return self.tabs.currentWidget()

    def settings(self) -> dict[str, Any]:
        return {"tab": self.tabs.tabText(self.tabs.currentIndex()), "rope_scale": self.stretching_view.rope_scale}

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        scale = data.get("rope_scale")
        if isinstance(scale, (int, float)) and not isinstance(scale, bool) and MIN_SCALE <= scale <= MAX_SCALE:
            self.stretching_view.set_rope_scale(float(scale))
        if data.get("tab") in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(data["tab"]))
