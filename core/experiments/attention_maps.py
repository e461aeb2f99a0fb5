"""Attention maps: the attention weights of chosen blocks for one sequence, captured as they are made.

Three kinds of attention, as a model has them: "self" (the token stream's own: a decoder's, causal,
or an encoder's, both ways), "cross" (an encoder-decoder's decoder reading the encoder's output:
decoder positions by source positions) and "encoder" (the encoder tower of an encoder-decoder,
which always attends both ways). Nothing here imports Qt.
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

ATTENTION_KINDS = ("self", "cross", "encoder")


@dataclass(frozen=True)
class AttentionMaps(ReadOnlyArrays):
    weights: np.ndarray  # (L, H, T, S) float32 attention weights of the chosen layers (one sequence)
    layers: tuple[int, ...]  # block index of each of the L maps
    layer_labels: tuple[str, ...]  # "block 0", ...
    query_labels: tuple[str, ...]  # T labels
    key_labels: tuple[str, ...]  # S labels (the source for cross-attention)
    mask_mode: str  # the mask of these maps: the stream's self-attention mask, "none" for cross and encoder
    attention: str  # "self", "cross" or "encoder"
    has_nan: bool  # NaN in some weight (a fully masked row)
    title: str = ""  # what the maps are, e.g. "cross-attention (decoder × source)"


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
    attention: Literal["self", "cross", "encoder"] = "self",
    source=None,
) -> AttentionMaps:
    """Attention weights of the chosen blocks (all if layer is None) for one sequence.

    An encoder-decoder's encoder reads `source` (default: the tokens themselves, as the model does).
    Only the chosen layers' hook_pattern is observed, so the other layers keep the fused kernel,
    and the pass stops after the last chosen block (of the decoder; "encoder" runs the encoder alone).
    """
    ids = as_token_list(tokens)
    config = model.config
    if attention not in ATTENTION_KINDS:
        raise ConfigError("attention", f"unknown attention {attention!r}; choose one of {', '.join(ATTENTION_KINDS)}")
    pair = config.architecture == "encoder-decoder"
    if attention == "cross" and not pair:
        raise ConfigError("architecture", "only an encoder-decoder model has cross-attention")
    if attention == "encoder" and not pair:
        raise ConfigError("architecture", "only an encoder-decoder model has an encoder tower apart from its token "
                                          "stream; its self-attention is attention 'self'")
    if attention == "encoder" and mask_mode not in (None, "none"):
        raise ConfigError("attention", "the encoder tower of an encoder-decoder always attends both ways")
    stack = model.encoder_blocks if attention == "encoder" else model.blocks
    chosen = _chosen_layers(layer, len(stack))
    device = model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    source_batch = None
    source_ids = ids
    if config.architecture == "encoder-decoder":
        source_ids = ids if source is None else as_token_list(source)
        source_batch = torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    prefix = {"self": "blocks.{}.attn", "cross": "blocks.{}.cross_attn", "encoder": "encoder_blocks.{}.attn"}[attention]
    hooks = [prefix.format(i) + ".hook_pattern" for i in chosen]
    stream_mode = mask_mode or ("causal" if config.self_attention_causal else "none")
    # Cross-attention reads the whole source and the encoder tower attends both ways: their maps have no mask,
    # while the decoder the cross-attention sits in still runs with its own.
    mode = stream_mode if attention == "self" else "none"
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
        if attention == "encoder":
            model.encode(source_batch)
        else:
            model(batch, source=source_batch, mask_mode=stream_mode, n_blocks=max(chosen) + 1, head=False)
    weights = weights_holder[0]  # (L, H, T, S)
    labels = token_labels(ids, tokenizer_or_labels)
    source_labels = token_labels(source_ids, tokenizer_or_labels) if pair else labels
    tower = {"self": "decoder " if pair else "", "cross": "decoder ", "encoder": "encoder "}[attention]
    return AttentionMaps(
        weights=weights,
        layers=chosen,
        layer_labels=tuple(f"{tower}block {i}" for i in chosen),
        query_labels=source_labels if attention == "encoder" else labels,
        key_labels=labels if attention == "self" else source_labels,
        mask_mode=mode,
        attention=attention,
        has_nan=any(layer_has_nan),
        title=attention_title(config, attention),
    )


def attention_title(config, attention: str) -> str:
    """What a kind of attention is in this model, in a few words."""
    if attention == "cross":
        return "cross-attention (decoder × source)"
    if attention == "encoder":
        return "encoder self-attention (both ways)"
    if config.architecture == "encoder-decoder":
        return "decoder self-attention"
    return "self-attention" + (" (both ways)" if config.architecture == "encoder" else "")


def attention_kinds(config) -> tuple[str, ...]:
    """The kinds of attention a model has: its stream's own, and an encoder-decoder's cross and encoder attention."""
    return ("self", "cross", "encoder") if config.architecture == "encoder-decoder" else ("self",)


__all__ = ["ATTENTION_KINDS", "AttentionMaps", "attention_kinds", "attention_maps", "attention_title"]
