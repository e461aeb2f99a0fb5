"""The shape walk-through is traced from a forward pass, and the meta trace matches a real one."""

from __future__ import annotations

import json

import pytest
import torch

from core.config import ModelConfig
from core.experiments.shapes import attention_growth, growth_lengths, trace_shapes
from core.model import SequenceError, Transformer
from core.presets import PRESETS, get_preset

WALK = [
    "token ids",
    "embeddings + positions",
    "Q, K, V projection",
    "Q per head",
    "K per head",
    "V per head",
    "attention scores",
    "attention weights",
    "heads concatenated",
    "attention output",
    "residual after attention",
    "FFN hidden",
    "FFN output",
    "block output",
    "final norm",
    "logits",
]


def test_the_readings_example_shapes():
    # The reading: B=32, T=128, d_model=512, h=8 -> heads (32, 8, 128, 64), weights (32, 8, 128, 128).
    config = get_preset("transformer-base").replace(architecture="decoder", norm_placement="pre", final_norm=True)
    trace = trace_shapes(config, batch=32, seq=128)
    assert [row.name for row in trace.rows] == WALK
    shapes = {row.name: row.shape for row in trace.rows}
    assert shapes["token ids"] == (32, 128)
    assert shapes["embeddings + positions"] == (32, 128, 512)
    assert shapes["Q per head"] == (32, 8, 128, 64)
    assert shapes["attention weights"] == (32, 8, 128, 128)
    assert shapes["heads concatenated"] == (32, 128, 512)
    assert shapes["FFN hidden"] == (32, 128, 2048)
    assert shapes["block output"] == (32, 128, 512)
    assert shapes["logits"] == (32, 128, 37000)
    assert trace.device == "meta"


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama", "tiny-encoder", "tiny-encoder-decoder", "tiny-moe", "textbook-block"])
def test_meta_trace_matches_a_real_forward_pass(name):
    config = get_preset(name)
    model = Transformer.from_seed(config, seed=0)
    seq = min(12, config.context_length)
    meta = trace_shapes(config, 3, seq)
    real = trace_shapes(config, 3, seq, model=model)
    assert [(r.name, r.shape, r.bytes, r.dtype) for r in meta.rows] == [(r.name, r.shape, r.bytes, r.dtype) for r in real.rows]
    assert real.device == "cpu"


def test_bytes_follow_shape_and_dtype():
    config = get_preset("tiny-gpt")
    trace = trace_shapes(config, 2, 50)
    weights = trace.row("attention weights")
    assert weights.is_attention_matrix
    assert weights.bytes == 2 * config.n_heads * 50 * 50 * 4
    assert trace.row("token ids").bytes == 2 * 50 * 8  # int64 ids
    half = trace_shapes(config, 2, 50, dtype=torch.float16)
    assert half.row("attention weights").bytes == weights.bytes // 2


def test_grouped_query_heads_show_in_k_and_v():
    config = get_preset("llama3-8b")
    trace = trace_shapes(config, 1, 64)
    assert trace.row("Q per head").shape == (1, 32, 64, 128)
    assert trace.row("K per head").shape == (1, 8, 64, 128)
    assert trace.row("Q, K, V projection").shape == (1, 64, (32 + 2 * 8) * 128)
    assert "4 query heads share" in trace.row("K per head").note


def test_the_attention_matrix_grows_with_t_squared():
    config = get_preset("gpt2-small")
    growth = attention_growth(config, 1, (256, 512, 1024))
    assert growth.attention_bytes[1] == 4 * growth.attention_bytes[0]
    assert growth.attention_bytes[2] == 4 * growth.attention_bytes[1]
    assert growth.residual_bytes[2] == 2 * growth.residual_bytes[1]
    assert growth.attention_bytes[2] == 12 * 1024 * 1024 * 4


def test_a_huge_model_traces_on_meta_without_memory():
    trace = trace_shapes(get_preset("mixtral-8x7b"), batch=8, seq=32768)
    assert trace.attention_matrix_bytes == 8 * 32 * 32768 * 32768 * 4  # 1 TiB, never allocated


def test_growth_lengths_are_powers_of_two_with_the_current_length():
    assert growth_lengths(256, 100) == (1, 2, 4, 8, 16, 32, 64, 100, 128, 256)


@pytest.mark.parametrize("batch, seq", [(0, 4), (1, 0), (1, 257)])
def test_impossible_sizes_raise_sequence_error(batch, seq):
    with pytest.raises(SequenceError):
        trace_shapes(get_preset("tiny-gpt"), batch, seq)


def test_the_trace_is_json_ready():
    data = trace_shapes(get_preset("tiny-moe"), 1, 8).to_dict()
    assert json.loads(json.dumps(data))["rows"][7]["name"] == "attention weights"
    assert ModelConfig.from_dict(data["config"]) == PRESETS["tiny-moe"]
