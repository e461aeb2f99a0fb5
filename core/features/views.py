"""What the Features views compute on the worker (a feature's dashboard, the text's features, steering) and the
captions they write, which an exported page quotes too.

The dashboard reads the held-out Shakespeare (the last tenth of the corpus), 4,096 tokens in windows
of 128, as `sae stats` does; the text's features and steering read the lab's own tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

DASHBOARD_TOKENS = 4096
DASHBOARD_WINDOW = 128
CONTEXTS = 8
PER_TOKEN = 3  # features listed beside each token of the text
SEARCH_COUNT = 10
NEXT_TOKENS = 10
NEW_TOKENS = 40
_held_out_windows: dict[Any, Any] = {}


@dataclass(frozen=True)
class FeatureInputs:
    model: Any
    tokenizer: Any
    sae_path: str
    tokens: tuple[int, ...]
    feature: int
    selection: tuple[int, int]  # first and last position of the text searched for the features firing there


@dataclass(frozen=True)
class SteerInputs:
    model: Any
    sae_path: str
    tokens: tuple[int, ...]
    feature: int
    alpha: float
    ablate: bool


@dataclass(frozen=True)
class DashboardResult:
    feature: int
    d_sae: int
    contexts: list  # core.features.sae_stats.TopContext, strongest first
    summary: Any  # core.features.sae_stats.FeatureSummary
    tokens_read: int
    per_token: list[list[tuple[int, float]]]  # the text's tokens: their most active features, strongest first
    search: list[tuple[int, float]]  # features most active over the selection, strongest first
    selection: tuple[int, int]


def open_sae(path: str):
    """The SAE at `path`, read once per version of its weights file (the worker's cache)."""
    from pathlib import Path

    from core.features.sae import WEIGHTS_FILE, load_sae

    stamp = (path, Path(path, WEIGHTS_FILE).stat().st_mtime_ns)
    cached = _sae_cache.get("sae")
    if cached is None or cached[0] != stamp:
        _sae_cache["sae"] = (stamp, load_sae(path))
    return _sae_cache["sae"][1]


_sae_cache: dict[str, Any] = {}


def held_out_windows(tokenizer):
    """(32, 128) the held-out Shakespeare as the model's tokenizer reads it (kept per tokenizer)."""
    key = id(tokenizer)
    if key not in _held_out_windows:
        from core.corpus import bundled_corpus
        from core.features.activations import consecutive_windows, split_ids, token_ids

        ids = split_ids(token_ids(tokenizer, bundled_corpus().text), "held-out")
        _held_out_windows.clear()
        _held_out_windows[key] = (tokenizer, consecutive_windows(ids, DASHBOARD_WINDOW, DASHBOARD_TOKENS))
    return _held_out_windows[key][1]


def compute_dashboard(inputs: FeatureInputs, token) -> DashboardResult:
    import torch

    from core.features.sae_stats import feature_activations, feature_summary, features_at, top_contexts

    sae = open_sae(inputs.sae_path)
    token.check()
    windows = held_out_windows(inputs.tokenizer)
    activations = feature_activations(inputs.model, sae, windows)  # (W, T, F)
    token.report(0.5, "reading the text's features")
    contexts = top_contexts(activations, windows, inputs.feature, CONTEXTS)
    summary = feature_summary(inputs.model, sae, activations, inputs.feature)
    text = torch.tensor([inputs.tokens])  # (1, T)
    own = feature_activations(inputs.model, sae, text)[0]  # (T, F)
    per_token = [features_at(own, [position], PER_TOKEN) for position in range(own.shape[0])]
    first, last = inputs.selection
    search = features_at(own, list(range(first, last + 1)), SEARCH_COUNT)
    return DashboardResult(inputs.feature, sae.config.d_sae, contexts, summary, int(windows.numel()), per_token,
                           search, inputs.selection)


def compute_steering(inputs: SteerInputs, token):
    from core.features.steering import FeatureEdit, steer

    sae = open_sae(inputs.sae_path)
    token.check()
    edit = FeatureEdit(inputs.feature, alpha=0.0 if inputs.ablate else inputs.alpha, ablate=inputs.ablate)
    return steer(inputs.model, sae, list(inputs.tokens), [edit], new_tokens=NEW_TOKENS)


def top_next(result, count: int = NEXT_TOKENS) -> np.ndarray:
    """(n,) the ids of the most likely next tokens without or with the edit, the clean ones' order first."""
    order = list(np.argsort(-result.clean_probs)[:count])
    for index in np.argsort(-result.steered_probs)[:count]:
        if index not in order:
            order.append(index)
    return np.array(order[: count + 4])


def dashboard_summary(result: DashboardResult) -> str:
    summary = result.summary
    return (f"Feature {result.feature} of {result.d_sae}: active on {summary.density:.2%} of the "
            f"{result.tokens_read:,} held-out tokens (windows of {DASHBOARD_WINDOW}), largest activation "
            f"{summary.max_activation:.3f}.")


def logit_effects(result: DashboardResult, label: Callable[[int], str]) -> str:
    """The tokens the feature's decoder direction pushes up and down through the unembedding, each with its logit."""
    summary = result.summary
    up = ", ".join(f"{label(int(i))} {v:+.2f}" for i, v in zip(summary.up_ids, summary.up_values))
    down = ", ".join(f"{label(int(i))} {v:+.2f}" for i, v in zip(summary.down_ids, summary.down_values))
    return f"Its decoder direction through the unembedding pushes up: {up}\nand down: {down}"


def steer_summary(result, feature: int, alpha: float, ablate: bool) -> str:
    edit = f"Feature {feature} removed" if ablate else f"{alpha:+.1f} × feature {feature}"
    if result.identical:
        change = "the logits are bit-identical to the model without the SAE (its error term is kept)"
    else:
        shift = 0.5 * float(np.abs(result.steered_probs - result.clean_probs).sum())
        change = f"the next-token distribution moved by {shift:.3f} (total variation)"
    return f"{edit}: {change}."
