"""The Compare two, Width sweep and Budgets views of Parameters for a page, computed by core.experiments.budgets as
the window's views compute them (gui.panels.parameters.*), with the same cells and sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.display import format_bytes, format_flops, short_count
from core.handouts.figures import StepFigures, bars, lines, table
from core.presets import PRESETS

DEFAULT_COMPARE = ("gpt2-small", "gpt2-medium")  # gui.panels.parameters.panel
MAX_SWEEP_WIDTH = 16384  # gui.panels.parameters.sweep


def format_share(share: float) -> str:
    """A share as the Parameters views print it (gui.widgets.pie.format_share)."""
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{share:.1%}"


def meta_count(configs: tuple[Any, ...]) -> str:
    """The instantiated count against the formula's total (gui.panels.parameters.count), as plain text."""
    from core.params import instantiated_parameter_count, parameter_breakdown

    parts = []
    for config in dict.fromkeys(configs):
        counted, formula = instantiated_parameter_count(config), parameter_breakdown(config).total
        difference = "" if counted == formula else f" (by {counted - formula:+,})"
        name = f"{config.name}: " if len(set(configs)) > 1 else ""
        parts.append(f"{name}{counted:,}  {'✓ agrees' if counted == formula else '✗ differs'}{difference}")
    return "Instantiated on the meta device: " + ";  ".join(parts)


def parameters_view_figures(tab: int, settings: Mapping[str, Any], shown: Any, current: Any) -> StepFigures:
    """Sub-tab `tab` (1 Compare two, 2 Width sweep, 3 Budgets) for the picked model `shown` (tying applied)."""
    if tab == 1:
        return _compare(settings, current)
    if tab == 2:
        return _sweep(settings, shown)
    if tab == 3:
        return _budget(shown)
    raise ValueError(f"Parameters has no sub-tab {tab}")


def _compare(settings: Mapping[str, Any], current: Any) -> StepFigures:
    from core.experiments.budgets import compare_configs
    from core.params import parameter_breakdown

    names = (settings.get("compare_left", DEFAULT_COMPARE[0]), settings.get("compare_right", DEFAULT_COMPARE[1]))
    configs = [PRESETS.get(name, current) if name else current for name in names]
    comparison = compare_configs(configs[0], configs[1])
    figures = []
    for side, config in zip(("left", "right"), configs):
        breakdown = parameter_breakdown(config)
        groups = {name: count for name, count in breakdown.groups.items() if count}
        figures.append(bars("compare_views", f"{config.name} ({side}): {short_count(breakdown.total)} parameters",
                            list(groups), list(groups.values()), "group", "parameters"))
    rows = []
    for label, fmt in (
        ("layers × d", lambda s: f"{s.n_layers} × {s.d_model:,}"),
        ("parameters", lambda s: short_count(s.total_params)),
        ("token embeddings", lambda s: short_count(s.token_embeddings)),
        ("    share of all", lambda s: format_share(s.token_embedding_share)),
        ("+ positions: share", lambda s: format_share(s.embedding_share)),
        ("one block", lambda s: short_count(s.block_params)),
        ("    attention", lambda s: short_count(s.block_attention)),
        ("    FFN", lambda s: short_count(s.block_ffn)),
        ("FFN share of a block", lambda s: format_share(s.ffn_share_of_block)),
    ):
        rows.append((label, fmt(comparison.a), fmt(comparison.b)))
    figures.append(table("compare_table", "The two models side by side", ("", configs[0].name, configs[1].name),
                         rows))
    values = {"left_total": comparison.a.total_params, "right_total": comparison.b.total_params,
              "left_embedding_share_percent": 100.0 * comparison.a.embedding_share,
              "right_embedding_share_percent": 100.0 * comparison.b.embedding_share}
    return StepFigures(tuple(figures), {"compare_agree_label": meta_count(tuple(configs))}, values)


def sweep_widths(config: Any) -> list[int]:
    """Widths a quarter-octave apart in whole heads, plus the config's own (gui.panels.parameters.sweep)."""
    head = config.d_head
    multiples = {max(1, round(2 ** (i / 4))) for i in range(0, 4 * 15)}
    widths = {head * k for k in multiples if head * k <= max(MAX_SWEEP_WIDTH, config.d_model)}
    widths.add(config.d_model)
    return sorted(widths)


def _sweep(settings: Mapping[str, Any], config: Any) -> StepFigures:
    from core.experiments.budgets import embedding_share_sweep, scaled_config

    sweep = embedding_share_sweep(config, sweep_widths(config))
    widths = [int(width) for width in sweep.widths]
    picked = settings.get("width")
    width = picked if picked in widths else config.d_model
    index = widths.index(width)
    share, ffn = float(sweep.embedding_share[index]), float(sweep.ffn_share_of_block[index])
    figure = lines("sweep_plot", "As the width grows, the d² blocks outgrow the V·d embeddings", widths,
                   {"embeddings / all parameters": 100 * sweep.embedding_share,
                    "FFN / one block": 100 * sweep.ffn_share_of_block}, "width d_model", "share (%)",
                   marker={"name": "d", "label": "width d_model", "value": width, "options": widths}, x_scale="log")
    scaled = scaled_config(config, width)
    label = (f"d = {width:,} ({scaled.n_heads} heads of {scaled.d_head}, d_ff {scaled.d_ff:,}): "
             f"{short_count(int(sweep.total_params[index]))} parameters; the embeddings are {format_share(share)} of "
             f"them, the FFN {format_share(ffn)} of a block.")
    crossing = next((w for w, s in zip(widths, sweep.embedding_share) if s < 0.5), None)
    return StepFigures((figure,), {"sweep_label": label},
                       {"embedding_share_percent": 100 * share, "ffn_share_percent": 100 * ffn,
                        "width_embeddings_below_half": crossing if crossing is not None else -1,
                        "log2_width": math.log2(width)})


def _budget(config: Any) -> StepFigures:
    from core.experiments.budgets import compute_budget

    budget = compute_budget(config)
    moe = f", of {short_count(budget.total_params)} in all" if budget.active_params != budget.total_params else ""
    label = (f"{config.name}: N = {short_count(budget.active_params)} parameters per token{moe}. Training ≈ 6N FLOP "
             f"per token (forward 2N, backward 4N); inference adds the attention scores at T = {budget.seq_len:,}. "
             "Weights count every parameter; the KV cache holds K and V of every layer.")
    rows: list[tuple[str, Any]] = [
        ("training FLOPs per token (6N)", format_flops(budget.training_flops_per_token)),
        (f"inference FLOPs per token (at T = {budget.seq_len:,})", format_flops(budget.inference_flops_per_token)),
        ("    of which attention scores", format_flops(budget.attention_flops_per_token)),
        ("weights", budget.weight_bytes),
        ("KV cache per token", budget.kv_cache_bytes_per_token),
        (f"KV cache at the context length ({budget.context_length:,} tokens)", budget.kv_cache_bytes_full_context),
    ]
    cells = [(name, value, "", "") if isinstance(value, str)  # a FLOP count does not depend on the dtype
             else (name, *(format_bytes(value[dtype]) for dtype in ("fp32", "bf16", "int8"))) for name, value in rows]
    figure = table("budget_table", f"{config.name}: compute and memory", ("quantity", "fp32", "bf16", "int8"), cells)
    return StepFigures((figure,), {"budget_label": label},
                       {"training_flops_per_token": float(budget.training_flops_per_token),
                        "weights_fp32_bytes": int(budget.weight_bytes["fp32"])})


__all__ = ["parameters_view_figures"]
