"""Sequence to sequence with teacher forcing, for encoder-decoder models.

A corpus is one pair per line, source and target separated by a tab. The encoder reads the source; the
decoder reads START followed by the target and is trained to predict the target followed by END, every
position at once (teacher forcing: the decoder sees the true previous characters, not its own guesses),
through causal self-attention and cross-attention to the encoder's output. START and END are the tab and
the newline that frame every target in the file, so a character vocabulary of the file holds both.

A batch takes pairs whose source lengths and target lengths are all equal: nothing is padded, so no
padding mask is needed and a batch computes exactly what one pair alone would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

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
    for number, line in enumerate(text.splitlines(), start=1):
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
