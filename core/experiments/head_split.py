"""The reading's head-split check: head 0 of the lab's Attention against one head run alone.

Nothing here imports Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ConfigError, ModelConfig
from core.experiments.common import ReadOnlyArrays
from core.hooks import capture
from core.model import Attention


@dataclass(frozen=True)
class HeadSplitCheck(ReadOnlyArrays):
    """Head 0 of a multi-head layer against one head run alone on its d_head slice of q, k, v."""

    single_head_weights: np.ndarray  # (T, T) the reference: one head on q, k, v[..., :d_head]
    multi_head_weights: np.ndarray  # (T, T) head 0 of the lab's Attention (view(B,T,H,d) then transpose)
    wrong_reshape_weights: np.ndarray  # (T, T) head 0 after a single view(B, H, T, d_head)
    correct_difference: float  # max |multi-head head 0 - single head| over weights and head outputs
    wrong_difference: float  # max |wrong-reshape head 0 - single head| over weights and head outputs
    d_model: int
    n_heads: int
    d_head: int
    n_tokens: int
    seed: int
    note: str


def _single_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of one head; q, k, v: (T, d_head). Returns weights and output."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T, T)
    if causal:
        blocked = torch.ones(scores.shape, dtype=torch.bool).triu(diagonal=1)  # (T, T)
        scores = scores.masked_fill(blocked, float("-inf"))  # (T, T)
    weights = F.softmax(scores, dim=-1)  # (T, T)
    return weights, weights @ v  # (T, T), (T, d_head)


def head_split_check(seed: int, d_model: int = 64, n_heads: int = 4, T: int = 8, causal: bool = True) -> HeadSplitCheck:
    """Run the reading's head-split unit test on the lab's Attention layer.

    The layer is built with PyTorch's default init from `seed` (without touching the global RNG);
    the input is standard normal. Head 0's pattern and output are compared with a single-head
    attention on the first d_head columns of the fused q, k and v projections; the wrong reshape
    (one .view(B, H, T, d_head) straight from (B, T, D)) is computed the same way for contrast.
    """
    if d_model % n_heads:
        raise ConfigError("n_heads", f"d_model {d_model} is not divisible by n_heads {n_heads}")
    config = ModelConfig(name="head-split", d_model=d_model, n_heads=n_heads, d_ff=4 * d_model, context_length=T, positional="none").validated()
    d_head = config.d_head
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = Attention(config).eval()
        x = torch.randn(1, T, d_model)  # (1, T, D)
    mode = "causal" if causal else "none"
    with torch.no_grad():
        with capture(layer, ["hook_pattern", "hook_v"]) as store:
            layer(x, mask_mode=mode)
        multi_weights = store["hook_pattern"][0, 0]  # (T, T)
        multi_out = multi_weights @ store["hook_v"][0, 0]  # (T, d_head)
        q, k, v = layer.qkv(x).split(d_model, dim=-1)  # (1, T, D) each
        single_weights, single_out = _single_head(q[0, :, :d_head], k[0, :, :d_head], v[0, :, :d_head], causal)
        # The pitfall: one view reinterprets the (T, D) memory as (H, T, d_head), mixing heads and time.
        # (.contiguous() stands for separate q/k/v projections; a view of a fused slice would refuse.)
        wrong_q, wrong_k, wrong_v = (t.contiguous().view(1, n_heads, T, d_head)[0, 0] for t in (q, k, v))  # (T, d_head) each
        wrong_weights, wrong_out = _single_head(wrong_q, wrong_k, wrong_v, causal)

    def difference(weights: torch.Tensor, out: torch.Tensor) -> float:
        return max(
            (weights - single_weights).abs().max().item(),
            (out - single_out).abs().max().item(),
        )

    correct = difference(multi_weights, multi_out)
    wrong = difference(wrong_weights, wrong_out)
    return HeadSplitCheck(
        single_head_weights=single_weights.numpy(),
        multi_head_weights=multi_weights.numpy(),
        wrong_reshape_weights=wrong_weights.numpy(),
        correct_difference=correct,
        wrong_difference=wrong,
        d_model=d_model,
        n_heads=n_heads,
        d_head=d_head,
        n_tokens=T,
        seed=seed,
        note=(
            f"view(B, T, H, d_head).transpose(1, 2): head 0 matches a lone head on its slice "
            f"(max difference {correct:.1e}). A single view(B, H, T, d_head) gives head 0 the rows of "
            f"other tokens' features: max difference {wrong:.3f}."
        ),
    )


__all__ = ["HeadSplitCheck", "head_split_check"]
