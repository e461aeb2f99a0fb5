"""What the experiments share: read-only results, token and layer labels, and the checks of a sequence.

Results cross from the compute worker to the GUI thread as frozen dataclasses of numpy arrays; the
arrays are made read-only on the way. Nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from core.display import display_token
from core.model import SequenceError


class ReadOnlyArrays:
    """Results cross from the compute worker to the GUI thread: make their arrays read-only too."""

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False


def token_labels(ids: Sequence[int], tokenizer_or_labels=None) -> tuple[str, ...]:
    """Labels for token ids from a tokenizer (anything with `token_text`), a list of labels, or the ids."""
    if tokenizer_or_labels is None:
        return tuple(str(int(i)) for i in ids)
    if hasattr(tokenizer_or_labels, "token_text"):
        # A model's vocabulary can be larger than the tokenizer beside it (a GPT-2 shape over the lab's
        # characters): an id the tokenizer lacks is labelled by its number, never an error.
        size = getattr(tokenizer_or_labels, "vocab_size", None)
        return tuple(display_token(tokenizer_or_labels.token_text(int(i))) if size is None or 0 <= int(i) < size
                     else f"#{int(i)}" for i in ids)
    labels = list(tokenizer_or_labels)
    for i in ids:
        if not 0 <= int(i) < len(labels):
            raise SequenceError(f"token id {int(i)} has no label (the label list has {len(labels)} entries)")
    return tuple(str(labels[int(i)]) for i in ids)


def residual_row_labels(n_blocks: int, first: str = "embedding") -> tuple[str, ...]:
    """Row labels of a residual-stream table: the first row, then "block 0", "block 1", ..."""
    return (first,) + tuple(f"block {i}" for i in range(n_blocks))


def model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def as_token_list(tokens) -> list[int]:
    """Token ids as a list of ints, from a sequence or a 1-D / (1, T) tensor; refuses floats and emptiness."""
    if isinstance(tokens, torch.Tensor):
        if tokens.is_floating_point():
            raise SequenceError("token ids must be whole numbers")
        tokens = tokens.reshape(-1).tolist()
    ids = [int(t) for t in tokens]
    if not ids:
        raise SequenceError("the sequence is empty; give at least one token")
    return ids


def check_position(position: int, n_tokens: int) -> None:
    if not 0 <= position < n_tokens:
        raise SequenceError(f"edit position {position} is outside the sequence (0..{n_tokens - 1})")


__all__ = ["ReadOnlyArrays", "as_token_list", "check_position", "model_device", "residual_row_labels", "token_labels"]
