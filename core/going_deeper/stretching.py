"""The Stretching view's figures: every bundled context model's loss against input length on a held-out sample,
and ctx-rope again with its positions divided by a chosen factor (no training: what interpolation alone does).

The models are loaded once per process and kept (they are small); the sample is the first SAMPLE_CHARS characters
of the held-out tenth, so the view answers in seconds (`extrapolate --held-out` scores the whole tenth).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.going_deeper.length_row import LengthRow
from core.going_deeper.recipe import TRAINED_LENGTH, context_model_names, held_out_text

LENGTHS = (32, 64, 128, 256, 512)
SAMPLE_CHARS = 2048  # 4 windows of the longest length: a few seconds for the six models on one thread
RESCALED = "ctx-rope"  # the model the rope_scale slider rescales

_models: dict[str, Any] = {}
_sample: list[int] = []
_curves: dict[tuple[str, tuple[int, ...]], "Curve"] = {}  # a bundled model's curve does not change: made once


@dataclass(frozen=True)
class Curve:
    model: str
    trained_length: int
    positional: str
    rope_scale: float
    rows: tuple[LengthRow, ...]

    @property
    def refused_at(self) -> LengthRow | None:
        """The first length this model refuses (a learned table past its rows), or None."""
        return next((row for row in self.rows if row.refused), None)


@dataclass(frozen=True)
class Stretching:
    curves: tuple[Curve, ...]  # one per bundled context model
    rescaled: Curve | None  # ctx-rope at the chosen rope_scale; None when that is its own
    sample_chars: int


def _model(name: str):
    if name not in _models:
        from core.checkpoints import load_bundled

        _models[name] = load_bundled(name).model.eval()
    return _models[name]


def _sample_ids() -> list[int]:
    if not _sample:
        from core.corpus import bundled_corpus
        from core.tokenizers import CharTokenizer

        text = bundled_corpus().text
        _sample.extend(CharTokenizer.from_text(text).encode(held_out_text(text)[:SAMPLE_CHARS]))
    return _sample


def _curve(model, lengths, on_progress) -> Curve:
    from core.going_deeper.extrapolation import extrapolate  # torch: on the worker only

    config = model.config
    rows = extrapolate(model, _sample_ids(), lengths, config.context_length, on_progress=on_progress)
    return Curve(config.name, config.context_length, config.positional, config.rope_scale, tuple(rows))


def stretching(rope_scale: float, lengths: tuple[int, ...] = LENGTHS,
               report: Callable[[float, str], None] | None = None,
               check: Callable[[], None] | None = None) -> Stretching:
    """Every context model's curve, and ctx-rope's at `rope_scale` when that differs from its own.

    report(fraction, text) after each model; check() between them (raises when the request is superseded)."""
    import copy

    names = context_model_names()
    curves = []
    steps = len(names) + 1
    for index, name in enumerate(names):
        if check is not None:
            check()
        if report is not None:
            report(index / steps, f"scoring {name}")
        if (name, lengths) not in _curves:
            _curves[name, lengths] = _curve(_model(name), lengths, None)
        curves.append(_curves[name, lengths])
    rescaled = None
    base = _model(RESCALED)
    if rope_scale != base.config.rope_scale:
        if check is not None:
            check()
        if report is not None:
            report(len(names) / steps, f"scoring {RESCALED} at rope_scale {rope_scale:g}")
        scaled = copy.copy(base)  # the same weights; only the config the positions read differs
        scaled.config = base.config.replace(rope_scale=rope_scale)
        rescaled = _curve(scaled, lengths, None)
    return Stretching(tuple(curves), rescaled, len(_sample_ids()))


def format_loss(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _at(curve, length: int) -> float | None:
    return next((row.nats_per_char for row in curve.rows if row.length == length), None)


def summary(result) -> str:
    """The figures in words: what the learned table refuses, and each model at the trained length and the longest."""
    longest = max(row.length for row in result.curves[0].rows)
    parts = []
    for curve in (*result.curves, *([result.rescaled] if result.rescaled is not None else [])):
        name = f"ctx-rope at rope_scale {curve.rope_scale:g}" if curve is result.rescaled else curve.model
        refused = curve.refused_at
        if refused is not None:
            parts.append(f"{name} refuses {refused.length} (a table of {curve.trained_length} rows)")
            continue
        short, long = _at(curve, TRAINED_LENGTH), _at(curve, longest)
        parts.append(f"{name} {format_loss(short)} at {TRAINED_LENGTH}, {format_loss(long)} at {longest}")
    return f"Nats per character on {result.sample_chars:,} held-out characters: " + "; ".join(parts) + "."


__all__ = ["Curve", "LENGTHS", "RESCALED", "SAMPLE_CHARS", "Stretching", "format_loss", "stretching", "summary"]
