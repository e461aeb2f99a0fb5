"""What the Feature and Steer views share: they read one SAE feature of the lab's model and text, chosen in the
panel's FeatureControls, so a change of those controls recomputes them and the controls' refusal is theirs."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from gui.panels.base import View


class FeatureView(View):
    reads = frozenset({"model", "tokens", "tokenizer"})

    def __init__(self, state, compute, controls, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        refusal = self.controls.refusal(self.state)
        if refusal is not None:
            return refusal
        return self.feature_inputs(model)

    def feature_inputs(self, model):
        """The compute's inputs once the model, text and SAE fit one another."""
        raise NotImplementedError


__all__ = ["FeatureView"]
