"""Llama (LlamaForCausalLM): RoPE, pre-RMSNorm, SwiGLU, grouped-query attention, optional biases.

q, k, v projections are concatenated into attn.qkv. Hugging Face rotates the pairs (i, i + d/2) of
each head (rotate_half) where the lab rotates (2i, 2i + 1), so the rows of q_proj and k_proj are
permuted per head to [0, d/2, 1, d/2 + 1, ...]: every pair then meets the same frequency, and since
q and k move together their dot products are unchanged. Export permutes them back.
"""

from __future__ import annotations

import math
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


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    activation = field(hf, "hidden_act", where, str, "silu")
    if activation != "silu":
        raise CheckpointError(f"{where}: hidden_act {activation!r} is not supported (Llama's SwiGLU uses silu)")
    attention_bias = bool(field(hf, "attention_bias", where, bool, False))
    mlp_bias = bool(field(hf, "mlp_bias", where, bool, False))
    if attention_bias != mlp_bias:
        raise CheckpointError(f"{where}: attention_bias and mlp_bias differ; this app has one bias switch for both")
    d_model = field(hf, "hidden_size", where, int)
    n_heads = field(hf, "num_attention_heads", where, int)
    head_dim = field(hf, "head_dim", where, int, None)
    if head_dim is not None and n_heads and head_dim * n_heads != d_model:
        raise CheckpointError(
            f"{where}: head_dim {head_dim} x {n_heads} heads != hidden_size {d_model}; this app needs d_head = d_model / n_heads"
        )
    if field(hf, "pretraining_tp", where, int, 1) != 1:
        raise CheckpointError(f"{where}: pretraining_tp other than 1 is not supported")
    rope_base, rope_scale = rope_settings(hf, where)
    return {
        **CAUSAL_DECODER,
        "vocab_size": field(hf, "vocab_size", where, int),
        "context_length": field(hf, "max_position_embeddings", where, int, 2048),
        "d_model": d_model,
        "n_heads": n_heads,
        "n_kv_heads": field(hf, "num_key_value_heads", where, int, n_heads),
        "n_layers": field(hf, "num_hidden_layers", where, int),
        "d_ff": field(hf, "intermediate_size", where, int),
        "norm": "rmsnorm",
        "norm_eps": float(field(hf, "rms_norm_eps", where, (int, float), 1e-6)),
        "activation": "swiglu",
        "positional": "rope",
        "rope_base": rope_base,
        "rope_scale": rope_scale,
        "bias": attention_bias,
        "tie_embeddings": bool(field(hf, "tie_word_embeddings", where, bool, False)),
    }


def rope_settings(hf: HFConfig, where: str) -> tuple[float, float]:
    """(rope_base, rope_scale) as transformers reads them from rope_theta, rope_scaling and rope_parameters.

    transformers 4 knows rope_theta and rope_scaling; transformers 5 moves both into rope_parameters
    but lets a non-empty rope_scaling replace rope_parameters whole, and then takes the base from
    rope_scaling or the top-level rope_theta (else 10000), never from the replaced rope_parameters.
    """
    parameters = hf.get("rope_parameters")
    scaling = hf.get("rope_scaling")
    if parameters is not None and not isinstance(parameters, dict):
        raise CheckpointError(f"{where}: rope_parameters must be a JSON object")
    if scaling is not None and not isinstance(scaling, dict):
        raise CheckpointError(f"{where}: rope_scaling must be a JSON object or null")
    merged = dict(scaling or parameters or {})
    if any(isinstance(value, dict) for value in merged.values()):
        raise CheckpointError(f"{where}: RoPE parameters per layer type are not supported")
    base = merged.get("rope_theta", hf.get("rope_theta", 10000.0))
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 1:
        raise CheckpointError(f"{where}: rope_theta must be a number above 1, got {base!r}")
    rope_type = merged.get("rope_type", merged.get("type", "default"))
    if rope_type == "default":
        return float(base), 1.0
    if rope_type == "linear":
        factor = merged.get("factor")
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
            raise CheckpointError(f"{where}: linear RoPE scaling needs a positive factor, got {factor!r}")
        return float(base), float(factor)
    raise CheckpointError(
        f"{where}: RoPE scaling type {rope_type!r} is not supported; this app supports default and linear (position interpolation)"
    )


def interleave_rope_rows(weight: torch.Tensor, n_heads: int, d_head: int) -> torch.Tensor:
    """Reorder each head's rows from rotate_half pairs (i, i + d/2) to interleaved pairs (2i, 2i + 1).

    Works on a weight (H*d, D) or a bias (H*d,): new row 2i is old row i, new row 2i+1 is old row i + d/2.
    """
    trailing = weight.shape[1:]
    halves = weight.reshape(n_heads, 2, d_head // 2, *trailing)  # (H, 2, d/2, ...): [h, half, i]
    return halves.transpose(1, 2).reshape(n_heads * d_head, *trailing)  # (H*d, ...): row h*d + 2i + half


def deinterleave_rope_rows(weight: torch.Tensor, n_heads: int, d_head: int) -> torch.Tensor:
    """The inverse of interleave_rope_rows: rows (2i, 2i + 1) back to (i, i + d/2) per head."""
    trailing = weight.shape[1:]
    pairs = weight.reshape(n_heads, d_head // 2, 2, *trailing)  # (H, d/2, 2, ...): [h, i, half]
    return pairs.transpose(1, 2).reshape(n_heads * d_head, *trailing)  # (H*d, ...): row h*d + half*d/2 + i


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ())
    d, d_head = config.d_model, config.d_head
    q_rows, kv_rows = config.n_heads * d_head, config.kv_heads * d_head
    state: Tensors = {
        "tok_emb.weight": source.take("model.embed_tokens.weight"),
        "final_norm.weight": source.take("model.norm.weight"),
    }
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}.", f"blocks.{i}."
        q = check_shape(source.take(hf + "self_attn.q_proj.weight"), (q_rows, d), hf + "self_attn.q_proj.weight", where)
        k = check_shape(source.take(hf + "self_attn.k_proj.weight"), (kv_rows, d), hf + "self_attn.k_proj.weight", where)
        v = check_shape(source.take(hf + "self_attn.v_proj.weight"), (kv_rows, d), hf + "self_attn.v_proj.weight", where)
        q = interleave_rope_rows(q, config.n_heads, d_head)  # (H*d, D)
        k = interleave_rope_rows(k, config.kv_heads, d_head)  # (Hkv*d, D)
        state[ours + "attn.qkv.weight"] = torch.cat([q, k, v], dim=0)  # (H*d + 2*Hkv*d, D)
        state[ours + "attn.out_proj.weight"] = source.take(hf + "self_attn.o_proj.weight")
        state[ours + "norm1.weight"] = source.take(hf + "input_layernorm.weight")
        state[ours + "norm2.weight"] = source.take(hf + "post_attention_layernorm.weight")
        state[ours + "ffn.gate.weight"] = source.take(hf + "mlp.gate_proj.weight")
        state[ours + "ffn.up.weight"] = source.take(hf + "mlp.up_proj.weight")
        state[ours + "ffn.down.weight"] = source.take(hf + "mlp.down_proj.weight")
        if config.bias or config.qkv_bias:
            q_bias = interleave_rope_rows(source.take(hf + "self_attn.q_proj.bias"), config.n_heads, d_head)  # (H*d,)
            k_bias = interleave_rope_rows(source.take(hf + "self_attn.k_proj.bias"), config.kv_heads, d_head)  # (Hkv*d,)
            v_bias = source.take(hf + "self_attn.v_proj.bias")  # (Hkv*d,)
            state[ours + "attn.qkv.bias"] = torch.cat([q_bias, k_bias, v_bias])  # (H*d + 2*Hkv*d,)
        if config.bias:
            state[ours + "attn.out_proj.bias"] = source.take(hf + "self_attn.o_proj.bias")
            for proj, our_name in (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")):
                state[ours + f"ffn.{our_name}.bias"] = source.take(hf + f"mlp.{proj}.bias")
    take_head(source, config, state, where, "embed_tokens")
    source.finish(lambda name: name.endswith("rotary_emb.inv_freq"))  # a buffer older versions saved
    return state


def is_llama_like(config: ModelConfig) -> bool:
    return config.positional == "rope" and config.norm == "rmsnorm" and config.activation == "swiglu"


def export_needs(config: ModelConfig) -> list[str] | None:
    # Llama's attention_bias puts biases on q, k, v and o together; q, k, v alone is Qwen2.
    if not is_llama_like(config) or (config.qkv_bias and not config.bias):
        return None
    return causal_decoder_needs(config)


def llama_style_config(config: ModelConfig, model_type: str, architecture: str) -> HFConfig:
    """The config.json keys Llama and its variants share."""
    return {
        "model_type": model_type,
        "architectures": [architecture],
        "vocab_size": config.vocab_size,
        "hidden_size": config.d_model,
        "intermediate_size": config.d_ff,
        "num_hidden_layers": config.n_layers,
        "num_attention_heads": config.n_heads,
        "num_key_value_heads": config.kv_heads,
        "max_position_embeddings": config.context_length,
        "rms_norm_eps": config.norm_eps,
        "rope_theta": config.rope_base,
        "rope_scaling": None if config.rope_scale == 1.0 else {"rope_type": "linear", "factor": config.rope_scale},
        "hidden_act": "silu",
        "tie_word_embeddings": config.tie_embeddings,
        "attention_dropout": 0.0,
        "bos_token_id": None,
        "eos_token_id": None,
        "torch_dtype": "float32",
    }


def export_config(config: ModelConfig) -> HFConfig:
    hf = llama_style_config(config, "llama", "LlamaForCausalLM")
    hf.update(head_dim=config.d_head, attention_bias=config.bias, mlp_bias=config.bias)
    return hf


def export_tensors(state: Tensors, config: ModelConfig) -> Tensors:
    d_head, heads, kv_heads = config.d_head, config.n_heads, config.kv_heads
    q_rows, kv_rows = heads * d_head, kv_heads * d_head
    out = {"model.embed_tokens.weight": state["tok_emb.weight"], "model.norm.weight": state["final_norm.weight"]}
    for i in range(config.n_layers):
        ours, hf = f"blocks.{i}.", f"model.layers.{i}."
        q, k, v = state[ours + "attn.qkv.weight"].split([q_rows, kv_rows, kv_rows])  # (H*d, D), (Hkv*d, D) x 2
        out[hf + "self_attn.q_proj.weight"] = deinterleave_rope_rows(q, heads, d_head)
        out[hf + "self_attn.k_proj.weight"] = deinterleave_rope_rows(k, kv_heads, d_head)
        out[hf + "self_attn.v_proj.weight"] = v
        out[hf + "self_attn.o_proj.weight"] = state[ours + "attn.out_proj.weight"]
        out[hf + "input_layernorm.weight"] = state[ours + "norm1.weight"]
        out[hf + "post_attention_layernorm.weight"] = state[ours + "norm2.weight"]
        out[hf + "mlp.gate_proj.weight"] = state[ours + "ffn.gate.weight"]
        out[hf + "mlp.up_proj.weight"] = state[ours + "ffn.up.weight"]
        out[hf + "mlp.down_proj.weight"] = state[ours + "ffn.down.weight"]
        if config.bias or config.qkv_bias:
            q_bias, k_bias, v_bias = state[ours + "attn.qkv.bias"].split([q_rows, kv_rows, kv_rows])
            out[hf + "self_attn.q_proj.bias"] = deinterleave_rope_rows(q_bias, heads, d_head)
            out[hf + "self_attn.k_proj.bias"] = deinterleave_rope_rows(k_bias, kv_heads, d_head)
            out[hf + "self_attn.v_proj.bias"] = v_bias
        if config.bias:
            out[hf + "self_attn.o_proj.bias"] = state[ours + "attn.out_proj.bias"]
            for ours_name, hf_name in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
                out[hf + f"mlp.{hf_name}.bias"] = state[ours + f"ffn.{ours_name}.bias"]
    if not config.tie_embeddings:
        out["lm_head.weight"] = state["head.weight"]
    return out


FAMILY = Family(
    model_type="llama",
    title="Llama",
    architectures=("LlamaForCausalLM",),
    auto_class="AutoModelForCausalLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
    export_needs=export_needs,
    export_config=export_config,
    export_tensors=export_tensors,
    signature="Llama's RoPE, RMSNorm and SwiGLU",
)
