"""What every objective hands the trainer: the inputs of one forward pass and the labels it is scored on."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

IGNORED = -100  # the label of a position that is not scored (torch's and transformers' ignore_index)


@dataclass(frozen=True)
class Batch:
    tokens: torch.Tensor  # (B, T) what the decoder, or the only stack, reads
    labels: torch.Tensor  # (B, T) the token each position is scored on; IGNORED where it is not scored
    source: torch.Tensor | None = None  # (B, S) the encoder's input of an encoder-decoder

    def to(self, device: torch.device | str) -> Batch:
        source = None if self.source is None else self.source.to(device)
        return Batch(self.tokens.to(device), self.labels.to(device), source)


def scored_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy over the scored positions: logits (B, T, V), labels (B, T)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORED,
                           reduction=reduction)  # () mean or sum over scored positions


__all__ = ["Batch", "IGNORED", "scored_loss"]
