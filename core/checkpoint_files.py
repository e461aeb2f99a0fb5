"""Reading a model's files safely: bounded JSON, safetensors, and a Transformer built from named tensors.

Shared by the lab's own checkpoints (core.checkpoints) and the Hugging Face import (core.hf_import),
which both turn every problem of a file into a CheckpointError naming the file. Nothing here is
unpickled or executed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from core.config import ModelConfig
from core.json_files import JsonFileError, read_json_document
from core.limits import MAX_MODEL_JSON_CONTAINERS, MAX_MODEL_JSON_DIGITS, MAX_MODEL_JSON_VALUES
from core.model import Transformer
from core.quiet_stderr import quiet_native_stderr
from core.tokenizers import Tokenizer

FORMAT_TAG = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "training.json"
MAX_JSON_FILE_BYTES = 64 * 2**20  # a large model's tokenizer.json is some 10 MiB, Gemma 3's 33 MiB


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded; the message names the file and the problem."""


@dataclass
class LoadedModel:
    config: ModelConfig
    model: Transformer  # in eval mode
    tokenizer: Tokenizer | None  # None when the folder has no tokenizer: feed token ids directly
    source: str  # where it came from, for titles and messages: "bundled tiny-gpt", a folder path, ...
    metadata: dict[str, Any] | None = None  # training.json of our checkpoints, when present



def read_json_file(path: Path, what: str) -> Any:
    """Parse a JSON file of a checkpoint, turning every failure into a CheckpointError naming it.

    Read by core.json_files: a regular file only (a FIFO or a link to /dev/zero is refused at once),
    its size, integers, lists and objects, values and nesting bounded.
    """
    if not path.exists() and not path.is_symlink():
        raise CheckpointError(f"{path.parent}: missing {path.name} ({what})")
    try:
        return read_json_document(path, MAX_JSON_FILE_BYTES, what, max_containers=MAX_MODEL_JSON_CONTAINERS,
                                  max_values=MAX_MODEL_JSON_VALUES,
                                  max_integer_digits=MAX_MODEL_JSON_DIGITS)
    except JsonFileError as error:
        # The whole path, as every other message of a checkpoint names its file.
        raise CheckpointError(f"{path}{str(error)[len(path.name):]}" if str(error).startswith(path.name) else str(error)) from None


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of a safetensors file on the CPU; a damaged file is a CheckpointError."""
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: missing {path.name} (the weights)")
    try:
        with quiet_native_stderr():
            return load_file(str(path), device="cpu")
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - a Rust panic arrives as PanicException, a BaseException
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise CheckpointError(f"{path} is not a readable safetensors file: {reason}") from None


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
        raise CheckpointError(f"{where}: missing tensor{'s' if len(missing) > 1 else ''} {name_list(missing)}")
    if unexpected:
        raise CheckpointError(
            f"{where}: tensor{'s' if len(unexpected) > 1 else ''} {name_list(unexpected)} "
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
        try:
            # float8 and other narrow formats have no isfinite on the CPU; float32 holds each of their values exactly.
            tensor = tensors[name] = tensor.to(torch.float32)
        except (RuntimeError, TypeError, NotImplementedError):
            dtype = str(tensor.dtype).removeprefix("torch.")
            raise CheckpointError(f"{where}: tensor {name} holds {dtype} values, which this app cannot convert to "
                                  "float32; save the model in float32, float16 or bfloat16") from None  # fmt: skip
        if not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: tensor {name} holds NaN or infinite values")
    state = {name: tensors[name] for name in expected}
    model = skeleton
    # assign=True swaps the meta tensors for the loaded ones without an init pass over random weights.
    model.load_state_dict(state, strict=False, assign=True)
    model.tie_weights()
    leftover = [name for name, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
    if leftover:  # a structure this loader does not know about; better an error than garbage
        raise CheckpointError(f"{where}: no values for {name_list(leftover)}")
    return model.to(device).eval()


def name_list(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


__all__ = [
    "CONFIG_FILE",
    "FORMAT_TAG",
    "FORMAT_VERSION",
    "MAX_JSON_FILE_BYTES",
    "METADATA_FILE",
    "MODEL_FILE",
    "TOKENIZER_FILE",
    "CheckpointError",
    "LoadedModel",
    "model_from_tensors",
    "name_list",
    "read_json_file",
    "read_safetensors",
]
