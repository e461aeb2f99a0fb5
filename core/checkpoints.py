"""Checkpoints: a model as a folder of safetensors and JSON, and the trained models that ship with the app.

A checkpoint folder holds
    model.safetensors  the weights (a tied head is stored once, as tok_emb.weight)
    config.json        {"format": FORMAT_TAG, "format_version": 1, "config": ModelConfig fields}
    tokenizer.json     the tokenizer's own JSON (optional, recorded in config.json)
    training.json      how a trained model was made and its validation loss (optional)

Loading reads safetensors and JSON only (nothing is unpickled or executed) and checks everything
before a model is built: a folder that is wrong in any way raises CheckpointError naming the file
and what is wrong with it. `resolve_checkpoint` also opens Hugging Face folders (see hf_import).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from core.config import ConfigError, ModelConfig
from core.model import Transformer
from core.tokenizers import Tokenizer, TokenizerFileError, tokenizer_from_json
from resources import resource_path

FORMAT_TAG = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "training.json"
BUNDLED_DIR = ("models",)  # under resources/


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded; the message names the file and the problem."""


@dataclass
class LoadedModel:
    config: ModelConfig
    model: Transformer  # in eval mode
    tokenizer: Tokenizer | None  # None when the folder has no tokenizer: feed token ids directly
    source: str  # where it came from, for titles and messages: "bundled tiny-gpt", a folder path, ...
    metadata: dict[str, Any] | None = None  # training.json of our checkpoints, when present


# ---- saving -------------------------------------------------------------------------------------


def weights_to_store(model: Transformer) -> dict[str, torch.Tensor]:
    """The model's tensors under their state-dict names, a tied head left out (it is tok_emb.weight)."""
    tensors = {}
    for name, tensor in model.state_dict().items():
        if name == "head.weight" and model.config.tie_embeddings:
            continue
        tensors[name] = tensor.detach().to("cpu").contiguous().clone()
    return tensors


def save_checkpoint(
    model: Transformer,
    path: str | Path,
    tokenizer: Tokenizer | None = None,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Write the model (and its tokenizer and training record) as a checkpoint folder; returns it."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise CheckpointError(f"{folder} exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    save_file(weights_to_store(model), str(folder / MODEL_FILE), metadata={"format": "pt", "producer": FORMAT_TAG})
    config_json = {
        "format": FORMAT_TAG,
        "format_version": FORMAT_VERSION,
        "has_tokenizer": tokenizer is not None,
        "config": model.config.to_dict(),
    }
    _write_json(folder / CONFIG_FILE, config_json)
    if tokenizer is not None:
        _write_json(folder / TOKENIZER_FILE, tokenizer.to_json())
    if metadata is not None:
        _write_json(folder / METADATA_FILE, metadata)
    return folder


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ---- loading ------------------------------------------------------------------------------------


def read_json_file(path: Path, what: str) -> Any:
    """Parse a JSON file of a checkpoint, turning every failure into a CheckpointError naming it."""
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: missing {path.name} ({what})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not valid JSON (line {error.lineno}: {error.msg})") from None
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not UTF-8 text") from None
    except RecursionError:  # "[[[[..." nested deeper than the parser's stack
        raise CheckpointError(f"{path} nests too deeply to be {what}") from None
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror or error}") from None


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of a safetensors file on the CPU; a damaged file is a CheckpointError."""
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: missing {path.name} (the weights)")
    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, ValueError, RuntimeError, OSError) as error:
        raise CheckpointError(f"{path} is not a readable safetensors file: {error}") from None


def model_from_tensors(
    config: ModelConfig, tensors: dict[str, torch.Tensor], where: str, device: str | torch.device = "cpu"
) -> Transformer:
    """Build the model of `config` from exactly the tensors it needs, checking names, shapes and values.

    A tied head must be absent (it is tok_emb.weight). Floating tensors of any precision are
    converted to float32, the precision every panel computes in.
    """
    skeleton = Transformer.on_meta(config)
    expected = {name: tuple(t.shape) for name, t in skeleton.state_dict().items()}
    if config.tie_embeddings:
        expected.pop("head.weight", None)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing:
        raise CheckpointError(f"{where}: missing tensor{'s' if len(missing) > 1 else ''} {_name_list(missing)}")
    if unexpected:
        raise CheckpointError(
            f"{where}: tensor{'s' if len(unexpected) > 1 else ''} {_name_list(unexpected)} "
            "not part of a model of this config"
        )
    for name, shape in expected.items():
        tensor = tensors[name]
        if tuple(tensor.shape) != shape:
            raise CheckpointError(
                f"{where}: tensor {name} has shape {list(tensor.shape)} but the config needs {list(shape)}"
            )
        if not tensor.is_floating_point():
            raise CheckpointError(f"{where}: tensor {name} holds {tensor.dtype} values; weights must be floating point")
        if not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: tensor {name} holds NaN or infinite values")
    state = {name: tensors[name].to(torch.float32) for name in expected}
    model = skeleton
    # assign=True swaps the meta tensors for the loaded ones without an init pass over random weights.
    model.load_state_dict(state, strict=False, assign=True)
    model.tie_weights()
    leftover = [name for name, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
    if leftover:  # a structure this loader does not know about; better an error than garbage
        raise CheckpointError(f"{where}: no values for {_name_list(leftover)}")
    return model.to(device).eval()


def _name_list(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu", source: str | None = None) -> LoadedModel:
    """Open a checkpoint folder written by save_checkpoint."""
    folder = Path(path)
    if not folder.exists():
        raise CheckpointError(f"no checkpoint folder at {folder}")
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder; a checkpoint is a folder with {MODEL_FILE} and {CONFIG_FILE}")
    header = read_json_file(folder / CONFIG_FILE, "the model config")
    if not isinstance(header, dict) or header.get("format") != FORMAT_TAG:
        raise CheckpointError(f"{folder / CONFIG_FILE} is not a Transformer Explorer checkpoint config")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"{folder / CONFIG_FILE}: checkpoint format version {version!r} is not supported (this app reads {FORMAT_VERSION})"
        )
    try:
        config = ModelConfig.from_dict(header.get("config"))
    except ConfigError as error:
        raise CheckpointError(f"{folder / CONFIG_FILE}: invalid config: {error}") from None
    tensors = read_safetensors(folder / MODEL_FILE)
    model = model_from_tensors(config, tensors, str(folder / MODEL_FILE), device)
    tokenizer = None
    if header.get("has_tokenizer", (folder / TOKENIZER_FILE).exists()):
        tokenizer = read_tokenizer(folder / TOKENIZER_FILE, config.vocab_size)
    metadata = None
    if (folder / METADATA_FILE).exists():
        metadata = read_json_file(folder / METADATA_FILE, "the training record")
        if not isinstance(metadata, dict):
            raise CheckpointError(f"{folder / METADATA_FILE} must hold a JSON object")
    return LoadedModel(config, model, tokenizer, source or str(folder), metadata)


def read_tokenizer(path: Path, vocab_size: int) -> Tokenizer:
    """The tokenizer of a checkpoint; its ids must all be rows of the model's embedding table."""
    data = read_json_file(path, "the tokenizer")
    try:
        tokenizer = tokenizer_from_json(data)
    except TokenizerFileError as error:
        raise CheckpointError(f"{path}: {error}") from None
    if tokenizer.vocab_size > vocab_size:
        raise CheckpointError(
            f"{path}: the tokenizer has {tokenizer.vocab_size:,} tokens but the model's vocabulary holds {vocab_size:,}"
        )
    return tokenizer


# ---- bundled models and name resolution ---------------------------------------------------------


def bundled_dir() -> Path:
    return resource_path(*BUNDLED_DIR)


def bundled_model_names() -> list[str]:
    """Names of the trained models that ship with the app (folders under resources/models)."""
    root = bundled_dir()
    if not root.is_dir():
        return []
    return sorted(child.name for child in root.iterdir() if (child / CONFIG_FILE).is_file())


def load_bundled(name: str, device: str | torch.device = "cpu") -> LoadedModel:
    names = bundled_model_names()
    if name not in names:
        raise CheckpointError(f"no bundled model named {name!r}; bundled models: {', '.join(names) or 'none'}")
    return load_checkpoint(bundled_dir() / name, device=device, source=f"bundled {name}")


def resolve_checkpoint(name_or_path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """A bundled model by name, one of our checkpoint folders, or a Hugging Face model folder."""
    text = str(name_or_path)
    if isinstance(name_or_path, str) and text in bundled_model_names():
        return load_bundled(text, device=device)
    folder = Path(name_or_path)
    if not folder.exists():
        hint = ", ".join(bundled_model_names()) or "none"
        raise CheckpointError(f"{text!r} is neither a bundled model ({hint}) nor an existing folder")
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder; a checkpoint is a folder with {MODEL_FILE} and {CONFIG_FILE}")
    header = read_json_file(folder / CONFIG_FILE, "the model config")
    if isinstance(header, dict) and header.get("format") == FORMAT_TAG:
        return load_checkpoint(folder, device=device)
    if isinstance(header, dict) and "model_type" in header:
        from core.hf_import import load_hf_folder

        return load_hf_folder(folder, device=device)
    raise CheckpointError(
        f"{folder / CONFIG_FILE} is neither a Transformer Explorer checkpoint nor a Hugging Face config (no model_type)"
    )


def metadata_val_loss(loaded: LoadedModel) -> float | None:
    """The recorded validation loss of a trained checkpoint, if it has one."""
    value = (loaded.metadata or {}).get("val_loss_nats_per_char")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


__all__ = [
    "CheckpointError",
    "LoadedModel",
    "bundled_model_names",
    "load_bundled",
    "load_checkpoint",
    "model_from_tensors",
    "resolve_checkpoint",
    "save_checkpoint",
]
