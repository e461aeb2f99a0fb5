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
    context_labels: tuple[str, ...]  # labels of tokens 0..position (what a causal prediction may see)
    reads_later: str = ""  # why the prediction also reads tokens after `position` ("" when it reads only the past)


def next_token_refusal(config) -> str:
    """Why a model has no next-token distribution to read ("" when it has one): an encoder does not continue text."""
    if config.architecture != "encoder":
        return ""
    return (f"{config.name} is an encoder: it reads the whole text at once, and its head scores which token belongs "
            "at each position (filling in a blank), not which token comes next; it does not continue text, so it "
            "has no next-token prediction to show")


def continuation_refusal(config) -> str:
    """Why a model does not continue a text left to right ("" when it does: a causal decoder-only model)."""
    if config.architecture == "encoder":
        return next_token_refusal(config)
    if config.architecture == "encoder-decoder":
        return (f"{config.name} is an encoder-decoder: its decoder writes a target for a source its encoder reads whole "
                "(a translation), rather than continuing one text; sampling here continues a text with a decoder-only "
                "model")
    if not config.self_attention_causal:
        return (f"{config.name}'s self-attention is not causal: every position reads the whole text, so it does not "
                "predict the next token from the past alone")
    return ""


def reads_later(config, mask_mode: str | None, position: int) -> str:
    """Why the logits at `position` also depend on later tokens ("" when they read only the past)."""
    mode = mask_mode or ("causal" if config.self_attention_causal else "none")
    reasons = []
    if mode in ("none", "after-softmax"):
        reasons.append(f"the {mode!r} mask lets position {position} read later tokens")
    if config.architecture == "encoder-decoder":
        reasons.append("the encoder read the whole text, later tokens included, as the source, and cross-attention "
                       "reads all of it")
    return "; ".join(reasons)


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

    The whole sequence runs (under a leaky mask, or through an encoder-decoder's source, the prediction
    may read later tokens: `reads_later` says so; a causal model's does not, which the edit diff
    demonstrates). An encoder has no next token to predict: refused (`next_token_refusal`).
    """
    ids = as_token_list(tokens)
    check_position(position, len(ids))
    refusal = next_token_refusal(model.config)
    if refusal:
        raise SequenceError(refusal)
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
        reads_later=reads_later(config, mask_mode, position),
    )


__all__ = ["NextTokenPredictions", "continuation_refusal", "next_token_predictions", "next_token_refusal", "reads_later"]
