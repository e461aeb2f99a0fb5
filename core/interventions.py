"""Interventions: hook points whose output a function may replace, scoped like `capture()`.

A function `fn(tensor, hook_name)` is attached to every hook point a pattern names; whatever it
returns (a tensor of the same shape) flows on in place of the original, and `None` leaves the
original untouched. The hooks are removed when the block exits, even on error, so a model never
keeps an intervention past the experiment that asked for it. Patching and ablation are built on
this and on nothing else in the model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

from core.hooks import resolve_hook_names

Intervention = Callable[[torch.Tensor, str], "torch.Tensor | None"]


class InterventionError(ValueError):
    """A replacement that cannot stand in for the activation (wrong shape or dtype)."""


@contextlib.contextmanager
def intervene(model: nn.Module, hooks: Iterable[tuple[str, Intervention]]) -> Iterator[list[str]]:
    """Attach each (pattern, fn) to the hook points the pattern matches; yields the hook names attached.

    Several functions on one hook point run in the order given, each seeing the previous one's output.
    """
    handles = []
    attached: list[str] = []
    try:
        for pattern, fn in hooks:
            for name in resolve_hook_names(model, [pattern]):
                point = model.get_submodule(name)

                def replace(_module: nn.Module, _inputs: tuple, output: torch.Tensor,
                            name: str = name, fn: Intervention = fn) -> torch.Tensor | None:
                    replacement = fn(output, name)
                    if replacement is None:
                        return None
                    if replacement.shape != output.shape or replacement.dtype != output.dtype:
                        raise InterventionError(
                            f"{name}: a replacement of shape {tuple(replacement.shape)} ({replacement.dtype}) cannot "
                            f"stand in for {tuple(output.shape)} ({output.dtype})"
                        )
                    return replacement

                handles.append(point.register_forward_hook(replace))
                attached.append(name)
        yield attached
    finally:
        for handle in handles:
            handle.remove()
