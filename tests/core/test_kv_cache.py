"""core.experiments.kv_cache: cached decode equals the full recompute, the cache holds what the model computes,
and its bytes per token follow 2 * layers * kv_heads * d_head * bytes for MHA, GQA and MQA."""

from __future__ import annotations

import pytest
import torch

from core.config import ModelConfig
from core.experiments import kv_cache
from core.experiments.budgets import compute_budget
from core.hooks import capture
from core.model import Transformer
from tests.float32 import REORDER_ULPS, float32_tolerance

# Each layer's matmuls may sum in another order in the one-row decode than in the T-row recompute, and
# the layers compound those reorderings: a few reductions' worth of last-place units at the logits' scale.
DECODE_ULPS = 4 * REORDER_ULPS
TOKENS = [3, 14, 15, 9, 2, 6, 5, 35, 8, 9, 7, 9, 3, 2, 38, 4]


def small(positional: str, kv_heads: int | None = None, **changes) -> ModelConfig:
    fields = dict(name=f"{positional}-{kv_heads}", vocab_size=40, context_length=24, d_model=32, n_heads=4,
                  n_kv_heads=kv_heads, n_layers=2, d_ff=64, positional=positional) | changes
    return ModelConfig(**fields).validated()


CASES = [small(p) for p in ("learned", "sinusoidal", "rope", "alibi")] + [
    small("rope", 2, norm="rmsnorm", activation="swiglu", bias=False),  # grouped-query, Llama-style
    small("learned", 1),  # multi-query
    small("alibi", 2, norm_placement="post"),
    small("rope", 2, n_experts=3, top_k=2),  # mixture of experts
]


@pytest.mark.parametrize("config", CASES, ids=lambda c: c.name)
def test_cached_decode_equals_the_full_recompute(config):
    model = Transformer.from_seed(config, seed=3)
    proof = kv_cache.kv_cache_proof(model, TOKENS, decode_steps=10)
    tolerance = float32_tolerance(kv_cache.logits_scale(model, TOKENS), DECODE_ULPS)
    assert proof.prefill_length == 6 and [s.position for s in proof.steps] == list(range(6, 16))
    for step in proof.steps:
        assert step.max_difference <= tolerance, (step.position, step.max_difference, tolerance)
        assert step.exact == (step.max_difference == 0.0) or step.max_difference == 0.0
    assert proof.max_difference == max(s.max_difference for s in proof.steps)
    assert proof.exact == all(s.exact for s in proof.steps)


def test_a_wrong_position_is_caught_by_the_proof():
    """The check can fail: decoding one position off (RoPE) moves the logits well beyond the tolerance."""
    model = Transformer.from_seed(small("rope"), seed=3)
    ids = torch.tensor([TOKENS])
    _, cache = kv_cache.prefill(model, ids[:, :8])
    with torch.no_grad():
        wrong, _ = kv_cache.decode_step(model, TOKENS[8], 9, cache)  # position 9 for the token at 8
        right = model(ids[:, :9])[0, -1]
    assert float((wrong - right).abs().max()) > 10 * float32_tolerance(float(right.abs().max()), DECODE_ULPS)


@pytest.mark.parametrize("config", [small("rope", 2), small("alibi")], ids=lambda c: c.name)
def test_the_cache_holds_the_keys_and_values_the_full_forward_computes(config):
    model = Transformer.from_seed(config, seed=5)
    ids = torch.tensor([TOKENS])
    _, cache = kv_cache.prefill(model, ids[:, :4])
    with torch.no_grad():
        for position in range(4, len(TOKENS)):
            kv_cache.decode_step(model, TOKENS[position], position, cache)
        with capture(model, ["blocks.*.attn.hook_k", "blocks.*.attn.hook_v"]) as seen:
            model(ids)
    for layer, (keys, values) in enumerate(cache):
        full_k, full_v = seen[f"blocks.{layer}.attn.hook_k"], seen[f"blocks.{layer}.attn.hook_v"]
        assert keys.shape == full_k.shape == (1, config.kv_heads, len(TOKENS), config.d_head)
        for cached, full in ((keys, full_k), (values, full_v)):
            assert float((cached - full).abs().max()) <= float32_tolerance(float(full.abs().max()), DECODE_ULPS)


@pytest.mark.parametrize("kv_heads", [None, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_cache_bytes_are_two_layers_kv_heads_d_head_bytes(kv_heads):
    config = small("rope", kv_heads, n_layers=3)
    model = Transformer.from_seed(config, seed=1)
    proof = kv_cache.kv_cache_proof(model, TOKENS, decode_steps=5)
    per_token = 2 * config.n_layers * config.kv_heads * config.d_head * 4
    assert proof.measured_bytes_per_token == per_token
    for step in proof.steps:
        assert all(layer.k_shape == (1, config.kv_heads, step.position + 1, config.d_head) for layer in step.layers)
        assert sum(layer.k_bytes + layer.v_bytes for layer in step.layers) == per_token * (step.position + 1)
    assert [layer.k_shape[2] for layer in proof.prefill_layers] == [11] * 3
    assert proof.budget_dtype == "fp32"
    assert [(v.label, v.kv_heads) for v in proof.variants] == [("multi-head", 4), ("grouped-query", 2), ("multi-query", 1)]
    for variant in proof.variants:
        formula = 2 * config.n_layers * variant.kv_heads * config.d_head * 4
        assert variant.measured_bytes_per_token == variant.formula_bytes_per_token == formula
        assert variant.budget_bytes_per_token == formula
        assert variant.is_current == (variant.kv_heads == config.kv_heads)


def test_the_budget_of_the_current_model_is_the_measured_cache():
    config = small("learned", 2)
    proof = kv_cache.kv_cache_proof(Transformer.from_seed(config), TOKENS, decode_steps=2)
    assert proof.measured_bytes_per_token == compute_budget(config).kv_cache_bytes_per_token["fp32"]


def test_a_bfloat16_model_caches_two_bytes_per_value():
    config = small("rope", 2)
    model = Transformer.from_seed(config, dtype=torch.bfloat16)
    proof = kv_cache.kv_cache_proof(model, TOKENS, decode_steps=3)
    assert proof.bytes_per_element == 2 and proof.budget_dtype == "bf16" and proof.dtype == "bfloat16"
    assert proof.measured_bytes_per_token == 2 * 2 * 2 * config.d_head * 2


@pytest.mark.parametrize("n_heads, current, expected", [
    (4, 4, [("multi-head", 4), ("grouped-query", 2), ("multi-query", 1)]),
    (12, 12, [("multi-head", 12), ("grouped-query", 3), ("multi-query", 1)]),
    (8, 2, [("multi-head", 8), ("grouped-query", 2), ("multi-query", 1)]),
    (2, 2, [("multi-head", 2), ("multi-query", 1)]),
    (1, 1, [("multi-head", 1)]),
    (3, 3, [("multi-head", 3), ("multi-query", 1)]),
])
def test_the_variants(n_heads, current, expected):
    assert kv_cache.variant_kv_heads(n_heads, current) == expected


def test_the_cause_follows_what_was_measured():
    proof = kv_cache.kv_cache_proof(Transformer.from_seed(small("learned")), TOKENS, decode_steps=4)
    assert proof.linear_rows == len(TOKENS)
    if proof.exact:
        assert proof.cause.startswith("bit for bit")
    elif not proof.linear_exact:
        assert "different summation order" in proof.cause and f"{proof.linear_difference:.1e}" in proof.cause
    else:
        assert "attention kernel" in proof.cause
    assert proof.linear_exact == (proof.linear_difference == 0.0) or proof.linear_difference == 0.0


@pytest.mark.parametrize("changes, message", [
    ({"architecture": "encoder", "attention": "bidirectional"}, "is an encoder: it attends both ways"),
    ({"attention": "bidirectional"}, "without a causal mask: it attends both ways"),
    ({"architecture": "encoder-decoder", "positional": "sinusoidal"}, "is an encoder-decoder: its decoder caches"),
])
def test_models_that_keep_no_cache_are_refused(changes, message):
    model = Transformer.from_seed(small("learned").replace(**changes))
    with pytest.raises(kv_cache.KVCacheError, match=message):
        kv_cache.kv_cache_proof(model, TOKENS, decode_steps=2)


@pytest.mark.parametrize("tokens, steps, message", [([1], 1, "at least two tokens"), (TOKENS, 0, "decode steps must be"),
                                                    (TOKENS, len(TOKENS), "decode steps must be")])
def test_bad_requests_are_refused(tokens, steps, message):
    with pytest.raises(kv_cache.KVCacheError, match=message):
        kv_cache.kv_cache_proof(Transformer.from_seed(small("learned")), tokens, steps)
