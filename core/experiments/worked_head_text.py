"""The One head view's words and cells: which keys it lists, each key's steps, the query and key vectors
dimension by dimension, and the captions, read from a core.experiments.worked_head result.

Torch-free; the window and the offline pages both write the view from here, so they say the same.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

TOP_KEYS = 12  # keys listed until "all keys" is ticked: the largest weights, in key order


def number(value: float, digits: int = 4) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    return f"{value:.{digits}g}"


def head_text(worked: Any) -> str:
    """Which head and query, the scale, and what grouped-query attention, RoPE or ALiBi do to this head."""
    label = worked.labels[worked.query]
    parts = [f"{worked.block_label.capitalize()}, head {worked.head}, query {worked.query} '{label}' "
             f"({worked.mask_mode} mask). d_head = {worked.d_head}, so the scores are divided by "
             f"√{worked.d_head} = {math.sqrt(worked.d_head):.4g}"
             + (" (left out here)." if "scale" in worked.omitted else ".")]
    if worked.n_kv_heads < worked.n_heads:
        others = [h for h in worked.shared_heads if h != worked.head]
        sharing = (f"shared with query head{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}"
                   if others else "read by this head alone")
        kind = "multi-query" if worked.n_kv_heads == 1 else "grouped-query"
        parts.append(f"{kind.capitalize()} attention: {worked.n_heads} query heads, {worked.n_kv_heads} key/value "
                     f"head{'s' if worked.n_kv_heads > 1 else ''}; this head reads kv head {worked.kv_head}, "
                     f"{sharing}.")
    if worked.positional == "rope":
        parts.append("RoPE rotates each (even, odd) pair of q and every k by position × its frequency before q.k"
                     + (" (left out here)." if "rope" in worked.omitted else "."))
    if worked.alibi_slope is not None:
        parts.append(f"ALiBi adds -{worked.alibi_slope:.4g} × distance to each score"
                     + (" (left out here)." if "alibi" in worked.omitted else "."))
    return " ".join(parts)


def key_rows(worked: Any, all_keys: bool) -> list[int]:
    """The keys listed: all of them, or the TOP_KEYS of largest weight in key order."""
    if all_keys or worked.n_keys <= TOP_KEYS:
        return list(range(worked.n_keys))
    return sorted(int(k) for k in worked.keys_by_weight()[:TOP_KEYS])


def key_headers(worked: Any) -> list[str]:
    scaled = "not scaled" if "scale" in worked.omitted else f"÷√{worked.d_head}"
    return ["token", "q.k", scaled, *(["ALiBi"] if worked.alibi_slope is not None else []), "mask", "score", "weight"]


def key_cells(worked: Any, key: int) -> list[str]:
    """One key's token and steps, in key_headers' order."""
    visible, zeroed = bool(worked.visible[key]), bool(worked.zeroed_after_softmax[key])
    mask = "visible" if visible and not zeroed else ("zeroed after" if zeroed else "masked: -∞")
    alibi = worked.alibi_slope is not None
    return [worked.labels[key], number(worked.dots[key]), number(worked.scaled[key]),
            *([number(worked.alibi_penalty[key])] if alibi else []), mask, number(worked.scores[key]),
            number(float(worked.weights[key]))]


def keys_caption(worked: Any, rows: list[int]) -> str:
    n_keys = worked.n_keys
    finite = np.nan_to_num(worked.weights)
    listed = "Every key" if len(rows) == n_keys else f"The {len(rows)} keys of largest weight, of {n_keys}"
    return (f"{listed}; {int(worked.visible.sum())} of {n_keys} visible to query {worked.query}. Weights shown "
            f"sum to {float(finite[rows].sum()):.4f} (all keys: {float(finite.sum()):.4f}).")


def vector_headers(worked: Any, key: int) -> list[str]:
    rotated = worked.rope_angles is not None and "rope" not in worked.omitted
    return ["q", *(["q rotated"] if rotated else []), f"k{key}", *([f"k{key} rotated"] if rotated else []),
            f"q·k{key} term", f"v{key}", f"w{key}·v{key}", "hand output", "model output", "|difference|"]


def vector_cells(worked: Any, key: int) -> list[list[str]]:
    """One row per dimension of the head, in vector_headers' order."""
    rotated = worked.rope_angles is not None and "rope" not in worked.omitted
    products = worked.q * worked.k[key]  # (d_head,) the terms of q . k_key
    contribution = np.nan_to_num(worked.weights[key]) * worked.v[key]  # (d_head,)
    difference = np.abs(worked.hand_output - worked.model_output)  # (d_head,)
    cells = []
    for i in range(worked.d_head):
        values = [worked.q_before[i], *([worked.q[i]] if rotated else []), worked.k_before[key, i],
                  *([worked.k[key, i]] if rotated else []), products[i], worked.v[key, i], contribution[i],
                  worked.hand_output[i], worked.model_output[i], difference[i]]
        cells.append([number(float(v)) for v in values])
    return cells


def vectors_caption(worked: Any, key: int) -> str:
    angle = ""
    if worked.rope_angles is not None:
        turns = "would turn (left out here)" if "rope" in worked.omitted else "turns"
        angles = worked.rope_angles
        angle = (f" RoPE {turns} pair 0 by {angles[worked.query, 0]:.4g} rad at the query, {angles[key, 0]:.4g} at "
                 f"the key; the slowest pair by {angles[worked.query, -1]:.3g} and {angles[key, -1]:.3g}.")
    return (f"Query {worked.query} and key {key} '{worked.labels[key]}': the q·k terms sum to "
            f"{number(float(worked.dots[key]))}; weight {number(float(worked.weights[key]))} × v{key} is this "
            f"key's share of the output.{angle}")


def tolerance_text(worked: Any) -> str:
    checks = ", ".join(f"{step} {difference:.1e}" + ("" if difference <= tolerance else " (above its tolerance)")
                       for step, difference, tolerance in worked.step_checks)
    return (f"Tolerance: the hand path runs in float64; the same steps in {worked.dtype}, every sum reversed, move "
            f"the output by {worked.rounding:.1e}, which is {worked.dtype} rounding here. The model sums in its "
            f"kernels' own order, so it is held to {worked.reorder_factor:g} × that + {worked.floor_ulps} ulps = "
            f"{worked.tolerance:.1e}. Against the model's hook_q, hook_k, hook_v: {checks}.")
