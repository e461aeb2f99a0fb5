"""TransformerLens hook names, as SAEs in the field are named, and the app's hook points they read.

An SAE names the activation it reads the way TransformerLens does (`blocks.2.hook_resid_post`); the
app's own hook points (core.hooks) have the same names for the residual stream, and differ for what
the FFN writes (`hook_ffn_out`, TransformerLens's `hook_mlp_out`) and the FFN's hidden activation.
"""

from __future__ import annotations

import re

from core.model import SequenceError

# TransformerLens's block-hook suffix -> the app's (core.model.Block and FeedForward).
_BLOCK_HOOKS = {
    "hook_resid_pre": "hook_resid_pre",
    "hook_resid_mid": "hook_resid_mid",
    "hook_resid_post": "hook_resid_post",
    "hook_attn_out": "hook_attn_out",
    "hook_mlp_out": "hook_ffn_out",
    "mlp.hook_post": "ffn.hook_hidden",
}
_PATTERN = re.compile(r"blocks\.(\d{1,4})\.(.+)")
KNOWN_SUFFIXES = tuple(_BLOCK_HOOKS)


class HookNameError(SequenceError):
    """A hook name that is not a TransformerLens name of this model's activations."""


def app_hook(model, hook_name: str) -> str:
    """The app's hook point for a TransformerLens hook name, or HookNameError naming the ones there are."""
    match = _PATTERN.fullmatch(hook_name or "")
    examples = ", ".join(f"blocks.{{i}}.{suffix}" for suffix in KNOWN_SUFFIXES)
    if match is None or match.group(2) not in _BLOCK_HOOKS:
        raise HookNameError(f"unknown hook {hook_name!r}; hooks are {examples}")
    layer = int(match.group(1))
    n_layers = model.config.n_layers
    if layer >= n_layers:
        raise HookNameError(f"unknown hook {hook_name!r}: this model has blocks 0..{n_layers - 1}")
    name = f"blocks.{layer}.{_BLOCK_HOOKS[match.group(2)]}"
    if name not in dict(model.named_modules()):
        raise HookNameError(f"unknown hook {hook_name!r}: this model has no such activation (an attention-only or "
                            "mixture-of-experts block lacks some)")
    return name


def hook_layer(hook_name: str) -> int:
    match = _PATTERN.fullmatch(hook_name)
    return int(match.group(1)) if match else -1


def hook_width(model, hook_name: str) -> int:
    """The width of the activation a hook carries: d_ff for the FFN's hidden units, d_model otherwise."""
    app_hook(model, hook_name)
    return model.config.d_ff if hook_name.endswith("mlp.hook_post") else model.config.d_model


__all__ = ["HookNameError", "KNOWN_SUFFIXES", "app_hook", "hook_layer", "hook_width"]
