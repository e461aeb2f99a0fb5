"""The Norms panel's captions: what the measured curves say, in words, for one pre/post comparison.

Every figure in a caption is read from the result (a core.experiments.norms.PlacementComparison's
two NormCurves); nothing here runs torch.
"""

from __future__ import annotations

import math

import numpy as np

NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
TREND = 1.1  # a fitted change over the stack beyond this factor either way is called growth or a fall


def _ratio_text(ratio: float) -> str:
    return f"×{ratio:.2f}" if ratio < 10 else f"×{ratio:.0f}" if ratio < 1e4 else f"×{ratio:.1e}"


def describe_forward(pre, post) -> str:
    """One line on which stream grows, from the measured norms."""
    depth = pre.depth
    growth = pre.forward_norms[-1] / pre.forward_norms[0]
    verb = "grows" if growth >= 1.05 else "shrinks" if growth <= 0.95 else "stays level"
    after_blocks = post.forward_norms[1:]
    root_d = math.sqrt(post.d_model)
    level, spread = float(np.mean(after_blocks)), float(np.ptp(after_blocks))
    if abs(level - root_d) < 0.01 * root_d and spread < 0.01 * root_d:
        post_text = f"post-norm stays at √d = {root_d:.2f} after every block"
    else:
        post_text = (f"post-norm stays between {after_blocks.min():.2f} and {after_blocks.max():.2f} after the first "
                     "block")
    return (f"Stream: pre-norm {verb} {_ratio_text(growth)} over {depth} block{'s' * (depth != 1)} "
            f"({pre.forward_norms[0]:.2f} → {pre.forward_norms[-1]:.2f}); {post_text}.")


def describe_gradients(pre, post) -> str:
    """One line on how the stream gradient changes from the top of the stack down to the embeddings.

    Post-norm's change is split into its two parts, measured: from the last block down to block 1,
    and the one step from block 1 into the embeddings, beside how much the first norm stretched them.
    """
    parts = []
    for curves in (pre, post):
        gradient = curves.gradient_norms
        bottom, top = gradient[0], gradient[-1]
        parts.append(f"{curves.placement}-norm {top:.3g} → {bottom:.3g} ({_ratio_text(bottom / top)})")
    gradient, forward = post.gradient_norms, post.forward_norms
    step = _ratio_text(gradient[0] / gradient[1])
    within = (f"{_ratio_text(gradient[1] / gradient[-1])} from block {post.depth} down to block 1, then "
              if post.depth > 1 else "")
    split = (f"post-norm's is {within}{step} in the one step from block 1 into the embeddings, whose length "
             f"{forward[0]:.2f} the first {NORM_NAMES.get(post.norm, post.norm)} stretched to {forward[1]:.2f}")
    return "Stream gradient, last block → embeddings: " + "; ".join(parts) + f". Of that, {split}."


def describe_parameter_gradients(pre, post) -> str:
    """One line on the weight gradient of each block: the last block's against the first's, and the spread."""
    if pre.depth == 1:
        values = "; ".join(f"{c.placement}-norm {c.parameter_gradient_norms[0]:.3g}" for c in (pre, post))
        return f"Weight gradient ‖∂L/∂W‖ over all its matrices of the one block: {values}."
    parts, spreads = [], []
    for curves in (pre, post):
        weights = curves.parameter_gradient_norms
        parts.append(f"{curves.placement}-norm {_ratio_text(weights[-1] / weights[0])} "
                     f"({weights[0]:.3g} → {weights[-1]:.3g})")
        spreads.append(f"{curves.placement}-norm {_ratio_text(weights.max() / weights.min())}")
    return (f"Weight gradient ‖∂L/∂W‖ over all its matrices, block {pre.depth} against block 1: " + "; ".join(parts)
            + ". Largest ÷ smallest block: " + ", ".join(spreads) + ".")


def fitted_change(values: np.ndarray) -> float:
    """The change over the stack from a straight-line fit of log(value) against block index.

    Steadier than last / first, which two noisy blocks decide; 1 for a single block.
    """
    if len(values) < 2:
        return 1.0
    slope = np.polyfit(np.arange(len(values)), np.log(values), 1)[0]
    return float(np.exp(slope * (len(values) - 1)))


def trend_word(change: float) -> str:
    return "grows" if change >= TREND else "falls" if change <= 1 / TREND else "stays level"


def describe_regime(pre, post) -> str:
    """Which regime this is and what it shows, from the measured W^{FFN,2} gradients and write sizes."""
    depth = pre.depth
    write = float(np.mean(post.write_ratios))
    changes = {c.placement: fitted_change(c.ffn_out_gradient_norms) for c in (pre, post)}
    ratios = {c.placement: c.ffn_out_gradient_norms[-1] / c.ffn_out_gradient_norms[0] for c in (pre, post)}
    if depth == 1:
        trend = "With one block there is no layer-to-layer trend to compare."
    else:
        trend = ("‖∂L/∂W^FFN,2‖ from block 1 to block {depth} (fitted over all blocks; last ÷ first in brackets): "
                 "post-norm {post_word} {post:s} ({post_ratio}), pre-norm {pre_word} {pre:s} ({pre_ratio}).").format(
            depth=depth, post_word=trend_word(changes["post"]), post=_ratio_text(changes["post"]),
            post_ratio=_ratio_text(ratios["post"]), pre_word=trend_word(changes["pre"]),
            pre=_ratio_text(changes["pre"]), pre_ratio=_ratio_text(ratios["pre"]))
    setup = (f"d = {pre.d_model}, {pre.n_heads} heads, d_ff = {4 * pre.d_model}, {depth} block{'s' * (depth != 1)}, "
             f"next-token loss on {pre.batch} × {pre.seq} random tokens")
    rescale = math.sqrt(1 + write * write)
    if pre.init == "xavier":
        head = (f"Xavier, as Xiong et al. (2020) ({setup}; the paper's loss is a translation model's). Each "
                f"post-norm FFN writes {write:.2f} × the length of the stream it joins, so every LayerNorm "
                f"divides by about √(1 + {write:.2f}²) = {rescale:.2f}.")
        if depth == 1:
            verdict = ""
        elif changes["post"] >= TREND and changes["pre"] < changes["post"] / TREND:
            verdict = (" Post-norm's later blocks get the larger gradients, the paper's Fig. 3 finding for post-LN.")
        else:
            verdict = (" Post-norm's growth toward the output does not show at this depth and seed; the paper's "
                       "Fig. 3 shows it. Try more blocks or another seed.")
        if depth > 1 and changes["pre"] <= 1 / TREND:
            verdict += (" Pre-norm's are not level here as in the paper's figure: its first blocks add to a "
                        f"shorter stream (×{pre.forward_norms[-1] / pre.forward_norms[0]:.2f} longer at the top), "
                        "so the final norm passes back less to the last blocks.")
    else:
        head = (f"GPT-2's N(0, 0.02) ({setup}). Each post-norm FFN writes only {write:.3f} × the length of the "
                f"stream it joins, so every LayerNorm divides by about √(1 + {write:.3f}²) = {rescale:.4f}: the "
                "norms barely rescale.")
        verdict = ""
        if depth > 1 and trend_word(changes["post"]) == "stays level":
            verdict = (" So post-norm's later blocks get no larger gradient than its first: Xiong et al.'s growth "
                       "needs writes comparable to the stream (choose Xavier).")
    return f"{head} {trend}{verdict}"
