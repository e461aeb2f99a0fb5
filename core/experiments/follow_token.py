"""Follow one token through: its residual-stream vector after every sublayer, and what it predicts there.

The reading traces "cat" through a block: attention mixes in context, the FFN processes the token
alone, each result is added back onto the residual stream. Here that trace is measured on a real
model: at each stage (embedding, every attention / cross-attention / FFN residual add, the final
norm) the chosen position's vector is captured through the model's hook points, its length is
taken, the length of what that stage added is taken, and the vector is read through the final norm
and the head (a "logit lens") to show which next tokens it would already predict at that point.

In a post-norm block the norm comes after the add, so a stage's vector there is the normed one and
its "update" includes what the norm did. The last stage is the final norm's output, whose lens is
exactly the model's own prediction (the head applied to it, with no second norm).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.experiments.common import token_labels
from core.hooks import capture
from core.model import SequenceError, Transformer

DEFAULT_TOP_K = 5


@dataclass(frozen=True, eq=False)
class FollowTokenResult:
    """One position's path through the decoder stack (or the only stack), stage by stage."""

    position: int  # the followed position in the sequence
    token_label: str  # its token, made visible
    sequence_labels: tuple[str, ...]  # every token of the sequence, for the picker
    stage_labels: tuple[str, ...]  # "embedding", "block 0: + attention", ..., "final norm"
    stage_kinds: tuple[str, ...]  # embedding, attention, cross-attention, ffn, final-norm
    stage_layers: np.ndarray  # (S,) block index of each stage, -1 for embedding and final norm
    stage_hooks: tuple[str, ...]  # the hook point each stage's vector was captured at
    norms: np.ndarray  # (S,) ||x|| of the position's residual vector after the stage
    update_norms: np.ndarray  # (S,) ||x_after - x_before|| (the embedding's update is the embedding itself)
    top_ids: np.ndarray  # (S, k) the logit lens's k most likely next tokens at each stage
    top_labels: tuple[tuple[str, ...], ...]  # (S, k) their labels
    top_probs: np.ndarray  # (S, k) their probabilities (softmax over the whole vocabulary)
    next_token_label: str | None  # the token that actually follows in the text, or None at the end
    placement: str  # "pre" or "post": where the stages' norms sit
    model_name: str

    @property
    def n_stages(self) -> int:
        return len(self.stage_labels)


def stage_plan(model: Transformer) -> list[tuple[str, str, int, str]]:
    """(label, kind, block, hook name) for every stage, in forward order."""
    config = model.config
    post = config.norm_placement == "post"
    plan = [("embedding", "embedding", -1, "hook_embed")]
    cross = config.architecture == "encoder-decoder"
    for index in range(config.n_layers):
        then_norm = ", norm" if post else ""
        plan.append((f"block {index}: + attention{then_norm}", "attention", index, f"blocks.{index}.hook_resid_mid"))
        if cross:
            plan.append((f"block {index}: + cross-attention{then_norm}", "cross-attention", index,
                         f"blocks.{index}.hook_resid_cross"))
        if config.attention_only:  # the block's output is its stream after attention: no FFN stage
            continue
        ffn = "experts" if config.is_moe else "FFN"
        plan.append((f"block {index}: + {ffn}{then_norm}", "ffn", index, f"blocks.{index}.hook_resid_post"))
    if config.final_norm:
        plan.append(("final norm", "final-norm", -1, "hook_final"))
    return plan


def follow_token(
    model: Transformer,
    tokens: Sequence[int],
    position: int,
    tokenizer_or_labels=None,
    k: int = DEFAULT_TOP_K,
) -> FollowTokenResult:
    """Trace the token at `position` through every sublayer of `model` on the sequence `tokens`."""
    ids = [int(t) for t in tokens]
    if not ids:
        raise SequenceError("the sequence is empty; give at least one token")
    if not 0 <= position < len(ids):
        raise SequenceError(f"position {position} is outside the sequence (0..{len(ids) - 1})")
    if k < 1:
        raise SequenceError(f"k must be at least 1, got {k}")
    config = model.config
    plan = stage_plan(model)
    device = next(model.parameters()).device
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.inference_mode():
        with capture(model, [hook for *_, hook in plan]) as captured:
            model(batch)
        vectors = torch.stack([captured[hook][0, position] for *_, hook in plan]).double()  # (S, D)
        previous = torch.cat([torch.zeros_like(vectors[:1]), vectors[:-1]])  # (S, D)
        updates = vectors - previous  # (S, D)
        # The lens puts each stage through the final norm, except the final norm's own output.
        lens_input = vectors.to(captured["hook_embed"].dtype)  # (S, D)
        normed = model.final_norm(lens_input[:-1]) if config.final_norm else lens_input[:-1]  # (S-1, D)
        logits = model.unembed(torch.cat([normed, lens_input[-1:]]))  # (S, V)
        probabilities = F.softmax(logits.double(), dim=-1)  # (S, V)
        top = probabilities.topk(min(k, config.vocab_size), dim=-1)  # (S, k) each
    top_ids = top.indices.cpu().numpy().astype(np.int64)  # (S, k)
    sequence_labels = token_labels(ids, tokenizer_or_labels)
    next_label = token_labels([ids[position + 1]], tokenizer_or_labels)[0] if position + 1 < len(ids) else None
    return FollowTokenResult(
        position=position,
        token_label=sequence_labels[position],
        sequence_labels=sequence_labels,
        stage_labels=tuple(label for label, *_ in plan),
        stage_kinds=tuple(kind for _, kind, *_ in plan),
        stage_layers=np.array([layer for _, _, layer, _ in plan], dtype=np.int64),
        stage_hooks=tuple(hook for *_, hook in plan),
        norms=vectors.norm(dim=-1).cpu().numpy(),  # (S,)
        update_norms=updates.norm(dim=-1).cpu().numpy(),  # (S,)
        top_ids=top_ids,
        top_labels=tuple(token_labels(row.tolist(), tokenizer_or_labels) for row in top_ids),
        top_probs=top.values.cpu().numpy(),  # (S, k)
        next_token_label=next_label,
        placement=config.norm_placement,
        model_name=config.name,
    )


__all__ = ["FollowTokenResult", "follow_token", "stage_plan", "DEFAULT_TOP_K"]
