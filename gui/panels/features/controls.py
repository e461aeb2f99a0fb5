"""The Features panel's shared inputs: which SAE, which feature; and whether an SAE fits the lab's model."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QComboBox, QSpinBox

from gui.panels.base import Refusal
from gui.panels.common import sequence_refusal

MAX_FEATURE = 1 << 17


class FeatureControls(QObject):
    changed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.sae_combo = QComboBox()
        self.sae_combo.setObjectName("features-sae")
        self.sae_combo.setToolTip("The sparse autoencoder read: a bundled one (`sae list`), in SAELens's layout")
        self.feature_spin = QSpinBox()
        self.feature_spin.setObjectName("features-feature")
        self.feature_spin.setRange(0, 0)
        self.feature_spin.setToolTip("The feature shown and steered with: bounded by the SAE's width")
        self._fingerprints: tuple[object, str] | None = None
        self._fit: tuple | None = None  # (model, SAE config, sae_mismatch's answer)
        self._configs: dict[str, object] = {}
        from core.features.library import bundled_sae_names, sae_path

        for name in bundled_sae_names():
            self.sae_combo.addItem(name, str(sae_path(name)))
        self.sae_combo.currentIndexChanged.connect(self._sae_chosen)
        self.feature_spin.valueChanged.connect(self.changed)
        self._sae_chosen()

    def add_sae(self, folder: str) -> None:
        """Offer an SAE folder written in the window, and choose it."""
        from pathlib import Path

        self._configs.pop(folder, None)  # a folder written again holds another SAE
        index = self.sae_combo.findData(folder)
        if index < 0:
            self.sae_combo.addItem(Path(folder).name, folder)
            index = self.sae_combo.count() - 1
        if index == self.sae_combo.currentIndex():
            self._sae_chosen()
        else:
            self.sae_combo.setCurrentIndex(index)

    @property
    def sae_path(self) -> str:
        return self.sae_combo.currentData() or ""

    @property
    def feature(self) -> int:
        return self.feature_spin.value()

    def sae_config(self):
        """The chosen SAE's config (read from its cfg.json once), or None when there is none."""
        path = self.sae_path
        if not path:
            return None
        if path not in self._configs:
            from pathlib import Path

            from core.checkpoint_files import read_json_file
            from core.features.sae import CFG_FILE, config_from_cfg

            self._configs[path] = config_from_cfg(read_json_file(Path(path) / CFG_FILE, "an SAE config"),
                                                  Path(path) / CFG_FILE)
        return self._configs[path]

    def _sae_chosen(self) -> None:
        config = self.sae_config()
        self.feature_spin.setMaximum(max(0, (config.d_sae - 1) if config is not None else 0))
        self.changed.emit()

    def _fingerprint(self, model) -> str:
        if self._fingerprints is None or self._fingerprints[0] is not model:
            from core.features.fingerprint import weights_fingerprint

            self._fingerprints = (model, weights_fingerprint(model))
        return self._fingerprints[1]

    def refusal(self, state) -> Refusal | None:
        """Why the lab's model and text cannot be read by the chosen SAE, as one sentence, or None."""
        model, tokens = state.model, state.tokens
        config = self.sae_config()
        if config is None:
            return Refusal("SAE: no SAE is bundled; train one with `transformer-explorer sae train`.")
        from core.checkpoints import bundled_model_names
        from core.features.sae_fit import sae_mismatch

        # Read once per model and SAE: the answer walks the model's modules, and every edit of the text asks again.
        if self._fit is None or self._fit[0] is not model or self._fit[1] != config:
            self._fit = (model, config, sae_mismatch(model, config, self._fingerprint))
        wrong = self._fit[2]
        if wrong is not None:
            return Refusal(wrong, config.model_name if config.model_name in bundled_model_names() else "")
        if state.tokenizer is None or state.tokenizer.vocab_size > model.config.vocab_size:
            return Refusal(f"Model: {model.config.name} has no tokenizer of its own for the text.")
        if not tokens:
            return Refusal("Text: type some text (the sidebar's text field) to read its features.")
        problem = sequence_refusal(model, list(tokens))
        return Refusal(problem) if problem else None
