"""Named hook points and a scoped capture of what flows through them.

Every interesting tensor of the model passes through an identity `HookPoint` module whose name
is its path in the module tree (`blocks.0.attn.hook_pattern`). Capturing is opt-in: nothing is
stored unless `capture()` asks for it, and the hooks it installs are removed when it exits, even
on error, so a big model run with nothing captured holds no attention maps.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn


class HookPoint(nn.Module):
    """An identity layer that marks a place whose output can be captured."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @property
    def is_observed(self) -> bool:
        return bool(self._forward_hooks)


def hook_names(model: nn.Module) -> list[str]:
    """Every hook point of a model, in the order the forward pass reaches them."""
    return [name for name, module in model.named_modules() if isinstance(module, HookPoint)]


def resolve_hook_names(model: nn.Module, patterns: Iterable[str]) -> list[str]:
    """Expand shell-style patterns (`blocks.*.hook_resid_post`) into hook names; unknown names raise."""
    available = hook_names(model)
    chosen: list[str] = []
    for pattern in patterns:
        matches = [name for name in available if fnmatch.fnmatchcase(name, pattern)]
        if not matches:
            raise KeyError(f"no hook point matches {pattern!r}")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


class Captured(dict[str, torch.Tensor]):
    """Tensors captured during a forward pass, keyed by hook name (detached unless gradients were asked for)."""


@contextlib.contextmanager
def capture(model: nn.Module, patterns: Iterable[str], keep_graph: bool = False,
            on_output: Callable[[str, torch.Tensor], None] | None = None) -> Iterator[Captured]:
    """Record the outputs of the chosen hook points for the forward passes inside the block.

    With keep_graph the tensors stay attached to autograd (and `retain_grad` is called) so that a
    backward pass inside the block fills their `.grad`. With on_output(name, tensor) each output is
    handed over as it is made and not stored, so a caller that copies it out holds it only once.
    """
    store = Captured()
    handles = []
    try:
        for name in resolve_hook_names(model, patterns):
            point = model.get_submodule(name)

            def record(_module: nn.Module, _inputs: tuple, output: torch.Tensor, name: str = name) -> None:
                if on_output is not None:
                    on_output(name, output.detach())
                elif keep_graph:
                    if output.requires_grad:
                        output.retain_grad()
                    store[name] = output
                else:
                    store[name] = output.detach()

            handles.append(point.register_forward_hook(record))
        yield store
    finally:
        for handle in handles:
            handle.remove()
