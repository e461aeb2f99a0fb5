"""Marian (MarianMTModel): the 2017 encoder-decoder as the opus-mt translation models use it.

Post-LayerNorm blocks in both towers, no norm after the last block, sinusoidal positions in
Marian's layout (all sines, then all cosines: the lab's sinusoidal_halves), token embeddings scaled
by sqrt(d_model) when scale_embedding is set, one embedding table shared by the encoder, the decoder
and the output head, and final_logits_bias added to every logit (head_bias). Each decoder block
attends to itself (causal), then to the encoder's output (cross-attention), then runs its FFN.
The positional tables older uploads store are fixed sinusoids, recomputed here rather than read.

Marian's tokenizer is two SentencePiece models (source.spm, target.spm), which this app does not
read: a Marian model takes token ids (`--source-ids` for the encoder, `--ids` for the decoder).
"""

from __future__ import annotations

import re
from typing import Any

import torch

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families.common import Family, HFConfig, Tensors, TensorSource, check_shape, field, take_tied_copy

ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_new": "gelu-tanh"}


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    activation = field(hf, "activation_function", where, str, "gelu")
    if activation not in ACTIVATIONS:
        raise CheckpointError(
            f"{where}: activation_function {activation!r} is not supported (this app imports {', '.join(ACTIVATIONS)})"
        )
    vocab = field(hf, "vocab_size", where, int)
    pairs = [("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")]
    for encoder_key, decoder_key in pairs:
        if field(hf, encoder_key, where, int) != field(hf, decoder_key, where, int):
            raise CheckpointError(f"{where}: {encoder_key} and {decoder_key} differ; this app uses one value for both towers")
    decoder_vocab = field(hf, "decoder_vocab_size", where, int, vocab)
    if decoder_vocab < 1:
        raise CheckpointError(f"{where}: decoder_vocab_size is {decoder_vocab}: the target vocabulary is empty")
    if not field(hf, "share_encoder_decoder_embeddings", where, bool, True) or decoder_vocab != vocab:
        raise CheckpointError(f"{where}: separate source and target vocabularies are not supported (one shared table only)")
    if not field(hf, "tie_word_embeddings", where, bool, True):
        raise CheckpointError(f"{where}: an output head apart from the embeddings is not supported")
    if hf.get("normalize_before") or hf.get("add_final_layer_norm") or hf.get("normalize_embedding"):
        raise CheckpointError(f"{where}: pre-norm or extra LayerNorm variants of Marian are not supported")
    return {
        "architecture": "encoder-decoder",
        "attention": "causal",
        "norm_placement": "post",
        "final_norm": False,
        "norm": "layernorm",
        "positional": "sinusoidal",
        "sinusoidal_halves": True,
        "embed_scale": bool(field(hf, "scale_embedding", where, bool, False)),
        "head_bias": True,
        "bias": True,
        "tie_embeddings": True,
        "vocab_size": vocab,
        "context_length": field(hf, "max_position_embeddings", where, int),
        "d_model": field(hf, "d_model", where, int),
        "n_heads": field(hf, "decoder_attention_heads", where, int),
        "n_layers": field(hf, "decoder_layers", where, int),
        "n_encoder_layers": field(hf, "encoder_layers", where, int),
        "d_ff": field(hf, "decoder_ffn_dim", where, int),
        "norm_eps": 1e-5,  # nn.LayerNorm's default, which Marian's layers keep
        "activation": ACTIVATIONS[activation],
    }


def _attention(source: TensorSource, hf: str, ours: str, d: int, where: str, state: Tensors, cross: bool) -> None:
    """One attention layer: q, k, v as the lab's qkv (self) or q_proj + kv_proj (cross)."""
    weights = {p: check_shape(source.take(f"{hf}{p}_proj.weight"), (d, d), f"{hf}{p}_proj.weight", where) for p in "qkv"}
    biases = {p: source.take(f"{hf}{p}_proj.bias") for p in "qkv"}
    if cross:
        state[ours + "q_proj.weight"], state[ours + "q_proj.bias"] = weights["q"], biases["q"]
        state[ours + "kv_proj.weight"] = torch.cat([weights["k"], weights["v"]])  # (2D, D), rows k|v
        state[ours + "kv_proj.bias"] = torch.cat([biases["k"], biases["v"]])  # (2D,)
    else:
        state[ours + "qkv.weight"] = torch.cat([weights[p] for p in "qkv"])  # (3D, D), rows q|k|v
        state[ours + "qkv.bias"] = torch.cat([biases[p] for p in "qkv"])  # (3D,)
    state[ours + "out_proj.weight"] = source.take(hf + "out_proj.weight")
    state[ours + "out_proj.bias"] = source.take(hf + "out_proj.bias")


def _norm(source: TensorSource, hf: str, ours: str, state: Tensors) -> None:
    state[ours + ".weight"] = source.take(hf + ".weight")
    state[ours + ".bias"] = source.take(hf + ".bias")


def _ffn(source: TensorSource, hf: str, ours: str, state: Tensors) -> None:
    state[ours + "ffn.up.weight"] = source.take(hf + "fc1.weight")  # (F, D)
    state[ours + "ffn.up.bias"] = source.take(hf + "fc1.bias")
    state[ours + "ffn.down.weight"] = source.take(hf + "fc2.weight")  # (D, F)
    state[ours + "ffn.down.bias"] = source.take(hf + "fc2.bias")


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ())
    d = config.d_model
    shared = source.take_optional("model.shared.weight")
    if shared is None:
        shared = source.take("model.encoder.embed_tokens.weight")
    state: Tensors = {"tok_emb.weight": shared}
    for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
        take_tied_copy(source, name, shared, where)
    for i in range(config.encoder_layers):
        hf, ours = f"model.encoder.layers.{i}.", f"encoder_blocks.{i}."
        _attention(source, hf + "self_attn.", ours + "attn.", d, where, state, cross=False)
        _norm(source, hf + "self_attn_layer_norm", ours + "norm1", state)
        _ffn(source, hf, ours, state)
        _norm(source, hf + "final_layer_norm", ours + "norm2", state)
    for i in range(config.n_layers):
        hf, ours = f"model.decoder.layers.{i}.", f"blocks.{i}."
        _attention(source, hf + "self_attn.", ours + "attn.", d, where, state, cross=False)
        _norm(source, hf + "self_attn_layer_norm", ours + "norm1", state)
        _attention(source, hf + "encoder_attn.", ours + "cross_attn.", d, where, state, cross=True)
        _norm(source, hf + "encoder_attn_layer_norm", ours + "norm_cross", state)
        _ffn(source, hf, ours, state)
        _norm(source, hf + "final_layer_norm", ours + "norm2", state)
    bias = source.take("final_logits_bias")  # (1, V)
    state["head.bias"] = check_shape(bias, (1, config.vocab_size), "final_logits_bias", where)[0]  # (V,)
    source.finish(lambda name: re.fullmatch(r"model\.(encoder|decoder)\.embed_positions\.weight", name) is not None)
    return state


FAMILY = Family(
    model_type="marian",
    title="Marian",
    architectures=("MarianMTModel",),
    auto_class="AutoModelForSeq2SeqLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
    text_input=False,
    tokenizer_note="Marian's tokenizer is SentencePiece (source.spm, target.spm), which this app does not read",
)
