"""GPT-2 (GPT2LMHeadModel): learned positions, pre-LayerNorm, GELU, biases everywhere, tied head.

Conv1D weights are stored (in, out), the transpose of nn.Linear; c_attn is q, k, v fused in that
order, exactly the layout of attn.qkv; the head is tied to wte.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families.common import (
    CAUSAL_DECODER,
    Family,
    HFConfig,
    Tensors,
    TensorSource,
    causal_decoder_needs,
    check_shape,
    field,
    take_head,
)

# Hugging Face activation names and the lab's equivalent. The tanh approximation of GELU (GPT-2's
# gelu_new) differs from exact GELU by up to ~1e-3 per unit, so the two are kept apart.
ACTIVATIONS = {
    "gelu": "gelu",
    "relu": "relu",
    "gelu_new": "gelu-tanh",
    "gelu_pytorch_tanh": "gelu-tanh",
    "gelu_fast": "gelu-tanh",  # the same tanh formula with the constant written out
}
_EXPORT_ACTIVATION = {"gelu": "gelu", "gelu-tanh": "gelu_new", "relu": "relu"}


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    activation_name = field(hf, "activation_function", where, str, "gelu_new")
    if activation_name not in ACTIVATIONS:
        raise CheckpointError(
            f"{where}: activation_function {activation_name!r} is not supported "
            f"(this app imports {', '.join(ACTIVATIONS)})"
        )
    if hf.get("scale_attn_by_inverse_layer_idx"):
        raise CheckpointError(f"{where}: scale_attn_by_inverse_layer_idx is not supported")
    if hf.get("scale_attn_weights") is False:
        raise CheckpointError(f"{where}: scale_attn_weights false (unscaled attention) is not supported")
    if hf.get("add_cross_attention"):
        raise CheckpointError(f"{where}: GPT-2 with cross-attention is not supported")
    d_model = field(hf, "n_embd", where, int)
    return {
        **CAUSAL_DECODER,
        "vocab_size": field(hf, "vocab_size", where, int),
        "context_length": field(hf, "n_positions", where, int),
        "d_model": d_model,
        "n_heads": field(hf, "n_head", where, int),
        "n_layers": field(hf, "n_layer", where, int),
        "d_ff": field(hf, "n_inner", where, int, 4 * d_model),
        "norm": "layernorm",
        "norm_eps": float(field(hf, "layer_norm_epsilon", where, (int, float), 1e-5)),
        "activation": ACTIVATIONS[activation_name],
        "positional": "learned",
        "bias": True,
        "tie_embeddings": bool(field(hf, "tie_word_embeddings", where, bool, True)),
    }


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ("transformer.",))
    d, d_ff = config.d_model, config.d_ff
    state: Tensors = {
        "tok_emb.weight": source.take("wte.weight"),
        "pos_emb.weight": source.take("wpe.weight"),
        "final_norm.weight": source.take("ln_f.weight"),
        "final_norm.bias": source.take("ln_f.bias"),
    }

    def conv1d(name: str, fan_in: int, fan_out: int) -> torch.Tensor:
        weight = check_shape(source.take(name), (fan_in, fan_out), name, where)  # (in, out)
        return weight.t().contiguous()  # (out, in): nn.Linear's layout

    for i in range(config.n_layers):
        hf, ours = f"h.{i}.", f"blocks.{i}."
        state[ours + "norm1.weight"] = source.take(hf + "ln_1.weight")
        state[ours + "norm1.bias"] = source.take(hf + "ln_1.bias")
        state[ours + "attn.qkv.weight"] = conv1d(hf + "attn.c_attn.weight", d, 3 * d)  # (3D, D), rows q|k|v
        state[ours + "attn.qkv.bias"] = source.take(hf + "attn.c_attn.bias")
        state[ours + "attn.out_proj.weight"] = conv1d(hf + "attn.c_proj.weight", d, d)  # (D, D)
        state[ours + "attn.out_proj.bias"] = source.take(hf + "attn.c_proj.bias")
        state[ours + "norm2.weight"] = source.take(hf + "ln_2.weight")
        state[ours + "norm2.bias"] = source.take(hf + "ln_2.bias")
        state[ours + "ffn.up.weight"] = conv1d(hf + "mlp.c_fc.weight", d, d_ff)  # (F, D)
        state[ours + "ffn.up.bias"] = source.take(hf + "mlp.c_fc.bias")
        state[ours + "ffn.down.weight"] = conv1d(hf + "mlp.c_proj.weight", d_ff, d)  # (D, F)
        state[ours + "ffn.down.bias"] = source.take(hf + "mlp.c_proj.bias")
    take_head(source, config, state, where, "wte.weight")

    def ignorable(name: str) -> bool:
        # Old uploads store the causal mask buffers (attn.bias, attn.masked_bias) as tensors.
        return re.fullmatch(r"h\.\d+\.attn\.(bias|masked_bias)", name) is not None

    source.finish(ignorable)
    return state


def export_needs(config: ModelConfig) -> list[str] | None:
    if not (config.positional == "learned" and config.norm == "layernorm" and config.activation in _EXPORT_ACTIVATION):
        return None
    own = [(config.bias, "biases"), (config.kv_heads == config.n_heads, "one key/value head per query head")]
    return causal_decoder_needs(config) + [need for ok, need in own if not ok]


def export_config(config: ModelConfig) -> HFConfig:
    return {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": config.vocab_size,
        "n_positions": config.context_length,
        "n_embd": config.d_model,
        "n_layer": config.n_layers,
        "n_head": config.n_heads,
        "n_inner": config.d_ff,
        "activation_function": _EXPORT_ACTIVATION[config.activation],
        "layer_norm_epsilon": config.norm_eps,
        "tie_word_embeddings": config.tie_embeddings,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "bos_token_id": None,  # GPT-2's defaults (50256) are ids of its own vocabulary, not this one's
        "eos_token_id": None,
        "torch_dtype": "float32",
    }


def export_tensors(state: Tensors, config: ModelConfig) -> Tensors:
    out = {
        "transformer.wte.weight": state["tok_emb.weight"],
        "transformer.wpe.weight": state["pos_emb.weight"],
        "transformer.ln_f.weight": state["final_norm.weight"],
        "transformer.ln_f.bias": state["final_norm.bias"],
    }
    for i in range(config.n_layers):
        ours, hf = f"blocks.{i}.", f"transformer.h.{i}."
        out[hf + "ln_1.weight"] = state[ours + "norm1.weight"]
        out[hf + "ln_1.bias"] = state[ours + "norm1.bias"]
        out[hf + "attn.c_attn.weight"] = state[ours + "attn.qkv.weight"].t()  # (D, 3D): Conv1D is (in, out)
        out[hf + "attn.c_attn.bias"] = state[ours + "attn.qkv.bias"]
        out[hf + "attn.c_proj.weight"] = state[ours + "attn.out_proj.weight"].t()  # (D, D)
        out[hf + "attn.c_proj.bias"] = state[ours + "attn.out_proj.bias"]
        out[hf + "ln_2.weight"] = state[ours + "norm2.weight"]
        out[hf + "ln_2.bias"] = state[ours + "norm2.bias"]
        out[hf + "mlp.c_fc.weight"] = state[ours + "ffn.up.weight"].t()  # (D, F)
        out[hf + "mlp.c_fc.bias"] = state[ours + "ffn.up.bias"]
        out[hf + "mlp.c_proj.weight"] = state[ours + "ffn.down.weight"].t()  # (F, D)
        out[hf + "mlp.c_proj.bias"] = state[ours + "ffn.down.bias"]
    if not config.tie_embeddings:
        out["lm_head.weight"] = state["head.weight"]
    return out


FAMILY = Family(
    model_type="gpt2",
    title="GPT-2",
    architectures=("GPT2LMHeadModel",),
    auto_class="AutoModelForCausalLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
    export_needs=export_needs,
    export_config=export_config,
    export_tensors=export_tensors,
    signature="GPT-2's learned positions, LayerNorm and GELU",
)
