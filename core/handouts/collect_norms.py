"""The Norms view for a page: the same random stack pre-norm and post-norm (core.experiments.norms, as
gui.panels.norms computes it), its three curves and the two captions the view writes.

A lesson shows one comparison in several steps (the log scale is a way of drawing, not an input): each comparison
is computed once per export and drawn as often as the steps show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from core.handouts.figures import StepFigures, lines

# The Norms panel's controls as the window starts them, and the batch the loss averages over
# (gui.panels.norms copies these; a test checks they agree).
NORMS_DEFAULTS: dict[str, Any] = {"depth": 12, "norm": "layernorm", "residual_scaling": False, "log_scale": False,
                                  "init": "gpt2", "d_model": 64, "n_heads": 4}
SEQ, BATCH = 32, 4
MAX_DEPTH, MAX_WIDTH, MAX_STACK_WEIGHTS = 96, 1024, 60_000_000
COMPARISONS_KEPT = 8  # the distinct comparisons one lesson holds at most


@lru_cache(maxsize=COMPARISONS_KEPT)
def _comparison(depth: int, norm: str, seed: int, residual_scaling: bool, init: str, d_model: int,
                n_heads: int) -> Any:
    from core.experiments.norms import PlacementComparison, norm_curves

    curves = {placement: norm_curves(depth, placement, norm, seed, d_model=d_model, n_heads=n_heads, seq=SEQ,
                                     batch=BATCH, residual_scaling=residual_scaling, init=init)
              for placement in ("pre", "post")}
    return PlacementComparison(pre=curves["pre"], post=curves["post"])


def _refusal(depth: int, width: int, heads: int) -> str:
    """The view's refusal of impossible sizes, in its words ("" when it runs)."""
    if not (1 <= depth <= MAX_DEPTH and 8 <= width <= MAX_WIDTH and 1 <= heads <= 64):
        return f"Blocks 1 to {MAX_DEPTH}, width 8 to {MAX_WIDTH} and 1 to 64 heads."
    if width % heads:
        return (f"The width d = {width} does not divide into {heads} heads: choose a width that is a multiple of "
                f"{heads}, or other heads.")
    weights = 12 * depth * width * width
    if weights > MAX_STACK_WEIGHTS:
        return (f"{depth} blocks of width {width} hold {weights:,} weights, more than the {MAX_STACK_WEIGHTS:,} this "
                "panel runs: choose fewer blocks or a smaller width.")
    return ""


def norms_figures(settings: Mapping[str, Any], seed: int) -> StepFigures:
    """The three plots (stream norm, stream gradient, each block's W^FFN,2 gradient) and the captions."""
    from core.experiments.norms_captions import (
        describe_forward,
        describe_gradients,
        describe_parameter_gradients,
        describe_regime,
    )

    settings = {**NORMS_DEFAULTS, **settings}
    depth, width, heads = int(settings["depth"]), int(settings["d_model"]), int(settings["n_heads"])
    refusal = _refusal(depth, width, heads)
    if refusal:
        raise ValueError(refusal)
    init = str(settings["init"])
    comparison = _comparison(depth, str(settings["norm"]), int(seed),
                             bool(settings["residual_scaling"]) and init == "gpt2", init, width, heads)
    pre, post = comparison.pre, comparison.post
    scale = "log" if settings["log_scale"] else "linear"
    layers = [int(layer) for layer in pre.layers]
    figures = (
        lines("forward_plot", "Residual stream: mean per-token ‖x‖", layers,
              {"pre-norm": pre.forward_norms, "post-norm": post.forward_norms},
              "layer (0 = embeddings, l = after block l)", "‖x‖", scale),
        lines("gradient_plot", "Stream gradient: ‖∂L/∂x‖", layers,
              {"pre-norm": pre.gradient_norms, "post-norm": post.gradient_norms},
              "layer (0 = embeddings, l = after block l)", "‖∂L/∂x‖", scale),
        lines("parameter_plot", "FFN output weight gradient per block: ‖∂L/∂W^FFN,2‖", layers[1:],
              {"pre-norm": pre.ffn_out_gradient_norms, "post-norm": post.ffn_out_gradient_norms},
              "block l (the matrix Xiong et al. plot)", "‖∂L/∂W^FFN,2‖", scale),
    )
    # The window writes the first line bold and the set-up muted; a page quotes the same words as plain text.
    caption = (f"{describe_forward(pre, post)}\n{describe_gradients(pre, post)} (d = {pre.d_model}, loss "
               f"{pre.loss:.3f}, {pre.norm}{', residual scaling' if pre.residual_scaling else ''}, seed {pre.seed})")
    parameter_caption = f"{describe_parameter_gradients(pre, post)}\n{describe_regime(pre, post)}"
    values = {"pre_growth": float(pre.forward_norms[-1] / pre.forward_norms[0]),
              "post_growth": float(post.forward_norms[-1] / post.forward_norms[0]),
              "post_gradient_step": float(post.gradient_norms[0] / post.gradient_norms[1]),
              "loss": float(pre.loss)}
    return StepFigures(figures, {"caption": caption, "parameter_caption": parameter_caption}, values)


__all__ = ["NORMS_DEFAULTS", "norms_figures"]
