"""The model the lab works on, with where it came from: built from a seed, bundled, opened, or trained here.

A plain record (no Qt, no torch import): the compute worker makes it, the GUI thread only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.config import ModelConfig


@dataclass(frozen=True)
class LabModel:
    model: Any  # core.model.Transformer, eval mode, on `device`
    config: ModelConfig
    device: str
    source: str  # "bundled" or "random (seed N)"
    parameters: int
    message: str = ""  # e.g. why a requested device was not used
    tokenizer: Any = None  # the bundled model's own tokenizer, when it has one
    seed: int = 0
    metadata: Any = None  # a folder's training record and generation settings (core.checkpoints), if it had them


__all__ = ["LabModel"]
