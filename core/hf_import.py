"""Open a local Hugging Face model folder as the lab's Transformer.

Only safetensors weights are read (model.safetensors, or the shards a model.safetensors.index.json
lists); a folder with only pytorch_model.bin is refused, since unpickling runs code. config.json's
model_type picks the family (core.families.registry), whose module maps the config onto the lab's
ModelConfig and each tensor onto the lab's names and layouts.

The tokenizer is read as transformers reads it (core.tokenizers.load_pretrained_tokenizer), and
generation_config.json, when present, gives generation its end-of-text token and sampling defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from core.checkpoint_files import (
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
from core.families.llama import interleave_rope_rows
from core.families.registry import SUPPORTED_MODEL_TYPES, family_of
from core.tokenizers import TokenizerFileError, load_pretrained_tokenizer, tokenizer_from_json

INDEX_FILE = "model.safetensors.index.json"
GENERATION_CONFIG_FILE = "generation_config.json"
LAB_RECORD_FILE = "transformer_explorer.json"  # what core.hf_export adds: the lab's config of a saved model
# What generation takes from generation_config.json: the tokens that end a text, and sampling defaults.
GENERATION_KEYS = {"eos_token_id": (int, list), "bos_token_id": (int,), "temperature": (int, float),
                   "top_k": (int,), "top_p": (int, float), "do_sample": (bool,)}

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
    family = family_of(model_type, str(folder / CONFIG_FILE))
    lab_record = _lab_record(folder)
    config = hf_to_model_config(hf_config, name=_model_name(lab_record, folder, model_type), where=str(folder / CONFIG_FILE))
    tensors = read_hf_weights(folder)
    state = family.import_tensors(tensors, config, hf_config, str(folder))
    model = model_from_tensors(config, state, f"{folder} ({model_type} import)", device)
    tokenizer = _lab_tokenizer(lab_record, folder)  # a folder the lab saved: its own character or word tokenizer
    if tokenizer is None and family.text_input:  # else the family's tokenizer files are of a kind this app does not read
        try:
            tokenizer = load_pretrained_tokenizer(folder)
        except TokenizerFileError as error:
            raise CheckpointError(str(error)) from None
    if tokenizer is not None and tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size:,} tokens but the model's vocabulary holds {config.vocab_size:,}"
        )
    raw_generation = raw_generation_config(folder)
    metadata = {"hf_model_type": model_type, "generation": generation_settings(raw_generation, folder / GENERATION_CONFIG_FILE),
                "generation_config": raw_generation, "generation_not_applied": not_applied_generation(raw_generation)}
    if (folder / METADATA_FILE).is_file():  # the training record of a model this app saved
        record = read_json_file(folder / METADATA_FILE, "the training record")
        if not isinstance(record, dict):
            raise CheckpointError(f"{folder / METADATA_FILE} must hold a JSON object")
        metadata.update(record)
    return LoadedModel(config, model, tokenizer, f"{folder} (Hugging Face {model_type})", metadata)


def _lab_record(folder: Path) -> Any:
    """The lab's record of a model it saved (transformer_explorer.json), or None for anyone else's folder."""
    path = folder / LAB_RECORD_FILE
    return read_json_file(path, "the lab's record of the model") if path.is_file() else None


def _lab_tokenizer(record: Any, folder: Path):
    """The tokenizer the lab's record keeps (a character or word tokenizer it saved), or None."""
    path = folder / LAB_RECORD_FILE
    data = record.get("tokenizer") if isinstance(record, dict) else None
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("kind") not in ("char", "word"):
        raise CheckpointError(f"{path}: 'tokenizer' must be a character or word tokenizer the lab saved")
    try:
        return tokenizer_from_json(data)
    except TokenizerFileError as error:
        raise CheckpointError(f"{path}: {error}") from None


def _model_name(record: Any, folder: Path, model_type: str) -> str:
    """The name the lab gave a model it saved (its record), else the folder's name."""
    name = record.get("config", {}).get("name") if isinstance(record, dict) and isinstance(record.get("config"), dict) else None
    if isinstance(name, str) and 0 < len(name) <= 200:
        return name
    return folder.name or model_type


# Keys transformers applies when it samples from a folder that this app's sampler does not, with their
# defaults: a folder that sets one to another value is sampled without it, and `generate` says so.
NOT_APPLIED_GENERATION_KEYS: dict[str, Any] = {
    "min_p": None, "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "bad_words_ids": None, "suppress_tokens": None,
    "begin_suppress_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None, "min_length": 0,
    "min_new_tokens": None, "sequence_bias": None, "exponential_decay_length_penalty": None,
}


# What a folder's metadata holds besides its training record: kept apart when the record is written again.
FOLDER_KEYS = ("hf_model_type", "generation", "generation_config", "generation_not_applied")


def raw_generation_config(folder: Path) -> dict[str, Any]:
    """generation_config.json as written ({} when absent): an export writes it again whole."""
    path = folder / GENERATION_CONFIG_FILE
    if not path.is_file():
        return {}
    data = read_json_file(path, "the generation config")
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object")
    return data


def not_applied_generation(raw: dict[str, Any]) -> dict[str, Any]:
    """The keys of a generation config that transformers would apply and this app does not, as set there."""
    return {key: raw[key] for key, default in NOT_APPLIED_GENERATION_KEYS.items()
            if key in raw and raw[key] != default and raw[key] is not None}


def read_generation_config(folder: Path) -> dict[str, Any]:
    """The keys of generation_config.json that generation uses ({} when the file is absent)."""
    return generation_settings(raw_generation_config(folder), folder / GENERATION_CONFIG_FILE)


def generation_settings(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The keys of a generation config (read from `path`) that generation uses, each checked."""
    found = {}
    for key, kinds in GENERATION_KEYS.items():
        value = data.get(key)
        if value is None:
            continue
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise CheckpointError(f"{path}: {key} has the wrong type ({value!r})")
        if isinstance(value, list) and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise CheckpointError(f"{path}: {key} must list token ids")
        if key == "top_p" and not (0 < value <= 1):  # transformers refuses these too
            raise CheckpointError(f"{path}: top_p must be above 0 and at most 1, got {value!r}")
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


def hf_to_model_config(hf: dict[str, Any], name: str, where: str) -> ModelConfig:
    """The lab's ModelConfig equivalent of a Hugging Face config.json; unsupported features raise."""
    family = family_of(hf.get("model_type"), where)
    vocab = hf.get("vocab_size")
    if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab < 1:  # before a family compares it to others
        raise CheckpointError(f"{where}: vocab_size is {vocab}: the vocabulary is empty; a model needs a token or more")
    fields = family.config_fields(hf, where)
    try:
        return ModelConfig(name=name, **fields).validated()
    except ConfigError as error:
        raise CheckpointError(f"{where}: the model does not fit this app's config: {error}") from None


__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "hf_to_model_config",
    "interleave_rope_rows",
    "is_hf_folder",
    "load_hf_folder",
    "read_generation_config",
]
