"""The figures a view shows beside its main one, for a page: the RoPE scrubber's rotating pairs, the Encodings view's
learned table and ALiBi penalty, the Attribution view's heads map, the Router's map and Sampling's running total.

Each is computed by the core function the window's view calls, with the view's own selection (which pairs, which
layer, which bars), and its title names the inputs it was computed for. Where the view draws no such figure for these
inputs (a model without a learned table) the page says so in one line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.handouts.figures import FIGURE_WIDTH, MAX_CELLS, Figure, _number, _tooltip, heatmap, lines, note, thinning

# gui.panels.positions.scrubber: at most this many circles, the fast, middle and slow pairs when there are more
MAX_ARROW_PAIRS = 8
CIRCLE_GAP = 2.6  # centre to centre, in circle radii


# ---- Positions > RoPE scrubber -----------------------------------------------------------------------

def arrow_pairs(n_pairs: int) -> np.ndarray:
    """The (even, odd) pairs the scrubber's arrow plot draws: all of them, or the fast, middle and slow ones."""
    if n_pairs <= MAX_ARROW_PAIRS:
        return np.arange(n_pairs)
    return np.unique(np.round(np.linspace(0, n_pairs - 1, MAX_ARROW_PAIRS)).astype(int))


def rotation_figure(q: np.ndarray, k: np.ndarray, count: int, m: int, n: int, base: float, scale: float,
                    source: str) -> Figure:
    """Each drawn (even, odd) pair of q rotated to m and of k rotated to n, as arrows in unit circles (the longest
    pair reaches the circle), with m and n as sliders over every position 0..count-1."""
    from core.experiments import positions

    q_arrows = [positions.rotation_arrows(q, float(p), base, scale) for p in range(count)]
    k_arrows = [positions.rotation_arrows(k, float(p), base, scale) for p in range(count)]
    wavelengths = q_arrows[0].wavelengths  # (d/2,)
    pairs = arrow_pairs(wavelengths.shape[0])  # (S,)
    longest = float(max(np.hypot(*q_arrows[0].original.T).max(), np.hypot(*k_arrows[0].original.T).max()))
    sliders = 2 * count * pairs.shape[0] <= MAX_CELLS  # every position's arrows fit; else only m's and n's
    reach = range(count) if sliders else None
    rows = []
    for who, arrows, at in (("q", q_arrows, m), ("k", k_arrows, n)):
        for position in (reach if reach is not None else (at,)):
            rotated = arrows[position].rotated  # (d/2, 2)
            rows += [{"who": who, "pos": position, "slot": slot, "pair": int(pair), "x": _number(rotated[pair, 0]),
                      "y": _number(rotated[pair, 1])} for slot, pair in enumerate(pairs)]
    centres = np.arange(pairs.shape[0]) * CIRCLE_GAP  # (S,)
    angle = np.linspace(0, 2 * np.pi, 65)  # (65,)
    circles = [{"slot": slot, "t": i, "cx": float(centre + np.cos(a)), "cy": float(np.sin(a))}
               for slot, centre in enumerate(centres) for i, a in enumerate(angle)]
    labels = [{"slot": slot, "text": [f"dims {2 * pair}-{2 * pair + 1}", f"λ {_wavelength(wavelengths[pair])}"]}
              for slot, pair in enumerate(pairs)]
    x_domain = [-CIRCLE_GAP / 2, float(centres[-1]) + CIRCLE_GAP / 2]
    y_domain = [-1.9, 1.15]
    height = round(FIGURE_WIDTH * (y_domain[1] - y_domain[0]) / (x_domain[1] - x_domain[0]))
    x = {"type": "quantitative", "scale": {"domain": x_domain}, "axis": None}
    y = {"type": "quantitative", "scale": {"domain": y_domain}, "axis": None}
    unit = 1.0 / max(longest, 1e-12)
    tips = [{"calculate": f"datum.slot * {CIRCLE_GAP} + datum.x * {unit!r}", "as": "tip_x"},
            {"calculate": f"datum.y * {unit!r}", "as": "tip_y"},
            {"calculate": f"datum.slot * {CIRCLE_GAP}", "as": "centre"}, {"calculate": "0", "as": "origin"},
            {"calculate": "datum.who == 'q' ? 'R(m) q' : 'R(n) k'", "as": "vector"}]
    colour = {"field": "vector", "type": "nominal", "title": None, "legend": {"orient": "bottom"}}
    layers: list[dict[str, Any]] = [
        {"data": {"values": circles}, "mark": {"type": "line", "color": "#b8bfcc", "strokeWidth": 1},
         "encoding": {"x": {"field": "cx", **x}, "y": {"field": "cy", **y},
                      "detail": {"field": "slot", "type": "nominal"}, "order": {"field": "t", "type": "quantitative"}}},
        {"transform": tips, "mark": {"type": "rule", "strokeWidth": 2.5},
         "encoding": {"x": {"field": "centre", **x}, "y": {"field": "origin", **y}, "x2": {"field": "tip_x"},
                      "y2": {"field": "tip_y"}, "color": colour}},
        {"transform": tips, "mark": {"type": "point", "filled": True, "size": 80, "tooltip": True},
         "encoding": {"x": {"field": "tip_x", **x}, "y": {"field": "tip_y", **y}, "color": colour,
                      "tooltip": _tooltip([("vector", "nominal", "vector"), ("pos", "quantitative", "position"),
                                           ("pair", "quantitative", "pair"), ("x", "quantitative", "even"),
                                           ("y", "quantitative", "odd")])}},
        {"data": {"values": labels}, "transform": [{"calculate": f"datum.slot * {CIRCLE_GAP}", "as": "centre"}],
         "mark": {"type": "text", "baseline": "top", "lineBreak": "\n", "fontSize": 11},
         "encoding": {"x": {"field": "centre", **x}, "y": {"datum": -1.2, **y},
                      "text": {"field": "text", "type": "nominal"}}},
    ]
    first = "Each (even, odd) pair rotates: q at m, k at n"
    inputs = f"{source}, base {base:g}, scale {scale:g}; the longest pair reaches the circle"
    if not sliders:
        inputs += f"; at m = {m}, n = {n}"
    title = f"{first} ({inputs})"
    spec: dict[str, Any] = {"title": {"text": [first, inputs]}, "width": FIGURE_WIDTH, "height": height,
                            "data": {"values": rows}, "layer": layers, "view": {"stroke": None}}
    if sliders:
        selected = "(datum.who == 'q' && datum.pos == m) || (datum.who == 'k' && datum.pos == n)"
        spec["params"] = [{"name": name, "value": value, "bind": {"input": "range", "min": 0, "max": count - 1,
                                                                  "step": 1, "name": f"{label} "}}
                          for name, value, label in (("m", m, "query position m"), ("n", n, "key position n"))]
        for layer in layers[1:3]:
            layer["transform"] = [{"filter": selected}, *layer["transform"]]
    return Figure("arrow_plot", title, spec)


def _wavelength(value: float) -> str:
    return f"{value:.3g}" if value < 1e4 else f"{value:.2e}"


# ---- Positions > Encodings ---------------------------------------------------------------------------

def learned_table_figure(model: Any) -> Figure:
    """The model's learned position table (gui.panels.positions.encodings), or why it has none."""
    from core.choices import POSITIONAL_DISPLAY_NAMES
    from core.experiments import positions

    if model is None:
        return note("learned_map", "No model is loaded, so there is no learned position table to draw.")
    config = model.config
    if config.positional != "learned":
        name = POSITIONAL_DISPLAY_NAMES.get(config.positional, config.positional)
        return note("learned_map", f"{config.name} uses {name} positions, so it has no learned table. Load a model "
                                   "with learned positions (the tiny-gpt preset) to see one.")
    learned = positions.learned_position_table(model)
    table = learned.table  # (P, d)
    step = thinning(table.size)  # a lesson may show it on several steps: a page stays well under its size bound
    shown = "" if step == 1 else f"; every {_ordinal(step)} position and dimension shown"
    return heatmap("learned_map", f"Learned positions of the model: {learned.label}{shown}", table,
                   [str(p) for p in range(table.shape[0])], [str(d) for d in range(table.shape[1])], "position",
                   "dimension", "value")


def _ordinal(step: int) -> str:
    return {2: "second", 3: "third"}.get(step, f"{step}th")


def alibi_figure(heads: int, length: int, head: int) -> Figure:
    """One head's ALiBi penalty, -slope x distance, over (query, key) positions, as the view's "show" picks it."""
    from core.experiments import positions

    alibi = positions.alibi_matrix(heads, length)
    head = min(max(head, 0), heads - 1)
    labels = [str(p) for p in range(length)]
    return heatmap("alibi_map", f"ALiBi penalty added to scores, {alibi.head_labels[head]} (of {heads} heads, "
                   f"T = {length}, causal)", alibi.bias[head], labels, labels, "query position", "key position",
                   "penalty")


# ---- Causal lab > Attribution ------------------------------------------------------------------------

def heads_map_figure(result: Any, config: Any, metric: str) -> Figure:
    """Each head's direct effect on the metric (the Attribution view's heads map)."""
    grid = result.head_matrix(config.n_layers, config.n_heads)  # (L, H)
    return heatmap("heads_map", f"Direct effect of each head on {metric} at position {result.position}", grid,
                   [f"L{layer}" for layer in range(config.n_layers)], [f"H{head}" for head in range(config.n_heads)],
                   "layer", "head", "direct effect")


# ---- Families > Router -------------------------------------------------------------------------------

def router_map_figure(result: Any, layer: int) -> Figure:
    """The router's probabilities of one layer, experts x tokens, the chosen experts circled."""
    probabilities = result.probabilities[layer].T  # (E, T)
    figure = heatmap("router_map", f"Router probabilities of layer {layer} (circles: the {result.top_k} experts "
                     "each token is sent to)", probabilities, [f"E{e}" for e in range(result.n_experts)],
                     list(result.token_labels), "expert", "token", "probability")
    chosen = [{"r": int(expert), "c": position} for position, experts in enumerate(result.chosen[layer])
              for expert in experts]
    spec = dict(figure.spec)
    cells = {key: spec.pop(key) for key in ("data", "transform", "mark", "encoding")}
    circles = {"data": {"values": chosen}, "mark": {"type": "point", "shape": "circle", "size": 90, "strokeWidth": 2,
                                                     "color": "#e0457b"},
               "encoding": {"x": {"field": "c", "type": "ordinal"}, "y": {"field": "r", "type": "ordinal"}}}
    spec["layer"] = [cells, circles]
    return Figure(figure.part, figure.title, spec)


# ---- Generate > Sampling -----------------------------------------------------------------------------

def running_total_figure(probabilities: np.ndarray, order: Sequence[int], labels: Sequence[str], uniform: float,
                         inputs: str) -> Figure:
    """The draw's running total over the bars, most likely first: the draw takes the first bar where it passes u.
    Part of the window's sampling plot, so a lesson shows or covers it with that plot."""
    running = np.cumsum(np.asarray(probabilities, dtype=np.float64)[list(order)])  # (N,)
    first = "Running total of the draw's probabilities, most likely first"
    second = f"{inputs}: the draw takes the first bar where it passes u = {uniform:.6f}"
    figure = lines("sampling_plot", f"{first} ({second})", list(range(len(order))), {"running total": running},
                   "rank: token", "cumulative probability")
    spec = dict(figure.spec, title={"text": [first, second]})
    plotted = {key: spec.pop(key) for key in ("data", "mark", "encoding", "params")}
    literal = json.dumps([f"{rank + 1}: '{label}'" for rank, label in enumerate(labels)], ensure_ascii=False)
    plotted["transform"] = [{"calculate": f"{literal}[datum.x]", "as": "token"}]
    axis = {"tickMinStep": 1, "labelExpr": f"{literal}[datum.value]", "labelAngle": -45}
    plotted["encoding"] = {**plotted["encoding"], "x": {**plotted["encoding"]["x"], "axis": axis},
                           "tooltip": _tooltip([("token", "nominal", "token"),
                                                                       ("x", "quantitative", "rank"),
                                                                       ("y", "quantitative", "running total")])}
    rule = {"data": {"values": [{"u": _number(uniform)}]}, "mark": {"type": "rule", "strokeDash": [6, 4]},
            "encoding": {"y": {"field": "u", "type": "quantitative"}}}
    spec["layer"] = [plotted, rule]
    return Figure(figure.part, figure.title, spec)


__all__ = ["alibi_figure", "arrow_pairs", "heads_map_figure", "learned_table_figure", "rotation_figure",
           "router_map_figure", "running_total_figure"]
