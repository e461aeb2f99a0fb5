"""DistilBERT (DistilBertForMaskedLM): BERT distilled to fewer layers, without token types or pooler.

The same post-LayerNorm encoder and masked-LM head as core.families.bert under other names
(q_lin, sa_layer_norm, vocab_transform, ...). Its position table is always stored, also when
sinusoidal_pos_embds made it a fixed sinusoidal one, so it is read as a learned table.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families.bert import ACTIVATIONS, MASKED_LM_ENCODER
from core.families.common import Family, HFConfig, Tensors, TensorSource, check_shape, field, take_tied_copy

LAYER_NORM_EPS = 1e-12  # DistilBERT's LayerNorms all use this; config.json does not record it


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    activation = field(hf, "activation", where, str, "gelu")
    if activation not in ACTIVATIONS:
        raise CheckpointError(f"{where}: activation {activation!r} is not supported (this app imports {', '.join(ACTIVATIONS)})")
    if not field(hf, "tie_word_embeddings", where, bool, True):
        raise CheckpointError(f"{where}: an untied masked-LM projector is not supported")
    return {
        **MASKED_LM_ENCODER,
        "vocab_size": field(hf, "vocab_size", where, int),
        "context_length": field(hf, "max_position_embeddings", where, int),
        "d_model": field(hf, "dim", where, int),
        "n_heads": field(hf, "n_heads", where, int),
        "n_layers": field(hf, "n_layers", where, int),
        "d_ff": field(hf, "hidden_dim", where, int),
        "norm_eps": LAYER_NORM_EPS,
        "activation": ACTIVATIONS[activation],
        "tie_embeddings": True,
    }


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ())
    d = config.d_model
    state: Tensors = {
        "tok_emb.weight": source.take("distilbert.embeddings.word_embeddings.weight"),
        "pos_emb.weight": source.take("distilbert.embeddings.position_embeddings.weight"),
        "embed_norm.weight": source.take("distilbert.embeddings.LayerNorm.weight"),
        "embed_norm.bias": source.take("distilbert.embeddings.LayerNorm.bias"),
    }
    for i in range(config.n_layers):
        hf, ours = f"distilbert.transformer.layer.{i}.", f"blocks.{i}."
        parts = ("q_lin", "k_lin", "v_lin")
        weights = [check_shape(source.take(f"{hf}attention.{p}.weight"), (d, d), f"{hf}attention.{p}.weight", where)
                   for p in parts]
        state[ours + "attn.qkv.weight"] = torch.cat(weights)  # (3D, D), rows q|k|v
        state[ours + "attn.qkv.bias"] = torch.cat([source.take(f"{hf}attention.{p}.bias") for p in parts])  # (3D,)
        state[ours + "attn.out_proj.weight"] = source.take(hf + "attention.out_lin.weight")
        state[ours + "attn.out_proj.bias"] = source.take(hf + "attention.out_lin.bias")
        state[ours + "norm1.weight"] = source.take(hf + "sa_layer_norm.weight")
        state[ours + "norm1.bias"] = source.take(hf + "sa_layer_norm.bias")
        state[ours + "ffn.up.weight"] = source.take(hf + "ffn.lin1.weight")  # (F, D)
        state[ours + "ffn.up.bias"] = source.take(hf + "ffn.lin1.bias")
        state[ours + "ffn.down.weight"] = source.take(hf + "ffn.lin2.weight")  # (D, F)
        state[ours + "ffn.down.bias"] = source.take(hf + "ffn.lin2.bias")
        state[ours + "norm2.weight"] = source.take(hf + "output_layer_norm.weight")
        state[ours + "norm2.bias"] = source.take(hf + "output_layer_norm.bias")
    state["head_transform.dense.weight"] = source.take("vocab_transform.weight")
    state["head_transform.dense.bias"] = source.take("vocab_transform.bias")
    state["head_transform.norm.weight"] = source.take("vocab_layer_norm.weight")
    state["head_transform.norm.bias"] = source.take("vocab_layer_norm.bias")
    state["head.bias"] = source.take("vocab_projector.bias")  # (V,)
    take_tied_copy(source, "vocab_projector.weight", state["tok_emb.weight"], where)
    source.finish(lambda name: re.fullmatch(r"distilbert\.embeddings\.position_ids", name) is not None)
    return state


FAMILY = Family(
    model_type="distilbert",
    title="DistilBERT",
    architectures=("DistilBertForMaskedLM",),
    auto_class="AutoModelForMaskedLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
)
