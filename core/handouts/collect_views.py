"""Each view's figures for a page, computed by the core experiment the window's view runs, at the settings a lesson
step (or the view's defaults) gives it. One function per panel; each returns core.handouts.figures.StepFigures.

The quotes are the texts the window's widgets show for the same result (the numbers formatted alike); `values`
are the figures a prediction's rule may name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from core.handouts.figures import Figure, StepFigures, bars, heatmap, lines, table

# The Positions panel's controls as the window starts them (gui.panels.positions.common).
POSITIONS_DEFAULTS: dict[str, Any] = {"tab": "RoPE scrubber", "source": "random", "seed": 0, "d": 8, "base": 10000.0,
                                      "scale": 1.0, "positions": 128, "m": 3, "n": 1, "compare_sinusoidal": True}
PARAMETERS_DEFAULTS: dict[str, Any] = {"tab": 0, "model": ""}
TOKENS_DEFAULTS: dict[str, Any] = {"sub_tab": "Propagation", "mask_mode": "causal"}
PROPAGATION_STEP_TOLERANCE = 0.0  # "unchanged" is torch.equal, not a tolerance


def _labels(tokenizer: Any, ids: Any) -> list[str]:
    from core.experiments.common import token_labels

    return list(token_labels(list(ids), tokenizer))


# ---- Tokens & masks -------------------------------------------------------------------------------

def tokens_figures(settings: Mapping[str, Any], lab: Any, model: Any, edit: Mapping[str, Any] | None) -> StepFigures:
    """The Propagation view: edit one token, measure which (layer, position) moved (torch.equal)."""
    from core.experiments.causal_edit import causal_edit_diff

    tab = settings.get("sub_tab", "Propagation")
    if tab != "Propagation":
        from core.handouts.collect_tokens import tokens_view_figures

        return tokens_view_figures(tab, settings, lab, model)
    tokens = list(lab.tokens)
    if edit is not None:
        base = list(lab.base_tokens)
        position, new_token = edit["position"], tokens[edit["position"]]
    else:  # the window's probe: one token replaced in the middle
        base, position = tokens, len(tokens) // 2
        new_token = (tokens[position] + 1) % lab.config.vocab_size
    n_blocks = min(int(settings.get("n_blocks", len(model.blocks))), len(model.blocks))
    diff = causal_edit_diff(model, base, position, new_token, mask_mode=settings.get("mask_mode", "causal"),
                            n_blocks=n_blocks, tokenizer_or_labels=lab.tokenizer, with_logits=False)
    values = np.where(np.isnan(diff.max_change), np.nan, diff.max_change)  # (L+1, T)
    shown = np.where(values > 0, values, np.nan)  # exactly unchanged cells carry no colour, as the window hatches them
    figure = heatmap("propagation_map", "max |change| of each position's output (blank: bitwise unchanged)", shown,
                     diff.layer_labels, diff.token_labels, "layer", "position", "max |change|", scale="log")
    last = values[-1]
    bar_figure = bars("bar_plot", f"max |change| in {diff.layer_labels[-1]}", diff.token_labels, last, "position",
                      "max |change|")
    moved = [t for t in range(values.shape[1]) if not bool(diff.exactly_unchanged[:, t].all())]
    verdict = _propagation_verdict(diff)
    return StepFigures(
        (figure, bar_figure), {"verdict": verdict},
        {"first_changed_position": moved[0] if moved else -1,
         "past_unchanged": "yes" if diff.past_exactly_unchanged else "no",
         "nan_cells": int(diff.nan_entries.sum())})


def _propagation_verdict(diff: Any) -> str:
    """The Propagation view's verdict, in words (gui.panels.tokens.propagation writes it with markup)."""
    t = diff.edit_position
    edit = (f"Edit at position {t}: '{diff.token_labels[t]}' → '{diff.edited_token_labels[t]}', mask "
            f"{diff.mask_mode}, {diff.n_layers} block(s). ")
    if t == 0:
        verdict = "No past to protect at position 0."
    elif diff.past_exactly_unchanged:
        verdict = f"✔ positions 0–{t - 1} are bitwise unchanged (torch.equal) in every layer."
    elif diff.leaks_into_past and diff.bidirectional:
        verdict = (f"Every position can move: positions before {t} change from "
                   f"{diff.layer_labels[diff.first_leaking_layer]} on, as expected for a bidirectional model "
                   "(no causal mask).")
    elif diff.leaks_into_past:
        first = diff.layer_labels[diff.first_leaking_layer]
        verdict = f"✘ the past moves: positions before {t} change from {first} on."
    else:
        verdict = "The past did not move, apart from NaN both runs share."
    nan = f" NaN in {int(diff.nan_entries.sum())} cells (cross-hatched)." if diff.nan_entries.any() else ""
    return edit + verdict + nan


# ---- Positions ------------------------------------------------------------------------------------

def positions_figures(settings: Mapping[str, Any], model: Any = None) -> StepFigures:
    """The RoPE scrubber and the score grids on the reading's seeded (q, k) pair; the Encodings view draws `model`'s
    learned position table (the lab's model, as the window's view reads it)."""
    from core.experiments import positions
    from core.handouts.collect_secondary import rotation_figure

    settings = {**POSITIONS_DEFAULTS, **settings}
    tab = settings["tab"]
    if tab == "Permutation":
        return _permutation_figures(settings)
    if tab == "Encodings":
        return _encodings_figures(settings, model)
    if tab not in ("RoPE scrubber", "Score grids") or settings["source"] != "random":
        return StepFigures(note=f"The {tab} sub-tab of Positions (q and k from {settings['source']}) is drawn in "
                                "the app only.")
    pair = positions.seeded_qk(settings["seed"], settings["d"])
    count, base, scale = settings["positions"], float(settings["base"]), float(settings["scale"])
    index = np.arange(count)  # (P,)
    rope = positions.rope_score_grid(pair.q, pair.k, index, base, scale).scores  # (P, P)
    table = positions.sinusoidal_pe_table(count, pair.q.shape[0], base)  # (P, d)
    sinusoidal = positions.additive_score_grid(pair.q, pair.k, table).scores  # (P, P)
    m, n = min(settings["m"], count - 1), min(settings["n"], count - 1)
    offset = m - n
    quotes = {"rope_score_label": f"{rope[m, n]:.10f}", "sinusoidal_score_label": f"{sinusoidal[m, n]:.10f}"}
    along = [mm for mm in range(count) if 0 <= mm - offset < count]
    rope_trace = [rope[mm, mm - offset] for mm in along]
    additive_trace = [sinusoidal[mm, mm - offset] for mm in along]
    constant = float(np.ptp(rope_trace)) <= 1e-9 * max(1.0, float(np.abs(rope_trace).max()))
    values = {"rope_score": float(rope[m, n]), "sinusoidal_score": float(sinusoidal[m, n]), "offset": offset,
              "rope_offset_constant": "stays the same" if constant else "changes",
              "sinusoidal_offset_constant": "stays the same" if float(np.ptp(additive_trace)) <= 1e-9 else "changes",
              "constant_lines": "diagonals"}
    if tab == "Score grids":
        labels = [str(p) for p in index]
        figures: tuple[Figure, ...] = (
            heatmap("rope_grid", "RoPE: R(m)q · R(n)k", rope, labels, labels, "query position m", "key position n",
                    "score"),
            heatmap("sinusoidal_grid", "Sinusoidal: (q+PE[m]) · (k+PE[n])", sinusoidal, labels, labels,
                    "query position m", "key position n", "score"))
        return StepFigures(figures, quotes, values)
    series = {"RoPE R(m)q · R(n)k": rope_trace}
    if settings.get("compare_sinusoidal", True):
        series["sinusoidal (q+PE[m]) · (k+PE[n])"] = additive_trace
    trace = lines("trace_plot", f"Score against m at offset m − n = {offset} (drag the slider: the window's "
                  "locked handles)", along, series, "query position m", "score",
                  marker={"name": "m", "label": "query position m", "value": m})
    row = lines("row_plot", f"Score against the key position n, query at m = {m}", list(index),
                {"RoPE": rope[m], "sinusoidal": sinusoidal[m]}, "key position n", "score",
                marker={"name": "n", "label": "key position n", "value": n})
    q_norms = positions.rope_norms(pair.q, index, base, scale)
    k_norms = positions.rope_norms(pair.k, index, base, scale)
    norm_plot = lines("norm_plot", "Lengths ‖R(m)q‖ and ‖R(n)k‖ against the position", list(index),
                      {"‖R(m)q‖": q_norms.norms, "‖R(n)k‖": k_norms.norms}, "position", "length")
    q_drift = float(np.abs(q_norms.norms - q_norms.original_norm).max())
    k_drift = float(np.abs(k_norms.norms - k_norms.original_norm).max())
    quotes["norm_label"] = (f"‖q‖ = {q_norms.original_norm:.10f}, ‖k‖ = {k_norms.original_norm:.10f}; largest change "
                            f"over m = 0..{count - 1}: {_difference(q_drift)} and {_difference(k_drift)} (rotations "
                            "keep lengths)")
    values["norm_drift"] = max(q_drift, k_drift)
    arrows = rotation_figure(pair.q, pair.k, count, m, n, base, scale, pair.label)
    return StepFigures((trace, row, arrows, norm_plot), quotes, values)


def _difference(value: float) -> str:
    """Float noise reads as noise (1.2e-07), never as a rounded 0, as the window prints it."""
    return "0 (exactly)" if value == 0.0 else f"{value:.2e}"


def _permutation_figures(settings: Mapping[str, Any]) -> StepFigures:
    """The Permutation view: attention on shuffled tokens against the shuffled output, per encoding."""
    import math

    from core.choices import PERMUTATION_ENCODING_CAPTIONS
    from core.experiments import positions

    permutation = settings.get("permutation")
    data = positions.permutation_equivariance(
        None, seed=settings.get("permutation_seed", 0), T=settings.get("permutation_length", 6),
        d_model=settings.get("permutation_d_model", 32), perm=tuple(permutation) if permutation else None)
    names = [PERMUTATION_ENCODING_CAPTIONS.get(name, name) for name in data.encodings]
    parts = [f"{name}: {_difference(float(value))} ({'within' if blind else 'above'} float noise)"
             for name, value, blind in zip(names, data.max_diff, data.equivariant)]
    summary = (f"Largest difference, float-noise limit {_difference(float(data.noise_tolerance))}: "
               + "; ".join(parts) + ".")
    by_name = dict(zip(data.encodings, (float(v) for v in data.max_diff)))
    if by_name.get("none", 0.0) > 0.0 and by_name.get("sinusoidal", 0.0) > 0.0:
        summary += (f" Adding sinusoids lifts it {math.log10(by_name['sinusoidal'] / by_name['none']):.1f} orders of "
                    "magnitude above no encoding.")
    elif by_name.get("none") == 0.0 and by_name.get("sinusoidal", 0.0) > 0.0:
        summary += " Without an encoding the difference is exactly 0.0."
    shown = np.where(data.per_position > 0, data.per_position, np.nan)  # (E, T): exact zeros carry no colour
    figure = heatmap("permutation_plot", "max |attn(shuffled x) − shuffled attn(x)| per position (blank: exactly 0)",
                     shown, names, [str(t) for t in range(shown.shape[1])], "encoding", "position", "difference",
                     scale="log")
    blind = [name for name, flag in zip(data.encodings, data.equivariant) if flag]
    rows = [(name, _difference(float(value)),
             "order-blind: shuffling the input only shuffles the output (float noise)" if flag
             else "sees order: the shuffled input gives different outputs")
            for name, value, flag in zip(names, data.max_diff, data.equivariant)]
    permutation_table = table("permutation_table", "Each encoding under the shuffle",
                              ("encoding", "max |difference|", "what it means"), rows)
    return StepFigures((figure, permutation_table), {"permutation_summary": summary},
                       {"order_blind_encodings": ", ".join(blind), "none_is_order_blind":
                        "yes" if "none" in blind else "no"})


def _encodings_figures(settings: Mapping[str, Any], model: Any) -> StepFigures:
    """The Encodings view's sinusoidal table: one row per position, one column per dimension, and a row's
    fingerprint; the model's learned table (or why it has none) and one head's ALiBi penalty."""
    from core.experiments import positions
    from core.handouts.collect_secondary import alibi_figure, learned_table_figure

    count = settings.get("positions", POSITIONS_DEFAULTS["positions"])
    # The window's defaults: the table as wide as the model it starts with (even), the fingerprint of position 3.
    from core.presets import DEFAULT_PRESET, PRESETS

    start_width = PRESETS[DEFAULT_PRESET].d_model
    width = settings.get("encoding_d_model", max(2, start_width - start_width % 2))
    data = positions.sinusoidal_heatmap(count, width, float(settings.get("base", 10000.0)))
    row = min(settings.get("fingerprint", 3), count - 1)
    table = heatmap("sinusoid_map", "Sinusoidal table PE[position, dimension]", data.table,
                    [str(p) for p in range(count)], [str(d) for d in range(width)], "position", "dimension",
                    "value")
    fingerprint = bars("fingerprint_plot", f"Position {row}'s fingerprint", [str(d) for d in range(width)],
                       data.table[row], "dimension", "value")
    # points on a log axis, as the window draws them: a bar from 0 has no place on a log scale
    wavelengths = lines("wavelength_plot", "Wavelength of each (sin, cos) pair, in positions",
                        list(range(len(data.wavelengths))), {"wavelength": data.wavelengths},
                        "pair i (dims 2i, 2i+1)", "positions per turn", scale="log")
    alibi = alibi_figure(int(settings.get("alibi_heads", 8)), int(settings.get("alibi_length", 24)),
                         int(settings.get("alibi_head", 0)))
    return StepFigures((table, fingerprint, wavelengths, learned_table_figure(model), alibi), {},
                       {"longest_wavelength": float(data.wavelengths[-1]),
                        "shortest_wavelength": float(data.wavelengths[0])})


# ---- Generate ------------------------------------------------------------------------------------

SAMPLING_DEFAULTS: dict[str, Any] = {"sub_tab": "Sampling", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0}
BARS_SHOWN = 10  # the Sampling view's bars


def generate_figures(settings: Mapping[str, Any], lab: Any, model: Any) -> StepFigures:
    """The Sampling view: the next-token distribution after temperature, top-k and top-p, and one seeded draw."""
    import torch

    from core import sampling

    settings = {**SAMPLING_DEFAULTS, **settings}
    if settings["sub_tab"] == "KV cache":
        from core.handouts.collect_lab import kv_cache_figures

        return kv_cache_figures(settings, lab, model)
    tokens = list(lab.tokens)
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(torch.tensor([tokens], device=device))[0, -1].float().cpu()  # (V,)
    top_p = round(float(settings["top_p"]), 3)
    result = sampling.next_token_sampling(logits, len(tokens) - 1, round(float(settings["temperature"]), 2),
                                          settings["top_k"] or None, None if top_p >= 1 else top_p,
                                          settings["seed"], 0)
    kept = sampling.draw_order(torch.from_numpy(result.probabilities)).numpy()[:result.kept_count]  # (K,)
    # The draw's order, then the cut tokens in the model's order, ties by id (gui.panels.generate.sampling)
    cut = np.nonzero(~result.kept)[0]  # (V - K,)
    cut = cut[np.lexsort((cut, -logits.numpy()[cut]))]  # (V - K,)
    ranking = np.concatenate([kept, cut])  # (V,)
    order = ranking[:BARS_SHOWN]  # (N,)
    labels = _labels(lab.tokenizer, order.tolist())
    figure = lines("sampling_plot", "Next-token probabilities, most likely first", list(range(len(order))),
                   {"after temperature and cut-offs": result.probabilities[order],
                    "the model's own (T = 1)": result.model_probabilities[order]}, "rank", "probability")
    drawn = _labels(lab.tokenizer, [result.token])[0]
    vocab = lab.config.vocab_size
    entropy = (f"Entropy of the distribution sampled from: {result.entropy_nats:.3f} nats = "
               f"{result.entropy_bits:.3f} bits; the model's own (T = 1, no cut-offs): "
               f"{result.model_entropy_nats:.3f} nats = {result.model_entropy_bits:.3f} bits. Kept "
               f"{result.kept_count:,} of {vocab:,} tokens, which held {result.kept_mass:.3f} of the tempered "
               "probability.")
    ranked = ", ".join(f"{rank + 1}: '{label}'" for rank, label in enumerate(labels))
    rank = int(np.nonzero(ranking == result.token)[0][0])  # the drawn token's rank in the draw's order
    passed = ("the running total first passes u at its bar" if rank < BARS_SHOWN
              else f"the running total passes u below the {BARS_SHOWN} bars shown")
    draw = (f"Seed {settings['seed']}, draw 0: u = {result.uniform:.6f} lands on '{drawn}' (rank {rank + 1}, p = "
            f"{_probability(float(result.probabilities[result.token]))} after the cut-offs, "
            f"{_probability(float(result.model_probabilities[result.token]))} in the model's own distribution): "
            f"{passed}.")
    from core.handouts.collect_secondary import running_total_figure

    cut_offs = (f"T = {round(float(settings['temperature']), 2):g}, top-k {settings['top_k'] or 'off'}, top-p "
                f"{'off' if top_p >= 1 else f'{top_p:g}'}, seed {settings['seed']}, draw 0")
    running = running_total_figure(result.probabilities, order.tolist(), labels, float(result.uniform), cut_offs)
    return StepFigures((figure, running), {"entropy_label": entropy, "draw_label": draw},
                       {"top_token": labels[0], "drawn_token": drawn, "kept_count": result.kept_count,
                        "entropy_nats": float(result.entropy_nats), "ranking": ranked})


def _probability(p: float) -> str:
    return f"{p:.3f}" if p >= 1e-3 or p == 0 else f"{p:.1e}"


# ---- Parameters -----------------------------------------------------------------------------------

def parameters_figures(settings: Mapping[str, Any], config: Any) -> StepFigures:
    """The Breakdown sub-tab: where one model's parameters live, tying, one block spelled out."""
    from core.params import parameter_breakdown
    from core.presets import PRESETS

    settings = {**PARAMETERS_DEFAULTS, **settings}
    chosen = PRESETS[settings["model"]] if settings["model"] else config
    if "tied" in settings and chosen.tie_embeddings != settings["tied"]:
        chosen = chosen.replace(tie_embeddings=settings["tied"])
    if settings["tab"] != 0:
        from core.handouts.collect_parameters import parameters_view_figures

        return parameters_view_figures(settings["tab"], settings, chosen, config)
    breakdown = parameter_breakdown(chosen)
    tied = parameter_breakdown(chosen.replace(tie_embeddings=True)).total
    untied = parameter_breakdown(chosen.replace(tie_embeddings=False)).total
    groups = {name: count for name, count in breakdown.groups.items() if count}
    figure = bars("pie_view", f"{chosen.name}: where the {breakdown.total:,} parameters are", list(groups),
                  list(groups.values()), "group", "parameters")
    block = breakdown.encoder_block or breakdown.decoder_block
    shape = f"{chosen.vocab_size:,} × {chosen.d_model:,}"
    if chosen.tie_embeddings:
        tying = (f"Tied: the head reuses the {shape} token table, so V × d = {untied - tied:,} parameters are not "
                 "added.")
    else:
        tying = f"Untied: the head is a {shape} matrix of its own, adding V × d = {untied - tied:,} parameters."
    quotes = {"total_label": f"{chosen.name}: {breakdown.total:,} parameters by formula", "tied_label": tying,
              "block_label": (f"One block: {block.total:,} = attention {block.attention:,} + FFN {block.ffn:,} + "
                              f"norms {block.norms:,}; the FFN holds {block.ffn_share:.0%} of it.")}
    from core.handouts.collect_parameters import format_share, meta_count

    quotes["agree_label"] = meta_count((chosen,))
    if chosen.is_moe:
        from core.display import short_count

        quotes["moe_label"] = (f"Mixture of experts: {short_count(breakdown.total)} parameters in total, "
                               f"{short_count(breakdown.active)} active per token "
                               f"({format_share(breakdown.active / breakdown.total)}): each token reaches "
                               f"{chosen.top_k} of the {chosen.n_experts} experts in a block, but all must sit in "
                               "memory.")
    larger = "FFN" if block.ffn > block.attention else "attention"
    values = {"total": breakdown.total, "untied_extra": untied - tied, "block_total": block.total,
              "largest_block_part": larger, "embedding_share_percent": 100.0 * breakdown.embedding_share,
              "token_embedding_share_percent": 100.0 * breakdown.share("token_embeddings")}
    return StepFigures((figure,), quotes, values)


# ---- Causal lab and Families --------------------------------------------------------------------

def causal_lab_figures(tab: str, result: Any, lab: Any) -> StepFigures:
    """The Causal lab's four views, from the result core.lesson_runs computes as the view does."""
    config = lab.config
    layers = [f"L{layer}" for layer in range(config.n_layers)]
    heads = [f"H{head}" for head in range(config.n_heads)]
    if tab == "Induction":
        layer, head = result.best_head()
        first, second = float(result.loss_first.mean()), float(result.loss_second.mean())
        summary = (f"{result.period} random tokens (seed {result.seed}) repeated once. Strongest induction head "
                   f"L{layer}H{head}: score {result.induction_score[layer, head]:.3f}. Mean loss: first repeat "
                   f"{first:.3f}, second {second:.3f} ({second / first:.2f} of the first).") if first > 0 else ""
        offsets = list(range(len(result.loss_first)))
        figures = (heatmap("induction_map", "Induction score", result.induction_score, layers, heads, "layer", "head",
                           "score"),
                   heatmap("previous_map", "Previous-token score", result.previous_token_score, layers, heads,
                           "layer", "head", "score"),
                   lines("loss_plot", "Loss: first repeat against second", offsets,
                         {"first repeat": result.loss_first, "second repeat": result.loss_second},
                         "offset in the repeat", "loss"))
        return StepFigures(figures, {"induction_summary": summary},
                           {"induction_layer": layer, "induction_layer_name": f"layer {layer}",
                            "induction_head": f"L{layer}H{head}",
                            "induction_score": float(result.induction_score[layer, head])})
    if tab == "Ablation":
        parts = [f"L{l}H{h}" for l, h in result.heads] + [f"FFN {l}" for l in result.ffns]
        change = result.loss_after - result.loss_before
        summary = (f"{result.mode}-ablating {', '.join(parts)}: mean next-token loss {result.loss_before:.4f} intact, "
                   f"{result.loss_after:.4f} ablated ({change:+.4f}).")
        positions = list(range(len(result.position_loss_before)))
        figure = lines("loss_plot", "Loss per position, intact and ablated", positions,
                       {"intact": result.position_loss_before, "ablated": result.position_loss_after}, "position",
                       "loss")
        return StepFigures((figure,), {"ablation_summary": summary},
                           {"loss_change": float(change), "loss_direction": "rises" if change > 0 else "falls"})
    if tab == "Patching":
        labels = _labels(lab.tokenizer, lab.tokens)
        columns = labels if result.values.shape[1] == len(labels) else heads
        normalised = result.normalised
        figure = heatmap("patch_map", "Patched metric: 0 = corrupted, 1 = clean", normalised, layers, columns,
                         "layer", "position", "share restored")
        checks = (f"Checks: every position of a layer's stream patched gives the clean logits (torch.equal) in "
                  f"{sum(result.patch_all_equal)} of {len(result.patch_all_equal)} layers"
                  f"{'' if all(result.patch_all_equal) else ' (NOT all)'}; nothing patched gives the corrupted logits: "
                  f"{'yes' if result.patch_none_equal else 'NO'}.")
        metric = f"logit({_labels(lab.tokenizer, [result.answer])[0]})"
        if result.foil is not None:
            metric += f" - logit({_labels(lab.tokenizer, [result.foil])[0]})"
        where = "the last position" if result.position == len(lab.tokens) - 1 else f"position {result.position}"
        summary = (f"{metric} at {where}: clean {result.clean_metric:.5g}, corrupted {result.corrupt_metric:.5g}; "
                   "map: 0 = corrupted, 1 = clean.")
        first_row = normalised[0]
        restoring = int(np.nanargmax(first_row)) if np.isfinite(first_row).any() else -1
        later = [row for row in range(normalised.shape[0]) if np.isfinite(normalised[row, -1])
                 and normalised[row, -1] > 0.5]
        return StepFigures((figure,), {"patching_summary": summary, "patching_checks": checks},
                           {"restoring_position": restoring, "last_position_row": later[0] if later else -1,
                            "corrupted_position": result.changed_positions[0] if result.changed_positions else -1})
    from core.handouts.collect_secondary import heads_map_figure

    parts = sorted(result.components, key=lambda part: -abs(part.value))[:24]
    figure = bars("attribution_plot", "Direct logit attribution (largest parts)", [part.name for part in parts],
                  [part.value for part in parts], "part", "share of the logit")
    metric = f"logit({_labels(lab.tokenizer, [result.answer])[0]})"
    if result.foil is not None:
        metric += f" - logit({_labels(lab.tokenizer, [result.foil])[0]})"
    heads = heads_map_figure(result, config, metric)
    return StepFigures((heads, figure), {}, {"attribution_total": float(result.total)})


def _fill_verdict(lab: Any, blank: int, top_k: int) -> str:
    """The Fill in the blank view's verdict (gui.panels.families.fill_blank): the encoder against the reference
    decoder before and after the lab's last edit of one token, or what to do when there is none."""
    from core.experiments import fill_mask as fm
    from core.model import SequenceError

    mask_id = fm.mask_id_of(lab.tokenizer)
    before = getattr(lab, "base_tokens", None)
    decoder = decoder_tokenizer = decoder_ids = None
    decoder_note, reading_now = "", None
    if blank == 0:
        decoder_note = "the blank is the first token: a decoder has no earlier position to predict it from"
    else:
        try:
            reference = fm.reference_decoder()
            decoder, decoder_tokenizer = reference.model, reference.tokenizer
            decoder_ids = fm.decoder_tokens(lab.tokens, lab.tokenizer, decoder_tokenizer, mask_id)
            reading_now = fm.blank_reading(decoder, decoder_ids, blank - 1, top_k, decoder_tokenizer)
        except (fm.FillMaskError, SequenceError) as error:
            decoder, decoder_note = None, str(error)
    if before is not None and len(before) == len(lab.tokens):
        try:
            decoder_before = (fm.decoder_tokens(before, lab.tokenizer, decoder_tokenizer, mask_id)
                              if decoder is not None else None)
            return fm.blank_edit(lab.model, before, lab.tokens, blank, mask_id, top_k, decoder, decoder_before,
                                 decoder_ids, fm.REFERENCE_DECODER, lab.tokenizer, decoder_tokenizer,
                                 decoder_note).verdict
        except (fm.FillMaskError, SequenceError) as error:
            return f"No comparison of before and after: {error}."
    name = fm.REFERENCE_DECODER
    reading = (f"{name} reads each blank as a space and predicts the blank at position {blank} from the left only "
               "(its logits at the token before the blank)." if reading_now is not None
               else f"No decoder half: {decoder_note}.")
    return (f"No edit around this blank yet. Replace one token after it (click its chip, pick another above): the "
            f"encoder's prediction here moves, {name}'s stays bitwise the same. Then replace one before it: both "
            f"move. {reading}")


def families_figures(tab: str, result: Any, lab: Any, settings: Mapping[str, Any]) -> StepFigures:
    """The Families views: fill in the blank, cross-attention, the router."""
    if tab == "Fill in the blank":
        index = min(int(settings.get("blank", 1)), len(result.blanks)) - 1
        labels, probabilities = list(result.top_labels[index]), result.top_probabilities[index]
        figure = bars("fill_plot", "The encoder's most likely tokens at the blank", labels, probabilities, "token",
                      "probability")
        verdict = _fill_verdict(lab, result.blanks[index], int(settings.get("top_k", 5)))
        return StepFigures((figure,), {"fill_verdict": verdict},
                           {"top_token": labels[0], "top_probability": float(probabilities[0])})
    if tab == "Cross-attention":
        output = "".join(lab.tokenizer.decode([token]) for token in result.output)
        mean = result.cross_attention.mean(axis=(0, 1))  # (N, S)
        source_labels = _labels(lab.tokenizer, result.source)
        figure = heatmap("cross_map", "Cross-attention, mean over layers and heads", mean, list(result.input_labels),
                         source_labels, "decoder step", "source token", "weight")
        return StepFigures((figure,), {"cross_output": output}, {"output": output})
    from core.handouts.collect_secondary import router_map_figure

    layer = min(int(settings.get("router_layer", 0)), result.n_layers - 1)
    load = result.load[layer]
    figure = bars("load_plot", f"Tokens each expert received (layer {layer})",
                  [f"expert {e}" for e in range(len(load))], load, "expert", "tokens")
    agrees = ("the same as" if result.instantiated_parameters == result.total_parameters
              else "BUT the model itself holds")
    active = (f"{lab.config.name}: {result.total_parameters:,} parameters by formula ({agrees} "
              f"{result.instantiated_parameters:,} counted on the model). One token uses {result.active_parameters:,} "
              f"of them, {result.active_share:.1%}: in each of {result.n_layers} layers only its {result.top_k} "
              f"chosen experts of {result.n_experts} run, {result.expert_parameters:,} parameters each.")
    summary = "Tokens per expert: " + "; ".join(
        f"layer {layer} " + ", ".join(f"E{e} {n}" for e, n in enumerate(result.load[layer]))
        for layer in range(result.n_layers)) + f" (evenly spread: {result.balanced_load:g} each)."
    return StepFigures((router_map_figure(result, layer), figure), {"active_label": active, "load_summary": summary},
                       {"idle_experts": int((load == 0).sum()), "active_parameters": result.active_parameters})


__all__ = ["POSITIONS_DEFAULTS", "causal_lab_figures", "families_figures", "generate_figures",
           "parameters_figures", "positions_figures",
           "tokens_figures"]
