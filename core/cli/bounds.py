"""argparse types for numeric options with a range: a value outside it is refused while parsing,
before any work, in one line that names the option and the range ("argument --max-new: must be a
whole number from 1 to 10,000, got 1000000000")."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from core.limits import MAX_SEED

MAX_IDS_CHARS = 200_000  # --ids: comma-separated ids, a few model contexts long
MAX_TEXT_FILE_BYTES = 64 * 2**20  # --corpus, --text-file: the bundled corpus is 1 MiB


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An int option from `low` to `high` inclusive."""

    def parse(text: str) -> int:
        stripped = text.strip()
        digits = stripped.lstrip("+-")
        value = int(stripped) if digits.isdigit() and len(digits) <= 30 else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low:,} to {high:,}, got {_short(text)}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    parse.bounds = (low, high)  # type: ignore[attr-defined]
    return parse


def real_number(low: float, high: float) -> Callable[[str], float]:
    """A finite float option from `low` to `high` inclusive."""

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"must be a number from {low:g} to {high:g}, got {_short(text)}")
        return value

    parse.__name__ = "number"
    parse.bounds = (low, high)  # type: ignore[attr-defined]
    return parse


def bounded_text(limit: int) -> Callable[[str], str]:
    """A text option of at most `limit` characters (refused before anything tokenizes it)."""

    def parse(value: str) -> str:
        if len(value) > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit:,} characters, got {len(value):,}")
        return value

    parse.__name__ = "text"
    return parse


def seed() -> Callable[[str], int]:
    """A seed: what torch, numpy and the window's 32-bit seed boxes all take."""
    return whole_number(0, MAX_SEED)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 30 else repr(text[:27] + "...")


__all__ = ["MAX_IDS_CHARS", "MAX_TEXT_FILE_BYTES", "bounded_text", "real_number", "seed", "whole_number"]
