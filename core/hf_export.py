"""Save a lab model as a Hugging Face folder of the family it fits (core.families.registry).

`transformers.AutoModelForCausalLM.from_pretrained(folder)` loads the result with the same logits,
and the app opens it again through core.hf_import. The family's module writes its config.json and
tensors, the inverse of its import. The folder also keeps the lab's own record: transformer_explorer.json holds the lab
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
from core.families.llama import deinterleave_rope_rows
from core.families.registry import export_family
from core.hf_import import GENERATION_CONFIG_FILE, LAB_RECORD_FILE
from core.model import Transformer
from core.tokenizers import CharTokenizer, HuggingFaceTokenizer, Tokenizer, WordTokenizer

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"


def hf_model_type(config: ModelConfig) -> str:
    """The model_type of the Hugging Face family a config belongs to; CheckpointError if none."""
    return export_family(config).model_type


def hf_config_of(config: ModelConfig) -> dict[str, Any]:
    """The config.json of the Hugging Face model equivalent to `config`."""
    family = export_family(config)
    assert family.export_config is not None  # export_family returns families that export
    return family.export_config(config)


def hf_tensors(model: Transformer) -> dict[str, torch.Tensor]:
    """The model's weights under Hugging Face names and layouts (a tied head left out)."""
    config = model.config
    family = export_family(config)
    assert family.export_tensors is not None
    state = {name: t.detach().to("cpu", torch.float32) for name, t in model.state_dict().items()}
    out = family.export_tensors(state, config)
    return {name: tensor.contiguous().clone() for name, tensor in out.items()}


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
    generation: dict[str, Any] | None = None,
) -> Path:
    """Write `model` as a Hugging Face folder (all or nothing, as every save of the app); returns it.

    Beside what transformers reads, the lab's record keeps the lab's config and its own tokenizer, so
    the folder opens in the lab exactly as it was saved; `generation` becomes generation_config.json.
    """
    config = model.config
    hf_config = hf_config_of(config)  # refuses a model with no Hugging Face equivalent before any work
    folder = Path(path)
    check_destination(folder, needed_bytes=weights_bytes(model))
    tensors = hf_tensors(model)
    record: dict[str, Any] = {"format": FORMAT_TAG, "format_version": FORMAT_VERSION, "config": config.to_dict()}
    if tokenizer is not None and getattr(tokenizer, "kind", "") in ("char", "word"):
        record["tokenizer"] = tokenizer.to_json()  # tokenizer.json encodes the same; this is the lab's own kind
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
    if generation:
        files[GENERATION_CONFIG_FILE] = json_writer(generation)
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
