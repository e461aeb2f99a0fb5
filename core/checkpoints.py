"""Checkpoints: a model as a folder of safetensors and JSON, and the trained models that ship with the app.

A checkpoint folder holds
    model.safetensors  the weights (a tied head is stored once, as tok_emb.weight)
    config.json        {"format": FORMAT_TAG, "format_version": 1, "config": ModelConfig fields}
    tokenizer.json     the tokenizer's own JSON (optional, recorded in config.json)
    training.json      how a trained model was made and its validation loss (optional)

A save writes the folder as one unit (see write_checkpoint_folder) and records the names it wrote in
MANIFEST_FILE, so a later save replaces a folder this app wrote and refuses any other.

Loading reads safetensors and JSON only (nothing is unpickled or executed) and checks everything
before a model is built: a folder that is wrong in any way raises CheckpointError naming the file
and what is wrong with it. `resolve_checkpoint` also opens Hugging Face folders (see hf_import).
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import math
import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from core.checkpoint_files import (
    CONFIG_FILE,
    FORMAT_TAG,
    FORMAT_VERSION,
    MAX_JSON_FILE_BYTES,  # noqa: F401 - part of this module's surface (read limits of a checkpoint's JSON)
    METADATA_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    CheckpointError,
    LoadedModel,
    model_from_tensors,
    name_list,
    read_json_file,
    read_safetensors,
)
from core.config import ConfigError, ModelConfig
from core.hf_import import load_hf_folder
from core.model import Transformer
from core.tokenizers import Tokenizer, TokenizerFileError, tokenizer_from_json
from core.text_files import is_link_loop, link_loop_message
from resources import resource_path

BUNDLED_DIR = ("models",)  # under resources/

# ---- saving -------------------------------------------------------------------------------------

# Written beside every folder this app saves: the names it wrote, so that a later save may replace
# that folder (and only that folder) without asking, and never a folder of someone else's files.
MANIFEST_FILE = ".transformer-explorer-files.json"
LEGACY_FILES = frozenset({MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE, METADATA_FILE})
# safetensors writes a file as `.tmpXXXXXX` beside it and renames it; a kill leaves that behind.
_SAFETENSORS_LEFTOVER = re.compile(r"\.tmp[A-Za-z0-9]{6}")
# Siblings a save is working in: `.NAME.partial-PID-HEX` (being written) or `.NAME.old-PID-HEX` (replaced).
_WORK_FOLDER = re.compile(r"\.(?P<name>.+)\.(?:partial|old)-(?P<pid>\d+)-[0-9a-f]{8}")
# Sentences for the errors a save meets, in English whatever the system's language.
_ERRNO_SENTENCES = {
    errno.EROFS: "the disk is read-only",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EACCES: "there is no permission to write there",
    errno.EPERM: "there is no permission to write there",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.ENOENT: "a part of the path does not exist",
    errno.EIO: "the disk reported an input/output error",
}
FileWriter = Callable[[Path], None]


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
    """Write the model (and its tokenizer and training record) as a checkpoint folder; returns it.

    The folder is written as one unit by write_checkpoint_folder: a folder the app did not write is
    refused, and a kill part-way leaves the previous contents whole.
    """
    folder = Path(path)
    check_destination(folder, needed_bytes=weights_bytes(model))
    tensors = weights_to_store(model)
    config_json = {
        "format": FORMAT_TAG,
        "format_version": FORMAT_VERSION,
        "has_tokenizer": tokenizer is not None,
        "config": model.config.to_dict(),
    }
    files: dict[str, FileWriter] = {
        MODEL_FILE: lambda target: save_file(tensors, str(target), metadata={"format": "pt", "producer": FORMAT_TAG}),
        CONFIG_FILE: json_writer(config_json),
    }
    if tokenizer is not None:
        files[TOKENIZER_FILE] = json_writer(tokenizer.to_json())
    if metadata is not None:
        files[METADATA_FILE] = json_writer(metadata)
    return write_checkpoint_folder(folder, files)


def weights_bytes(model: torch.nn.Module) -> int:
    """Bytes the weights take on disk (float32 as stored; a tied head counted once)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def json_writer(data: Any) -> FileWriter:
    """A FileWriter that writes `data` as indented UTF-8 JSON."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return lambda target: target.write_text(text, encoding="utf-8")


def write_checkpoint_folder(path: str | Path, files: Mapping[str, FileWriter]) -> Path:
    """Write `files` (name -> a function that writes that file at the path it is given) as the folder `path`.

    All or nothing: the files go into a new sibling folder, are flushed to disk, and that folder then
    takes the place of `path` in one rename; a kill at any moment leaves either the old folder or the
    new one, whole. Work folders that a killed save left behind are removed. Files and folder get the
    user's umask. `path` may be absent, an empty folder or a folder this app wrote; any other folder
    raises CheckpointError before anything is written. Every failure is a CheckpointError in words.
    """
    folder = Path(os.path.abspath(path))  # no trailing slash, no "..": the sibling is beside the real name
    bad = [name for name in files if not name or "/" in name or "\\" in name or name in (".", "..", MANIFEST_FILE)]
    if bad:
        raise ValueError(f"not a plain file name: {bad[0]!r}")
    check_destination(folder)
    work: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(folder)
        work = _new_sibling(folder, "partial")
        os.mkdir(work, 0o777)  # the umask applies here, as for any folder the user makes
        file_mode = os.stat(work).st_mode & 0o666
        for name, write in files.items():
            target = work / name
            write(target)
            os.chmod(target, file_mode)  # safetensors writes 0600 whatever the umask
            _fsync_file(target)
        manifest = {"written_by": FORMAT_TAG, "files": sorted(files)}
        (work / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.chmod(work / MANIFEST_FILE, file_mode)
        _fsync_file(work / MANIFEST_FILE)
        _fsync_folder(work)
        _put_in_place(work, folder)
        work = None
        _fsync_folder(folder.parent)
    except OSError as error:
        raise CheckpointError(f"could not save to {folder}: {describe_os_error(error)}") from None
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return folder


def check_destination(path: str | Path, needed_bytes: int = 0) -> None:
    """Raise CheckpointError if a checkpoint cannot be saved at `path`; writes nothing that stays.

    Refused: a file in the way, a folder holding files this app did not write, a place where no
    folder can be made (read-only, no permission) and, with `needed_bytes`, a disk without the room.
    """
    folder = Path(os.path.abspath(path))
    if is_link_loop(folder):
        raise CheckpointError(link_loop_message(folder))
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir() or folder.is_symlink():
            raise CheckpointError(f"{folder} exists and is not a folder; choose a new folder name")
        foreign = foreign_entries(folder)
        if foreign:
            raise CheckpointError(
                f"{folder} holds files this app did not write ({name_list(foreign)}); "
                "choose a new or empty folder, nothing was changed"
            )
    existing = folder.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CheckpointError(f"cannot save to {folder}: {existing} is a file, not a folder")
    probe = _new_sibling(existing / folder.name, "partial")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        free = shutil.disk_usage(existing).free
    except OSError as error:
        raise CheckpointError(f"cannot save to {folder}: {describe_os_error(error)}") from None
    if needed_bytes and free < needed_bytes:
        raise CheckpointError(
            f"cannot save to {folder}: the model needs {_megabytes(needed_bytes)} and the disk has {_megabytes(free)} free"
        )


def foreign_entries(folder: Path) -> list[str]:
    """Names in `folder` that a save would replace although this app did not write them (sorted)."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError as error:
        raise CheckpointError(f"cannot read the folder {folder}: {describe_os_error(error)}") from None
    names = [name for name in names if not _SAFETENSORS_LEFTOVER.fullmatch(name)]
    if not names:
        return []
    written = _manifest_names(folder)
    if written is None and _is_legacy_checkpoint(folder):
        written = set(LEGACY_FILES)
    if written is None:
        return names
    written.add(MANIFEST_FILE)
    return [name for name in names if name not in written or not (folder / name).is_file() or (folder / name).is_symlink()]


def _manifest_names(folder: Path) -> set[str] | None:
    path = folder / MANIFEST_FILE
    if not path.is_file() or path.is_symlink() or path.stat().st_size > 64 * 1024:
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(manifest, dict) or manifest.get("written_by") != FORMAT_TAG:
        return None
    names = manifest.get("files")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    return set(names)


def _is_legacy_checkpoint(folder: Path) -> bool:
    """A folder saved before the manifest existed: our config.json and only our file names."""
    path = folder / CONFIG_FILE
    if not path.is_file() or path.is_symlink() or path.stat().st_size > 1024 * 1024:
        return False
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(header, dict) and header.get("format") == FORMAT_TAG


def remove_leftovers(folder: Path) -> None:
    """Delete the work folders of saves to `folder` whose process is gone (killed mid-save)."""
    try:
        entries = list(os.scandir(folder.parent))
    except OSError:
        return
    for entry in entries:
        match = _WORK_FOLDER.fullmatch(entry.name)
        if match is None or match["name"] != folder.name or not entry.is_dir(follow_symlinks=False):
            continue
        if not _process_alive(int(match["pid"])):
            shutil.rmtree(entry.path, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftovers: a save that failed without cleaning up
    if os.name != "posix":
        return True  # no cheap check elsewhere; better to leave a folder than delete a running save's
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _new_sibling(folder: Path, kind: str) -> Path:
    return folder.parent / f".{folder.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def _put_in_place(work: Path, folder: Path) -> None:
    """Make `work` the folder `folder`: one atomic exchange where the system has one, else two renames."""
    if not folder.exists():
        os.rename(work, folder)
        return
    if _exchange(work, folder):
        shutil.rmtree(work, ignore_errors=True)  # after the exchange `work` holds the old contents
        return
    try:
        os.rename(work, folder)  # POSIX replaces an empty folder in one step
        return
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR, errno.EACCES):
            raise
    old = _new_sibling(folder, "old")
    os.rename(folder, old)
    try:
        os.rename(work, folder)
    except OSError:
        os.rename(old, folder)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically with Linux's renameat2(RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # a file system without the exchange (some network and FUSE mounts)
    raise OSError(code, os.strerror(code), str(second))


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_folder(path: Path) -> None:
    if os.name != "posix":
        return  # folders cannot be opened for fsync on Windows
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def describe_os_error(error: OSError) -> str:
    """An OSError as a short English sentence for the common causes, the system's own words for the rest."""
    sentence = _ERRNO_SENTENCES.get(error.errno or 0)
    if sentence is not None:
        return sentence
    return error.strerror or type(error).__name__


def _megabytes(count: int) -> str:
    return f"{count / 2**20:,.1f} MiB"


# ---- loading ------------------------------------------------------------------------------------


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu", source: str | None = None) -> LoadedModel:
    """Open a checkpoint folder written by save_checkpoint."""
    folder = Path(path)
    if not folder.exists():
        raise CheckpointError(link_loop_message(folder) if is_link_loop(folder)
                              else f"no checkpoint folder at {folder}")
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
    folder = bundled_dir() / name
    header = read_json_file(folder / CONFIG_FILE, "the model config")
    if isinstance(header, dict) and "model_type" in header:  # saved as a folder transformers opens too
        return dataclasses.replace(load_hf_folder(folder, device=device), source=f"bundled {name}")
    return load_checkpoint(folder, device=device, source=f"bundled {name}")


def resolve_checkpoint(name_or_path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """A bundled model by name, one of our checkpoint folders, or a Hugging Face model folder."""
    text = str(name_or_path)
    if isinstance(name_or_path, str) and text in bundled_model_names():
        return load_bundled(text, device=device)
    folder = Path(name_or_path)
    if is_link_loop(folder):
        raise CheckpointError(link_loop_message(folder))
    if not folder.exists():
        hint = ", ".join(bundled_model_names()) or "none"
        raise CheckpointError(f"{text!r} is neither a bundled model ({hint}) nor an existing folder")
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder; a checkpoint is a folder with {MODEL_FILE} and {CONFIG_FILE}")
    header = read_json_file(folder / CONFIG_FILE, "the model config")
    if isinstance(header, dict) and header.get("format") == FORMAT_TAG:
        return load_checkpoint(folder, device=device)
    if isinstance(header, dict) and "model_type" in header:
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
    "check_destination",
    "save_checkpoint",
    "write_checkpoint_folder",
]
