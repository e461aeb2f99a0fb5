"""Masked language modelling, the BERT recipe (Devlin et al. 2019, section 3.1 and appendix C.2).

Each position is chosen with probability 15%; a chosen position is replaced by the mask token 80% of the
time, by a uniformly random token 10% of the time, and kept as it is the other 10%. The loss is the
cross-entropy at the chosen positions only: the encoder must predict the original token there from both
sides of it. This is what `transformers`' DataCollatorForLanguageModeling does with its defaults.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

SELECT_P = 0.15  # share of positions the loss is taken on
MASK_P = 0.8  # of those, replaced by the mask token
RANDOM_P = 0.1  # of those, replaced by a random token (the rest, 0.1, keep their token)
MASK_CHAR = "_"  # the blank of a character model: absent from the bundled Shakespeare, and typed with one key
IGNORED = -100  # the label of a position that is not scored (torch's and transformers' ignore_index)


class MaskingError(ValueError):
    """Settings the recipe cannot follow: a share outside [0, 1], a mask id outside the vocabulary."""


@dataclass(frozen=True)
class MaskedBatch:
    inputs: torch.Tensor  # (B, T) what the encoder reads
    labels: torch.Tensor  # (B, T) the original token at chosen positions, IGNORED elsewhere
    chosen: torch.Tensor  # (B, T) bool: positions the loss is taken on
    masked: torch.Tensor  # (B, T) bool: chosen and replaced by the mask token
    randomised: torch.Tensor  # (B, T) bool: chosen and replaced by a random token (possibly the same one)


def mask_tokens(ids: torch.Tensor, mask_id: int, vocab_size: int, generator: torch.Generator,
                select_p: float = SELECT_P, mask_p: float = MASK_P, random_p: float = RANDOM_P,
                special_ids: Iterable[int] = ()) -> MaskedBatch:
    """The recipe applied to a batch of token ids (B, T); special tokens (padding, separators) are never chosen."""
    for name, value in (("select_p", select_p), ("mask_p", mask_p), ("random_p", random_p)):
        if not 0.0 <= value <= 1.0:
            raise MaskingError(f"{name} must be between 0 and 1, got {value}")
    if mask_p + random_p > 1.0:
        raise MaskingError(f"mask_p + random_p must be at most 1, got {mask_p + random_p}")
    if not 0 <= mask_id < vocab_size:
        raise MaskingError(f"the mask token id {mask_id} is outside the vocabulary (0..{vocab_size - 1})")
    ids = ids.long()
    draws = torch.rand(3, *ids.shape, generator=generator, device=ids.device)  # (3, B, T) one uniform per choice
    special = torch.zeros_like(ids, dtype=torch.bool)  # (B, T)
    for special_id in special_ids:
        special |= ids == special_id
    chosen = (draws[0] < select_p) & ~special  # (B, T)
    masked = chosen & (draws[1] < mask_p)  # (B, T)
    # Of what is left after the mask (1 - mask_p), random_p of the whole goes to a random token.
    random_share = random_p / (1.0 - mask_p) if mask_p < 1.0 else 0.0
    randomised = chosen & ~masked & (draws[2] < random_share)  # (B, T)
    random_tokens = torch.randint(vocab_size, ids.shape, generator=generator, device=ids.device)  # (B, T)
    inputs = torch.where(masked, torch.full_like(ids, mask_id), ids)  # (B, T)
    inputs = torch.where(randomised, random_tokens, inputs)  # (B, T)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORED))  # (B, T)
    return MaskedBatch(inputs, labels, chosen, masked, randomised)


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the chosen positions only: logits (B, T, V), labels (B, T) with IGNORED elsewhere."""
    if not bool((labels != IGNORED).any()):
        return logits.sum() * 0.0  # nothing chosen in this batch: no signal, and no NaN from an empty mean
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORED)  # ()


__all__ = ["IGNORED", "MASK_CHAR", "MASK_P", "MaskedBatch", "MaskingError", "RANDOM_P", "SELECT_P", "mask_tokens", "masked_lm_loss"]
