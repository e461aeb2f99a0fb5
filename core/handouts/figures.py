"""A step's or a view's figures as data: Vega-Lite specifications with their numbers inline, and the texts its
`{{name}}` quotes show.

Vega-Lite draws each figure in the page (hover for values, zoom and pan where the axes are continuous, a slider
where the window drags a handle); the numbers are the ones the core experiment computed, rounded to float32's
precision at most (the page shows what the window shows, no digit more).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_CELLS = 20_000  # a heatmap larger than this is thinned: a page stays well under its size bound
FIGURE_WIDTH = 520
FIGURE_HEIGHT = 300


@dataclass(frozen=True)
class Figure:
    """One figure: the lesson part it stands for (covered until Reveal like the window's), a title and the spec."""

    part: str
    title: str
    spec: dict[str, Any]  # a Vega-Lite specification; {} for a table
    table: tuple[tuple[str, ...], ...] = ()  # a table's header row, then its rows, as the view's cells read
    note: str = ""  # one line in place of a figure the view does not draw for these inputs (spec and table empty)


@dataclass(frozen=True)
class StepFigures:
    """What a page shows for one step or view: figures, the texts its quotes take, and the named figures a
    prediction's rule may read."""

    figures: tuple[Figure, ...] = ()
    quotes: Mapping[str, str] = field(default_factory=dict)  # part name -> the text the window's widget shows
    values: Mapping[str, Any] = field(default_factory=dict)  # rule name -> a number or a string
    note: str = ""  # what the page cannot show of this step, in words ("" when it shows all of it)


def _number(value: Any) -> float | None:
    """A finite number with float32's significant digits (JSON has no NaN): None for NaN or infinity."""
    value = float(value)
    return float(f"{value:.7g}") if math.isfinite(value) else None


def _tooltip(fields: Sequence[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [{"field": name, "type": kind, "title": title, **({"format": ".4~g"} if kind == "quantitative" else {})}
            for name, kind, title in fields]


def _label_axis(labels: Sequence[str], angle: int = 0) -> dict[str, Any]:
    """An axis over integer indices that prints each index's label (the data carries indices: a smaller page)."""
    literal = json.dumps([str(label) for label in labels], ensure_ascii=False)
    return {"labelExpr": f"{literal}[datum.value]", "labelAngle": angle, "labelOverlap": True}


def thinning(size: int) -> int:
    """Every how many rows and columns a heatmap of `size` cells keeps (1: all of them)."""
    return max(1, math.ceil(math.sqrt(size / MAX_CELLS)))


def heatmap(part: str, title: str, values: np.ndarray, rows: Sequence[str], columns: Sequence[str], row_title: str,
            column_title: str, value_title: str = "value", scale: str = "linear") -> Figure:
    """A (rows, columns) grid of coloured cells; hovering a cell shows its row, column and value."""
    values = np.asarray(values, dtype=np.float64)  # (R, C)
    step = thinning(values.size)
    data = [{"r": i, "c": j, "v": _number(values[i, j])}
            for i in range(0, values.shape[0], step) for j in range(0, values.shape[1], step)]
    colour: dict[str, Any] = {"field": "v", "type": "quantitative", "title": value_title}
    if scale != "linear":
        colour["scale"] = {"type": scale}
    spec = {
        "title": title, "width": FIGURE_WIDTH, "height": FIGURE_HEIGHT,
        "data": {"values": data},
        "transform": [{"calculate": f"{json.dumps(list(map(str, rows)), ensure_ascii=False)}[datum.r]", "as": "row"},
                      {"calculate": f"{json.dumps(list(map(str, columns)), ensure_ascii=False)}[datum.c]",
                       "as": "column"}],
        "mark": {"type": "rect", "tooltip": True},
        "encoding": {
            "x": {"field": "c", "type": "ordinal", "title": column_title, "axis": _label_axis(columns, -60)},
            "y": {"field": "r", "type": "ordinal", "title": row_title, "axis": _label_axis(rows)},
            "color": colour,
            "tooltip": _tooltip([("row", "nominal", row_title), ("column", "nominal", column_title),
                                 ("v", "quantitative", value_title)]),
        },
    }
    return Figure(part, title, spec)


def lines(part: str, title: str, x: Sequence[float], series: Mapping[str, Sequence[float]], x_title: str,
          y_title: str, scale: str = "linear", marker: Mapping[str, Any] | None = None,
          x_scale: str = "linear") -> Figure:
    """One line per series against x; drag to pan, scroll to zoom, hover for values. `marker` adds a slider:
    {"name": "m", "label": "query position m", "value": 3} shows the point of each series at x = the slider; with
    "options" (x values far apart, a width sweep's) the control is a list of them instead."""
    data = [{"x": _number(xv), "y": _number(yv), "series": name}
            for name, ys in series.items() for xv, yv in zip(x, ys)]
    y_scale = {"type": scale} if scale != "linear" else {"zero": False}
    base = {
        "mark": {"type": "line", "point": len(x) <= 64, "tooltip": True},
        "encoding": {
            "x": {"field": "x", "type": "quantitative", "title": x_title,
                  **({"scale": {"type": x_scale}} if x_scale != "linear" else {})},
            "y": {"field": "y", "type": "quantitative", "title": y_title, "scale": y_scale},
            "color": {"field": "series", "type": "nominal", "title": None, "legend": {"orient": "bottom"}},
            "tooltip": _tooltip([("series", "nominal", "series"), ("x", "quantitative", x_title),
                                 ("y", "quantitative", y_title)]),
        },
        "params": [{"name": "zoom", "select": "interval", "bind": "scales"}],
    }
    spec: dict[str, Any] = {"title": title, "width": FIGURE_WIDTH, "height": FIGURE_HEIGHT,
                            "data": {"values": data}}
    if marker is None:
        spec.update(base)
    else:
        low, high = float(min(x)), float(max(x))
        bind = ({"input": "select", "options": list(marker["options"])} if "options" in marker  # uneven x: a list
                else {"input": "range", "min": low, "max": high, "step": 1})
        slider = {"name": marker["name"], "value": marker["value"], "bind": {**bind, "name": f"{marker['label']} "}}
        point = {
            "transform": [{"filter": f"datum.x == {marker['name']}"}],
            "mark": {"type": "point", "filled": True, "size": 140, "tooltip": True},
            "encoding": {**base["encoding"], "x": base["encoding"]["x"]},
        }
        rule = {"transform": [{"filter": f"datum.x == {marker['name']}"}],
                "mark": {"type": "rule", "strokeDash": [4, 4]},
                "encoding": {"x": base["encoding"]["x"]}}
        spec["params"] = [slider]
        spec["layer"] = [base, point, rule]
    return Figure(part, title, spec)


def bars(part: str, title: str, labels: Sequence[str], values: Sequence[float], label_title: str,
         value_title: str, scale: str = "linear") -> Figure:
    """One bar per label, in the order given; hover for the value."""
    data = [{"i": i, "label": str(label), "v": _number(value)} for i, (label, value) in enumerate(zip(labels, values))]
    spec = {
        "title": title, "width": FIGURE_WIDTH, "height": FIGURE_HEIGHT,
        "data": {"values": data},
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "i", "type": "ordinal", "title": label_title, "axis": _label_axis(labels, -60)},
            "y": {"field": "v", "type": "quantitative", "title": value_title,
                  "scale": {"type": scale} if scale != "linear" else {}},
            "tooltip": _tooltip([("label", "nominal", label_title), ("v", "quantitative", value_title)]),
        },
    }
    return Figure(part, title, spec)


def note(part: str, text: str) -> Figure:
    """One line where the view draws no figure for these inputs (a model without a learned table, say)."""
    return Figure(part, text, {}, note=text)


def table(part: str, title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Figure:
    """A table drawn as an HTML table: the view's cells as the view writes them (plain text)."""
    return Figure(part, title, {}, (tuple(map(str, header)), *(tuple(map(str, row)) for row in rows)))


__all__ = ["Figure", "StepFigures", "bars", "heatmap", "lines", "note", "table", "thinning"]
