"""The Tokens & masks views other than Propagation, for a page: the mask grids, the attention maps, the head split,
one head worked by hand and the next-token predictions, each computed by the core experiment its window view runs
(gui.panels.tokens.*), at the lab's model, tokens and selected layer and head.

The One head view's tables and captions are written here as its window view writes them (a GUI test compares the
numbers for the same lesson step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from core.experiments.worked_head_text import (head_text, key_cells, key_headers, key_rows, keys_caption,
                                             tolerance_text, vector_cells, vector_headers, vectors_caption)
from core.handouts.figures import Figure, StepFigures, bars, heatmap, table

HEAD_SPLIT_MAX_TOKENS = 24  # gui.panels.tokens.head_split
PREDICTIONS_TOP_K = 10  # the Predictions view's top-k spin as it starts


def _sequence_problem(model: Any, tokens: list[int]) -> None:
    """The views' refusal of a sequence the model cannot read (gui.panels.common.sequence_refusal)."""
    config = model.config
    if not tokens:
        raise ValueError("Type some text above: there are no tokens to edit.")
    if len(tokens) > config.context_length:
        raise ValueError(f"Text: {len(tokens)} tokens exceed {config.name}'s context length of "
                         f"{config.context_length}; delete at least {len(tokens) - config.context_length} tokens or "
                         "shorten the text.")
    if max(tokens) >= config.vocab_size:
        raise ValueError(f"Token id {max(tokens)} is outside {config.name}'s vocabulary of {config.vocab_size}.")


def mask_kinds(config: Any) -> list[tuple[str, bool]]:
    """(mask_grid kind, whether the mask mode applies to it) for the kinds this config has (gui.panels.tokens.mask)."""
    if config.architecture == "encoder":
        return [("encoder-self", True)]
    if config.architecture == "encoder-decoder":
        return [("decoder-self", True), ("encoder-self", False), ("cross", False)]
    return [("decoder-self", True)]


def tokens_view_figures(tab: str, settings: Mapping[str, Any], lab: Any, model: Any) -> StepFigures:
    """One sub-tab of Tokens & masks (not Propagation)."""
    mask_mode = settings.get("mask_mode", "causal")
    if tab == "Head split":
        return _head_split(lab, model, mask_mode)
    tokens = list(lab.tokens)
    _sequence_problem(model, tokens)
    if tab == "Mask":
        return _masks(lab, model, tokens, mask_mode)
    if tab == "Attention":
        return _attention(settings, lab, model, tokens, mask_mode)
    if tab == "One head":
        return worked_head_figures(settings, lab, model, tokens, mask_mode)
    if tab == "Predictions":
        return _predictions(settings, lab, model, tokens, mask_mode)
    raise ValueError(f"Tokens & masks has no sub-tab {tab!r}")


# ---- Mask -----------------------------------------------------------------------------------------

def _masks(lab: Any, model: Any, tokens: list[int], mask_mode: str) -> StepFigures:
    from core.experiments.common import token_labels
    from core.experiments.mask_grids import mask_grid

    labels = token_labels(tokens, lab.tokenizer)
    figures, notes = [], []
    for kind, applies in mask_kinds(model.config):
        grid = mask_grid(model.config, len(tokens), kind, mask_mode if applies else None, query_labels=labels,
                         key_labels=labels)
        # 1 can attend, 0.5 in the softmax denominator with its weight zeroed after it, 0 masked (the window's colours)
        values = np.where(grid.visible, 1.0, np.where(grid.in_denominator, 0.5, 0.0))  # (T, S)
        rows = [f"⚠{label}" if empty else label for label, empty in zip(grid.query_labels, grid.empty_rows)]
        figures.append(heatmap("mask", f"{grid.title} (1 can attend, 0.5 zeroed after softmax, 0 masked)", values,
                               rows, list(grid.key_labels), "query", "key", "can attend"))
        note = f"{grid.title}: {grid.note}"
        if grid.empty_rows.any():
            note += f" {int(grid.empty_rows.sum())} query row(s) see no key (⚠): softmax 0/0 gives NaN."
        notes.append(note)
    return StepFigures(tuple(figures), {"mask": "\n".join(notes)}, {})


# ---- Attention ------------------------------------------------------------------------------------

def _attention(settings: Mapping[str, Any], lab: Any, model: Any, tokens: list[int], mask_mode: str) -> StepFigures:
    from core.experiments.attention_maps import attention_maps

    kind = settings.get("attention", "self")
    if model.config.architecture != "encoder-decoder":
        kind = "self"
    maps = attention_maps(model, tokens, mask_mode=mask_mode if kind == "self" else None,
                          tokenizer_or_labels=lab.tokenizer, attention=kind)
    layers, heads = maps.weights.shape[:2]
    layer = min(int(settings.get("selected_layer", 0)), layers - 1)
    head = min(int(settings.get("selected_head", 0)), heads - 1)
    mask = "no" if maps.mask_mode == "none" else maps.mask_mode
    prefix = "" if maps.title == "self-attention" else f"{maps.title}: "
    title = f"{prefix}{maps.layer_labels[layer]}, head {head} ({mask} mask)"
    selected = heatmap("attention", title, maps.weights[layer, head], list(maps.query_labels),
                       list(maps.key_labels), "query", "key", "weight")
    # Every head's pattern side by side, as the window's overview tiles them: one row per (layer, query).
    tiles = maps.weights.transpose(0, 2, 1, 3).reshape(layers * maps.weights.shape[2], heads * maps.weights.shape[3])
    rows = [f"{maps.layer_labels[l]} q{q}" for l in range(layers) for q in range(maps.weights.shape[2])]
    columns = [f"H{h} k{k}" for h in range(heads) for k in range(maps.weights.shape[3])]
    overview = heatmap("attention", "All layers × heads (rows: layer, query; columns: head, key)", tiles, rows,
                       columns, "layer, query", "head, key", "weight")
    weights = maps.weights[layer, head]
    last = weights[-1]
    return StepFigures((selected, overview), {},
                       {"last_query_top_key": int(np.nanargmax(last)), "last_query_top_weight": float(np.nanmax(last))})


# ---- Head split -----------------------------------------------------------------------------------

def _head_split(lab: Any, model: Any, mask_mode: str) -> StepFigures:
    from core.experiments.head_split import head_split_check

    config = model.config
    n_tokens = max(2, min(len(lab.tokens), HEAD_SPLIT_MAX_TOKENS))
    split = head_split_check(lab.seed, config.d_model, config.n_heads, n_tokens, causal=mask_mode != "none")
    labels = [str(i) for i in range(split.n_tokens)]
    correct = f"{split.correct_difference:.1e}" if split.correct_difference else "0.0"
    titles = ("reference: softmax(q k^T / sqrt(d_head)) on columns 0..d_head-1",
              f"view(B,T,H,d).transpose(1,2): max |Δ| vs reference = {correct}",
              f"one view(B,H,T,d): max |Δ| vs reference = {split.wrong_difference:.3f}")
    maps = (split.single_head_weights, split.multi_head_weights, split.wrong_reshape_weights)
    figures = tuple(heatmap("head_split", title, weights, labels, labels, "query", "key", "weight")
                    for title, weights in zip(titles, maps))
    return StepFigures(figures, {"head_split": "\n".join(titles[1:])},
                       {"correct_difference": float(split.correct_difference),
                        "wrong_difference": float(split.wrong_difference)})


# ---- One head -------------------------------------------------------------------------------------

def worked_head_figures(settings: Mapping[str, Any], lab: Any, model: Any, tokens: list[int],
                        mask_mode: str) -> StepFigures:
    """q, every k, q.k, the scale, the mask, the softmax and weights . v for one query, beside the model's head."""
    from core.experiments.worked_head import worked_head

    config = model.config
    layer = min(int(settings.get("selected_layer", 0)), len(model.blocks) - 1)
    head = min(int(settings.get("selected_head", 0)), config.n_heads - 1)
    query = settings.get("worked_query")
    query = len(tokens) - 1 if query is None else min(int(query), len(tokens) - 1)
    omit = settings.get("worked_omit") or ""
    worked = worked_head(model, tokens, layer, head, query, mask_mode=mask_mode, omit=(omit,) if omit else (),
                         tokenizer_or_labels=lab.tokenizer)
    all_keys = bool(settings.get("worked_all_keys", False))
    keys_figure, keys_caption = _keys(worked, all_keys)
    key = int(worked.keys_by_weight()[0])
    vectors_figure, vectors_caption = _vectors(worked, key)
    quotes = {"worked_verdict": f"Hand result {worked.verdict}", "worked_head_caption": head_text(worked),
              "worked_keys_caption": keys_caption, "worked_vectors_caption": vectors_caption,
              "worked_tolerance_caption": tolerance_text(worked)}
    weights = np.nan_to_num(worked.weights)
    values = {"hand_equals_model": "yes" if worked.equal else "no", "top_key": key,
              "top_weight": float(weights[key]), "weights_sum": float(weights.sum()),
              "max_difference": float(np.abs(worked.hand_output - worked.model_output).max())}
    return StepFigures((keys_figure, vectors_figure), quotes, values)


def _keys(worked: Any, all_keys: bool) -> tuple[Figure, str]:
    rows = key_rows(worked, all_keys)
    cells = [[f"key {key}", *key_cells(worked, key)] for key in rows]
    return (table("worked_keys_table", f"Query {worked.query}: every step for each key", ["", *key_headers(worked)],
                  cells), keys_caption(worked, rows))


def _vectors(worked: Any, key: int) -> tuple[Figure, str]:
    cells = [[f"dim {i}", *row] for i, row in enumerate(vector_cells(worked, key))]
    return table("worked_vectors_table", f"Query {worked.query} and key {key}, dimension by dimension",
                 ["", *vector_headers(worked, key)], cells), vectors_caption(worked, key)


# ---- Predictions ----------------------------------------------------------------------------------

def _predictions(settings: Mapping[str, Any], lab: Any, model: Any, tokens: list[int], mask_mode: str) -> StepFigures:
    from core.experiments.next_token import next_token_predictions, next_token_refusal

    problem = next_token_refusal(model.config)
    if problem:
        raise ValueError(problem[0].upper() + problem[1:] + ".")
    position = settings.get("worked_query")  # the strip's one selection: the worked query and this position
    position = position if isinstance(position, int) and 0 <= position < len(tokens) else len(tokens) - 1
    temperature = round(float(settings.get("temperature", 1.0)), 4)
    predictions = next_token_predictions(model, tokens, position, lab.tokenizer,
                                         k=int(settings.get("top_k", PREDICTIONS_TOP_K)), temperature=temperature,
                                         mask_mode=mask_mode)
    figure = bars("predictions", f"Next token after position {predictions.position} (T = {predictions.temperature:g})",
                  list(predictions.labels), predictions.probabilities, "token", "probability")
    return StepFigures((figure,), {},
                       {"top_token": predictions.labels[0], "top_probability": float(predictions.probabilities[0])})


__all__ = ["tokens_view_figures", "worked_head_figures"]
