"""The models a user can open: bundled with the app, already in the Hugging Face cache, or on the Hub.

The cache is the one `transformers` and `huggingface_hub` share (`HF_HUB_CACHE`, else
`HF_HOME/hub`, else `~/.cache/huggingface/hub`), read with `huggingface_hub.scan_cache_dir`, so a
user who ever ran GPT-2 with `transformers` finds it listed. The catalogue names a few Hub models this
app imports; each carries a copy of the architecture fields of its published config.json, from which
the parameter count is computed here (core.params), never typed in. Once a model is in the cache,
its own config.json is used instead. Download sizes are estimated as parameters times the bytes of
the dtype its config.json names (torch_dtype), which is what its safetensors file stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.checkpoints import CONFIG_FILE, CheckpointError, bundled_dir, bundled_model_names, read_json_file
from core.config import ModelConfig
from core.hub_download import hub_cache_dir


@dataclass(frozen=True)
class CatalogueModel:
    repo_id: str  # the Hub repository
    title: str  # what the list shows
    about: str  # one line on why it is worth opening
    config: dict[str, Any]  # the architecture fields of the repository's config.json


CATALOGUE: tuple[CatalogueModel, ...] = (
    CatalogueModel(
        "openai-community/gpt2",
        "GPT-2 small",
        "the model Transformer Explainer runs in the browser: 12 blocks of 12 heads, 768 wide",
        {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
         "activation_function": "gelu_new", "torch_dtype": "float32"},
    ),
    CatalogueModel(
        "openai-community/gpt2-medium",
        "GPT-2 medium",
        "24 blocks of 16 heads, 1024 wide (exercise 6 of the reading)",
        {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 1024, "n_layer": 24, "n_head": 16,
         "activation_function": "gelu_new", "torch_dtype": "float32"},
    ),
    CatalogueModel(
        "distilbert/distilgpt2",
        "DistilGPT-2",
        "GPT-2 small distilled into 6 blocks",
        {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 6, "n_head": 12,
         "activation_function": "gelu_new", "torch_dtype": "float32"},
    ),
    CatalogueModel(
        "HuggingFaceTB/SmolLM2-135M",
        "SmolLM2-135M",
        "a Llama: RMSNorm, RoPE, SwiGLU and grouped-query attention (9 heads, 3 key/value heads)",
        {"model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
         "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
         "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
         "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
    ),
    CatalogueModel(
        "Qwen/Qwen2.5-0.5B",
        "Qwen2.5-0.5B",
        "Qwen2: a Llama with biases on q, k and v; 14 query heads share 2 key/value heads",
        {"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
         "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
         "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
         "tie_word_embeddings": True, "use_sliding_window": False, "torch_dtype": "bfloat16"},
    ),
    CatalogueModel(
        "google-bert/bert-base-uncased",
        "BERT base (uncased)",
        "a masked-LM encoder: every token sees both sides; post-LayerNorm, 12 blocks of 12 heads, 768 wide",
        {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
         "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
         "hidden_act": "gelu", "layer_norm_eps": 1e-12, "torch_dtype": "float32"},
    ),
    CatalogueModel(
        "Helsinki-NLP/opus-mt-en-de",
        "opus-mt English-German",
        "a Marian translation model: encoder and decoder with cross-attention, 6 + 6 blocks, 512 wide "
        "(token ids only: its SentencePiece tokenizer is not read)",
        {"model_type": "marian", "vocab_size": 58101, "decoder_vocab_size": 58101, "d_model": 512,
         "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
         "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "max_position_embeddings": 512,
         "activation_function": "swish", "scale_embedding": True, "share_encoder_decoder_embeddings": True,
         "torch_dtype": "float32"},
    ),
)

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@dataclass(frozen=True)
class LibraryEntry:
    name: str  # a bundled name ("tiny-gpt") or a Hub repository ("openai-community/gpt2")
    where: str  # "bundled", "cache" or "hub" (catalogue, not downloaded)
    family: str  # model_type or the lab's preset family
    parameters: int | None  # counted by core.params from the config
    size_bytes: int | None  # on disk, or the estimated download for a catalogue model
    size_note: str  # how size_bytes was found
    path: Path | None  # the folder to open; None until downloaded
    about: str = ""
    problem: str = ""  # why the app cannot open it ("" when it can)

    @property
    def openable(self) -> bool:
        return self.path is not None and not self.problem

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "where": self.where,
            "family": self.family,
            "parameters": self.parameters,
            "size_bytes": self.size_bytes,
            "size_note": self.size_note,
            "path": str(self.path) if self.path is not None else None,
            "about": self.about,
            "problem": self.problem or None,
        }


def parameter_count(hf_config: dict[str, Any], where: str) -> int:
    """The parameter count of a Hugging Face config, through the lab's config and core.params."""
    from core.hf_import import hf_to_model_config
    from core.params import parameter_breakdown

    return parameter_breakdown(hf_to_model_config(hf_config, name=where, where=where)).total


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def bundled_entries() -> list[LibraryEntry]:
    from core.params import parameter_breakdown

    entries = []
    for name in bundled_model_names():
        folder = bundled_dir() / name
        try:
            header = read_json_file(folder / CONFIG_FILE, "the model config")
            config = ModelConfig.from_dict(header.get("config"))
            parameters, family, problem = parameter_breakdown(config).total, "lab", ""
        except (CheckpointError, ValueError, AttributeError) as error:
            parameters, family, problem = None, "?", str(error)
        entries.append(
            LibraryEntry(name, "bundled", family, parameters, _folder_bytes(folder), "on disk", folder,
                         "trained by this app on the bundled Shakespeare", problem)
        )
    return entries


def cached_entries(cache_dir: Path | None = None) -> list[LibraryEntry]:
    """Every model repository in the Hugging Face cache, newest revision; ones the app cannot open say why."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    cache = cache_dir or hub_cache_dir()
    try:
        info = scan_cache_dir(cache)
    except CacheNotFound:
        return []
    except OSError:  # an unreadable cache is not worth stopping for: there is nothing in it to list
        return []
    entries = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        revision = max(repo.revisions, key=lambda r: ("main" in r.refs, r.last_modified))
        entries.append(_cached_entry(repo.repo_id, revision.snapshot_path, revision.size_on_disk))
    return entries


def _cached_entry(repo_id: str, snapshot: Path, size: int) -> LibraryEntry:
    from core.families.registry import SUPPORTED_MODEL_TYPES

    about = next((model.about for model in CATALOGUE if model.repo_id == repo_id), "")
    family = "?"
    try:
        hf_config = read_json_file(snapshot / CONFIG_FILE, "the model config")
        if not isinstance(hf_config, dict):
            raise CheckpointError(f"{snapshot / CONFIG_FILE} must hold a JSON object")
        family = str(hf_config.get("model_type", "?"))
        if family not in SUPPORTED_MODEL_TYPES:
            raise CheckpointError(f"model_type {family!r} is not one this app imports")
        if not any(snapshot.glob("*.safetensors")):
            raise CheckpointError("no safetensors weights in the cache (only pickle weights, or not downloaded)")
        parameters = parameter_count(hf_config, f"{repo_id} config.json")
        problem = ""
    except CheckpointError as error:
        parameters, problem = None, str(error)
    return LibraryEntry(repo_id, "cache", family, parameters, size, "on disk", snapshot, about, problem)


def catalogue_entries(cached: list[LibraryEntry]) -> list[LibraryEntry]:
    """The catalogue models not already in the cache."""
    have = {entry.name for entry in cached}
    entries = []
    for model in CATALOGUE:
        if model.repo_id in have:
            continue
        parameters = parameter_count(model.config, f"{model.repo_id} (catalogue)")
        dtype = model.config.get("torch_dtype", "float32")
        size = parameters * DTYPE_BYTES[dtype]
        entries.append(
            LibraryEntry(model.repo_id, "hub", model.config["model_type"], parameters, size,
                         f"estimated: parameters x {DTYPE_BYTES[dtype]} bytes ({dtype})", None,
                         f"{model.title}: {model.about}")
        )
    return entries


def library(cache_dir: Path | None = None) -> list[LibraryEntry]:
    """Bundled models, then the cache, then the catalogue models still to download."""
    cached = cached_entries(cache_dir)
    return bundled_entries() + cached + catalogue_entries(cached)


def find_catalogue(name: str) -> CatalogueModel | None:
    """A catalogue model by repository id, or by its title or the id's last part, case-insensitively."""
    wanted = name.strip().lower()
    for model in CATALOGUE:
        if wanted in (model.repo_id.lower(), model.repo_id.split("/")[-1].lower(), model.title.lower()):
            return model
    return None


__all__ = [
    "CATALOGUE",
    "CatalogueModel",
    "LibraryEntry",
    "cached_entries",
    "catalogue_entries",
    "find_catalogue",
    "hub_cache_dir",
    "library",
    "parameter_count",
]
