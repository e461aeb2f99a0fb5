"""The ladder's record: every rung's seeds, their mean and spread, and what each change was worth against the spread.

`ladder --train` writes the record; the bundled one (resources/going_deeper/ladder.json) is what `ladder --json`
prints and what the Ladder view draws. A record is read as untrusted JSON and checked field by field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from core.whole_file import write_text_whole

LADDER_FILE = "ladder.json"
MAX_RECORD_BYTES = 1_000_000
MAX_RUNGS = 64
MAX_SEEDS = 64

HELPS = "better than the rung before beyond the seeds' spread"
HURTS = "worse than the rung before beyond the seeds' spread"
WITHIN = "no different from the rung before within the seeds' spread"


class LadderError(ValueError):
    """A ladder record that cannot be read; the message says what is wrong."""


def bundled_record_path() -> Path:
    from resources import resource_path

    return resource_path("going_deeper", LADDER_FILE)


def verdict(previous: list[float], current: list[float]) -> str:
    """How a rung compares with the one before: a difference counts only when the two seeds' ranges do not overlap."""
    if max(current) < min(previous):
        return HELPS
    if min(current) > max(previous):
        return HURTS
    return WITHIN


def summarise(record: dict[str, Any]) -> dict[str, Any]:
    """The record with each rung's mean, spread (max - min over seeds) and its verdict against the rung before."""
    previous: list[float] | None = None
    for rung in record["rungs"]:
        losses = [seed["nats_per_char"] for seed in rung["seeds"]]
        if not losses:
            continue
        rung["mean_nats_per_char"] = sum(losses) / len(losses)
        rung["spread_nats_per_char"] = max(losses) - min(losses)
        rung["seconds"] = round(sum(seed["seconds"] for seed in rung["seeds"]), 1)
        rung["against_previous"] = None if previous is None else verdict(previous, losses)
        rung["change_from_previous"] = (None if previous is None
                                        else rung["mean_nats_per_char"] - sum(previous) / len(previous))
        previous = losses
    return record


def record_summary(record: dict[str, Any]) -> str:
    """A ladder record in words: its size and recipe, the lowest mean, the largest gain, and which changes beat the
    seeds' spread (the Ladder view's caption and an exported page's quote)."""
    rungs = record["rungs"]
    recipe = record.get("recipe", {})
    seeds = len(rungs[0]["seeds"])
    best = min(range(len(rungs)), key=lambda i: rungs[i]["mean_nats_per_char"])
    helps = [rung["name"] for rung in rungs if rung.get("against_previous") == HELPS]
    hurts = [rung["name"] for rung in rungs if rung.get("against_previous") == HURTS]
    changes = [rung for rung in rungs if rung.get("change_from_previous") is not None]
    biggest = min(changes, key=lambda rung: rung["change_from_previous"], default=None)
    gain = ("" if biggest is None else f" Largest single gain: {biggest['name']} "
            f"({biggest['change_from_previous']:+.3f} nats against the rung before).")
    return (f"{len(rungs)} rungs, {seeds} seeds each, every run {recipe.get('steps', '?')} steps of "
            f"{recipe.get('batch_size', '?')} x {recipe.get('seq_len', '?')} characters, scored on the held-out tenth. "
            f"Lowest mean: {rungs[best]['name']} ({rungs[best]['mean_nats_per_char']:.3f}).{gain} Changes worth more "
            f"than the seeds' spread: {', '.join(helps) if helps else 'none'}; worse beyond it: "
            f"{', '.join(hurts) if hurts else 'none'}; the others are within it.")

def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write the record whole or not at all (core.whole_file)."""
    write_text_whole(path, json.dumps(record, indent=2) + "\n")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LadderError(f"{where}: expected a finite number, got {str(value)[:40]}")
    return float(value)


def _text(value: Any, where: str, limit: int = 300) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise LadderError(f"{where}: expected text of 1 to {limit} characters")
    return value


def read_record(path: Path | None = None) -> dict[str, Any]:
    """The ladder record at `path` (the bundled one by default), checked; LadderError says what is wrong."""
    from core.json_files import JsonFileError, read_json_document

    path = bundled_record_path() if path is None else path
    try:
        data = read_json_document(path, MAX_RECORD_BYTES, "a ladder record")
    except JsonFileError as error:
        raise LadderError(str(error)) from None
    if not isinstance(data, dict) or not isinstance(data.get("rungs"), list) or not data["rungs"]:
        raise LadderError(f"{path.name}: expected an object with a non-empty list of rungs")
    if len(data["rungs"]) > MAX_RUNGS:
        raise LadderError(f"{path.name}: {len(data['rungs'])} rungs; a record has at most {MAX_RUNGS}")
    for index, rung in enumerate(data["rungs"]):
        where = f"rung {index + 1}"
        if not isinstance(rung, dict):
            raise LadderError(f"{where}: expected an object")
        for key in ("name", "change", "model"):
            _text(rung.get(key), f"{where} {key}")
        _number(rung.get("parameters"), f"{where} parameters")
        seeds = rung.get("seeds")
        if not isinstance(seeds, list) or not seeds or len(seeds) > MAX_SEEDS:
            raise LadderError(f"{where}: expected 1 to {MAX_SEEDS} seeds")
        for seed in seeds:
            if not isinstance(seed, dict):
                raise LadderError(f"{where}: each seed is an object")
            _number(seed.get("seed"), f"{where} seed")
            _number(seed.get("nats_per_char"), f"{where} nats_per_char")
            _number(seed.get("seconds"), f"{where} seconds")
    return summarise(data)


__all__ = ["HELPS", "HURTS", "LADDER_FILE", "LadderError", "WITHIN", "bundled_record_path", "read_record",
           "record_summary", "summarise", "verdict", "write_record"]
