"""Ablation: silence chosen heads or FFNs and measure what the model loses.

A head is ablated at its output `hook_z` (every position), an FFN at its write into the stream
`hook_ffn_out`. Zero ablation writes zeros; mean ablation writes the activation's mean over this
sequence's positions, which keeps the typical size of what the part writes and removes what it
says about each position in particular. Both go through `core.interventions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.interventions import intervene
from core.model import Transformer

ABLATION_MODES = ("zero", "mean")
TOP_PREDICTIONS = 5
# Positions unembedded at a time for the losses: a whole sequence's logits at GPT-2's vocabulary and 1,024
# tokens are 206 MB, and the two runs' would sit side by side with their log-softmax.
LOSS_CHUNK = 128


class AblationError(ValueError):
    """A head, FFN or mode the model does not have; the message says which."""


@dataclass(frozen=True)
class Ablation:
    mode: str
    heads: tuple[tuple[int, int], ...]  # (layer, head)
    ffns: tuple[int, ...]  # layers
    loss_before: float  # mean next-token loss over the sequence
    loss_after: float
    position_loss_before: np.ndarray  # (T - 1,) loss of predicting token t + 1 at position t
    position_loss_after: np.ndarray  # (T - 1,)
    position: int  # where the top predictions are read
    top_before: tuple[tuple[int, float], ...]  # (token id, probability), most likely first
    top_after: tuple[tuple[int, float], ...]


def refusal(model: Transformer) -> str | None:
    """Why the next-token loss this ablation measures does not apply to a model, or None when it does."""
    config = model.config
    if config.architecture == "encoder":
        return ("ablation measures the next-token loss, and an encoder predicts no next token: its head scores the "
                "token at each position, which it reads directly unless that token is blanked out")
    if config.architecture == "encoder-decoder":
        return ("ablation measures the next-token loss of one stack; an encoder-decoder's decoder also reads a source "
                "through its encoder (here the same text, the tokens it is to predict included)")
    return None


def _ablate(mode: str, head: int | None):
    def replace(activation: torch.Tensor, _name: str) -> torch.Tensor:
        patched = activation.clone()
        if head is None:  # (B, T, D)
            patched[:] = 0.0 if mode == "zero" else activation.mean(dim=1, keepdim=True)
        else:  # (B, H, T, d)
            patched[:, head] = 0.0 if mode == "zero" else activation[:, head].mean(dim=1, keepdim=True)
        return patched

    return replace


def ffn_problem(config) -> str | None:
    """Why this model has no FFNs to ablate (a sentence), or None when it has."""
    if config.attention_only:
        return f"attention-only {config.name} has no FFN in its blocks to ablate; ablate heads"
    return None


def ablation_hooks(model: Transformer, heads: Sequence[tuple[int, int]], ffns: Sequence[int], mode: str):
    """(pattern, intervention) pairs that ablate the chosen parts; an AblationError for a part the model lacks."""
    config = model.config
    if mode not in ABLATION_MODES:
        raise AblationError(f"unknown ablation {mode!r}; choose {' or '.join(ABLATION_MODES)}")
    hooks = []
    for layer, head in heads:
        if not (0 <= layer < config.n_layers and 0 <= head < config.n_heads):
            raise AblationError(f"there is no head {head} in block {layer}: the model has {config.n_layers} blocks "
                                f"of {config.n_heads} heads")
        hooks.append((f"blocks.{layer}.attn.hook_z", _ablate(mode, head)))
    if ffns and ffn_problem(config):
        raise AblationError(ffn_problem(config))
    for layer in ffns:
        if not 0 <= layer < config.n_layers:
            raise AblationError(f"there is no FFN in block {layer}: the model has {config.n_layers} blocks")
        hooks.append((f"blocks.{layer}.hook_ffn_out", _ablate(mode, None)))
    return hooks


def position_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(T - 1,) the loss of predicting each next token, from (1, T, V) logits."""
    return F.cross_entropy(logits[0, :-1].float(), tokens[0, 1:], reduction="none")  # (T - 1,)


def _losses_and_top(model: Transformer, hidden: torch.Tensor, tokens: torch.Tensor, position: int):
    """(T - 1,) next-token losses and the top predictions at `position`, from the final norm's output (1, T, D).

    The head runs on LOSS_CHUNK positions at a time, so a whole sequence's logits never exist at once."""
    targets = tokens[0, 1:]  # (T - 1,)
    losses = []
    for start in range(0, targets.shape[0], LOSS_CHUNK):
        stop = min(start + LOSS_CHUNK, targets.shape[0])
        logits = model.unembed(hidden[0, start:stop])  # (C, V)
        losses.append(F.cross_entropy(logits.float(), targets[start:stop], reduction="none"))  # (C,)
    return torch.cat(losses), _top(model.unembed(hidden[0, position]), TOP_PREDICTIONS)  # (T - 1,)


def _top(logits: torch.Tensor, k: int) -> tuple[tuple[int, float], ...]:
    probs = torch.softmax(logits.double(), dim=-1)  # (V,)
    values, ids = probs.topk(min(k, probs.numel()))
    return tuple((int(i), float(v)) for i, v in zip(ids, values))


def ablate(model: Transformer, ids: Sequence[int], heads: Sequence[tuple[int, int]] = (), ffns: Sequence[int] = (),
           mode: str = "zero", position: int | None = None) -> Ablation:
    problem = refusal(model)
    if problem:
        raise AblationError(problem)
    hooks = ablation_hooks(model, heads, ffns, mode)
    tokens = torch.tensor([list(ids)], device=next(model.parameters()).device)  # (1, T)
    model.check_tokens(tokens)
    if tokens.shape[1] < 2:
        raise AblationError("the loss needs at least two tokens: one to read and one to predict")
    position = tokens.shape[1] - 1 if position is None else position
    if not 0 <= position < tokens.shape[1]:
        raise AblationError(f"position {position} is outside the sequence (0..{tokens.shape[1] - 1})")
    with torch.no_grad():
        # One run at a time, to the final norm: its losses are read before the ablated run starts.
        loss_before, top_before = _losses_and_top(model, model(tokens, head=False), tokens, position)
        with intervene(model, hooks):
            hidden = model(tokens, head=False)  # (1, T, D)
        loss_after, top_after = _losses_and_top(model, hidden, tokens, position)
    return Ablation(
        mode=mode, heads=tuple((int(l), int(h)) for l, h in heads), ffns=tuple(int(l) for l in ffns),
        loss_before=float(loss_before.mean()), loss_after=float(loss_after.mean()),
        position_loss_before=loss_before.double().cpu().numpy(), position_loss_after=loss_after.double().cpu().numpy(),
        position=position, top_before=top_before, top_after=top_after,
    )
