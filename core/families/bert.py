"""BERT (BertForMaskedLM): a post-LayerNorm encoder with learned positions and a masked-LM head.

Embeddings are word + position + token type, then a LayerNorm (the lab's embed_norm). Every text
the lab runs is one segment, token type 0, so that row of the token-type table is added to every
row of the position table on import: the sum the model sees is the same, and the lab's position
table is BERT's position table shifted by one constant vector. Each layer is post-norm:
x = LN(x + attention(x)), then x = LN(x + FFN(x)). The head is dense + GELU + LayerNorm (the lab's
head_transform), then the word embeddings again (tied) and a bias per token (head_bias).
Uploads converted from the original TensorFlow release name LayerNorm parameters gamma and beta;
both spellings are read. The pooler and the next-sentence head are not part of a masked LM.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families.common import Family, HFConfig, Tensors, TensorSource, check_shape, field, take_tied_copy

ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu-tanh", "gelu_pytorch_tanh": "gelu-tanh"}
# Encoder-only, post-norm, no norm after the last block (each block already ends in one).
MASKED_LM_ENCODER = {"architecture": "encoder", "attention": "bidirectional", "norm_placement": "post",
                     "final_norm": False, "embed_norm": True, "head_transform": True, "head_bias": True,
                     "norm": "layernorm", "positional": "learned", "bias": True}


def config_fields(hf: HFConfig, where: str, positions_offset: int = 0) -> dict[str, Any]:
    """config.json's fields; the position table holds positions_offset rows before position 0 (RoBERTa)."""
    activation = field(hf, "hidden_act", where, str, "gelu")
    if activation not in ACTIVATIONS:
        raise CheckpointError(f"{where}: hidden_act {activation!r} is not supported (this app imports {', '.join(ACTIVATIONS)})")
    position_kind = field(hf, "position_embedding_type", where, str, "absolute")
    if position_kind != "absolute":
        raise CheckpointError(f"{where}: position_embedding_type {position_kind!r} is not supported (only absolute)")
    if hf.get("is_decoder") or hf.get("add_cross_attention"):
        raise CheckpointError(f"{where}: BERT as a decoder is not supported; this app imports the masked-LM encoder")
    if not field(hf, "tie_word_embeddings", where, bool, True):
        raise CheckpointError(f"{where}: an untied masked-LM decoder is not supported")
    return {
        **MASKED_LM_ENCODER,
        "vocab_size": field(hf, "vocab_size", where, int),
        "context_length": field(hf, "max_position_embeddings", where, int) - positions_offset,
        "d_model": field(hf, "hidden_size", where, int),
        "n_heads": field(hf, "num_attention_heads", where, int),
        "n_layers": field(hf, "num_hidden_layers", where, int),
        "d_ff": field(hf, "intermediate_size", where, int),
        "norm_eps": float(field(hf, "layer_norm_eps", where, (int, float), 1e-12)),
        "activation": ACTIVATIONS[activation],
        "tie_embeddings": True,
    }


def _take_norm(source: TensorSource, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, bias) of a LayerNorm stored as weight/bias or, in TensorFlow conversions, gamma/beta."""
    if f"{name}.gamma" in source.remaining:
        return source.take(f"{name}.gamma"), source.take(f"{name}.beta")
    return source.take(f"{name}.weight"), source.take(f"{name}.bias")


def encoder_tensors(source: TensorSource, config: ModelConfig, where: str, prefix: str, first_position: int = 0) -> Tensors:
    """Embeddings and layers of a BERT-style encoder stored under `prefix` ("bert.", "roberta.").

    The lab's position p is stored row first_position + p (RoBERTa starts after its padding row).
    """
    d = config.d_model
    state: Tensors = {"tok_emb.weight": source.take(prefix + "embeddings.word_embeddings.weight")}
    name = prefix + "embeddings.position_embeddings.weight"
    positions = check_shape(source.take(name), (first_position + config.context_length, d), name, where)  # (P, D)
    positions = positions[first_position:]  # (context, D)
    token_types = source.take_optional(prefix + "embeddings.token_type_embeddings.weight")  # (types, D)
    state["pos_emb.weight"] = positions if token_types is None else positions + token_types[0]  # (context, D)
    state["embed_norm.weight"], state["embed_norm.bias"] = _take_norm(source, prefix + "embeddings.LayerNorm")
    for i in range(config.n_layers):
        hf, ours = f"{prefix}encoder.layer.{i}.", f"blocks.{i}."
        projections = [check_shape(source.take(f"{hf}attention.self.{part}.weight"), (d, d),
                                   f"{hf}attention.self.{part}.weight", where) for part in ("query", "key", "value")]
        state[ours + "attn.qkv.weight"] = torch.cat(projections)  # (3D, D), rows q|k|v
        state[ours + "attn.qkv.bias"] = torch.cat([source.take(f"{hf}attention.self.{part}.bias")
                                                   for part in ("query", "key", "value")])  # (3D,)
        state[ours + "attn.out_proj.weight"] = source.take(hf + "attention.output.dense.weight")
        state[ours + "attn.out_proj.bias"] = source.take(hf + "attention.output.dense.bias")
        state[ours + "norm1.weight"], state[ours + "norm1.bias"] = _take_norm(source, hf + "attention.output.LayerNorm")
        state[ours + "ffn.up.weight"] = source.take(hf + "intermediate.dense.weight")  # (F, D)
        state[ours + "ffn.up.bias"] = source.take(hf + "intermediate.dense.bias")
        state[ours + "ffn.down.weight"] = source.take(hf + "output.dense.weight")  # (D, F)
        state[ours + "ffn.down.bias"] = source.take(hf + "output.dense.bias")
        state[ours + "norm2.weight"], state[ours + "norm2.bias"] = _take_norm(source, hf + "output.LayerNorm")
    return state


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ())
    state = encoder_tensors(source, config, where, "bert.")
    state["head_transform.dense.weight"] = source.take("cls.predictions.transform.dense.weight")
    state["head_transform.dense.bias"] = source.take("cls.predictions.transform.dense.bias")
    state["head_transform.norm.weight"], state["head_transform.norm.bias"] = _take_norm(
        source, "cls.predictions.transform.LayerNorm")
    state["head.bias"] = source.take("cls.predictions.bias")  # (V,)
    take_tied_copy(source, "cls.predictions.decoder.weight", state["tok_emb.weight"], where)
    take_tied_copy(source, "cls.predictions.decoder.bias", state["head.bias"], where)

    def ignorable(name: str) -> bool:
        # Buffers of position and token-type ids, and the parts of pre-training a masked LM does not use.
        return re.fullmatch(r"bert\.embeddings\.(position_ids|token_type_ids)|bert\.pooler\..*|cls\.seq_relationship\..*",
                            name) is not None

    source.finish(ignorable)
    return state


FAMILY = Family(
    model_type="bert",
    title="BERT",
    architectures=("BertForMaskedLM",),
    auto_class="AutoModelForMaskedLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
)
