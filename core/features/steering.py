"""Steering and ablation with an SAE's features, exact: the SAE's error term is kept.

At the SAE's hook the activation x is written as decode(f) + error, error = x - decode(f). An edit
changes the features to f' and the model reads decode(f') + error = x + (f' - f) @ W_dec: the
change is the edited features' alone, and with no edit nothing is added, so the output is
bit-identical to the model without the SAE. Edits: add alpha times a feature's (unit) decoder
direction at every position (steering), or set a feature to zero where it fires (ablation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.features.hook_names import app_hook
from core.features.sae import SAEFileError, SparseAutoencoder, check_feature
from core.interventions import intervene

MAX_ALPHA = 1000.0


@dataclass(frozen=True)
class FeatureEdit:
    feature: int
    alpha: float = 0.0  # added times the feature's decoder direction at every position
    ablate: bool = False  # the feature's own contribution removed wherever it fires

    @property
    def changes(self) -> bool:
        return self.ablate or self.alpha != 0.0


def check_edits(sae: SparseAutoencoder, edits: Sequence[FeatureEdit]) -> None:
    for edit in edits:
        check_feature(sae, edit.feature)
        if not abs(edit.alpha) <= MAX_ALPHA:
            raise SAEFileError(f"a steering strength must be within +-{MAX_ALPHA:g}, got {edit.alpha}")


def edit_delta(sae: SparseAutoencoder, x: torch.Tensor, edits: Sequence[FeatureEdit]) -> torch.Tensor | None:
    """(..., D) what the edits add to the activation x (..., D), or None when they change nothing."""
    active = [edit for edit in edits if edit.changes]
    if not active:
        return None
    delta = torch.zeros_like(x)  # (..., D)
    ablated = [edit.feature for edit in active if edit.ablate]
    if ablated:
        features = sae.encode(x)[..., ablated]  # (..., A)
        delta = delta - features @ sae.W_dec[ablated].to(x.dtype)  # (..., D)
    for edit in active:
        if edit.alpha != 0.0:
            delta = delta + edit.alpha * sae.W_dec[edit.feature].to(x.dtype)  # (..., D)
    return delta


@contextlib.contextmanager
def steered(model, sae: SparseAutoencoder, edits: Sequence[FeatureEdit]) -> Iterator[None]:
    """Inside the block, the model's forward passes read the edited activation at the SAE's hook."""
    if sae.config.is_transcoder:
        raise SAEFileError("steering edits an SAE's own hook; a transcoder writes another one: open an SAE")
    check_edits(sae, edits)
    hook = app_hook(model, sae.config.hook_name)

    def edit(output: torch.Tensor, _name: str) -> torch.Tensor | None:
        delta = edit_delta(sae, output, edits)
        return None if delta is None else output + delta  # (B, T, D)

    with intervene(model, [(hook, edit)]):
        yield


@dataclass(frozen=True)
class SteeringResult:
    """The next token after the text, without and with the edits, and a continuation of each."""

    clean_probs: np.ndarray  # (V,)
    steered_probs: np.ndarray  # (V,)
    clean_ids: tuple[int, ...]  # the continuation without the edits
    steered_ids: tuple[int, ...]  # and with them
    identical: bool  # the steered logits equal the clean ones bit for bit


def _greedy(model, ids: list[int], new_tokens: int) -> tuple[int, ...]:
    context = model.config.context_length
    out = list(ids)
    device = next(model.parameters()).device
    for _ in range(new_tokens):
        logits = model(torch.tensor([out[-context:]], device=device))  # (1, T, V)
        out.append(int(logits[0, -1].argmax()))
    return tuple(out[len(ids):])


@torch.inference_mode()
def steer(model, sae: SparseAutoencoder, ids: Sequence[int], edits: Sequence[FeatureEdit],
          new_tokens: int = 40) -> SteeringResult:
    """Next-token distributions and greedy continuations of `ids` with and without the edits."""
    ids = [int(i) for i in ids]
    device = next(model.parameters()).device
    batch = torch.tensor([ids], device=device)  # (1, T)
    clean = model(batch)[0, -1]  # (V,)
    with steered(model, sae, edits):
        edited = model(batch)[0, -1]  # (V,)
        steered_ids = _greedy(model, ids, new_tokens)
    clean_ids = _greedy(model, ids, new_tokens)
    return SteeringResult(F.softmax(clean.double(), -1).cpu().numpy(), F.softmax(edited.double(), -1).cpu().numpy(),
                          clean_ids, steered_ids, bool(torch.equal(clean, edited)))


__all__ = ["FeatureEdit", "SteeringResult", "check_edits", "edit_delta", "steer", "steered"]
