"""The measured kernel verdicts, one JSON file in the user's cache folder, read without importing torch.

Each entry is keyed by the machine it was measured on: "<CPU model> | torch <version> | <n> threads"
(core.kernels.machine_key). A missing, unreadable or corrupt file reads as empty, so the next start
measures again; a write goes to a sibling file that is renamed over the old one, so a crash never
leaves half a file. `--version` lists this machine's entries from here (no torch, no Qt).
"""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path

from core.whole_file import write_text_whole

KERNEL_PATHS = ("default", "onednn")
KERNEL_OPTIONS = ("auto", *KERNEL_PATHS)
PRECISIONS = ("fp32", "bf16", "fp16")
KERNELS_ENV = "TRANSFORMER_EXPLORER_KERNELS"
CACHE_APP = "transformer-explorer"
CACHE_FILE = "kernels.json"
CACHE_MAX_BYTES = 1 << 20
CACHE_MAX_ENTRIES = 64  # machines x torch versions x thread counts one user meets; the oldest drop out


def cache_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir(CACHE_APP, appauthor=False)) / CACHE_FILE


def cpu_model() -> str:
    """The CPU's model name, as the cache is keyed."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return " ".join(line.split(":", 1)[1].split())[:200]
    except OSError:
        pass
    return (platform.processor() or platform.machine() or "unknown CPU")[:200]


def read_cache(path: Path) -> dict[str, dict]:
    """The valid entries of the cache file, oldest first; a missing, unreadable or corrupt file reads as empty."""
    from core.json_files import JsonFileError, read_json_document

    try:
        data = read_json_document(path, CACHE_MAX_BYTES, "the kernel cache")
    except (JsonFileError, OSError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {key: entry for key, entry in entries.items() if isinstance(key, str) and _valid_entry(entry)}


def _valid_entry(entry) -> bool:
    if not isinstance(entry, dict) or entry.get("path") not in KERNEL_PATHS:
        return False
    rates, load = entry.get("rates"), entry.get("load_per_cpu")
    if load is not None and not (_is_number(load) and 0 <= load < 1e6):
        return False
    return (isinstance(rates, dict) and set(rates) == set(KERNEL_PATHS)
            and all(_is_number(v) and 0 < v < 1e7 for v in rates.values()))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def write_cache(path: Path, key: str, entry: dict) -> None:
    """Add one entry (replacing the key's old one): the whole file is written beside and renamed over the old one."""
    entries = read_cache(path)
    entries.pop(key, None)
    entries[key] = entry
    entries = dict(list(entries.items())[-CACHE_MAX_ENTRIES:])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_whole(path, json.dumps({"format": 1, "entries": entries}, indent=1))


def version_lines(path: Path | None = None) -> list[str]:
    """What --version says about kernels: this CPU's cached verdicts for the installed torch, or that none is yet."""
    forced = os.environ.get(KERNELS_ENV, "").strip().lower()
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ["kernels: torch is not installed"]
    prefix = f"{cpu_model()} | torch {torch_version} | "
    found = [(key[len(prefix):], entry) for key, entry in read_cache(path or cache_path()).items() if key.startswith(prefix)]
    lines = [f"kernels: {forced[:40]} (asked for by {KERNELS_ENV})"] if forced else []
    for threads, entry in found:
        rates = entry["rates"]
        lines.append(f"kernels at {threads}: {entry['path']} (measured: default {rates['default']:.0f} GFLOP/s, "
                     f"oneDNN {rates['onednn']:.0f} GFLOP/s)")
    if not found:
        lines.append(f"kernels: not measured yet on this machine ({cpu_model()}, torch {torch_version}); "
                     "the first run with --kernels auto measures them")
    return lines
