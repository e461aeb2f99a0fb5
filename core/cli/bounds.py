"""argparse types for numeric options with a range: a value outside it is refused while parsing,
before any work, in one line that names the option and the range ("argument --max-new: must be a
whole number from 1 to 10,000, got 1000000000")."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from core.limits import MAX_SEED, MAX_TOKEN_ID

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


def token_ids() -> Callable[[str], list[int]]:
    """--ids and its kin: comma-separated token ids, each from 0 to MAX_TOKEN_ID (torch's int64 tensors hold no
    larger one; no vocabulary is that large), at most MAX_IDS_CHARS characters in all."""

    def parse(text: str) -> list[int]:
        if len(text) > MAX_IDS_CHARS:
            raise argparse.ArgumentTypeError(f"must be at most {MAX_IDS_CHARS:,} characters, got {len(text):,}")
        parts = [part.strip() for part in text.split(",") if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("needs at least one token id, e.g. 1,2,3")
        ids = []
        for part in parts:
            digits = part.lstrip("+-")
            if not (digits.isdigit() and digits.isascii()):
                raise argparse.ArgumentTypeError(f"expects comma-separated whole numbers, got {_short(part)}")
            value = int(part) if len(digits) <= 30 else None
            if value is None or not 0 <= value <= MAX_TOKEN_ID:
                raise argparse.ArgumentTypeError(f"a token id must be from 0 to {MAX_TOKEN_ID:,}, got {_short(part)}")
            ids.append(value)
        return ids

    parse.__name__ = "token ids"
    parse.bounds = (0, MAX_TOKEN_ID)  # type: ignore[attr-defined]
    return parse


def token_id() -> Callable[[str], int]:
    """One token id (--answer-id, --foil-id): from 0 to MAX_TOKEN_ID."""
    return whole_number(0, MAX_TOKEN_ID)


def seed() -> Callable[[str], int]:
    """A seed: what torch, numpy and the window's 32-bit seed boxes all take."""
    return whole_number(0, MAX_SEED)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 30 else repr(text[:27] + "...")


__all__ = ["MAX_IDS_CHARS", "MAX_TEXT_FILE_BYTES", "bounded_text", "real_number", "seed", "token_id", "token_ids",
           "whole_number"]
