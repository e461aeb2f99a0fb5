"""Attention maps: the attention weights of chosen blocks for one sequence, captured as they are made.

Nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from core.config import ConfigError
from core.experiments.common import ReadOnlyArrays, as_token_list, model_device, token_labels
from core.hooks import capture
from core.model import MaskMode, SequenceError, Transformer


@dataclass(frozen=True)
class AttentionMaps(ReadOnlyArrays):
    weights: np.ndarray  # (L, H, T, S) float32 attention weights of the chosen layers (one sequence)
    layers: tuple[int, ...]  # block index of each of the L maps
    layer_labels: tuple[str, ...]  # "block 0", ...
    query_labels: tuple[str, ...]  # T labels
    key_labels: tuple[str, ...]  # S labels (the source for cross-attention)
    mask_mode: str  # the self-attention mask used
    attention: str  # "self" or "cross"
    has_nan: bool  # NaN in some weight (a fully masked row)


def _chosen_layers(layer: int | Sequence[int] | None, n_blocks: int) -> tuple[int, ...]:
    if layer is None:
        chosen = tuple(range(n_blocks))
    elif isinstance(layer, int):
        chosen = (layer,)
    else:
        chosen = tuple(int(i) for i in layer)
    if not chosen:
        raise SequenceError("choose at least one layer")
    for index in chosen:
        if not 0 <= index < n_blocks:
            raise SequenceError(f"layer {index} does not exist (the model has blocks 0..{n_blocks - 1})")
    return chosen


def attention_maps(
    model: Transformer,
    tokens,
    layer: int | Sequence[int] | None = None,
    mask_mode: MaskMode | None = None,
    tokenizer_or_labels=None,
    attention: Literal["self", "cross"] = "self",
    source=None,
) -> AttentionMaps:
    """Attention weights of the chosen blocks (all if layer is None) for one sequence.

    Only the chosen layers' hook_pattern is observed, so the other layers keep the fused kernel,
    and the pass stops after the last chosen block.
    """
    ids = as_token_list(tokens)
    config = model.config
    if attention == "cross" and config.architecture != "encoder-decoder":
        raise ConfigError("architecture", "only an encoder-decoder model has cross-attention")
    chosen = _chosen_layers(layer, len(model.blocks))
    device = model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    source_batch = None
    source_ids = ids
    if config.architecture == "encoder-decoder":
        source_ids = ids if source is None else as_token_list(source)
        source_batch = torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    module = "attn" if attention == "self" else "cross_attn"
    hooks = [f"blocks.{i}.{module}.hook_pattern" for i in chosen]
    mode = mask_mode or ("causal" if config.self_attention_causal else "none")
    # Each block's pattern is copied into one preallocated array as it is made and then freed, so the
    # maps are held once (capturing them all and stacking would hold them twice: 1.2 GB for GPT-2 at 1,024).
    slots = {name: index for index, name in enumerate(hooks)}
    weights_holder: list[np.ndarray] = []
    layer_has_nan: list[bool] = []  # checked per layer: a NaN test of the whole array would allocate its size again

    def copy_out(name: str, output: torch.Tensor) -> None:
        pattern = output[0]  # (H, T, S)
        if not weights_holder:
            weights_holder.append(np.empty((len(hooks), *pattern.shape), dtype=np.float32))  # (L, H, T, S)
        slot = weights_holder[0][slots[name]]  # (H, T, S)
        slot[...] = pattern.float().cpu().numpy()
        layer_has_nan.append(bool(np.isnan(slot).any()))

    # head=False: no logits are read, and at GPT-2's vocabulary they would be the pass's largest tensor.
    with torch.inference_mode(), capture(model, hooks, on_output=copy_out):
        model(batch, source=source_batch, mask_mode=mode, n_blocks=max(chosen) + 1, head=False)
    weights = weights_holder[0]  # (L, H, T, S)
    labels = token_labels(ids, tokenizer_or_labels)
    return AttentionMaps(
        weights=weights,
        layers=chosen,
        layer_labels=tuple(f"block {i}" for i in chosen),
        query_labels=labels,
        key_labels=labels if attention == "self" else token_labels(source_ids, tokenizer_or_labels),
        mask_mode=mode,
        attention=attention,
        has_nan=any(layer_has_nan),
    )


__all__ = ["AttentionMaps", "attention_maps"]
