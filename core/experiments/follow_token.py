"""Follow one token through: its residual-stream vector after every sublayer, and what it predicts there.

The reading traces "cat" through a block: attention mixes in context, the FFN processes the token
alone, each result is added back onto the residual stream. Here that trace is measured on a real
model: at each stage (embedding, every attention / cross-attention / FFN residual add, the final
norm) the chosen position's vector is captured through the model's hook points, its length is
taken, the length of what that stage added is taken, and the vector is read through the final norm
and the head (a "logit lens") to show which tokens it would already predict at that point.

What the head predicts depends on the model. A decoder's head scores the *next* token; an
encoder's (BERT's masked-LM head) scores the token that belongs at the position itself, which is
how it fills in a blank. A model with BERT's head transform (dense, activation, norm before the
vocabulary matrix) gets one more stage, the transformed vector the head reads; the lens of every
earlier stage goes through the same transform.

Each stage also says what it read: an attention stage, the keys of largest weight (the mean over
heads) of the followed query; a cross-attention stage, the source tokens the decoder read from the
encoder's output; a mixture of experts, the experts the router chose and their mixing weights.

An encoder-decoder is followed in either tower: the decoder (the default; its logits are the
model's) or the encoder (a source token on its way to the memory every cross-attention reads; its
vectors never meet the head, so the encoder tower has no lens).

In a post-norm block the norm comes after the add, so a stage's vector there is the normed one and
its "update" includes what the norm did. The final norm's output is read by the head with no
second norm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.experiments.common import as_token_list, token_labels
from core.hooks import capture
from core.model import SequenceError, Transformer

DEFAULT_TOP_K = 5
READS = 3  # keys of largest weight listed for an attention stage
TOWERS = ("decoder", "encoder")
HEAD_TRANSFORM_HOOK = "head_transform (applied to the last stage)"  # no hook point: computed from the last vector


@dataclass(frozen=True, eq=False)
class FollowTokenResult:
    """One position's path through a tower, stage by stage."""

    position: int  # the followed position in the tower's sequence
    token_label: str  # its token, made visible
    sequence_labels: tuple[str, ...]  # every token of the tower's sequence, for the picker
    stage_labels: tuple[str, ...]  # "embedding", "block 0: + attention", ..., "final norm"
    stage_kinds: tuple[str, ...]  # embedding, attention, cross-attention, ffn, final-norm, head-transform
    stage_layers: np.ndarray  # (S,) block index of each stage, -1 outside the blocks
    stage_hooks: tuple[str, ...]  # the hook point each stage's vector was captured at
    norms: np.ndarray  # (S,) ||x|| of the position's vector after the stage
    update_norms: np.ndarray  # (S,) ||x_after - x_before|| (the embedding's update is the embedding itself)
    top_ids: np.ndarray  # (S, k) the logit lens's k most likely tokens at each stage; (S, 0) without a lens
    top_labels: tuple[tuple[str, ...], ...]  # (S, k) their labels
    top_probs: np.ndarray  # (S, k) their probabilities (softmax over the whole vocabulary)
    next_token_label: str | None  # the token that follows in the text, or None at the end
    placement: str  # "pre" or "post": where the stages' norms sit
    model_name: str
    tower: str = "decoder"  # "decoder" (the token stream: a decoder, or the only stack) or "encoder" (a pair's source)
    predicts: str = "next"  # "next": the head scores the next token; "here": this position's own token; "": no lens
    target_label: str | None = None  # what the head should rank first: the next token, or (encoder) the token here
    architecture: str = "decoder"  # the model's: decoder, encoder or encoder-decoder
    read_positions: np.ndarray | None = None  # (S, R) keys of largest mean weight at attention stages, -1 elsewhere
    read_weights: np.ndarray | None = None  # (S, R) their weights, the mean over heads; NaN elsewhere
    read_labels: tuple[tuple[str, ...], ...] = ()  # (S, R) their labels (source tokens for cross-attention)
    expert_ids: np.ndarray | None = None  # (S, k) experts the router chose at a mixture's FFN stage, -1 elsewhere
    expert_weights: np.ndarray | None = None  # (S, k) their mixing weights (softmax over the chosen logits); NaN elsewhere
    source_labels: tuple[str, ...] = ()  # what an encoder-decoder's encoder read; () for one stack
    # A tuned lens beside the logit lens (core.features.library.with_tuned_lens), at the stages a translator reads:
    tuned_top_labels: tuple[tuple[str, ...], ...] = ()  # (S, k) its guesses; () rows elsewhere
    tuned_top_probs: np.ndarray | None = None  # (S, k) their probabilities; NaN elsewhere
    logit_kl: np.ndarray | None = None  # (S,) KL(final || logit lens) in nats at the followed position; NaN elsewhere
    tuned_kl: np.ndarray | None = None  # (S,) KL(final || tuned lens); NaN elsewhere
    tuned_note: str = ""  # why there is no tuned lens, when one was asked for

    @property
    def n_stages(self) -> int:
        return len(self.stage_labels)

    @property
    def has_lens(self) -> bool:
        return self.top_ids.shape[1] > 0

    def reads(self, stage: int) -> list[tuple[int, str, float]]:
        """(position, label, mean weight) of the keys a stage's attention read most, largest first."""
        if self.read_positions is None:
            return []
        return [(int(p), label, float(w)) for p, label, w in
                zip(self.read_positions[stage], self.read_labels[stage], self.read_weights[stage]) if p >= 0]

    def experts(self, stage: int) -> list[tuple[int, float]]:
        """(expert, mixing weight) the router chose at a stage, largest weight first."""
        if self.expert_ids is None:
            return []
        return [(int(e), float(w)) for e, w in zip(self.expert_ids[stage], self.expert_weights[stage]) if e >= 0]


def _check_tower(model: Transformer, tower: str) -> None:
    if tower not in TOWERS:
        raise SequenceError(f"unknown tower {tower!r}; choose {' or '.join(TOWERS)}")
    if tower == "encoder" and model.config.architecture != "encoder-decoder":
        raise SequenceError("only an encoder-decoder model has an encoder tower apart from its token stream; "
                            "follow the tokens (tower 'decoder')")


def stage_plan(model: Transformer, tower: str = "decoder") -> list[tuple[str, str, int, str]]:
    """(label, kind, block, hook name) for every stage of a tower, in forward order."""
    _check_tower(model, tower)
    config = model.config
    post = config.norm_placement == "post"
    then_norm = ", norm" if post else ""
    pair = config.architecture == "encoder-decoder"
    ffn = "experts" if config.is_moe else "FFN"
    attention = "self-attention" if pair else "attention"
    if tower == "encoder":
        plan = [("embedding", "embedding", -1, "hook_encoder_embed")]
        for index in range(config.encoder_layers):
            prefix = f"encoder_blocks.{index}"
            plan.append((f"block {index}: + {attention}{then_norm}", "attention", index, f"{prefix}.hook_resid_mid"))
            if not config.attention_only:
                plan.append((f"block {index}: + {ffn}{then_norm}", "ffn", index, f"{prefix}.hook_resid_post"))
        if config.final_norm:
            plan.append(("final norm (the memory)", "final-norm", -1, "hook_encoder_out"))
        return plan
    plan = [("embedding", "embedding", -1, "hook_embed")]
    for index in range(config.n_layers):
        plan.append((f"block {index}: + {attention}{then_norm}", "attention", index, f"blocks.{index}.hook_resid_mid"))
        if pair:
            plan.append((f"block {index}: + cross-attention{then_norm}", "cross-attention", index,
                         f"blocks.{index}.hook_resid_cross"))
        if config.attention_only:  # the block's output is its stream after attention: no FFN stage
            continue
        plan.append((f"block {index}: + {ffn}{then_norm}", "ffn", index, f"blocks.{index}.hook_resid_post"))
    if config.final_norm:
        plan.append(("final norm", "final-norm", -1, "hook_final"))
    if config.head_transform:
        plan.append(("head transform", "head-transform", -1, HEAD_TRANSFORM_HOOK))
    return plan


def _read_hooks(model: Transformer, plan, tower: str) -> dict[int, str]:
    """Stage index -> the hook whose output says what that stage read (attention pattern, routing)."""
    blocks = "encoder_blocks" if tower == "encoder" else "blocks"
    hooks = {}
    for stage, (_, kind, layer, _) in enumerate(plan):
        if kind == "attention":
            hooks[stage] = f"{blocks}.{layer}.attn.hook_pattern"
        elif kind == "cross-attention":
            hooks[stage] = f"{blocks}.{layer}.cross_attn.hook_pattern"
        elif kind == "ffn" and model.config.is_moe:
            hooks[stage] = f"{blocks}.{layer}.ffn.hook_routing"
    return hooks


def follow_token(
    model: Transformer,
    tokens: Sequence[int],
    position: int,
    tokenizer_or_labels=None,
    k: int = DEFAULT_TOP_K,
    tower: str = "decoder",
    source: Sequence[int] | None = None,
) -> FollowTokenResult:
    """Trace the token at `position` through every sublayer of `model` on the sequence `tokens`.

    An encoder-decoder's encoder reads `source` (default: the tokens themselves, as the model does);
    tower "encoder" follows position `position` of that source through the encoder instead.
    """
    ids = as_token_list(tokens)
    if k < 1:
        raise SequenceError(f"k must be at least 1, got {k}")
    _check_tower(model, tower)
    config = model.config
    pair = config.architecture == "encoder-decoder"
    source_ids = (ids if source is None else as_token_list(source)) if pair else None
    followed = source_ids if tower == "encoder" else ids
    if not 0 <= position < len(followed):
        raise SequenceError(f"position {position} is outside the sequence (0..{len(followed) - 1})")
    plan = stage_plan(model, tower)
    read_hooks = _read_hooks(model, plan, tower)
    captured_stages = [hook for _, kind, _, hook in plan if kind != "head-transform"]
    device = next(model.parameters()).device
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    source_batch = None if source_ids is None else torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    rows: dict[str, torch.Tensor] = {}

    def keep_row(name: str, output: torch.Tensor) -> None:
        # Only the followed position's row of each pattern is kept: a layer's (1, H, T, S) weights go at once.
        rows[name] = (output[0, position] if name.endswith("hook_routing") else output[0, :, position]).clone()

    with torch.inference_mode():
        with capture(model, captured_stages) as captured, \
                capture(model, list(dict.fromkeys(read_hooks.values())), on_output=keep_row):
            if tower == "encoder":
                model.encode(source_batch)
            else:
                model(batch, source=source_batch, head=False)
        residual = torch.stack([captured[hook][0, position] for hook in captured_stages])  # (R, D)
        vectors = residual
        if config.head_transform and tower == "decoder":
            transformed = model.head_transform(residual[-1:])  # (1, D): what the vocabulary matrix reads
            vectors = torch.cat([residual, transformed])  # (S, D)
        vectors64 = vectors.double()  # (S, D)
        previous = torch.cat([torch.zeros_like(vectors64[:1]), vectors64[:-1]])  # (S, D)
        updates = vectors64 - previous  # (S, D)
        top_ids, top_probs = _lens(model, plan, residual, vectors, tower, k)  # (S, k) each
        reads, experts = _what_each_stage_read(model, plan, read_hooks, rows)
    sequence_labels = token_labels(followed, tokenizer_or_labels)
    source_labels = token_labels(source_ids, tokenizer_or_labels) if source_ids is not None else ()
    next_label = (token_labels([ids[position + 1]], tokenizer_or_labels)[0]
                  if tower == "decoder" and position + 1 < len(ids) else None)
    if tower == "encoder":
        predicts, target = "", None
    elif config.architecture == "encoder":
        predicts, target = "here", sequence_labels[position]
    else:
        predicts, target = "next", next_label
    read_positions, read_weights = reads
    key_labels = {stage: source_labels if plan[stage][1] == "cross-attention" else sequence_labels
                  for stage in range(len(plan))}
    expert_ids, expert_weights = experts
    return FollowTokenResult(
        position=position,
        token_label=sequence_labels[position],
        sequence_labels=sequence_labels,
        stage_labels=tuple(label for label, *_ in plan),
        stage_kinds=tuple(kind for _, kind, *_ in plan),
        stage_layers=np.array([layer for _, _, layer, _ in plan], dtype=np.int64),
        stage_hooks=tuple(hook for *_, hook in plan),
        norms=vectors64.norm(dim=-1).cpu().numpy(),  # (S,)
        update_norms=updates.norm(dim=-1).cpu().numpy(),  # (S,)
        top_ids=top_ids,
        top_labels=tuple(token_labels(row.tolist(), tokenizer_or_labels) for row in top_ids),
        top_probs=top_probs,
        next_token_label=next_label,
        placement=config.norm_placement,
        model_name=config.name,
        tower=tower,
        predicts=predicts,
        target_label=target,
        architecture=config.architecture,
        read_positions=read_positions,
        read_weights=read_weights,
        read_labels=tuple(tuple(key_labels[stage][p] if p >= 0 else "" for p in row)
                          for stage, row in enumerate(read_positions.tolist())),
        expert_ids=expert_ids,
        expert_weights=expert_weights,
        source_labels=source_labels,
    )


def _lens(model: Transformer, plan, residual: torch.Tensor, vectors: torch.Tensor, tower: str,
          k: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, k) ids and probabilities of each stage read through the rest of the model's output path.

    A residual stage goes through the final norm (unless it is the final norm's own output), the head
    transform and the head: `unembed`; the head-transform stage goes through the head alone. The
    encoder tower of a pair never reaches the head: (S, 0).
    """
    n_stages = len(plan)
    if tower == "encoder":
        return np.zeros((n_stages, 0), dtype=np.int64), np.zeros((n_stages, 0))
    config = model.config
    kinds = [kind for _, kind, _, _ in plan]
    n_residual = residual.shape[0]
    if config.final_norm:
        normed = torch.cat([model.final_norm(residual[:-1]), residual[-1:]])  # (R, D): the last row is normed already
    else:
        normed = residual  # (R, D)
    logits = model.unembed(normed)  # (R, V)
    if "head-transform" in kinds:
        logits = torch.cat([logits, model.head(vectors[n_residual:])])  # (S, V)
    probabilities = F.softmax(logits.double(), dim=-1)  # (S, V)
    top = probabilities.topk(min(k, config.vocab_size), dim=-1)  # (S, k) each
    return top.indices.cpu().numpy().astype(np.int64), top.values.cpu().numpy()


def _what_each_stage_read(model: Transformer, plan, read_hooks: dict[int, str], rows: dict[str, torch.Tensor]):
    """Per stage: the READS keys of largest head-mean weight, and a mixture's chosen experts with their weights.

    rows: the followed position's row of each read hook: (H, S) attention weights, (E,) routing weights.
    """
    n_stages = len(plan)
    n_keys = max((rows[hook].shape[-1] for stage, hook in read_hooks.items() if plan[stage][1] != "ffn"), default=0)
    width = min(READS, n_keys)
    read_positions = np.full((n_stages, width), -1, dtype=np.int64)
    read_weights = np.full((n_stages, width), np.nan)
    top_k = model.config.top_k if model.config.is_moe else 0
    expert_ids = np.full((n_stages, top_k), -1, dtype=np.int64)
    expert_weights = np.full((n_stages, top_k), np.nan)
    for stage, hook in read_hooks.items():
        if plan[stage][1] == "ffn":
            routing = rows[hook].double()  # (E,) zero except the chosen experts
            chosen = routing.topk(top_k)  # (k,) each
            expert_ids[stage] = chosen.indices.cpu().numpy()
            expert_weights[stage] = chosen.values.cpu().numpy()
            continue
        weights = rows[hook].double().mean(dim=0)  # (S_keys,) mean over heads of the query's row
        count = min(width, weights.shape[0])
        best = weights.topk(count)  # (count,) each
        read_positions[stage, :count] = best.indices.cpu().numpy()
        read_weights[stage, :count] = best.values.cpu().numpy()
    return (read_positions, read_weights), (expert_ids, expert_weights)


__all__ = ["DEFAULT_TOP_K", "FollowTokenResult", "READS", "TOWERS", "follow_token", "stage_plan"]
