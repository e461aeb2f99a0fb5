"""Whether an SAE reads the lab's model: its hook exists with the SAE's width, on the model it was trained on,
with the same trained weights. The Features panel and the offline pages refuse with the same sentence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def sae_mismatch(model: Any, config: Any, fingerprint: Callable[[Any], str]) -> str | None:
    """Why the SAE (its `config`) cannot read `model`, as one sentence, or None; `fingerprint` hashes the weights."""
    from core.features.hook_names import HookNameError, app_hook, hook_width

    wrong = (f"Model: this SAE reads {config.model_name or 'another model'}'s trained weights at {config.hook_name}, "
             f"not {model.config.name}'s; load {config.model_name or 'that model'}.")
    try:
        app_hook(model, config.hook_name)
        if hook_width(model, config.hook_name) != config.d_in or model.config.name != config.model_name:
            return wrong
    except HookNameError:
        return wrong
    if config.model_fingerprint and fingerprint(model) != config.model_fingerprint:
        return wrong
    return None


__all__ = ["sae_mismatch"]
