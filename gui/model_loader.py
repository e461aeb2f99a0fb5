"""Building the model the lab works on. Runs on the compute worker only (it imports torch).

The bundled trained model of a preset replaces random weights when resources/models has one;
everything else is `Transformer.from_seed(config, seed)`. Switching that policy is one edit here.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import ModelConfig
from core.lab_model import LabModel as LoadedModel  # the GUI's name for the lab's model
from core.presets import PRESETS

log = logging.getLogger("transformer_explorer.model")

# Above this many parameters the lab does not build real weights (a meta model still counts them).
MAX_INTERACTIVE_PARAMETERS = 400_000_000


class ModelTooLargeError(MemoryError):
    """A config with more parameters than the lab builds real weights for."""


@dataclass(frozen=True)
class TorchRuntime:
    torch_version: str
    devices: tuple[str, ...]
    device: str
    device_message: str
    tokenizer: Any


def load_torch(requested_device: str | None, threads: int | None = None) -> TorchRuntime:
    """Import torch (the slow part of start-up), pick the device and build the corpus tokenizer."""
    import torch

    from core.device import available_devices, choose_device
    from core.tokenizers import CharTokenizer
    from resources import resource_path

    if threads is not None:
        torch.set_num_threads(threads)
    choice = choose_device(requested_device)
    corpus = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    return TorchRuntime(
        torch_version=torch.__version__,
        devices=tuple(available_devices()),
        device=str(choice.device),
        device_message=choice.message or "",
        tokenizer=CharTokenizer.from_text(corpus),
    )


def _load_bundled(name: str) -> Any | None:
    from core.checkpoints import bundled_model_names, load_bundled

    if name not in bundled_model_names():
        return None
    try:
        return load_bundled(name)
    except Exception:  # a missing or damaged bundle falls back to random weights
        log.warning("bundled model %r could not be loaded", name, exc_info=True)
        return None


def load_model(config: ModelConfig, seed: int, device: str) -> LoadedModel:
    """The bundled model for an unedited preset that has one, else random weights from the seed."""
    from core.device import check_fits, choose_device, estimate_memory, format_bytes, run_with_cpu_fallback
    from core.model import Transformer, count_parameters
    from core.params import parameter_breakdown

    total = parameter_breakdown(config).total
    # A full-context forward of one sequence is what the panels ask of the model at most.
    estimate = estimate_memory(config, batch=2, seq=config.context_length)
    if total > MAX_INTERACTIVE_PARAMETERS:
        raise ModelTooLargeError(
            f"{config.name} has {total:,} parameters (about {format_bytes(estimate.total)}: {estimate.describe()}); "
            f"the lab builds real weights up to {MAX_INTERACTIVE_PARAMETERS:,} (shape and parameter views still work)"
        )
    choice = choose_device(device)
    check_fits(estimate, choice.device)
    trained = None
    tokenizer = None
    source = f"random (seed {seed})"
    if PRESETS.get(config.name) == config and os.environ.get("TRANSFORMER_EXPLORER_NO_BUNDLED") != "1":
        bundled = _load_bundled(config.name)
        if bundled is not None and bundled.config == config:
            trained, tokenizer, source = bundled.model, bundled.tokenizer, "bundled (trained)"

    def place(target):
        if trained is None:
            return Transformer.from_seed(config, seed=seed, device=target)
        return trained.to(target).eval()

    model, fallback_message = run_with_cpu_fallback(place, choice.device)
    placed_on = next(model.parameters()).device
    message = " ".join(m for m in (choice.message, fallback_message) if m)
    return LoadedModel(model, config, str(placed_on), source, count_parameters(model), message, tokenizer, seed)


def loaded_from_checkpoint(checkpoint: Any, device: str, seed: int) -> LoadedModel:
    """The lab's LoadedModel for a core.checkpoints.LoadedModel (worker only).

    `seed` is the state's seed, so that MainWindow.request_model sees the model as already built.
    """
    from core.model import count_parameters
    from core.training import training_mask_mode

    checkpoint.model.trained_mask_mode = training_mask_mode(checkpoint.metadata)
    return LoadedModel(checkpoint.model, checkpoint.config, device, checkpoint.source, count_parameters(checkpoint.model),
                       "", checkpoint.tokenizer, seed, checkpoint.metadata)


def open_model_folder(path: str, device: str, seed: int) -> LoadedModel:
    """One of our checkpoint folders or a Hugging Face GPT-2 / Llama folder; CheckpointError names what is wrong."""
    from core.checkpoints import resolve_checkpoint
    from core.device import choose_device

    target = str(choose_device(device).device)
    return loaded_from_checkpoint(resolve_checkpoint(Path(path), device=target), target, seed)


def save_model_folder(model: Any, path: str, tokenizer: Any = None, metadata: dict[str, Any] | None = None,
                      generation: dict[str, Any] | None = None) -> Path:
    """Write the model as a safetensors folder (worker only: it copies tensors): one `transformers` opens where
    the model's family exists there, with the lab's record beside it (core.model_saving).

    Without a training record of its own, a model trained with a leaky mask still gets one that says so:
    opened again, it must warn as it did before the save.
    """
    from core.model_saving import save_model

    trained_mask = getattr(model, "trained_mask_mode", "causal")
    if metadata is None and trained_mask != "causal":
        metadata = {"settings": {"mask_mode": trained_mask}}
    return save_model(model, path, tokenizer=tokenizer, metadata=metadata, generation=generation)


def versions() -> dict[str, str]:
    """Versions for the About dialog; torch only if it is already imported (never imports it here)."""
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    import pyqtgraph

    from gui import APP_VERSION

    torch = sys.modules.get("torch")
    return {
        "Transformer Explorer": APP_VERSION,
        "Python": sys.version.split()[0],
        "torch": getattr(torch, "__version__", "loading..."),
        "Qt": qVersion(),
        "PySide6": pyside_version,
        "pyqtgraph": pyqtgraph.__version__,
    }


__all__ = ["ModelTooLargeError", "LoadedModel", "TorchRuntime", "load_torch", "load_model", "loaded_from_checkpoint",
           "open_model_folder", "save_model_folder", "versions", "MAX_INTERACTIVE_PARAMETERS"]
