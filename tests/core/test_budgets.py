"""Budgets: FLOPs, weight memory and KV cache from the parameter count; the reading's exercise 6."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.experiments.budgets import (
    BYTES_PER_VALUE,
    BudgetError,
    compare_configs,
    compute_budget,
    embedding_share_sweep,
    scaled_config,
)
from core.params import parameter_breakdown
from core.presets import PRESETS, get_preset


def test_gpt2_small_trains_at_six_n_flops_per_token():
    budget = compute_budget(get_preset("gpt2-small"))
    assert budget.total_params == budget.active_params == 124_439_808  # the reading's tied total
    assert budget.training_flops_per_token == 6 * 124_439_808


def test_inference_flops_add_the_attention_term():
    config = get_preset("gpt2-small")
    budget = compute_budget(config, seq_len=256)
    assert budget.seq_len == 256
    assert budget.attention_flops_per_token == 2 * config.n_layers * 256 * config.d_model
    assert budget.inference_flops_per_token == 2 * budget.active_params + budget.attention_flops_per_token
    assert compute_budget(config).seq_len == config.context_length


def test_llama3_8b_kv_cache_is_128_kib_per_token_in_bf16():
    config = get_preset("llama3-8b")
    budget = compute_budget(config)
    expected = 2 * config.n_layers * config.kv_heads * config.d_head * BYTES_PER_VALUE["bf16"]
    assert expected == 2 * 32 * 8 * 128 * 2
    assert budget.kv_cache_bytes_per_token["bf16"] == expected == 128 * 1024
    assert budget.kv_cache_bytes_full_context["bf16"] == expected * config.context_length
    assert budget.kv_cache_bytes_per_token["fp32"] == 2 * expected
    assert budget.kv_cache_bytes_per_token["int8"] == expected // 2


def test_mixture_of_experts_computes_with_active_and_stores_all_parameters():
    budget = compute_budget(get_preset("mixtral-8x7b"))
    breakdown = parameter_breakdown(get_preset("mixtral-8x7b"))
    assert budget.active_params == breakdown.active < budget.total_params == breakdown.total
    assert budget.training_flops_per_token == 6 * breakdown.active
    assert budget.weight_bytes["bf16"] == 2 * breakdown.total


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_has_a_consistent_budget(name):
    config = get_preset(name)
    budget = compute_budget(config)
    for dtype, size in BYTES_PER_VALUE.items():
        assert budget.weight_bytes[dtype] == budget.total_params * size
    if config.architecture == "encoder":
        assert budget.kv_cache_bytes_per_token["bf16"] == 0
    else:
        assert budget.kv_cache_bytes_per_token["bf16"] > 0
    assert set(budget.as_dict()) >= {"training_flops_per_token", "kv_cache_bytes_per_token", "weight_bytes"}


def test_sequence_beyond_the_context_is_refused():
    config = get_preset("gpt2-small")
    for seq in (0, config.context_length + 1):
        with pytest.raises(BudgetError):
            compute_budget(config, seq_len=seq)


def test_embedding_share_dwindles_as_width_grows():
    sweep = embedding_share_sweep(get_preset("gpt2-small"), [256, 768, 1536, 4096])
    assert (np.diff(sweep.embedding_share) < 0).all()
    assert sweep.n_heads.tolist() == [4, 12, 24, 64]  # d_head stays 64
    assert sweep.d_ff.tolist() == [4 * w for w in sweep.widths]
    np.testing.assert_allclose(sweep.ffn_share_of_block, 2 / 3, atol=0.005)
    assert sweep.total_params[1] == parameter_breakdown(get_preset("gpt2-small")).total


@given(width=st.integers(1, 64).map(lambda k: 64 * k))
def test_scaled_configs_keep_the_head_width_and_grouping(width):
    config = scaled_config(get_preset("llama3-8b"), width)
    assert config.d_model == width
    assert config.d_head == 128 if width % 128 == 0 else config.d_model % config.n_heads == 0
    assert config.n_heads % config.kv_heads == 0


def test_gpt2_small_versus_medium_is_exercise_six():
    comparison = compare_configs(get_preset("gpt2-small"), get_preset("gpt2-medium"))
    small, medium = comparison.a, comparison.b
    assert f"{small.token_embedding_share:.0%}" == "31%"  # the reading: "roughly 31% of the model"
    assert medium.embedding_share < small.embedding_share
    assert f"{small.ffn_share_of_block:.1%}" == f"{medium.ffn_share_of_block:.1%}" == "66.6%"
    assert medium.block_params == parameter_breakdown(get_preset("gpt2-medium")).decoder_block.total
    assert comparison.as_dict()["b"]["total_params"] == medium.total_params
