"""The KV cache: prefill, then decode one token at a time against each layer's cached keys and values.

Prefill runs the model's own forward over the first tokens and keeps what every layer's attention
computed for them: K and V after RoPE, one (B, H_kv, S, d_head) pair per layer (grouped-query
heads are cached before they are repeated to the query heads). Each decode step then embeds one
token at its position and passes it through the model's own modules (the block's norms, its qkv and
output projections, its FFN if it has one, and its residual wiring): the new token's k and v are appended to the
cache and its one query attends to every cached key, so no earlier position is recomputed.

The proof compares each decoded position's logits with a recompute of the whole sequence up to it,
`model(tokens[: t + 1])[0, -1]`, the way generation without a cache works. On CPU kernels the two
are close but rarely bit-identical: a matmul over one row sums in another order than the same row
inside a T-row matmul (the kernel blocks the rows and the reduction differently), so the cause is
measured too: block 0's qkv projection of the same last row, computed in both shapes.

Cache bytes per token = 2 (K and V) * layers * kv_heads * d_head * bytes per element: measured here
from the cache tensors, for the model and for its multi-head, grouped-query and multi-query
variants (a one-token pass on the meta device), and set beside core.experiments.budgets' formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.experiments.budgets import BYTES_PER_VALUE, compute_budget, kv_cache_layer_count
from core.hooks import capture
from core.model import Transformer
from core.positional import alibi_bias, apply_rope, rope_angles, sinusoidal_table

MAX_DECODE_STEPS = 256  # each step also recomputes the whole sequence up to it, for the proof
BUDGET_DTYPE_BY_SIZE = {size: name for name, size in BYTES_PER_VALUE.items()}


class KVCacheError(ValueError):
    """A model or sequence the cached decode cannot run: not a causal decoder, too few tokens."""


@dataclass(frozen=True)
class LayerCache:
    """What one layer holds after a step: its cached keys and values."""

    layer: int
    k_shape: tuple[int, ...]  # (B, H_kv, S, d_head)
    v_shape: tuple[int, ...]
    k_bytes: int
    v_bytes: int


@dataclass(frozen=True)
class DecodeStep:
    position: int  # the position decoded (its logits predict the token after it)
    token: int  # the token fed in at that position
    cached_positions: int  # keys and values per layer after the step (position + 1)
    layers: tuple[LayerCache, ...]
    max_difference: float  # max |cached logits - recomputed logits| at this position
    exact: bool  # torch.equal of the two logits vectors
    block_differences: tuple[float, ...]  # per block: max |decoded - recomputed| of the block's output at the position


@dataclass(frozen=True)
class CacheVariant:
    """Cache bytes per token of the model with another key/value head count."""

    label: str  # "multi-head", "grouped-query", "multi-query"
    kv_heads: int
    measured_bytes_per_token: int  # from the k and v tensors of a one-token pass
    formula_bytes_per_token: int  # 2 * layers * kv_heads * d_head * bytes
    budget_bytes_per_token: int | None  # core.experiments.budgets for the same dtype size, if it lists one
    is_current: bool


@dataclass(frozen=True)
class KVCacheProof:
    name: str
    n_layers: int
    n_heads: int
    kv_heads: int
    d_head: int
    dtype: str
    bytes_per_element: int
    context_length: int
    prefill_length: int
    prefill_layers: tuple[LayerCache, ...]  # the cache right after prefill
    steps: tuple[DecodeStep, ...]
    max_difference: float  # over every decoded position
    exact: bool  # every decoded position bit-identical
    linear_rows: int  # rows of the full-sequence matmul of the cause check
    linear_difference: float  # block 0 qkv: one row alone vs the same row among linear_rows
    linear_exact: bool
    measured_bytes_per_token: int  # cache bytes after the last step / cached positions
    variants: tuple[CacheVariant, ...]
    budget_dtype: str | None  # the dtype column of the Parameters budget these bytes compare with

    @property
    def total_length(self) -> int:
        return self.prefill_length + len(self.steps)

    @property
    def cause(self) -> str:
        """Why the cached decode is or is not bit-identical, from what was measured."""
        if self.exact:
            return "bit for bit: torch.equal holds at every decoded position"
        if not self.linear_exact:
            return (f"different matmul shapes, different summation order: a decode step multiplies one row where the "
                    f"recompute multiplies {self.linear_rows}; block 0's qkv projection of the same row already differs "
                    f"by {self.linear_difference:.1e}")
        return ("the projections agree bit for bit here, but the attention kernel of one query over the cache sums in "
                "another order than the causal T x T kernel of the recompute")


def cache_refusal(config) -> str:
    """Why the cached decode does not apply to a model ("" when it does: a causal decoder-only model)."""
    if config.architecture == "encoder-decoder":
        return (f"{config.name} is an encoder-decoder: its decoder caches its self-attention keys and values like any "
                "decoder, and its cross-attention's keys and values of the source once; this view measures "
                "decoder-only models")
    if config.architecture == "encoder" or not config.self_attention_causal:
        what = "an encoder" if config.architecture == "encoder" else "a model without a causal mask"
        return (f"{config.name} is {what}: it attends both ways, so every new token would change every position's "
                "keys and values; a KV cache serves models that generate left to right")
    return ""


def check_model(model: Transformer) -> None:
    problem = cache_refusal(model.config)
    if problem:
        raise KVCacheError(problem)


def _layer_entries(cache: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[LayerCache, ...]:
    return tuple(LayerCache(index, tuple(k.shape), tuple(v.shape), k.nbytes, v.nbytes)
                 for index, (k, v) in enumerate(cache))


def prefill(model: Transformer, tokens: torch.Tensor,
            head: bool = True) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """The model's own forward over tokens (1, P): its logits (1, P, V) (head=False: the final norm's
    output (1, P, D), for a caller that reads no logits) and each layer's (K, V) cache."""
    names = [f"blocks.{i}.attn.hook_{part}" for i in range(len(model.blocks)) for part in ("k", "v")]
    seen: dict[str, torch.Tensor] = {}

    def keep(name: str, output: torch.Tensor) -> None:
        # K and V are views into the layer's fused (1, P, q + 2 kv) projection; a copy of each lets it go.
        seen[name] = output.contiguous()  # (1, H_kv, P, d_head)

    with torch.no_grad(), capture(model, names, on_output=keep):
        out = model(tokens, head=head)  # (1, P, V), or (1, P, D) without the head
    cache = [(seen[f"blocks.{i}.attn.hook_k"], seen[f"blocks.{i}.attn.hook_v"]) for i in range(len(model.blocks))]
    return out, cache  # cache: (1, H_kv, P, d_head) each


def _embed_one(model: Transformer, token_id: int, position: int, device: torch.device) -> torch.Tensor:
    """The token embedding plus the additive position of one token, as Transformer.embed makes row `position`."""
    config = model.config
    x = model.tok_emb(torch.tensor([[token_id]], device=device))  # (1, 1, D)
    if config.embed_scale:
        x = x * math.sqrt(config.d_model)  # (1, 1, D)
    if config.positional == "learned":
        x = x + model.pos_emb(torch.tensor([position], device=device))  # (1, 1, D)
    elif config.positional == "sinusoidal":
        table = sinusoidal_table(position + 1, config.d_model, dtype=x.dtype,
                                 halves=config.sinusoidal_halves)  # (position + 1, D) on the CPU, as embed
        x = x + table[position:].to(x.device)  # (1, 1, D)
    if config.embed_norm:
        x = model.embed_norm(x)  # (1, 1, D)
    return model.hook_embed(x)


def decode_step(model: Transformer, token_id: int, position: int,
                cache: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits (V,) of one token at `position`, appending its k and v to `cache` in place.

    Also returns each block's output (1, 1, D) at the position, for the per-block comparison.
    """
    config = model.config
    device = next(model.parameters()).device
    x = _embed_one(model, token_id, position, device)  # (1, 1, D)
    rope = None
    bias = None
    if config.positional == "rope":
        angle_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        cos, sin = rope_angles(torch.tensor([position], device=device, dtype=angle_dtype), config.d_head,
                               config.rope_base, config.rope_scale)  # (1, d/2) each
        rope = (cos.to(x.dtype), sin.to(x.dtype))
    elif config.positional == "alibi":
        # The last query row of the causal (T, T) penalty: -slope * distance to every cached key.
        bias = alibi_bias(config.n_heads, position + 1, causal=True, device=device)[:, -1:, :].to(x.dtype)  # (H, 1, S)
    outputs = []
    for index, block in enumerate(model.blocks):
        attn = block.attn

        def cached_attention(h: torch.Tensor, index: int = index, attn=attn) -> torch.Tensor:
            q_width = attn.n_heads * attn.d_head
            kv_width = attn.n_kv_heads * attn.d_head
            q, k, v = attn.qkv(h).split((q_width, kv_width, kv_width), dim=-1)  # (1, 1, *) each
            q = attn._split_heads(q, attn.n_heads)  # (1, H, 1, d)
            k = attn._split_heads(k, attn.n_kv_heads)  # (1, Hkv, 1, d)
            v = attn._split_heads(v, attn.n_kv_heads)  # (1, Hkv, 1, d)
            if rope is not None:
                q = apply_rope(q, *rope)  # (1, H, 1, d)
                k = apply_rope(k, *rope)  # (1, Hkv, 1, d)
            cached_k, cached_v = cache[index]
            keys = torch.cat((cached_k, k), dim=2)  # (1, Hkv, S, d)
            values = torch.cat((cached_v, v), dim=2)  # (1, Hkv, S, d)
            cache[index] = (keys, values)
            if attn.n_kv_heads != attn.n_heads:
                group = attn.n_heads // attn.n_kv_heads
                keys = keys.repeat_interleave(group, dim=1)  # (1, H, S, d)
                values = values.repeat_interleave(group, dim=1)  # (1, H, S, d)
            # One query at the newest position may look at every cached key: no mask is needed.
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=bias)  # (1, H, 1, d)
            out = out.transpose(1, 2).reshape(1, 1, q_width)  # (1, 1, H*d)
            return attn.out_proj(out)  # (1, 1, D)

        x = block.hook_resid_pre(x)  # (1, 1, D)
        x = block._sublayer(x, block.norm1, cached_attention)  # (1, 1, D) the block's own residual and norm wiring
        x = block.feed_forward(x)  # (1, 1, D) the stream as it is in an attention-only block
        outputs.append(x)
    x = model.final_norm(x)  # (1, 1, D)
    return model.unembed(x)[0, 0], outputs  # (V,)


def _recompute(model: Transformer, tokens: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The last position's logits (V,) and block outputs of a full forward over tokens (1, T): no cache."""
    names = [f"blocks.{i}.hook_resid_post" for i in range(len(model.blocks))]
    last_rows: dict[str, torch.Tensor] = {}

    def keep_last_row(name: str, output: torch.Tensor) -> None:
        last_rows[name] = output[:, -1:].clone()  # (1, 1, D): a copy, so the (1, T, D) stream is freed

    with capture(model, names, on_output=keep_last_row):
        logits = model(tokens)[0, -1].clone()  # (V,): a copy, so the (1, T, V) logits are freed on return
    return logits, [last_rows[name] for name in names]  # (1, 1, D) each


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


def _linear_shape_check(model: Transformer, tokens: torch.Tensor) -> tuple[float, bool]:
    """Block 0's qkv projection of the last row: alone (1 row) vs inside the whole sequence (T rows)."""
    qkv = model.blocks[0].attn.qkv
    rows = model.blocks[0].norm1(model.embed(tokens))  # (1, T, D)
    full = qkv(rows)[:, -1:]  # (1, 1, 3D')
    alone = qkv(rows[:, -1:].contiguous())  # (1, 1, 3D')
    return _max_abs(full, alone), bool(torch.equal(full, alone))


def variant_kv_heads(n_heads: int, current: int) -> list[tuple[str, int]]:
    """(label, kv heads) for multi-head, grouped-query and multi-query attention with n_heads query heads.

    The grouped-query variant is the model's own when it is one; else groups of 4 query heads (as
    Llama 2 70B's 64 heads share 8), or of 2 when 4 do not divide the heads.
    """
    variants = [("multi-head", n_heads)]
    if 1 < current < n_heads:
        variants.append(("grouped-query", current))
    else:
        group = next((g for g in (4, 2) if n_heads % g == 0 and n_heads // g > 1), None)
        if group is not None:
            variants.append(("grouped-query", n_heads // group))
    if n_heads > 1:
        variants.append(("multi-query", 1))
    return variants


def measured_bytes_per_token(config, dtype: torch.dtype) -> int:
    """K and V bytes one token adds to the cache, from a one-token pass of the config's model on meta."""
    from core.experiments.shapes import meta_model

    model = meta_model(config, dtype)  # one block: every block caches the same shapes
    with torch.no_grad(), capture(model, ["blocks.0.attn.hook_k", "blocks.0.attn.hook_v"]) as seen:
        model(torch.zeros(1, 1, dtype=torch.long, device="meta"), n_blocks=1)
    per_layer = seen["blocks.0.attn.hook_k"].nbytes + seen["blocks.0.attn.hook_v"].nbytes
    return per_layer * kv_cache_layer_count(config)


def cache_variants(model: Transformer) -> tuple[tuple[CacheVariant, ...], str | None]:
    config = model.config
    parameter = next(model.parameters())
    size = parameter.element_size()
    budget_dtype = BUDGET_DTYPE_BY_SIZE.get(size)
    variants = []
    for label, kv_heads in variant_kv_heads(config.n_heads, config.kv_heads):
        variant = config.replace(n_kv_heads=None if kv_heads == config.n_heads else kv_heads)
        budget = compute_budget(variant).kv_cache_bytes_per_token.get(budget_dtype) if budget_dtype else None
        variants.append(CacheVariant(
            label=label,
            kv_heads=kv_heads,
            measured_bytes_per_token=measured_bytes_per_token(variant, parameter.dtype),
            formula_bytes_per_token=2 * kv_cache_layer_count(variant) * kv_heads * config.d_head * size,
            budget_bytes_per_token=budget,
            is_current=kv_heads == config.kv_heads,
        ))
    return tuple(variants), budget_dtype


def kv_cache_proof(model: Transformer, tokens: list[int], decode_steps: int, token=None) -> KVCacheProof:
    """Prefill all but the last `decode_steps` tokens, decode those one by one, and check each against a recompute.

    token: an optional CancelToken (`report(fraction, text)`, `check()`) for the GUI worker.
    """
    check_model(model)
    if len(tokens) < 2:
        raise KVCacheError("the cached decode needs at least two tokens: one to prefill and one to decode")
    if not 1 <= decode_steps <= min(len(tokens) - 1, MAX_DECODE_STEPS):
        raise KVCacheError(f"decode steps must be from 1 to {min(len(tokens) - 1, MAX_DECODE_STEPS)} "
                           f"for {len(tokens)} tokens, got {decode_steps}")
    config = model.config
    device = next(model.parameters()).device
    ids = torch.tensor([tokens], device=device)  # (1, T)
    model.check_tokens(ids)
    prefill_length = len(tokens) - decode_steps
    steps: list[DecodeStep] = []
    with torch.no_grad():
        cache = prefill(model, ids[:, :prefill_length], head=False)[1]  # no prefill logits are read
        prefill_layers = _layer_entries(cache)
        # Every step is decoded first and the cache freed before the recomputes: a recompute's full-length
        # logits never sit beside the cache. Each side computes exactly what it would have interleaved.
        decoded = []
        for position in range(prefill_length, len(tokens)):
            if token is not None:
                token.check()
                token.report(0.0, f"decoding position {position}")
            cached_logits, cached_blocks = decode_step(model, tokens[position], position, cache)  # (V,)
            decoded.append((position, cached_logits, cached_blocks, int(cache[0][0].shape[2]), _layer_entries(cache)))
        del cache
        for step, (position, cached_logits, cached_blocks, cached_positions, layers) in enumerate(decoded):
            if token is not None:
                token.check()
                token.report(step / decode_steps, f"recomputing position {position} without the cache")
            full_logits, full_blocks = _recompute(model, ids[:, : position + 1])  # (V,)
            steps.append(DecodeStep(
                position=position,
                token=tokens[position],
                cached_positions=cached_positions,
                layers=layers,
                max_difference=_max_abs(cached_logits, full_logits),
                exact=bool(torch.equal(cached_logits, full_logits)),
                block_differences=tuple(_max_abs(a, b) for a, b in zip(cached_blocks, full_blocks)),
            ))
        del decoded
        linear_difference, linear_exact = _linear_shape_check(model, ids)
    variants, budget_dtype = cache_variants(model)
    last = steps[-1]
    cached_bytes = sum(layer.k_bytes + layer.v_bytes for layer in last.layers)
    element = next(model.parameters())
    return KVCacheProof(
        name=config.name,
        n_layers=len(model.blocks),
        n_heads=config.n_heads,
        kv_heads=config.kv_heads,
        d_head=config.d_head,
        dtype=str(element.dtype).removeprefix("torch."),
        bytes_per_element=element.element_size(),
        context_length=config.context_length,
        prefill_length=prefill_length,
        prefill_layers=prefill_layers,
        steps=tuple(steps),
        max_difference=max(s.max_difference for s in steps),
        exact=all(s.exact for s in steps),
        linear_rows=len(tokens),
        linear_difference=linear_difference,
        linear_exact=linear_exact,
        measured_bytes_per_token=cached_bytes // last.cached_positions,
        variants=variants,
        budget_dtype=budget_dtype,
    )


def logits_scale(model: Transformer, tokens: list[int]) -> float:
    """The largest |logit| of the sequence: the magnitude a float32 tolerance on the logits scales with."""
    with torch.no_grad():
        logits = model(torch.tensor([tokens], device=next(model.parameters()).device))  # (1, T, V)
    return float(logits.abs().max())


__all__ = [
    "CacheVariant",
    "DecodeStep",
    "KVCacheError",
    "KVCacheProof",
    "LayerCache",
    "MAX_DECODE_STEPS",
    "cache_variants",
    "check_model",
    "decode_step",
    "kv_cache_proof",
    "logits_scale",
    "measured_bytes_per_token",
    "prefill",
    "variant_kv_heads",
]
