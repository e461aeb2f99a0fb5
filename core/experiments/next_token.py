"""Next-token predictions: the top-k distribution read off the logits at one position.

Nothing here imports Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.experiments.common import ReadOnlyArrays, as_token_list, check_position, model_device, token_labels
from core.model import MaskMode, SequenceError, Transformer


@dataclass(frozen=True)
class NextTokenPredictions(ReadOnlyArrays):
    ids: np.ndarray  # (k,) int64 the most probable next-token ids, most probable first
    labels: tuple[str, ...]  # k labels
    probabilities: np.ndarray  # (k,) float64 softmax(logits / temperature) of those ids
    position: int  # the position whose logits predict token position + 1
    temperature: float
    context_labels: tuple[str, ...]  # labels of tokens 0..position (what the prediction may see)


def next_token_predictions(
    model: Transformer,
    tokens,
    position: int,
    tokenizer_or_labels=None,
    k: int = 10,
    temperature: float = 1.0,
    mask_mode: MaskMode | None = None,
) -> NextTokenPredictions:
    """Top-k next-token distribution read off the logits at `position`.

    The whole sequence runs (an encoder's prediction may read later tokens; a causal model's does
    not, which the edit diff demonstrates).
    """
    ids = as_token_list(tokens)
    check_position(position, len(ids))
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise SequenceError(f"temperature must be a positive number, got {temperature!r}")
    if k < 1:
        raise SequenceError(f"k must be at least 1, got {k}")
    config = model.config
    device = model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.inference_mode():
        logits = model(batch, mask_mode=mask_mode)  # (1, T, V)
    probabilities = F.softmax(logits[0, position].double() / temperature, dim=-1)  # (V,)
    top = probabilities.topk(min(k, config.vocab_size))
    top_ids = top.indices.cpu().numpy().astype(np.int64)  # (k,)
    return NextTokenPredictions(
        ids=top_ids,
        labels=token_labels(top_ids.tolist(), tokenizer_or_labels),
        probabilities=top.values.cpu().numpy(),
        position=position,
        temperature=float(temperature),
        context_labels=token_labels(ids[: position + 1], tokenizer_or_labels),
    )


__all__ = ["NextTokenPredictions", "next_token_predictions"]
