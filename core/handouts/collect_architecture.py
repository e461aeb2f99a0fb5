"""The Architecture panel for a page: the block diagram laid out by core.diagram_layout (as the window's diagram
is), drawn by Vega-Lite with each part's hover text, and the Follow one token view (core.experiments.follow_token)
with its caption, table and lengths."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.config_description import describe_config
from core.diagram_layout import diagram_parts, format_shape
from core.experiments.follow_token_text import (LENS_HEADERS, TOP_K, TUNED_HEADER, describe_reads, follow_caption,
                                              tuned_cell)
from core.handouts.figures import Figure, StepFigures, bars, table

PIXELS_PER_LINE = 14  # the diagram's unit is a line of text


def diagram_figure(config: Any, seq_len: int) -> Figure:
    """Boxes, arrows and labels at the layout's coordinates; hovering a box shows what the window's hover shows."""
    diagram = diagram_parts(config, seq_len)
    sizes = f"B = 1, T = {seq_len}" if seq_len > 0 else "B = 1 and T tokens"
    boxes = [{"x": part.rect[0], "x2": part.rect[0] + part.rect[2],
              "y": part.rect[1], "y2": part.rect[1] + part.rect[3],
              "cx": part.rect[0] + part.rect[2] / 2, "cy": part.rect[1] + part.rect[3] / 2, "label": part.label,
              "what": part.explanation, "parameters": f"{part.parameters:,}",
              "shape": f"{format_shape(part.shape)} for {sizes}", "panel": part.panel}
             for part in diagram.parts if part.rect[2] > 0 and part.rect[3] > 0]
    boxes.sort(key=lambda box: -(box["x2"] - box["x"]) * (box["y2"] - box["y"]))  # a block under the parts inside it
    links = [{"link": index, "order": order, "x": x, "y": y}
             for index, link in enumerate(diagram.links) for order, (x, y) in enumerate(link.points)]
    x_scale = {"domain": [0, diagram.width], "nice": False, "zero": False}
    y_scale = {"domain": [0, diagram.height], "reverse": True, "nice": False, "zero": False}
    axis_free = {"axis": None}
    spec = {
        "title": "The model as a block diagram (hover a box)",
        "width": round(diagram.width * PIXELS_PER_LINE), "height": round(diagram.height * PIXELS_PER_LINE),
        "layer": [
            {"data": {"values": boxes}, "mark": {"type": "rect", "fill": "#e8eef7", "stroke": "#44546a",
                                                 "cornerRadius": 3, "tooltip": True},
             "encoding": {"x": {"field": "x", "type": "quantitative", "scale": x_scale, **axis_free},
                          "x2": {"field": "x2"},
                          "y": {"field": "y", "type": "quantitative", "scale": y_scale, **axis_free},
                          "y2": {"field": "y2"},
                          "tooltip": [{"field": "label", "title": "part"}, {"field": "what", "title": "what it does"},
                                      {"field": "parameters", "title": "parameters"},
                                      {"field": "shape", "title": "output shape"},
                                      {"field": "panel", "title": "studied in"}]}},
            # the stream runs through each block: drawn over the boxes
            {"data": {"values": links}, "mark": {"type": "line", "color": "#777777"},
             "encoding": {"x": {"field": "x", "type": "quantitative", "scale": x_scale, **axis_free},
                          "y": {"field": "y", "type": "quantitative", "scale": y_scale, **axis_free},
                          "detail": {"field": "link"}, "order": {"field": "order"}}},
            {"data": {"values": boxes}, "mark": {"type": "text", "fontSize": 11},
             "encoding": {"x": {"field": "cx", "type": "quantitative", "scale": x_scale, **axis_free},
                          "y": {"field": "cy", "type": "quantitative", "scale": y_scale, **axis_free},
                          "text": {"field": "label"}}},
        ],
    }
    return Figure("view", "The model as a block diagram", spec)


def architecture_figures(settings: Mapping[str, Any], lab: Any, model: Any) -> StepFigures:
    """The diagram of the lab's model at its text's length, and the followed token's stages."""
    from core.experiments.follow_token import follow_token

    config, tokens = lab.config, list(lab.tokens)
    figures: list[Figure] = [diagram_figure(config, len(tokens))]
    quotes = {"config_label": describe_config(config)}
    if not tokens:
        return StepFigures(tuple(figures), quotes, {}, "Type some text to follow one of its tokens.")
    chosen = settings.get("follow_position")
    position = max(0, len(tokens) - 2) if chosen is None else min(int(chosen), len(tokens) - 1)
    tower = settings.get("follow_tower", "decoder") if config.architecture == "encoder-decoder" else "decoder"
    tokenizer = lab.tokenizer if getattr(lab.tokenizer, "vocab_size", config.vocab_size) == config.vocab_size else None
    result = follow_token(model, tokens, position, tokenizer, k=TOP_K, tower=tower)
    tuned = bool(settings.get("tuned_lens", False))
    if tuned:
        from core.features.library import with_tuned_lens

        result = with_tuned_lens(result, model, tokens, tokenizer, TOP_K)
    ids_only = tokenizer is None
    prefix = "id " if ids_only else ""
    rows = []
    for row in range(result.n_stages):
        guesses = "  │  ".join(f"{prefix}{label} {prob:.0%}" if prob >= 0.01 else f"{prefix}{label} <1%"
                               for label, prob in zip(result.top_labels[row], result.top_probs[row]))
        rows.append((result.stage_labels[row], f"{result.norms[row]:.2f}", f"{result.update_norms[row]:.2f}",
                     guesses if result.has_lens else "—", describe_reads(result, row, ids_only),
                     *((tuned_cell(result, row),) if tuned else ())))
    figures.append(table("table", f"Token {position} through the model, stage by stage",
                         ("stage", "‖x‖", "‖update‖", LENS_HEADERS[result.predicts], "reads / routes to",
                          *((TUNED_HEADER,) if tuned else ())), rows))
    stages = list(result.stage_labels)
    figures.append(bars("norm_plot", "‖x‖ after each stage", stages, result.norms, "stage", "length"))
    figures.append(bars("norm_plot", "‖update‖ each stage added", stages, result.update_norms, "stage", "length"))
    quotes["follow_caption"] = _caption(result, ids_only)
    values = {"last_stage_top_guess": result.top_labels[-1][0] if result.has_lens else "",
              "final_norm": float(result.norms[-1])}
    if tuned and not result.tuned_note:
        import numpy as np

        read = [row for row in range(result.n_stages) if row < len(result.tuned_top_labels)
                and result.tuned_top_labels[row]]
        figures.append(_lens_kl_figure(result, read))
        values.update({"tuned_kl_mean": float(np.mean([result.tuned_kl[row] for row in read])),
                       "logit_kl_mean": float(np.mean([result.logit_kl[row] for row in read]))})
    return StepFigures(tuple(figures), quotes, values)


def _lens_kl_figure(result: Any, read: list[int]) -> Figure:
    """KL(output || lens) of the logit lens and of the tuned lens at each stage a translator reads."""
    from core.handouts.figures import lines

    stages = [result.stage_labels[row] for row in read]
    figure = lines("table", "KL(output ‖ lens) in nats at each stage a translator reads", list(range(len(read))),
                   {"logit lens": [result.logit_kl[row] for row in read],
                    "tuned lens": [result.tuned_kl[row] for row in read]}, "stage", "KL (nats)")
    figure.spec["encoding"]["x"]["axis"] = {"labelExpr": f"{json.dumps(stages, ensure_ascii=False)}[datum.value]",
                                            "tickMinStep": 1}
    return figure


def _caption(result: Any, ids_only: bool) -> str:
    def named(label: str) -> str:
        return f"id {label}" if ids_only else f"'{label}'"

    return follow_caption(result, named, result.model_name)


__all__ = ["architecture_figures", "describe_config", "diagram_figure"]
