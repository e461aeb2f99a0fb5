"""The Features panel for a page: a feature's dashboard (its top contexts shaded, its histogram, the tokens its
decoder direction pushes up and down, the features firing on the text) and steering (the next-token bars without
and with the edit), computed by core.features.views as the window's views compute them. Training an SAE happens in
the app."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.handouts.figures import FIGURE_HEIGHT, FIGURE_WIDTH, Figure, StepFigures, _number, bars, table

# The Features panel's controls as the window starts them (gui.panels.features).
FEATURES_DEFAULTS: dict[str, Any] = {"tab": "Feature", "feature": 0, "alpha": 0.0, "ablate": False}
FEATURES_TRAIN_NOTE = ("Training happens in the app: the Features panel's Train view trains a sparse autoencoder on "
                       "the lab's model, which a page cannot run.")


class _Token:
    """A compute token that is never superseded (a page computes one request)."""

    def check(self) -> None:
        return None

    def report(self, fraction: float, text: str) -> None:
        return None


def _sae_problem(model: Any, path: str) -> str | None:
    """Why the SAE at `path` cannot read the lab's model, or None."""
    from pathlib import Path

    from core.checkpoint_files import read_json_file
    from core.features.fingerprint import weights_fingerprint
    from core.features.sae import CFG_FILE, config_from_cfg
    from core.features.sae_fit import sae_mismatch

    config = config_from_cfg(read_json_file(Path(path) / CFG_FILE, "an SAE config"), Path(path) / CFG_FILE)
    return sae_mismatch(model, config, weights_fingerprint)


def features_figures(settings: Mapping[str, Any], lab: Any, model: Any) -> StepFigures:
    from core.features.library import bundled_sae_names, sae_path

    settings = {**FEATURES_DEFAULTS, **settings}
    if settings["tab"] == "Train":
        return StepFigures(note=FEATURES_TRAIN_NOTE)
    names = bundled_sae_names()
    if not names:
        raise ValueError("SAE: no SAE is bundled; train one with `transformer-explorer sae train`.")
    name = settings.get("sae") if settings.get("sae") in names else names[0]
    path = str(sae_path(name))
    problem = _sae_problem(model, path)
    if problem is not None:
        raise ValueError(problem)
    if not lab.tokens:
        raise ValueError("Text: type some text (the sidebar's text field) to read its features.")
    label = _labeller(lab.tokenizer)
    if settings["tab"] == "Steer":
        return _steer_figures(settings, lab, model, path, label)
    return _dashboard_figures(settings, lab, model, path, label)


def _labeller(tokenizer: Any):
    from core.display import display_token

    def label(token_id: int) -> str:  # gui.panels.common.token_label
        if tokenizer is not None and 0 <= token_id < tokenizer.vocab_size:
            return display_token(tokenizer.token_text(token_id))
        return f"#{token_id}"

    return label


def _dashboard_figures(settings: Mapping[str, Any], lab: Any, model: Any, path: str, label) -> StepFigures:
    from core.features.views import FeatureInputs, compute_dashboard, dashboard_summary, logit_effects

    tokens = list(lab.tokens)
    search = settings.get("search") or [0, len(tokens) - 1]
    last = min(int(search[1]), len(tokens) - 1)
    first = min(int(search[0]), last)
    result = compute_dashboard(FeatureInputs(model, lab.tokenizer, path, tuple(tokens), int(settings["feature"]),
                                             (first, last)), _Token())
    summary = result.summary
    figures = [_contexts_figure(result, label)]
    edges = summary.histogram_edges
    centres = [f"{(edges[i] + edges[i + 1]) / 2:.3g}" for i in range(len(edges) - 1)]
    figures.append(bars("feature_histogram", "Histogram of its activation where active", centres,
                        summary.histogram_counts, "activation", "tokens"))
    ups = [label(int(i)) for i in summary.up_ids]
    downs = [label(int(i)) for i in summary.down_ids]
    figures.append(bars("feature_logits", "Logits its decoder direction pushes up and down", [*ups, *downs],
                        [*summary.up_values, *summary.down_values], "token", "logit change"))
    figures.append(table("feature_search_table", f"Features that fire most on positions {first}..{last}",
                         ("feature", "summed activation"), [(str(f), f"{v:.3f}") for f, v in result.search]))
    figures.append(table("feature_tokens", "The text's tokens and their most active features",
                         ("position", "token", "active features (activation)"),
                         [(str(p), label(t), ", ".join(f"{f} ({v:.2f})" for f, v in active) or "none")
                          for p, (t, active) in enumerate(zip(tokens, result.per_token))]))
    quotes = {"feature_summary": dashboard_summary(result), "feature_logits": logit_effects(result, label)}
    values = {"density": float(summary.density), "max_activation": float(summary.max_activation),
              "top_up_token": ups[0] if ups else "", "top_down_token": downs[0] if downs else ""}
    return StepFigures(tuple(figures), quotes, values)


def _contexts_figure(result: Any, label) -> Figure:
    """Each top context as a row of its tokens, shaded by the feature's activation, the firing token outlined."""
    cells = [{"r": r, "c": c, "t": label(int(token)), "v": _number(value), "fire": c == context.marked}
             for r, context in enumerate(result.contexts)
             for c, (token, value) in enumerate(zip(context.ids, context.activations))]
    rows = [f"{context.activation:.2f}" for context in result.contexts]
    y = {"field": "r", "type": "ordinal", "title": "context (its top activation)",
         "axis": {"labelExpr": f"{json.dumps(rows)}[datum.value]"}}
    x = {"field": "c", "type": "ordinal", "title": None, "axis": None}
    spec = {
        "title": "Top activating contexts on held-out Shakespeare (the firing token outlined)",
        "width": FIGURE_WIDTH, "height": max(60, 24 * len(rows)), "data": {"values": cells},
        "layer": [
            {"mark": {"type": "rect", "tooltip": True},
             "encoding": {"x": x, "y": y, "color": {"field": "v", "type": "quantitative", "title": "activation",
                                                     "scale": {"scheme": "oranges", "domainMin": 0}},
                          "stroke": {"condition": {"test": "datum.fire", "value": "#000000"}, "value": None},
                          "tooltip": [{"field": "t", "title": "token"},
                                      {"field": "v", "title": "activation", "format": ".4~g"}]}},
            {"mark": {"type": "text", "fontSize": 11},
             "encoding": {"x": x, "y": y, "text": {"field": "t"}}},
        ],
    }
    return Figure("feature_contexts", "Top activating contexts", spec)


def _steer_figures(settings: Mapping[str, Any], lab: Any, model: Any, path: str, label) -> StepFigures:
    from core.features.views import SteerInputs, compute_steering, steer_summary, top_next

    feature, alpha, ablate = int(settings["feature"]), float(settings["alpha"]), bool(settings["ablate"])
    result = compute_steering(SteerInputs(model, path, tuple(lab.tokens), feature, alpha, ablate), _Token())
    ids = top_next(result)
    names = [label(int(i)) for i in ids]
    data = [{"i": k, "token": names[k], "edit": edit, "p": _number(probs[i])}
            for edit, probs in (("without the edit", result.clean_probs), ("with the edit", result.steered_probs))
            for k, i in enumerate(ids)]
    spec = {
        "title": "Next token after the text", "width": FIGURE_WIDTH, "height": FIGURE_HEIGHT,
        "data": {"values": data}, "mark": {"type": "bar", "tooltip": True},
        "encoding": {"x": {"field": "i", "type": "ordinal", "title": "token",
                           "axis": {"labelExpr": f"{json.dumps(names, ensure_ascii=False)}[datum.value]"}},
                     "xOffset": {"field": "edit", "sort": ["without the edit", "with the edit"]},
                     "y": {"field": "p", "type": "quantitative", "title": "probability"},
                     "color": {"field": "edit", "type": "nominal", "title": None,
                               "sort": ["without the edit", "with the edit"], "legend": {"orient": "bottom"}},
                     "tooltip": [{"field": "token"}, {"field": "edit"}, {"field": "p", "title": "probability",
                                                                         "format": ".4~g"}]},
    }
    summary = steer_summary(result, feature, alpha, ablate)
    continuations = table("steer_steered", "The greedy continuation", ("", "text"),
                          [("without", "".join(label(int(i)) for i in result.clean_ids)),
                           ("with", "".join(label(int(i)) for i in result.steered_ids))])
    values = {"identical": "yes" if result.identical else "no",
              "top_clean": names[0], "top_steered": label(int(result.steered_probs.argmax()))}
    return StepFigures((Figure("steer_plot", "Next token after the text", spec), continuations),
                       {"steer_summary": summary}, values)


__all__ = ["FEATURES_TRAIN_NOTE", "features_figures"]
