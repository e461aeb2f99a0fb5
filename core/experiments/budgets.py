"""Budgets: what a configuration costs in compute, weight memory and KV cache, from its parameter count.

All counts come from core.params.parameter_breakdown (the formula count, checked elsewhere
against the instantiated model). Conventions, stated once:

- N is the number of parameters one token touches (`active`): the total for a dense model, the
  total minus the unrouted experts for mixture-of-experts. The embedding table is included as
  the reading's rule of thumb does (for a tied model it is also the head's matmul).
- Training FLOPs per token = 6 N: forward 2 N (one multiply-add per parameter), backward 4 N.
- Inference (forward) FLOPs per token at context length T =
      2 N + 2 * n_attention_layers * T * (n_heads * d_head)
  the second term being the attention-score work that no parameter accounts for, in Kaplan et
  al. 2020's convention (their C_forward = 2 N + 2 n_layer n_ctx d_attn). n_attention_layers
  counts every self- and cross-attention layer.
- Weight memory = total parameters (all experts must be resident) * bytes per value.
- KV-cache bytes per token = 2 (K and V) * n_kv_layers * n_kv_heads * d_head * bytes, where
  n_kv_layers are the decoder's self-attention layers (an encoder-only model generates nothing
  and keeps no cache; an encoder-decoder's cross-attention K/V are per source token and left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.config import ModelConfig
from core.params import ParameterBreakdown, parameter_breakdown

BYTES_PER_VALUE = {"fp32": 4, "bf16": 2, "int8": 1}
MAX_SWEEP_WIDTH = 16384  # the widest d_model the width sweep reaches (unless the config is wider)


class BudgetError(ValueError):
    """A budget request that cannot be computed (a sequence longer than the context, a bad width)."""


@dataclass(frozen=True)
class ComputeBudget:
    name: str
    seq_len: int  # context length the attention term of inference FLOPs assumes
    total_params: int
    active_params: int  # N: parameters one token touches
    training_flops_per_token: int  # 6 N
    inference_flops_per_token: int  # 2 N + 2 * n_attention_layers * seq_len * d_attn
    attention_flops_per_token: int  # the second term alone
    weight_bytes: dict[str, int]  # dtype -> total_params * bytes
    kv_cache_bytes_per_token: dict[str, int]  # dtype -> 2 * n_kv_layers * n_kv_heads * d_head * bytes
    kv_cache_bytes_full_context: dict[str, int]  # dtype -> per token * context_length (one sequence)
    context_length: int

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "seq_len": self.seq_len,
            "context_length": self.context_length,
            "total_params": self.total_params,
            "active_params": self.active_params,
            "training_flops_per_token": self.training_flops_per_token,
            "inference_flops_per_token": self.inference_flops_per_token,
            "attention_flops_per_token": self.attention_flops_per_token,
            "weight_bytes": dict(self.weight_bytes),
            "kv_cache_bytes_per_token": dict(self.kv_cache_bytes_per_token),
            "kv_cache_bytes_full_context": dict(self.kv_cache_bytes_full_context),
        }


def attention_layer_count(config: ModelConfig) -> int:
    """Every attention layer a token of the model passes through (self and cross)."""
    cross = config.decoder_layers if config.architecture == "encoder-decoder" else 0
    return config.encoder_layers + config.decoder_layers + cross


def kv_cache_layer_count(config: ModelConfig) -> int:
    """Layers whose keys and values a generating model caches: the decoder's self-attention."""
    return 0 if config.architecture == "encoder" else config.decoder_layers


def compute_budget(config: ModelConfig, seq_len: int | None = None) -> ComputeBudget:
    breakdown = parameter_breakdown(config)
    seq = config.context_length if seq_len is None else seq_len
    if not 1 <= seq <= config.context_length:
        raise BudgetError(f"seq_len must be between 1 and the context length {config.context_length}, got {seq}")
    n_active = breakdown.active
    d_attn = config.n_heads * config.d_head
    attention_flops = 2 * attention_layer_count(config) * seq * d_attn
    kv_values_per_token = 2 * kv_cache_layer_count(config) * config.kv_heads * config.d_head
    return ComputeBudget(
        name=config.name,
        seq_len=seq,
        total_params=breakdown.total,
        active_params=n_active,
        training_flops_per_token=6 * n_active,
        inference_flops_per_token=2 * n_active + attention_flops,
        attention_flops_per_token=attention_flops,
        weight_bytes={dtype: breakdown.total * size for dtype, size in BYTES_PER_VALUE.items()},
        kv_cache_bytes_per_token={dtype: kv_values_per_token * size for dtype, size in BYTES_PER_VALUE.items()},
        kv_cache_bytes_full_context={
            dtype: kv_values_per_token * size * config.context_length for dtype, size in BYTES_PER_VALUE.items()
        },
        context_length=config.context_length,
    )


@dataclass(frozen=True)
class EmbeddingShareSweep:
    """One architecture at several widths: the d^2 blocks outgrow the V*d embeddings."""

    base_name: str
    widths: np.ndarray  # (W,) d_model
    n_heads: np.ndarray  # (W,)
    d_ff: np.ndarray  # (W,)
    total_params: np.ndarray  # (W,)
    embedding_share: np.ndarray  # (W,) token + position embeddings / total
    ffn_share_of_block: np.ndarray  # (W,)


def _nearest_divisor(n: int, target: float) -> int:
    return min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: (abs(d - target), d))


def scaled_config(config: ModelConfig, width: int) -> ModelConfig:
    """config at d_model = width with heads and d_ff scaled in proportion.

    The head width is kept when width is a multiple of it (so heads scale exactly), and the
    query heads per key/value head are kept when they divide the new head count; otherwise the
    nearest workable count is taken.
    """
    if width < 1:
        raise BudgetError(f"widths must be positive, got {width}")
    ratio = width / config.d_model
    if width % config.d_head == 0:
        n_heads = width // config.d_head
    else:
        n_heads = _nearest_divisor(width, config.n_heads * ratio)
    n_kv_heads = None
    if config.n_kv_heads is not None:
        group = config.n_heads // config.kv_heads
        n_kv_heads = n_heads // group if n_heads % group == 0 else _nearest_divisor(n_heads, config.kv_heads * ratio)
    d_ff = max(1, round(config.d_ff * ratio))
    try:
        return config.replace(
            name=f"{config.name} @ d={width}", d_model=width, n_heads=n_heads, n_kv_heads=n_kv_heads, d_ff=d_ff
        )
    except ValueError as error:
        raise BudgetError(f"width {width}: {error}") from None


def sweep_widths(config: ModelConfig) -> list[int]:
    """Widths a quarter-octave apart in whole heads (so heads scale exactly), plus the config's own."""
    head = config.d_head
    multiples = {max(1, round(2 ** (i / 4))) for i in range(0, 4 * 15)}
    widths = {head * k for k in multiples if head * k <= max(MAX_SWEEP_WIDTH, config.d_model)}
    widths.add(config.d_model)
    return sorted(widths)


def embedding_share_sweep(config: ModelConfig, widths: Sequence[int]) -> EmbeddingShareSweep:
    configs = [scaled_config(config, int(w)) for w in widths]
    breakdowns = [parameter_breakdown(c) for c in configs]
    return EmbeddingShareSweep(
        base_name=config.name,
        widths=np.array([c.d_model for c in configs]),
        n_heads=np.array([c.n_heads for c in configs]),
        d_ff=np.array([c.d_ff for c in configs]),
        total_params=np.array([b.total for b in breakdowns]),
        embedding_share=np.array([b.embedding_share for b in breakdowns]),
        ffn_share_of_block=np.array([_block(b).ffn_share for b in breakdowns]),
    )


def _block(breakdown: ParameterBreakdown):
    block = breakdown.decoder_block or breakdown.encoder_block
    assert block is not None  # every architecture has a token stack
    return block


@dataclass(frozen=True)
class ConfigSide:
    name: str
    n_layers: int
    d_model: int
    total_params: int
    token_embeddings: int
    position_embeddings: int
    embedding_share: float  # (token + position embeddings) / total
    token_embedding_share: float  # token table alone / total (the reading's "roughly 31%")
    block_params: int  # one block of the token stack
    block_attention: int
    block_ffn: int
    ffn_share_of_block: float


@dataclass(frozen=True)
class ConfigComparison:
    """The reading's exercise 6 as data: two configs' embedding share and the FFN share of a block."""

    a: ConfigSide
    b: ConfigSide

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {"a": asdict(self.a), "b": asdict(self.b)}


def _side(config: ModelConfig) -> ConfigSide:
    breakdown = parameter_breakdown(config)
    block = _block(breakdown)
    return ConfigSide(
        name=config.name,
        n_layers=config.n_layers,
        d_model=config.d_model,
        total_params=breakdown.total,
        token_embeddings=breakdown.groups["token_embeddings"],
        position_embeddings=breakdown.groups["position_embeddings"],
        embedding_share=breakdown.embedding_share,
        token_embedding_share=breakdown.share("token_embeddings"),
        block_params=block.total,
        block_attention=block.attention,
        block_ffn=block.ffn,
        ffn_share_of_block=block.ffn_share,
    )


def compare_configs(a: ModelConfig, b: ModelConfig) -> ConfigComparison:
    return ConfigComparison(a=_side(a), b=_side(b))
