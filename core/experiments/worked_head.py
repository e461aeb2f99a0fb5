"""One attention head worked by hand for one query, and proven equal to the model's own head output.

The model runs once with its hook points captured: the block's input, q, k and v after any
rotation, and `hook_z`, the head's own output (weights @ v) before the heads are concatenated.
Nothing observes the scores or the weights, so the model keeps its fused attention kernel. The
hand path starts again from the attention's input and this head's rows of the weight matrix and
does every step itself: the q, k, v projections of this head's rows alone, the RoPE
rotation, q . k, the 1/sqrt(d_head) scale, the ALiBi penalty, the mask, the softmax, weights . v.

It runs twice. In float64 it gives the numbers shown. In the model's own dtype (float32) it shows
how far that dtype's rounding moves this very computation (`rounding`). The model sums in another
order (its matmul and attention kernels), so its rounding differs from the hand path's in value but
not in size: the difference is held to REORDER_FACTOR times `rounding`, plus a floor of a few units
of rounding per summed term at the output's scale. A step left out of the hand path (`omit`) misses
by orders of magnitude more.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields

import math

import numpy as np
import torch

from core import kernels
from core.choices import MASK_MODES
from core.experiments.common import token_labels
from core.hooks import capture
from core.model import Transformer
from core.positional import alibi_slopes, rope_angles, rope_frequencies

# Steps a student may leave out of the hand path to watch the equality break.
OMITTABLE_STEPS: dict[str, str] = {
    "scale": "the 1/sqrt(d_head) scale",
    "mask": "the mask",
    "rope": "the RoPE rotation",
    "alibi": "the ALiBi penalty",
}
# The model sums in another order than the hand path; its rounding is of the same size, not the same value.
REORDER_FACTOR = 16.0
FLOOR_ULPS = 16  # units in the last place of the model's dtype at the output's scale: the least a reordered sum moves


class WorkedHeadError(ValueError):
    """A layer, head, query or step that the model does not have; the message says which and why."""


@dataclass(frozen=True, eq=False)
class WorkedHead:
    """Every intermediate of one head for one query, the model's own output, and their difference."""

    layer: int
    head: int
    query: int
    mask_mode: str
    positional: str
    n_heads: int
    n_kv_heads: int
    kv_head: int  # the key/value head this query head reads
    shared_heads: tuple[int, ...]  # every query head that reads the same key/value head (itself included)
    d_head: int
    scale: float  # 1/sqrt(d_head), or 1.0 when omitted
    omitted: tuple[str, ...]
    labels: tuple[str, ...]  # (T,) token labels, keys and queries alike
    q_before: np.ndarray  # (d,) the query before any rotation
    q: np.ndarray  # (d,) the query the scores use (after RoPE)
    k_before: np.ndarray  # (T, d)
    k: np.ndarray  # (T, d) after RoPE
    v: np.ndarray  # (T, d)
    rope_angles: np.ndarray | None  # (T, d/2) the rotation angle of every position and pair, radians
    dots: np.ndarray  # (T,) q . k_j
    scaled: np.ndarray  # (T,) q . k_j / sqrt(d_head)
    alibi_slope: float | None  # this head's slope, None without ALiBi
    alibi_penalty: np.ndarray  # (T,) -slope * distance, zeros without ALiBi
    visible: np.ndarray  # (T,) bool: keys the mask leaves to the softmax
    zeroed_after_softmax: np.ndarray  # (T,) bool: keys the after-softmax pitfall zeroes
    scores: np.ndarray  # (T,) what enters the softmax: -inf where masked
    weights: np.ndarray  # (T,) softmax weights (NaN when the query sees no key)
    hand_output: np.ndarray  # (d,) weights . v, by hand
    model_output: np.ndarray  # (d,) the model's own head output (hook_z)
    model_q: np.ndarray  # (d,) the model's q (hook_q) for the same query
    max_difference: float  # max |hand - model| over the output; inf when their NaNs differ
    step_checks: tuple[tuple[str, float, float], ...]  # (step, max |hand - model|, tolerance) for q, k, v (hook_q/k/v)
    rounding: float  # max |hand path in the model's dtype - hand path in float64|
    tolerance: float  # what the difference is held to: REORDER_FACTOR * rounding + a floor
    unit_roundoff: float  # of the model's dtype (2^-24 for float32)
    dtype: str  # the model's dtype, and its matmuls' where they are reduced ("float32 with bfloat16 matmuls")
    block_label: str = ""  # "block 2", or "decoder block 2" in an encoder-decoder (its decoder self-attention)

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @property
    def reorder_factor(self) -> float:
        return REORDER_FACTOR

    @property
    def floor_ulps(self) -> int:
        return FLOOR_ULPS

    @property
    def n_keys(self) -> int:
        return len(self.labels)

    @property
    def equal(self) -> bool:
        return self.max_difference <= self.tolerance

    @property
    def sees_no_key(self) -> bool:
        return not self.visible.any()

    @property
    def nan_note(self) -> str:
        if not np.isnan(self.hand_output).any():
            return ""
        if self.sees_no_key:
            return " (both NaN: this query sees no key)"
        return " (both NaN: an earlier block's NaN, from a query that saw no key, reached these keys)"

    @property
    def verdict(self) -> str:
        if self.equal:
            nan = self.nan_note
            return (f"equal to the model's head output to {self.max_difference:.1e}{nan}, {self.dtype} rounding "
                    f"(tolerance {self.tolerance:.1e})")
        shown = "their NaNs differ" if np.isinf(self.max_difference) else f"max |difference| {self.max_difference:.3g}"
        left_out = f" ({', '.join(OMITTABLE_STEPS[s] for s in self.omitted)} left out)" if self.omitted else ""
        return (f"NOT the model's head output: {shown}, above the {self.dtype} rounding tolerance "
                f"{self.tolerance:.1e}{left_out}")

    def keys_by_weight(self) -> np.ndarray:
        """Key indices, the largest weight first (NaN weights last), ties in key order."""
        weights = np.nan_to_num(self.weights, nan=-1.0)
        return np.argsort(-weights, kind="stable")


def _check_choice(name: str, value: int, count: int, what: str, items: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise WorkedHeadError(f"{name} must be a whole number, not {value!r}")
    if not 0 <= int(value) < count:
        raise WorkedHeadError(f"{name} {value} is out of range: {what} has {items} 0 to {count - 1}")
    return int(value)


def _check_omitted(model: Transformer, omit: Collection[str]) -> tuple[str, ...]:
    omitted = tuple(dict.fromkeys(omit))
    for step in omitted:
        if step not in OMITTABLE_STEPS:
            raise WorkedHeadError(f"unknown step {step!r} to leave out; choose from {', '.join(OMITTABLE_STEPS)}")
        if step in ("rope", "alibi") and model.config.positional != step:
            raise WorkedHeadError(f"this model uses {model.config.positional} positions: it has no {step} step")
    return omitted


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of the last dimension by its angle: the reading's RoPE, by hand."""
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., d/2) each
    rotated = torch.empty_like(x)  # (..., d)
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def worked_head(
    model: Transformer,
    ids: Sequence[int],
    layer: int,
    head: int,
    query: int | None = None,
    mask_mode: str | None = None,
    omit: Collection[str] = (),
    tokenizer_or_labels=None,
) -> WorkedHead:
    """Head `head` of block `layer` for the token at `query` (the last one if None), by hand and by the model."""
    config = model.config
    ids = [int(i) for i in ids]
    model.check_tokens(torch.tensor([ids], dtype=torch.long))
    n_tokens = len(ids)
    layer = _check_choice("block", layer, len(model.blocks), "this model", "blocks")
    head = _check_choice("head", head, config.n_heads, "each block", "heads")
    query = _check_choice("query", n_tokens - 1 if query is None else query, n_tokens, "the sequence", "tokens")
    mode = mask_mode or ("causal" if config.self_attention_causal else "none")
    if mode not in MASK_MODES:
        raise WorkedHeadError(f"unknown mask mode {mode!r}; choose from {', '.join(MASK_MODES)}")
    omitted = _check_omitted(model, omit)

    block = model.blocks[layer]
    attn = block.attn
    d, n_kv = attn.d_head, attn.n_kv_heads
    group = attn.n_heads // n_kv
    kv_head = head // group  # repeat_interleave: query heads g*group .. (g+1)*group-1 read kv head g
    prefix = f"blocks.{layer}"
    names = [f"{prefix}.hook_resid_pre", *(f"{prefix}.attn.hook_{part}" for part in ("q", "k", "v", "z"))]
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.inference_mode():
        with capture(model, names) as seen:
            model(batch, mask_mode=mode, n_blocks=layer + 1, head=False)
        resid = seen[f"{prefix}.hook_resid_pre"]  # (1, T, D)
        x_in = block.norm1(resid) if block.pre_norm else resid  # (1, T, D) what the attention reads
        # Reduced-precision matmuls (--precision bf16 / fp16) round the projections' inputs: the hand path's
        # rounding pass does the same, so that the tolerance is the rounding the model actually did.
        matmul_dtype = kernels._low_dtype(x_in)
        q_width, kv_width = attn.n_heads * d, n_kv * d
        weight = attn.qkv.weight.detach().cpu()  # (q_width + 2 kv_width, D) in the model's dtype
        bias = None if attn.qkv.bias is None else attn.qkv.bias.detach().cpu()  # (q_width + 2 kv_width,)
        rope = None
        if config.positional == "rope":
            positions = torch.arange(n_tokens, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
            cos, sin = rope_angles(positions, d, config.rope_base, config.rope_scale)  # (T, d/2) each
            # The model's own cos and sin, in its dtype: the hand path redoes the rotation, not the table.
            rope = (cos.to(dtype), sin.to(dtype))
            angles = (np.arange(n_tokens) / config.rope_scale)[:, None] * rope_frequencies(
                d, config.rope_base, dtype=torch.float64).numpy()  # (T, d/2) radians, shown beside the rotation
        slope = float(alibi_slopes(config.n_heads)[head]) if config.positional == "alibi" else None
    model_q = seen[f"{prefix}.attn.hook_q"][0, head].double().cpu().numpy()  # (T, d)
    model_k = seen[f"{prefix}.attn.hook_k"][0, kv_head].double().cpu().numpy()  # (T, d)
    model_v = seen[f"{prefix}.attn.hook_v"][0, kv_head].double().cpu().numpy()  # (T, d)
    model_out = seen[f"{prefix}.attn.hook_z"][0, head, query].double().cpu().numpy()  # (d,)

    rows_q = slice(head * d, (head + 1) * d)
    rows_k = slice(q_width + kv_head * d, q_width + (kv_head + 1) * d)
    rows_v = slice(q_width + kv_width + kv_head * d, q_width + kv_width + (kv_head + 1) * d)
    parts = _HeadParts(
        x=x_in[0].detach().cpu(), w_q=weight[rows_q], w_k=weight[rows_k], w_v=weight[rows_v],
        b_q=None if bias is None else bias[rows_q], b_k=None if bias is None else bias[rows_k],
        b_v=None if bias is None else bias[rows_v], rope=rope, query=query, d_head=d, alibi_slope=slope,
        mask_mode=mode, omitted=omitted, matmul_dtype=matmul_dtype)
    with torch.inference_mode():
        exact = _by_hand(parts, torch.float64)
        # The same steps again in the model's own dtype: how far its rounding moves this very computation.
        rounded = _by_hand(parts, dtype, reverse=True)
    unit = float(torch.finfo(dtype).eps) / 2
    out = {name: value.numpy() for name, value in exact.items()}
    term_scale = float(np.nan_to_num(np.abs(out["weights"]) @ np.abs(out["v"])).max(initial=0.0))
    rounding, tolerance = _tolerance(rounded["output"], out["output"], term_scale, unit)
    step_checks = []
    for step, model_value in (("q", model_q[query]), ("k", model_k), ("v", model_v)):
        scale = float(np.nan_to_num(np.abs(out[step])).max(initial=0.0))
        step_tolerance = _tolerance(rounded[step], out[step], scale, unit)[1]
        step_checks.append((step, _max_difference(out[step], model_value), step_tolerance))
    return WorkedHead(
        layer=layer, head=head, query=query, mask_mode=mode, positional=config.positional,
        n_heads=attn.n_heads, n_kv_heads=n_kv, kv_head=kv_head,
        shared_heads=tuple(range(kv_head * group, (kv_head + 1) * group)), d_head=d,
        scale=1.0 if "scale" in omitted else 1.0 / math.sqrt(d),
        omitted=omitted, labels=token_labels(ids, tokenizer_or_labels),
        q_before=out["q_before"], q=out["q"], k_before=out["k_before"], k=out["k"], v=out["v"],
        rope_angles=angles if rope is not None else None,
        dots=out["dots"], scaled=out["scaled"], alibi_slope=slope, alibi_penalty=out["penalty"],
        visible=out["visible"], zeroed_after_softmax=out["zeroed"], scores=out["scores"], weights=out["weights"],
        hand_output=out["output"], model_output=model_out, model_q=model_q[query],
        max_difference=_max_difference(out["output"], model_out),
        step_checks=tuple(step_checks), rounding=rounding, tolerance=tolerance, unit_roundoff=unit,
        dtype=_dtype_name(dtype) + (f" with {_dtype_name(matmul_dtype)} matmuls" if matmul_dtype else ""),
        block_label=("decoder block" if config.architecture == "encoder-decoder" else "block") + f" {layer}",
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class _HeadParts:
    """What the hand path starts from: the attention's input, this head's weight rows, positions and mask."""

    x: torch.Tensor  # (T, D) the attention's input (after norm1 in a pre-norm block)
    w_q: torch.Tensor  # (d, D)
    w_k: torch.Tensor  # (d, D) the rows of the key/value head this query head reads
    w_v: torch.Tensor  # (d, D)
    b_q: torch.Tensor | None  # (d,)
    b_k: torch.Tensor | None
    b_v: torch.Tensor | None
    rope: tuple[torch.Tensor, torch.Tensor] | None  # the model's cos and sin, (T, d/2) each
    query: int
    d_head: int
    alibi_slope: float | None
    mask_mode: str
    omitted: tuple[str, ...]
    matmul_dtype: torch.dtype | None = None  # the projections' reduced precision, None for the model's dtype


def _project(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, reverse: bool) -> torch.Tensor:
    """x @ W^T + b for this head's rows of W; `reverse` sums the input features last to first."""
    if reverse:
        x, weight = x.flip(-1), weight.flip(-1)
    out = x @ weight.T  # (..., d)
    return out if bias is None else out + bias


def _by_hand(parts: _HeadParts, dtype: torch.dtype, reverse: bool = False) -> dict[str, torch.Tensor]:
    """Every step of the head for one query, in `dtype`: products and sums written out, one step a line.

    `reverse` takes every sum in the opposite order (the same rounding size, other rounding values).
    """
    def cast(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.to(dtype)

    x, query = cast(parts.x), parts.query  # (T, D)
    n_tokens = x.shape[0]
    low = parts.matmul_dtype if dtype != torch.float64 else None

    def project(rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if low is None:
            return _project(rows, cast(weight), cast(bias), reverse)
        return _project(rows.to(low), weight.to(low), None if bias is None else bias.to(low), reverse).to(dtype)

    q_before = project(x[query], parts.w_q, parts.b_q)  # (d,)
    k_before = project(x, parts.w_k, parts.b_k)  # (T, d)
    v = project(x, parts.w_v, parts.b_v)  # (T, d)
    q, k = q_before, k_before
    if parts.rope is not None and "rope" not in parts.omitted:
        cos, sin = cast(parts.rope[0]), cast(parts.rope[1])  # (T, d/2) each
        q = _rotate(q_before, cos[query], sin[query])  # (d,)
        k = _rotate(k_before, cos, sin)  # (T, d)
    dots = ((k * q).flip(-1) if reverse else k * q).sum(dim=-1)  # (T,) q . k_j
    scaled = dots if "scale" in parts.omitted else dots / math.sqrt(parts.d_head)  # (T,)
    keys = torch.arange(n_tokens)
    # The model's ALiBi distance is causal for every masked mode and symmetric without a mask.
    distance = (query - keys).clamp(min=0) if parts.mask_mode != "none" else (query - keys).abs()  # (T,)
    penalty = torch.zeros(n_tokens, dtype=dtype)  # (T,)
    if parts.alibi_slope is not None and "alibi" not in parts.omitted:
        penalty = (-parts.alibi_slope * distance.double()).to(dtype)  # (T,)
    masked = "mask" not in parts.omitted
    visible = torch.ones(n_tokens, dtype=torch.bool)  # (T,)
    if masked and parts.mask_mode == "causal":
        visible = keys <= query
    elif masked and parts.mask_mode == "off-by-one":
        visible = keys < query
    zeroed = torch.zeros(n_tokens, dtype=torch.bool)  # (T,)
    if masked and parts.mask_mode == "after-softmax":
        zeroed = keys > query
    scores = (scaled + penalty).masked_fill(~visible, float("-inf"))  # (T,)
    if visible.any():
        exps = (scores - scores.max()).exp()  # (T,) exp(-inf) = 0 where masked
        weights = exps / (exps.flip(0) if reverse else exps).sum()  # (T,)
    else:  # a softmax over nothing but -inf: NaN, as the model's softmax gives
        weights = torch.full((n_tokens,), float("nan"), dtype=dtype)
    weights = weights.masked_fill(zeroed, 0.0)  # (T,)
    terms = weights.unsqueeze(-1) * v  # (T, d)
    output = (terms.flip(0) if reverse else terms).sum(dim=0)  # (d,) weights . v
    return {"q_before": q_before, "q": q, "k_before": k_before, "k": k, "v": v, "dots": dots, "scaled": scaled,
            "penalty": penalty, "visible": visible, "zeroed": zeroed, "scores": scores, "weights": weights,
            "output": output}


def _tolerance(rounded: torch.Tensor, exact: np.ndarray, scale: float, unit: float) -> tuple[float, float]:
    """(rounding, tolerance): how far the model's dtype moved the hand path, and what a reordered sum may move."""
    rounding = _max_difference(rounded.double().numpy(), exact)
    rounding = rounding if np.isfinite(rounding) else 0.0
    ulp = float(np.spacing(np.float64(scale))) * (2 * unit / float(np.finfo(np.float64).eps))  # at `scale`
    return rounding, REORDER_FACTOR * rounding + FLOOR_ULPS * ulp


def _max_difference(hand: np.ndarray, model: np.ndarray) -> float:
    """max |hand - model|, NaN equal to NaN; inf where one side is NaN and the other is not."""
    hand_nan, model_nan = np.isnan(hand), np.isnan(model)
    if (hand_nan != model_nan).any():
        return float("inf")
    finite = ~hand_nan
    return float(np.abs(hand[finite] - model[finite]).max()) if finite.any() else 0.0
