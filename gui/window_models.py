"""The window's model files: open a checkpoint or Hugging Face folder, get one from the library, save one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from gui.model_loader import open_model_folder, save_model_folder
from gui.save_model_dialog import choose_model_folder


class ModelFiles:
    """File > Open model folder / Get a model / Save model for the main window (a mixin: it uses the
    window's state, compute worker, settings and message boxes)."""

    def model_library_dialog(self):
        from gui.model_library_dialog import ModelLibraryDialog

        dialog = ModelLibraryDialog(self.compute, self.open_model, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def open_model_dialog(self) -> None:
        start = str(self.settings_store.value("model/dir", str(Path.home())))
        path = QFileDialog.getExistingDirectory(self, "Open model folder", start)
        if path:
            self.open_model(path)

    def open_model(self, path: str | Path) -> None:
        """Load a checkpoint or Hugging Face folder on the worker; on failure a message box, and the model stays."""
        if not self.state.torch_ready:
            self._show_message("Could not open the model", "torch is still loading; try again in a moment")
            return
        folder, device, seed = str(path), self.state.device, self.state.seed
        self.settings_store.setValue("model/dir", str(Path(folder).parent))
        self.compute.submit("model", lambda: open_model_folder(folder, device, seed), self.adopt_model,
                            f"opening {Path(folder).name}", cancellable=False,
                            on_error=lambda message: self._show_message("Could not open the model", message))

    def save_model_dialog(self) -> None:
        if self.state.model is None:
            self._show_message("Could not save the model", "no model is loaded yet")
            return
        start = Path(str(self.settings_store.value("model/dir", str(Path.home()))))
        folder = choose_model_folder(self, "Save model as", start, self.state.model.config.name)
        if folder is not None:
            self.save_model(folder)

    def export_model_dialog(self) -> None:
        if self.state.model is None:
            self._show_message("Could not save the model", "no model is loaded yet")
            return
        start = Path(str(self.settings_store.value("model/dir", str(Path.home()))))
        folder = choose_model_folder(self, "Save model for transformers", start, f"{self.state.model.config.name}-hf")
        if folder is not None:
            self.export_model(folder)

    def export_model(self, path: str | Path) -> None:
        """Save as a Hugging Face folder on the worker; a model with no Hugging Face equivalent gets a message."""
        model, tokenizer, folder = self.state.model, self.state.tokenizer, str(path)
        if model is None:
            self._show_message("Could not save the model", "no model is loaded yet")
            return

        record, generation = self._kept_with(model)

        def save():
            from core.hf_export import save_hf_folder

            return save_hf_folder(model, folder, tokenizer, record, generation)

        self.settings_store.setValue("model/dir", str(Path(folder).parent))
        self.compute.submit("save-model", save,
                            lambda written: self.statusBar().showMessage(f"saved the model for transformers to {written}", 5000),
                            "saving the model for transformers",
                            on_error=lambda message: self._show_message("Could not save the model", message))

    def save_model(self, path: str | Path) -> None:
        model, tokenizer, folder = self.state.model, self.state.tokenizer, str(path)
        if model is None:
            self._show_message("Could not save the model", "no model is loaded yet")
            return
        if tokenizer is not None and tokenizer.vocab_size > model.config.vocab_size:
            tokenizer = None  # ids the model cannot embed: a checkpoint with it would not load back
        record, generation = self._kept_with(model)
        self.settings_store.setValue("model/dir", str(Path(folder).parent))
        self.compute.submit("save-model", lambda: save_model_folder(model, folder, tokenizer, record, generation),
                            lambda written: self.statusBar().showMessage(f"saved the model to {written}", 5000),
                            "saving the model", on_error=lambda message: self._show_message("Could not save the model", message))

    def _kept_with(self, model) -> tuple[dict | None, dict | None]:
        """(training record, generation_config.json) of the loaded folder `model` came from, to write again."""
        loaded = self.loaded if self.loaded is not None and self.loaded.model is model else None
        kept = dict(loaded.metadata or {}) if loaded is not None and isinstance(loaded.metadata, dict) else {}
        from core.hf_import import FOLDER_KEYS  # torch is loaded: a model is

        generation = kept.get("generation_config") or kept.get("generation") or None
        record = {key: value for key, value in kept.items() if key not in FOLDER_KEYS} or None
        return record, generation


__all__ = ["ModelFiles"]
