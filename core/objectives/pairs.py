"""A sequence-to-sequence corpus as text: one `source<TAB>target` pair a line, and the characters that frame
a target for the decoder. Plain Python (no torch), so presets and corpus checks can read it at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from core.text_files import text_lines

START = "\t"  # the decoder's first input: "begin the target"
END = "\n"  # the decoder's last prediction: "the target is complete"
MAX_PAIRS = 1_000_000
MAX_SIDE_CHARS = 4096


class PairsError(ValueError):
    """A corpus that is not a list of tab-separated pairs."""


@dataclass(frozen=True)
class Pair:
    source: str
    target: str


def parse_pairs(text: str) -> list[Pair]:
    """The pairs of a tab-separated text: one `source<TAB>target` per non-empty line."""
    pairs = []
    for number, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        parts = line.split(START)
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise PairsError(f"line {number} is not `source<TAB>target` with both sides non-empty")
        if max(len(parts[0]), len(parts[1])) > MAX_SIDE_CHARS:
            raise PairsError(f"line {number} has a side longer than {MAX_SIDE_CHARS:,} characters")
        pairs.append(Pair(parts[0], parts[1]))
        if len(pairs) > MAX_PAIRS:
            raise PairsError(f"more than {MAX_PAIRS:,} pairs")
    if not pairs:
        raise PairsError("no `source<TAB>target` lines")
    return pairs


def decoder_input(target: str) -> str:
    """What the decoder reads for a target under teacher forcing."""
    return START + target


def decoder_labels(target: str) -> str:
    """What the decoder is trained to predict at each of those positions."""
    return target + END


__all__ = ["END", "MAX_PAIRS", "Pair", "PairsError", "START", "decoder_input", "decoder_labels", "parse_pairs"]
