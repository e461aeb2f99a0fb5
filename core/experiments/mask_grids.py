"""Mask grids: which key each query can read under a mask mode, built from the model's own mask helper.

Nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch

from core.choices import MASK_MODE_DESCRIPTIONS, MASK_MODES
from core.config import ConfigError, ModelConfig
from core.experiments.common import ReadOnlyArrays
from core.model import MaskMode, SequenceError, future_mask

MaskGridKind = Literal["decoder-self", "encoder-self", "cross"]
MASK_GRID_KINDS: tuple[str, ...] = get_args(MaskGridKind)


@dataclass(frozen=True)
class MaskGrid(ReadOnlyArrays):
    """Which key each query can read, as the model applies it (True = visible)."""

    visible: np.ndarray  # (T, S) bool, keys whose values can be mixed into the query's output
    in_denominator: np.ndarray  # (T, S) bool, keys whose scores enter the query's softmax
    query_labels: tuple[str, ...]  # T row labels
    key_labels: tuple[str, ...]  # S column labels
    kind: str  # decoder-self, encoder-self or cross
    mask_mode: str  # the mask the grid shows ("none" for cross-attention)
    title: str  # e.g. "decoder self-attention, causal mask"
    empty_rows: np.ndarray  # (T,) bool, queries that see no key at all (softmax 0/0 -> NaN)
    note: str  # what the grid means


def _self_attention_mode(config: ModelConfig, kind: str, mask_mode: str | None) -> str:
    if kind == "decoder-self":
        if config.decoder_layers == 0:
            raise ConfigError("architecture", "an encoder-only model has no decoder self-attention")
        return mask_mode or ("causal" if config.self_attention_causal else "none")
    if config.encoder_layers == 0:
        raise ConfigError("architecture", "a decoder-only model has no encoder self-attention")
    if config.architecture == "encoder-decoder" and mask_mode not in (None, "none"):
        raise ConfigError("architecture", "the encoder tower of an encoder-decoder always attends both ways")
    return mask_mode or "none"


def mask_grid(
    config: ModelConfig,
    n_tokens: int,
    kind: MaskGridKind = "decoder-self",
    mask_mode: MaskMode | None = None,
    n_source: int | None = None,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
) -> MaskGrid:
    """The (T, S) visibility grid of one kind of attention under one mask mode.

    mask_mode None means what the model does by default. Cross-attention (an encoder-decoder's
    decoder reading the encoder output) has no mask: every query sees all n_source keys.
    """
    if kind not in MASK_GRID_KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(MASK_GRID_KINDS)}")
    if mask_mode is not None and mask_mode not in MASK_MODES:
        raise ValueError(f"unknown mask mode {mask_mode!r}; choose one of {', '.join(MASK_MODES)}")
    if n_tokens < 1:
        raise SequenceError("a mask grid needs at least one token")
    if kind == "cross":
        if config.architecture != "encoder-decoder":
            raise ConfigError("architecture", "only an encoder-decoder model has cross-attention")
        if mask_mode not in (None, "none"):
            raise ConfigError("attention", "cross-attention is never masked: the decoder reads the whole source")
        n_keys = n_tokens if n_source is None else n_source
        visible = np.ones((n_tokens, n_keys), dtype=bool)  # (T, S)
        denominator = visible.copy()
        mode = "none"
        note = "Cross-attention: every decoder position reads every encoder position; the source is fully known."
    else:
        mode = _self_attention_mode(config, kind, mask_mode)
        n_keys = n_tokens
        # The same helper the model masks with, so the grid is the model's mask, not a redrawing of it.
        later = future_mask(n_tokens, n_keys, 1, torch.device("cpu")).numpy()  # (T, S) True = future
        self_and_later = future_mask(n_tokens, n_keys, 0, torch.device("cpu")).numpy()  # (T, S)
        everything = np.ones((n_tokens, n_keys), dtype=bool)
        if mode == "causal":
            visible, denominator = ~later, ~later
        elif mode == "off-by-one":
            visible, denominator = ~self_and_later, ~self_and_later
        elif mode == "after-softmax":
            visible, denominator = ~later, everything
        else:
            visible, denominator = everything, everything.copy()
        note = MASK_MODE_DESCRIPTIONS[mode]
    empty = ~visible.any(axis=1)  # (T,)
    where = {"decoder-self": "decoder self-attention", "encoder-self": "encoder self-attention", "cross": "cross-attention"}[kind]
    if kind == "decoder-self" and config.architecture == "decoder":
        where = "self-attention"
    rows = tuple(query_labels) if query_labels is not None else tuple(str(t) for t in range(n_tokens))
    cols = tuple(key_labels) if key_labels is not None else tuple(str(s) for s in range(n_keys))
    if len(rows) != n_tokens or len(cols) != n_keys:
        raise SequenceError(f"expected {n_tokens} query labels and {n_keys} key labels")
    return MaskGrid(
        visible=visible,
        in_denominator=denominator,
        query_labels=rows,
        key_labels=cols,
        kind=kind,
        mask_mode=mode,
        title=f"{where}, {'no' if mode == 'none' else mode} mask",
        empty_rows=empty,
        note=note,
    )


__all__ = ["MASK_GRID_KINDS", "MASK_MODE_DESCRIPTIONS", "MaskGrid", "MaskGridKind", "mask_grid"]
