"""Open a local Hugging Face model folder (GPT-2, Llama or Qwen2 family) as the lab's Transformer.

Only safetensors weights are read (model.safetensors, or the shards a model.safetensors.index.json
lists); a folder with only pytorch_model.bin is refused, since unpickling runs code. The import
maps each Hugging Face tensor onto the lab's names and layouts:

GPT-2   Conv1D weights are stored (in, out), the transpose of nn.Linear; c_attn is q, k, v fused in
        that order, exactly the layout of attn.qkv; the head is tied to wte.
Llama   q, k, v projections are concatenated into attn.qkv. Hugging Face rotates the pairs
        (i, i + d/2) of each head (rotate_half) where the lab rotates (2i, 2i + 1), so the rows of
        q_proj and k_proj are permuted per head to [0, d/2, 1, d/2 + 1, ...]: every pair then meets
        the same frequency, and since q and k move together their dot products are unchanged.
Qwen2   Llama with biases on the q, k and v projections only (the lab's qkv_bias).

The tokenizer is read as transformers reads it (core.tokenizers.load_pretrained_tokenizer), and
generation_config.json, when present, gives generation its end-of-text token and sampling defaults.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from core.checkpoints import (
    CONFIG_FILE,
    METADATA_FILE,
    MODEL_FILE,
    CheckpointError,
    LoadedModel,
    model_from_tensors,
    read_json_file,
    read_safetensors,
)
from core.config import ConfigError, ModelConfig
from core.tokenizers import TokenizerFileError, load_pretrained_tokenizer

INDEX_FILE = "model.safetensors.index.json"
GENERATION_CONFIG_FILE = "generation_config.json"
LAB_RECORD_FILE = "transformer_explorer.json"  # what core.hf_export adds: the lab's config of a saved model
SUPPORTED_MODEL_TYPES = ("gpt2", "llama", "qwen2")
# What generation takes from generation_config.json: the tokens that end a text, and sampling defaults.
GENERATION_KEYS = {"eos_token_id": (int, list), "bos_token_id": (int,), "temperature": (int, float),
                   "top_k": (int,), "do_sample": (bool,)}

# Hugging Face activation names and the lab's equivalent. The tanh approximation of GELU (GPT-2's
# gelu_new) differs from exact GELU by up to ~1e-3 per unit, so the two are kept apart.
_GPT2_ACTIVATIONS = {
    "gelu": "gelu",
    "relu": "relu",
    "gelu_new": "gelu-tanh",
    "gelu_pytorch_tanh": "gelu-tanh",
    "gelu_fast": "gelu-tanh",  # the same tanh formula with the constant written out
}


def is_hf_folder(path: str | Path) -> bool:
    config_path = Path(path) / CONFIG_FILE
    if not config_path.is_file():
        return False
    try:
        header = read_json_file(config_path, "the model config")
    except CheckpointError:
        return False
    return isinstance(header, dict) and "model_type" in header


def load_hf_folder(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"no Hugging Face model folder at {folder}")
    hf_config = read_json_file(folder / CONFIG_FILE, "the Hugging Face config")
    if not isinstance(hf_config, dict):
        raise CheckpointError(f"{folder / CONFIG_FILE} must hold a JSON object")
    model_type = hf_config.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise CheckpointError(
            f"{folder / CONFIG_FILE}: model_type {model_type!r} is not supported; "
            f"this app imports {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    config = hf_to_model_config(hf_config, name=_model_name(folder, model_type), where=str(folder / CONFIG_FILE))
    tensors = read_hf_weights(folder)
    convert = _CONVERTERS[model_type]
    state = convert(tensors, config, str(folder))
    model = model_from_tensors(config, state, f"{folder} ({model_type} import)", device)
    try:
        tokenizer = load_pretrained_tokenizer(folder)
    except TokenizerFileError as error:
        raise CheckpointError(str(error)) from None
    if tokenizer is not None and tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size:,} tokens but the model's vocabulary holds {config.vocab_size:,}"
        )
    metadata = {"hf_model_type": model_type, "generation": read_generation_config(folder)}
    if (folder / METADATA_FILE).is_file():  # the training record of a model this app saved
        record = read_json_file(folder / METADATA_FILE, "the training record")
        if not isinstance(record, dict):
            raise CheckpointError(f"{folder / METADATA_FILE} must hold a JSON object")
        metadata.update(record)
    return LoadedModel(config, model, tokenizer, f"{folder} (Hugging Face {model_type})", metadata)


def _model_name(folder: Path, model_type: str) -> str:
    """The name the lab gave a model it saved (its record), else the folder's name."""
    path = folder / LAB_RECORD_FILE
    if path.is_file():
        record = read_json_file(path, "the lab's record of the model")
        name = record.get("config", {}).get("name") if isinstance(record, dict) and isinstance(record.get("config"), dict) else None
        if isinstance(name, str) and 0 < len(name) <= 200:
            return name
    return folder.name or model_type


def read_generation_config(folder: Path) -> dict[str, Any]:
    """The keys of generation_config.json that generation uses ({} when the file is absent)."""
    path = folder / GENERATION_CONFIG_FILE
    if not path.is_file():
        return {}
    data = read_json_file(path, "the generation config")
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object")
    found = {}
    for key, kinds in GENERATION_KEYS.items():
        value = data.get(key)
        if value is None:
            continue
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise CheckpointError(f"{path}: {key} has the wrong type ({value!r})")
        if isinstance(value, list) and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise CheckpointError(f"{path}: {key} must list token ids")
        found[key] = value
    return found


def read_hf_weights(folder: Path) -> dict[str, torch.Tensor]:
    if (folder / MODEL_FILE).is_file():
        return read_safetensors(folder / MODEL_FILE)
    if (folder / INDEX_FILE).is_file():
        index = read_json_file(folder / INDEX_FILE, "the shard index")
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise CheckpointError(f"{folder / INDEX_FILE} has no weight_map of tensor names to shard files")
        tensors: dict[str, torch.Tensor] = {}
        for shard in sorted(set(weight_map.values())):
            if Path(shard).name != shard:  # shards live beside the index; no paths out of the folder
                raise CheckpointError(f"{folder / INDEX_FILE}: shard name {shard!r} is not a plain file name")
            tensors.update(read_safetensors(folder / shard))
        return tensors
    if any((folder / name).exists() for name in ("pytorch_model.bin", "model.bin")):
        raise CheckpointError(
            f"{folder} has only PyTorch pickle weights; this app reads safetensors only "
            "(convert with save_pretrained(..., safe_serialization=True))"
        )
    raise CheckpointError(f"{folder}: missing {MODEL_FILE} (the weights)")


# ---- configs ------------------------------------------------------------------------------------


def _field(hf: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if key not in hf or hf[key] is None:
        if default is ...:
            raise CheckpointError(f"{where}: missing {key}")
        return default
    value = hf[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise CheckpointError(f"{where}: {key} must be a number, got {value!r}")
    if not isinstance(value, kind):
        raise CheckpointError(f"{where}: {key} has the wrong type ({value!r})")
    return value


def hf_to_model_config(hf: dict[str, Any], name: str, where: str) -> ModelConfig:
    """The lab's ModelConfig equivalent of a Hugging Face config.json; unsupported features raise."""
    model_type = hf.get("model_type")
    if model_type == "gpt2":
        fields = _gpt2_fields(hf, where)
    elif model_type == "llama":
        fields = _llama_fields(hf, where)
    elif model_type == "qwen2":
        fields = _qwen2_fields(hf, where)
    else:
        raise CheckpointError(f"{where}: model_type {model_type!r} is not supported")
    try:
        return ModelConfig(
            name=name, architecture="decoder", attention="causal", norm_placement="pre", **fields
        ).validated()
    except ConfigError as error:
        raise CheckpointError(f"{where}: the model does not fit this app's config: {error}") from None


def _gpt2_fields(hf: dict[str, Any], where: str) -> dict[str, Any]:
    activation_name = _field(hf, "activation_function", where, str, "gelu_new")
    if activation_name not in _GPT2_ACTIVATIONS:
        raise CheckpointError(
            f"{where}: activation_function {activation_name!r} is not supported "
            f"(this app imports {', '.join(_GPT2_ACTIVATIONS)})"
        )
    activation = _GPT2_ACTIVATIONS[activation_name]
    if hf.get("scale_attn_by_inverse_layer_idx"):
        raise CheckpointError(f"{where}: scale_attn_by_inverse_layer_idx is not supported")
    if hf.get("scale_attn_weights") is False:
        raise CheckpointError(f"{where}: scale_attn_weights false (unscaled attention) is not supported")
    if hf.get("add_cross_attention"):
        raise CheckpointError(f"{where}: GPT-2 with cross-attention is not supported")
    d_model = _field(hf, "n_embd", where, int)
    return {
        "vocab_size": _field(hf, "vocab_size", where, int),
        "context_length": _field(hf, "n_positions", where, int),
        "d_model": d_model,
        "n_heads": _field(hf, "n_head", where, int),
        "n_layers": _field(hf, "n_layer", where, int),
        "d_ff": _field(hf, "n_inner", where, int, 4 * d_model),
        "norm": "layernorm",
        "norm_eps": float(_field(hf, "layer_norm_epsilon", where, (int, float), 1e-5)),
        "activation": activation,
        "positional": "learned",
        "bias": True,
        "tie_embeddings": bool(_field(hf, "tie_word_embeddings", where, bool, True)),
    }


def _llama_fields(hf: dict[str, Any], where: str) -> dict[str, Any]:
    activation = _field(hf, "hidden_act", where, str, "silu")
    if activation != "silu":
        raise CheckpointError(f"{where}: hidden_act {activation!r} is not supported (Llama's SwiGLU uses silu)")
    attention_bias = bool(_field(hf, "attention_bias", where, bool, False))
    mlp_bias = bool(_field(hf, "mlp_bias", where, bool, False))
    if attention_bias != mlp_bias:
        raise CheckpointError(f"{where}: attention_bias and mlp_bias differ; this app has one bias switch for both")
    d_model = _field(hf, "hidden_size", where, int)
    n_heads = _field(hf, "num_attention_heads", where, int)
    head_dim = _field(hf, "head_dim", where, int, None)
    if head_dim is not None and n_heads and head_dim * n_heads != d_model:
        raise CheckpointError(
            f"{where}: head_dim {head_dim} x {n_heads} heads != hidden_size {d_model}; this app needs d_head = d_model / n_heads"
        )
    if _field(hf, "pretraining_tp", where, int, 1) != 1:
        raise CheckpointError(f"{where}: pretraining_tp other than 1 is not supported")
    rope_base, rope_scale = _llama_rope(hf, where)
    return {
        "vocab_size": _field(hf, "vocab_size", where, int),
        "context_length": _field(hf, "max_position_embeddings", where, int, 2048),
        "d_model": d_model,
        "n_heads": n_heads,
        "n_kv_heads": _field(hf, "num_key_value_heads", where, int, n_heads),
        "n_layers": _field(hf, "num_hidden_layers", where, int),
        "d_ff": _field(hf, "intermediate_size", where, int),
        "norm": "rmsnorm",
        "norm_eps": float(_field(hf, "rms_norm_eps", where, (int, float), 1e-6)),
        "activation": "swiglu",
        "positional": "rope",
        "rope_base": rope_base,
        "rope_scale": rope_scale,
        "bias": attention_bias,
        "tie_embeddings": bool(_field(hf, "tie_word_embeddings", where, bool, False)),
    }


def _qwen2_fields(hf: dict[str, Any], where: str) -> dict[str, Any]:
    """Qwen2 is Llama with q, k, v biases (no other bias) and an optional sliding window."""
    if hf.get("use_sliding_window"):
        raise CheckpointError(f"{where}: use_sliding_window (attention over a local window) is not supported")
    layer_types = hf.get("layer_types")
    if isinstance(layer_types, list) and any(kind != "full_attention" for kind in layer_types):
        raise CheckpointError(f"{where}: layer_types other than full_attention are not supported")
    fields = _llama_fields({**hf, "attention_bias": False, "mlp_bias": False}, where)
    fields["qkv_bias"] = True
    return fields


def _llama_rope(hf: dict[str, Any], where: str) -> tuple[float, float]:
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


# ---- tensors ------------------------------------------------------------------------------------


class _Tensors:
    """Takes tensors out of the Hugging Face dict by name, so leftovers can be reported at the end."""

    def __init__(self, tensors: dict[str, torch.Tensor], where: str, prefixes: tuple[str, ...]) -> None:
        self.where = where
        self.remaining: dict[str, torch.Tensor] = {}
        for name, tensor in tensors.items():
            for prefix in prefixes:  # e.g. "transformer." is absent in the original OpenAI GPT-2 upload
                if name.startswith(prefix):
                    name = name[len(prefix) :]
                    break
            self.remaining[name] = tensor

    def take(self, name: str) -> torch.Tensor:
        if name not in self.remaining:
            raise CheckpointError(f"{self.where}: missing tensor {name}")
        tensor = self.remaining.pop(name)
        if not tensor.is_floating_point():
            raise CheckpointError(
                f"{self.where}: tensor {name} holds {tensor.dtype} values; weights must be floating point"
            )
        return tensor.to(torch.float32)

    def take_optional(self, name: str) -> torch.Tensor | None:
        return self.take(name) if name in self.remaining else None

    def finish(self, ignorable: Callable[[str], bool]) -> None:
        unknown = sorted(name for name in self.remaining if not ignorable(name))
        if unknown:
            shown = ", ".join(unknown[:4]) + (f" and {len(unknown) - 4} more" if len(unknown) > 4 else "")
            raise CheckpointError(
                f"{self.where}: unexpected tensors {shown} (a model variant this import does not know)"
            )


def _check_shape(tensor: torch.Tensor, shape: tuple[int, ...], name: str, where: str) -> torch.Tensor:
    if tuple(tensor.shape) != shape:
        raise CheckpointError(
            f"{where}: tensor {name} has shape {list(tensor.shape)} but config.json implies {list(shape)}"
        )
    return tensor


def convert_gpt2(tensors: dict[str, torch.Tensor], config: ModelConfig, where: str) -> dict[str, torch.Tensor]:
    source = _Tensors(tensors, where, ("transformer.",))
    d, d_ff = config.d_model, config.d_ff
    state: dict[str, torch.Tensor] = {
        "tok_emb.weight": source.take("wte.weight"),
        "pos_emb.weight": source.take("wpe.weight"),
        "final_norm.weight": source.take("ln_f.weight"),
        "final_norm.bias": source.take("ln_f.bias"),
    }

    def conv1d(name: str, fan_in: int, fan_out: int) -> torch.Tensor:
        weight = _check_shape(source.take(name), (fan_in, fan_out), name, where)  # (in, out)
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
    _take_head(source, config, state, where, "wte.weight")

    def ignorable(name: str) -> bool:
        # Old uploads store the causal mask buffers (attn.bias, attn.masked_bias) as tensors.
        return re.fullmatch(r"h\.\d+\.attn\.(bias|masked_bias)", name) is not None

    source.finish(ignorable)
    return state


def interleave_rope_rows(weight: torch.Tensor, n_heads: int, d_head: int) -> torch.Tensor:
    """Reorder each head's rows from rotate_half pairs (i, i + d/2) to interleaved pairs (2i, 2i + 1).

    Works on a weight (H*d, D) or a bias (H*d,): new row 2i is old row i, new row 2i+1 is old row i + d/2.
    """
    trailing = weight.shape[1:]
    halves = weight.reshape(n_heads, 2, d_head // 2, *trailing)  # (H, 2, d/2, ...): [h, half, i]
    return halves.transpose(1, 2).reshape(n_heads * d_head, *trailing)  # (H*d, ...): row h*d + 2i + half


def convert_llama(tensors: dict[str, torch.Tensor], config: ModelConfig, where: str) -> dict[str, torch.Tensor]:
    source = _Tensors(tensors, where, ())
    d, d_head = config.d_model, config.d_head
    q_rows, kv_rows = config.n_heads * d_head, config.kv_heads * d_head
    state: dict[str, torch.Tensor] = {
        "tok_emb.weight": source.take("model.embed_tokens.weight"),
        "final_norm.weight": source.take("model.norm.weight"),
    }
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}.", f"blocks.{i}."
        q = _check_shape(
            source.take(hf + "self_attn.q_proj.weight"), (q_rows, d), hf + "self_attn.q_proj.weight", where
        )
        k = _check_shape(
            source.take(hf + "self_attn.k_proj.weight"), (kv_rows, d), hf + "self_attn.k_proj.weight", where
        )
        v = _check_shape(
            source.take(hf + "self_attn.v_proj.weight"), (kv_rows, d), hf + "self_attn.v_proj.weight", where
        )
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
            k_bias = interleave_rope_rows(
                source.take(hf + "self_attn.k_proj.bias"), config.kv_heads, d_head
            )  # (Hkv*d,)
            v_bias = source.take(hf + "self_attn.v_proj.bias")  # (Hkv*d,)
            state[ours + "attn.qkv.bias"] = torch.cat([q_bias, k_bias, v_bias])  # (H*d + 2*Hkv*d,)
        if config.bias:
            state[ours + "attn.out_proj.bias"] = source.take(hf + "self_attn.o_proj.bias")
            for proj, our_name in (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")):
                state[ours + f"ffn.{our_name}.bias"] = source.take(hf + f"mlp.{proj}.bias")
    _take_head(source, config, state, where, "embed_tokens")
    source.finish(lambda name: name.endswith("rotary_emb.inv_freq"))  # a buffer older versions saved
    return state


_CONVERTERS = {"gpt2": convert_gpt2, "llama": convert_llama, "qwen2": convert_llama}


def _take_head(source, config: ModelConfig, state: dict[str, torch.Tensor], where: str, embedding_name: str) -> None:
    """lm_head: the token table itself when tied (a stored copy must agree), else its own matrix."""
    head = source.take_optional("lm_head.weight")
    if config.tie_embeddings:
        if head is not None and not torch.equal(head, state["tok_emb.weight"]):
            raise CheckpointError(f"{where}: tie_word_embeddings is true but lm_head.weight differs from {embedding_name}")
    elif head is None:
        raise CheckpointError(f"{where}: missing tensor lm_head.weight (tie_word_embeddings is false)")
    else:
        state["head.weight"] = head


__all__ = [
    "convert_gpt2",
    "convert_llama",
    "hf_to_model_config",
    "interleave_rope_rows",
    "is_hf_folder",
    "load_hf_folder",
    "read_generation_config",
]

