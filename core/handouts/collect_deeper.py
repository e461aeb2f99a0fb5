"""The Going deeper panel for a page: Stretching (each context model's held-out loss against the window's length, the
trained length marked, the learned table's refusal) and the Ladder (each rung's seeds, their mean and range), from
the same core code the window's views run (core.going_deeper.stretching, core.going_deeper.ladder)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.handouts.figures import FIGURE_HEIGHT, FIGURE_WIDTH, Figure, StepFigures, _number, table

SEED_OFFSET = 0.08  # seeds of one rung side by side, this far apart on the rung axis (gui.panels.going_deeper.ladder)
STRETCHING_DEFAULTS: dict[str, Any] = {"tab": "Stretching", "rope_scale": 1.0}  # gui.panels.going_deeper


def going_deeper_figures(settings: Mapping[str, Any]) -> StepFigures:
    settings = {**STRETCHING_DEFAULTS, **settings}
    if settings["tab"] == "Ladder":
        return ladder_figures()
    return stretching_figures(float(settings["rope_scale"]))


def _curve_name(curve: Any, rescaled: bool, trained: int) -> str:
    if rescaled:
        return f"ctx-rope, rope_scale {curve.rope_scale:g} (no training)"
    return curve.model + (f" (fine-tuned at {curve.trained_length})" if curve.trained_length != trained else "")


def stretching_figures(rope_scale: float) -> StepFigures:
    from core.going_deeper.recipe import TRAINED_LENGTH
    from core.going_deeper.stretching import format_loss, stretching, summary

    result = stretching(rope_scale)
    shown = [*result.curves, *([result.rescaled] if result.rescaled is not None else [])]
    points, refusals = [], []
    for curve in shown:
        name = _curve_name(curve, curve is result.rescaled, TRAINED_LENGTH)
        accepted = [row for row in curve.rows if row.nats_per_char is not None]
        points += [{"x": row.length, "y": _number(row.nats_per_char), "series": name} for row in accepted]
        if curve.refused_at is not None:
            last = accepted[-1].nats_per_char if accepted else 0.0
            refusals.append({"x": curve.refused_at.length, "y": _number(last),
                             "text": f"{curve.model} refuses {curve.refused_at.length}: {curve.trained_length} rows"})
    lengths = [row.length for row in shown[0].rows]
    x = {"field": "x", "type": "quantitative", "title": "input length (characters, log scale)",
         "scale": {"type": "log", "domain": [lengths[0] * 0.9, lengths[-1] * 1.1], "nice": False},
         "axis": {"values": lengths}}
    y = {"field": "y", "type": "quantitative", "title": "nats per character", "scale": {"zero": False}}
    spec = {
        "title": "Held-out loss against input length", "width": FIGURE_WIDTH, "height": FIGURE_HEIGHT,
        "layer": [
            {"data": {"values": points}, "mark": {"type": "line", "point": True, "tooltip": True},
             "encoding": {"x": x, "y": y, "color": {"field": "series", "type": "nominal", "title": None,
                                                    "legend": {"orient": "bottom", "columns": 2}},
                          "tooltip": [{"field": "series", "title": "model"}, {"field": "x", "title": "length"},
                                      {"field": "y", "title": "nats per character", "format": ".4~g"}]},
             "params": [{"name": "zoom", "select": "interval", "bind": "scales"}]},
            {"data": {"values": [{"x": TRAINED_LENGTH, "text": f"trained length {TRAINED_LENGTH}"}]},
             "mark": {"type": "rule", "strokeDash": [6, 4], "color": "#c0392b"}, "encoding": {"x": x}},
            {"data": {"values": [{"x": TRAINED_LENGTH, "text": f"trained length {TRAINED_LENGTH}"}]},
             "mark": {"type": "text", "align": "left", "dx": 4, "y": 8, "color": "#c0392b"},
             "encoding": {"x": x, "text": {"field": "text"}}},
            {"data": {"values": refusals}, "mark": {"type": "point", "shape": "cross", "size": 160, "color": "#c0392b",
                                                    "tooltip": True},
             "encoding": {"x": x, "y": y, "tooltip": [{"field": "text", "title": "refused"}]}},
            {"data": {"values": refusals}, "mark": {"type": "text", "align": "left", "dx": 8, "dy": -10,
                                                    "color": "#c0392b"},
             "encoding": {"x": x, "y": y, "text": {"field": "text"}}},
        ],
    }
    rows = [(_curve_name(curve, curve is result.rescaled, TRAINED_LENGTH), str(curve.trained_length),
             *("refused" if row.refused else format_loss(row.nats_per_char) for row in curve.rows)) for curve in shown]
    figures = (Figure("stretching_plot", "Held-out loss against input length", spec),
               table("stretching_table", "Nats per character at each length",
                     ("model", "trained at", *map(str, lengths)), rows))
    values: dict[str, Any] = {f"{curve.model}_at_{row.length}": float(row.nats_per_char)
                              for curve in result.curves for row in curve.rows if row.nats_per_char is not None}
    if result.rescaled is not None:
        values.update({f"rescaled_at_{row.length}": float(row.nats_per_char) for row in result.rescaled.rows
                       if row.nats_per_char is not None})
    return StepFigures(figures, {"stretching_summary": summary(result)}, values)


def ladder_figures() -> StepFigures:
    from core.going_deeper.ladder import HELPS, HURTS, WITHIN, read_record, record_summary

    record = read_record()
    rungs = record["rungs"]
    names = [rung["name"] for rung in rungs]
    seeds = [{"rung": index + (k - (len(rung["seeds"]) - 1) / 2) * SEED_OFFSET, "name": rung["name"],
              "seed": seed.get("seed", k), "y": _number(seed["nats_per_char"])}
             for index, rung in enumerate(rungs) for k, seed in enumerate(rung["seeds"])]
    means = [{"rung": index, "name": rung["name"], "y": _number(rung["mean_nats_per_char"]),
              "low": _number(min(seed["nats_per_char"] for seed in rung["seeds"])),
              "high": _number(max(seed["nats_per_char"] for seed in rung["seeds"]))}
             for index, rung in enumerate(rungs)]
    literal = json.dumps(names, ensure_ascii=False)
    x = {"field": "rung", "type": "quantitative", "title": "rung",
         "scale": {"domain": [-0.6, len(rungs) - 0.4], "nice": False, "zero": False},
         "axis": {"values": list(range(len(rungs))), "labelExpr": f"{literal}[round(datum.value)]", "labelAngle": -30,
                  "grid": False}}
    y = {"field": "y", "type": "quantitative", "title": "nats per character", "scale": {"zero": False}}
    spec = {
        "title": "Held-out loss of each rung (points: seeds; bar: their range)", "width": FIGURE_WIDTH,
        "height": FIGURE_HEIGHT,
        "layer": [
            {"data": {"values": means}, "mark": {"type": "rule", "strokeWidth": 2, "color": "#e67e22"},
             "encoding": {"x": x, "y": {**y, "field": "low"}, "y2": {"field": "high"}}},
            {"data": {"values": means}, "mark": {"type": "tick", "orient": "horizontal", "size": 28, "thickness": 2.5,
                                                 "color": "#333333", "tooltip": True},
             "encoding": {"x": x, "y": y, "tooltip": [{"field": "name", "title": "rung"},
                                                      {"field": "y", "title": "mean", "format": ".4~g"}]}},
            {"data": {"values": seeds}, "mark": {"type": "point", "filled": True, "size": 60, "tooltip": True},
             "encoding": {"x": x, "y": y,
                          "tooltip": [{"field": "name", "title": "rung"}, {"field": "seed", "title": "seed"},
                                      {"field": "y", "title": "nats per character", "format": ".4~g"}]}},
        ],
    }
    short = {HELPS: "better", HURTS: "worse", WITHIN: "within spread"}  # gui.panels.going_deeper.ladder
    rows = []
    for rung in rungs:
        change, verdict = rung.get("change_from_previous"), short.get(rung.get("against_previous"), "the first rung")
        rows.append((rung["name"], rung["change"], f"{int(rung['parameters']):,}", f"{rung['mean_nats_per_char']:.3f}",
                     f"{rung['spread_nats_per_char']:.3f}", verdict if change is None else f"{change:+.3f} {verdict}"))
    figures = (Figure("ladder_plot", "Held-out loss of each rung", spec),
               table("ladder_table", "The rungs", ("rung", "change", "parameters", "mean", "spread", "vs before"),
                     rows))
    values = {f"{rung['name']}_mean": float(rung["mean_nats_per_char"]) for rung in rungs}
    return StepFigures(figures, {"ladder_summary": record_summary(record)}, values)


__all__ = ["going_deeper_figures", "ladder_figures", "stretching_figures"]
