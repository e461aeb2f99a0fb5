"""Save a lab model of the GPT-2, Llama or Qwen2 family as a Hugging Face folder.

`transformers.AutoModelForCausalLM.from_pretrained(folder)` loads the result with the same logits,
and the app opens it again through core.hf_import. The layouts are the inverse of hf_import's: GPT-2
Conv1D weights are written (in, out) and attn.qkv becomes c_attn as it is; for Llama and Qwen2 the
rows of q and k go back from the lab's interleaved RoPE pairs (2i, 2i + 1) to rotate_half's
(i, i + d/2). The folder also keeps the lab's own record: transformer_explorer.json holds the lab
config and training.json the training record, which hf_import reads back.

The tokenizer is written as a real tokenizer.json that `tokenizers.Tokenizer.from_file` and
`transformers.AutoTokenizer` load: a Hugging Face tokenizer as it is, the lab's character tokenizer
as one WordLevel token per character, the word tokenizer as WordLevel over its word pattern.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from core.checkpoints import (
    CONFIG_FILE,
    FORMAT_TAG,
    FORMAT_VERSION,
    METADATA_FILE,
    MODEL_FILE,
    CheckpointError,
    FileWriter,
    check_destination,
    json_writer,
    weights_bytes,
    write_checkpoint_folder,
)
from core.config import ModelConfig
from core.hf_import import LAB_RECORD_FILE
from core.model import Transformer
from core.tokenizers import CharTokenizer, HuggingFaceTokenizer, Tokenizer, WordTokenizer

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
_GPT2_ACTIVATION = {"gelu": "gelu", "gelu-tanh": "gelu_new", "relu": "relu"}


def hf_model_type(config: ModelConfig) -> str:
    """'gpt2', 'llama' or 'qwen2': the Hugging Face family a config belongs to; CheckpointError if none."""
    shared = [
        (config.architecture == "decoder" and config.self_attention_causal, "a causal decoder"),
        (config.norm_placement == "pre", "pre-norm"),
        (config.final_norm, "a final norm"),
        (config.n_experts == 0, "a dense FFN (no experts)"),
    ]
    problems = [need for ok, need in shared if not ok]
    if config.positional == "learned" and config.norm == "layernorm" and config.activation in _GPT2_ACTIVATION:
        gpt2 = [(config.bias, "biases"), (config.kv_heads == config.n_heads, "one key/value head per query head")]
        problems += [need for ok, need in gpt2 if not ok]
        family = "gpt2"
    elif config.positional == "rope" and config.norm == "rmsnorm" and config.activation == "swiglu":
        family = "qwen2" if config.qkv_bias and not config.bias else "llama"
    else:
        problems.append("GPT-2's learned positions, LayerNorm and GELU, or Llama's RoPE, RMSNorm and SwiGLU")
    if problems:
        raise CheckpointError(
            f"{config.name} has no Hugging Face equivalent: GPT-2 and Llama models need {', '.join(problems)}"
        )
    return family


def hf_config_of(config: ModelConfig) -> dict[str, Any]:
    """The config.json of the Hugging Face model equivalent to `config`."""
    family = hf_model_type(config)
    if family == "gpt2":
        return {
            "model_type": "gpt2",
            "architectures": ["GPT2LMHeadModel"],
            "vocab_size": config.vocab_size,
            "n_positions": config.context_length,
            "n_embd": config.d_model,
            "n_layer": config.n_layers,
            "n_head": config.n_heads,
            "n_inner": config.d_ff,
            "activation_function": _GPT2_ACTIVATION[config.activation],
            "layer_norm_epsilon": config.norm_eps,
            "tie_word_embeddings": config.tie_embeddings,
            "resid_pdrop": 0.0,
            "embd_pdrop": 0.0,
            "attn_pdrop": 0.0,
            "bos_token_id": None,  # GPT-2's defaults (50256) are ids of its own vocabulary, not this one's
            "eos_token_id": None,
            "torch_dtype": "float32",
        }
    hf = {
        "model_type": family,
        "architectures": ["Qwen2ForCausalLM" if family == "qwen2" else "LlamaForCausalLM"],
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
    if family == "llama":
        hf.update(head_dim=config.d_head, attention_bias=config.bias, mlp_bias=config.bias)
    else:
        hf.update(use_sliding_window=False)
    return hf


def deinterleave_rope_rows(weight: torch.Tensor, n_heads: int, d_head: int) -> torch.Tensor:
    """The inverse of hf_import.interleave_rope_rows: rows (2i, 2i + 1) back to (i, i + d/2) per head."""
    trailing = weight.shape[1:]
    pairs = weight.reshape(n_heads, d_head // 2, 2, *trailing)  # (H, d/2, 2, ...): [h, i, half]
    return pairs.transpose(1, 2).reshape(n_heads * d_head, *trailing)  # (H*d, ...): row h*d + half*d/2 + i


def hf_tensors(model: Transformer) -> dict[str, torch.Tensor]:
    """The model's weights under Hugging Face names and layouts (a tied head left out)."""
    config = model.config
    state = {name: t.detach().to("cpu", torch.float32) for name, t in model.state_dict().items()}
    family = hf_model_type(config)
    out = _gpt2_tensors(state, config) if family == "gpt2" else _llama_tensors(state, config)
    if not config.tie_embeddings:
        out["lm_head.weight"] = state["head.weight"]
    return {name: tensor.contiguous().clone() for name, tensor in out.items()}


def _gpt2_tensors(state: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
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
    return out


def _llama_tensors(state: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
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
    return out


# ---- tokenizers ---------------------------------------------------------------------------------


def tokenizer_json_of(tokenizer: Tokenizer) -> dict[str, Any]:
    """A Hugging Face tokenizer.json that encodes exactly as `tokenizer` does."""
    from tokenizers import Regex, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as _HFTokenizer

    if isinstance(tokenizer, HuggingFaceTokenizer):
        return tokenizer.to_json()
    if isinstance(tokenizer, CharTokenizer):
        backend = _HFTokenizer(models.WordLevel({char: i for i, char in enumerate(tokenizer.chars)}))
        # Every character on its own, newlines included (which "." would not match).
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
        backend.decoder = decoders.Fuse()  # characters join without spaces
        return json.loads(backend.to_str())
    if isinstance(tokenizer, WordTokenizer):
        vocab = {word: i for i, word in enumerate(tokenizer.words)}
        unknown = WordTokenizer.UNKNOWN if WordTokenizer.UNKNOWN in vocab else None
        backend = _HFTokenizer(models.WordLevel(vocab, unk_token=unknown))
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(r"\w+|[^\w\s]"), behavior="isolated")]
        )
        return json.loads(backend.to_str())  # no decoder: words join with spaces, as the lab decodes them
    raise CheckpointError(f"a {getattr(tokenizer, 'kind', type(tokenizer).__name__)} tokenizer has no tokenizer.json form")


def _tokenizer_config(tokenizer: Tokenizer, config: ModelConfig) -> dict[str, Any]:
    settings: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": config.context_length}
    if isinstance(tokenizer, WordTokenizer) and WordTokenizer.UNKNOWN in tokenizer.words:
        settings["unk_token"] = WordTokenizer.UNKNOWN
    if isinstance(tokenizer, HuggingFaceTokenizer) and tokenizer.special_prefix:
        settings["bos_token"] = tokenizer.piece(tokenizer.special_prefix[0])
    return settings


# ---- saving -------------------------------------------------------------------------------------


def save_hf_folder(
    model: Transformer,
    path: str | Path,
    tokenizer: Tokenizer | None = None,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Write `model` as a Hugging Face folder (all or nothing, as every save of the app); returns it."""
    config = model.config
    hf_config = hf_config_of(config)  # refuses a model with no Hugging Face equivalent before any work
    folder = Path(path)
    check_destination(folder, needed_bytes=weights_bytes(model))
    tensors = hf_tensors(model)
    record = {"format": FORMAT_TAG, "format_version": FORMAT_VERSION, "config": config.to_dict()}
    files: dict[str, FileWriter] = {
        MODEL_FILE: lambda target: save_file(tensors, str(target), metadata={"format": "pt"}),
        CONFIG_FILE: json_writer(hf_config),
        LAB_RECORD_FILE: json_writer(record),
    }
    if tokenizer is not None:
        files[TOKENIZER_FILE] = json_writer(tokenizer_json_of(tokenizer))
        files[TOKENIZER_CONFIG_FILE] = json_writer(_tokenizer_config(tokenizer, config))
    if metadata is not None:
        files[METADATA_FILE] = json_writer(metadata)
    return write_checkpoint_folder(folder, files)


__all__ = [
    "LAB_RECORD_FILE",
    "deinterleave_rope_rows",
    "hf_config_of",
    "hf_model_type",
    "hf_tensors",
    "save_hf_folder",
    "tokenizer_json_of",
]
