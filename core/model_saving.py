"""Saving a model the way every save path of the app does (Train's Save model..., File > Save model as,
`main.py train --out`): as a folder `transformers` opens where the model's family exists there, else as
the lab's own checkpoint folder. Either way the folder opens again in the lab exactly as it was saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.checkpoint_files import CheckpointError
from core.checkpoints import save_checkpoint
from core.families.registry import export_family
from core.model import Transformer
from core.tokenizers import Tokenizer


def has_hf_family(model: Transformer) -> bool:
    """Whether `transformers` has this model's family (GPT-2, Llama, Qwen2 shapes, ...)."""
    try:
        export_family(model.config)
    except CheckpointError:
        return False
    return True


def save_model(model: Transformer, path: str | Path, tokenizer: Tokenizer | None = None,
               metadata: dict[str, Any] | None = None, generation: dict[str, Any] | None = None) -> Path:
    """Write `model` (with its tokenizer, training record and generation settings) as a folder; returns it."""
    if has_hf_family(model):
        from core.hf_export import save_hf_folder

        return save_hf_folder(model, path, tokenizer=tokenizer, metadata=metadata, generation=generation)
    return save_checkpoint(model, path, tokenizer=tokenizer, metadata=metadata)


__all__ = ["has_hf_family", "save_model"]
