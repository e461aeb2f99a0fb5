"""A corpus for induction heads: sequences of random letters, each written twice.

Within a block the second copy can be predicted exactly by looking back: find the previous occurrence
of the current letter and copy the letter that followed it. That is the algorithm of an induction head
(Olsson et al. 2022), which a two-layer model learns from this text in a minute or two on a laptop CPU,
the loss on each block's second copy falling far below the first's. Each sequence has its own length:
with one length for all, a single layer learns "look back that many positions" from the positional
embeddings instead, which fails on any other length. The text is made from a seed, so the same command
makes the same corpus and the same model.
"""

from __future__ import annotations

import random

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # many, so a letter seldom recurs within a sequence
NAME = "repeated random letters"
PERIODS = (5, 25)  # each sequence's length is drawn from this range, both ends included
DEFAULT_BLOCKS = 8000  # sequences (about 300,000 characters with the separating spaces)


def repeated_letters(seed: int = 0, periods: tuple[int, int] = PERIODS, blocks: int = DEFAULT_BLOCKS) -> str:
    """`blocks` sequences of random letters, each of a length drawn from `periods`, followed by itself and a space."""
    low, high = periods
    if not 2 <= low <= high or blocks < 1:
        raise ValueError(f"a repeated-letters corpus needs lengths of at least 2 and one block, got {periods}, {blocks}")
    rng = random.Random(seed)
    parts = []
    for _ in range(blocks):
        sequence = "".join(rng.choice(LETTERS) for _ in range(rng.randint(low, high)))
        parts.append(sequence + sequence + " ")
    return "".join(parts)


__all__ = ["DEFAULT_BLOCKS", "LETTERS", "NAME", "PERIODS", "repeated_letters"]
