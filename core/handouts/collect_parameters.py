"""The Compare two, Width sweep and Budgets views of Parameters for a page, computed by core.experiments.budgets as
the window's views compute them (gui.panels.parameters.*), with the same cells and sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.display import format_bytes, format_share, short_count
from core.experiments.budget_captions import budget_rows, budget_summary
from core.experiments.budgets import sweep_widths
from core.handouts.figures import StepFigures, bars, lines, table
from core.presets import PRESETS

DEFAULT_COMPARE = ("gpt2-small", "gpt2-medium")  # gui.panels.parameters.panel


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
    label = budget_summary(config.name, budget)
    rows = budget_rows(budget)
    cells = [(name, value, "", "") if isinstance(value, str)  # a FLOP count does not depend on the dtype
             else (name, *(format_bytes(value[dtype]) for dtype in ("fp32", "bf16", "int8"))) for name, value in rows]
    figure = table("budget_table", f"{config.name}: compute and memory", ("quantity", "fp32", "bf16", "int8"), cells)
    return StepFigures((figure,), {"budget_label": label},
                       {"training_flops_per_token": float(budget.training_flops_per_token),
                        "weights_fp32_bytes": int(budget.weight_bytes["fp32"])})


__all__ = ["parameters_view_figures"]
