"""Tensor shapes of an encoder-decoder (S source tokens, T target tokens), a mixture of experts and BERT.

The shapes are written out here from the configs (B, h, T, S, d_head, ...), and an encoder-decoder's
cross-attention is checked against the weights transformers returns for a Marian folder.
"""

from __future__ import annotations

import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.config import ModelConfig
from core.experiments.shapes import attention_growth, trace_shapes
from core.families import bert
from core.model import SequenceError, Transformer
from core.presets import get_preset
from tests.encoder_folders import marian_folder

B, T, S = 2, 7, 5


def _shapes(trace) -> dict[str, tuple[int, ...]]:
    return {row.name: row.shape for row in trace.rows}


def test_an_encoder_decoders_encoder_tower_and_cross_attention_read_s_source_tokens():
    config = get_preset("tiny-encoder-decoder")
    h, d, width = config.n_heads, config.d_head, config.d_model
    trace = trace_shapes(config, B, T, source_seq=S)
    shapes = _shapes(trace)
    names = [row.name for row in trace.rows]
    assert names.index("encoder output (memory)") < names.index("token ids")  # the encoder runs first
    assert shapes["source ids"] == (B, S) and shapes["token ids"] == (B, T)
    assert shapes["encoder: embeddings + positions"] == (B, S, width)
    assert shapes["encoder: attention weights"] == (B, h, S, S)
    assert shapes["encoder output (memory)"] == (B, S, width)
    assert shapes["attention weights"] == (B, h, T, T)  # the decoder's own, causal
    assert shapes["cross-attention Q per head"] == (B, h, T, d)
    assert shapes["cross-attention K per head"] == shapes["cross-attention V per head"] == (B, config.kv_heads, S, d)
    assert shapes["cross-attention scores"] == shapes["cross-attention weights"] == (B, h, T, S)
    assert shapes["cross-attention output"] == shapes["residual after cross-attention"] == (B, T, width)
    assert shapes["logits"] == (B, T, config.vocab_size)
    weights = next(row for row in trace.rows if row.name == "cross-attention weights")
    assert weights.is_attention_matrix and weights.bytes == B * h * T * S * 4
    assert trace.source_seq == S and trace.to_dict()["source_seq"] == S
    layers, encoder_layers = config.n_layers, config.encoder_layers
    assert trace.all_attention_weights_bytes == 4 * B * h * (layers * T * T + layers * T * S + encoder_layers * S * S)
    moe = get_preset("tiny-moe")
    assert trace_shapes(moe, B, T).all_attention_weights_bytes == 4 * B * moe.n_heads * T * T * moe.n_layers
    # The source is T long unless told otherwise; a decoder-only model has none.
    assert trace_shapes(config, B, T).source_seq == T
    assert trace_shapes(get_preset("tiny-gpt"), B, T, source_seq=S).source_seq is None
    # As T grows the decoder's T x T matrix grows, the source stays S.
    growth = attention_growth(config, 1, (4, 8), source_seq=S)
    assert growth.attention_bytes == (h * 4 * 4 * 4, h * 8 * 8 * 4)


def test_a_real_marian_forward_has_the_traced_cross_attention(tmp_path):
    pytest.importorskip("transformers")
    import transformers

    folder = marian_folder(tmp_path / "marian")
    model = resolve_checkpoint(folder).model
    meta = trace_shapes(model.config, B, T, source_seq=S)
    real = trace_shapes(model.config, B, T, model=model, source_seq=S)
    assert [(r.name, r.shape, r.bytes) for r in meta.rows] == [(r.name, r.shape, r.bytes) for r in real.rows]
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(input_ids=torch.zeros(B, S, dtype=torch.long), decoder_input_ids=torch.zeros(B, T, dtype=torch.long),
                 output_attentions=True)
    shapes = _shapes(meta)
    assert shapes["cross-attention weights"] == tuple(out.cross_attentions[0].shape)
    assert shapes["encoder: attention weights"] == tuple(out.encoder_attentions[0].shape)
    assert shapes["logits"] == tuple(out.logits.shape)
    # Marian is post-norm with no final norm: no such row.
    assert "final norm" not in shapes


def test_a_mixture_shows_its_router_the_chosen_experts_and_their_weights():
    config = get_preset("tiny-moe")
    trace = trace_shapes(config, B, T)
    shapes = _shapes(trace)
    assert shapes["router logits"] == shapes["routing weights"] == (B, T, config.n_experts)
    assert shapes["top-k experts"] == (B, T, config.top_k)
    assert next(row for row in trace.rows if row.name == "top-k experts").dtype == "int64"
    assert shapes["FFN hidden"] == (B, T, config.d_ff)
    names = [row.name for row in trace.rows]
    assert names.index("router logits") < names.index("top-k experts") < names.index("routing weights") \
        < names.index("FFN hidden")
    real = trace_shapes(config, B, T, model=Transformer.from_seed(config, seed=0))
    assert _shapes(real) == shapes


def test_berts_head_transform_has_a_row_and_its_missing_final_norm_none():
    hf = {"vocab_size": 200, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "max_position_embeddings": 64}
    config = ModelConfig(name="bert", **bert.config_fields(hf, "config.json")).validated()
    shapes = _shapes(trace_shapes(config, B, T))
    assert "final norm" not in shapes and "source ids" not in shapes
    assert shapes["head transform"] == (B, T, 32)
    assert list(shapes)[-2:] == ["head transform", "logits"]
    assert shapes["attention weights"] == (B, 4, T, T)


def test_a_source_beyond_the_context_is_refused():
    config = get_preset("tiny-encoder-decoder")
    too_long = config.context_length + 1
    with pytest.raises(SequenceError, match=f"a source of {too_long} tokens exceeds the model's context length of "
                                            f"{config.context_length}"):
        trace_shapes(config, 1, 4, source_seq=too_long)
    with pytest.raises(SequenceError, match="the source must hold at least one token"):
        trace_shapes(config, 1, 4, source_seq=0)
