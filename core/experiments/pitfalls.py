"""Pitfalls you can train: the reading's "Common pitfalls", as short paired runs on the same seed and steps.

Two experiments, each a few runs of core.training.train that differ in one setting only:

- "masks": the same small decoder trained with the causal mask, with the mask applied after the
  softmax (the future already shaped the denominator) and with no mask at all. A leaky model's
  training loss falls below the causal one because it can peek at the token it predicts; the
  honest measure is the held-out loss scored *with the causal mask*, which is what a model meets
  when it generates (the next token is not there yet). The held-out loss under the model's own
  training mask is reported beside it: that is the number the leak flatters.
- "warmup": a deep stack trained pre-norm, post-norm from the full learning rate at step 0, and
  post-norm with a linear warm-up, with each block's parameter-gradient norm recorded over the
  steps. What it shows (a loss that stalls or climbs, gradients piled up in the last blocks) is
  measured here and summarised in numbers, never assumed.

Sizes come in two recipes: LECTURE (a few minutes on a 2-core laptop CPU for a whole comparison)
and CI (seconds). Everything returned is plain numbers in frozen dataclasses; nothing imports Qt.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.experiments.pitfall_setups import (
    CI,
    EXPERIMENT_TITLES,
    EXPERIMENTS,
    LECTURE,
    MASK_RUNS,
    MAX_STEPS,
    RUN_LABELS,
    WARMUP_RUNS,
    PitfallError,
    PitfallSetup,
    run_keys,
)
from core.model import Transformer
from core.training import VALIDATION_FRACTION, TrainingError, generate, split_corpus, train

SAMPLE_CHARS = 120
SAMPLE_TEMPERATURE = 0.8
TAIL_FRACTION = 0.1  # the final training loss is the mean over the last tenth of the steps: one batch is noisy


@dataclass(frozen=True)
class PitfallRun:
    """One run of a comparison and what it measured."""

    key: str  # a MASK_RUNS or WARMUP_RUNS entry
    label: str
    mask_mode: str
    norm_placement: str
    warmup_steps: int
    loss_history: tuple[tuple[int, float], ...]  # (step, training loss of that batch)
    final_train_loss: float  # mean training loss over the last TAIL_FRACTION of the steps
    causal_val_loss: float  # held-out loss, causal mask: what a generation meets
    own_mask_val_loss: float  # held-out loss under the mask the run trained with
    grad_norm_steps: tuple[int, ...]
    grad_norms: tuple[tuple[float, ...], ...]  # (records, blocks): each block's gradient norm, before clipping
    max_train_loss_after_warmup: float  # the highest batch loss after the first tenth of the steps
    sample: str  # SAMPLE_CHARS characters generated from the corpus's first character (causal, as Generate does)
    steps_done: int
    stopped: bool

    def grad_norm_array(self) -> np.ndarray:
        return np.asarray(self.grad_norms, dtype=np.float64)  # (records, blocks)

    def gradient_ratio(self, part: str = "first") -> float:
        """Last block's over first block's gradient norm, the median over the records of the first (or last)
        TAIL_FRACTION of the steps: how far the gradient piles up at the top of the stack (1 = level)."""
        steps = np.asarray(self.grad_norm_steps)
        span = max(1, round(self.steps_done * TAIL_FRACTION))
        chosen = steps <= span if part == "first" else steps > self.steps_done - span
        norms = self.grad_norm_array()[chosen] if len(steps) else np.empty((0, 0))  # (r, blocks)
        if norms.size == 0:
            return math.nan
        return float(np.median(norms[:, -1] / np.maximum(norms[:, 0], 1e-30)))


@dataclass(frozen=True)
class PitfallComparison:
    experiment: str
    setup: PitfallSetup
    runs: tuple[PitfallRun, ...]
    vocab_size: int
    uniform_loss: float  # ln V: the loss of a uniform guess
    stopped: bool  # should_stop ended the comparison before every run finished

    def run(self, key: str) -> PitfallRun:
        for run in self.runs:
            if run.key == key:
                return run
        raise KeyError(key)


StepCallback = Callable[[str, int, float], None]  # (run key, step, training loss)
GradCallback = Callable[[str, int, tuple[float, ...]], None]  # (run key, step, per-block norms)
RunCallback = Callable[[PitfallRun], None]


def check_experiment(experiment: str, setup: PitfallSetup) -> None:
    """Raise PitfallError for a request the runs cannot make, before any of them starts."""
    if experiment not in EXPERIMENTS:
        raise PitfallError(f"the experiment is one of {', '.join(EXPERIMENTS)}, not {experiment!r}")
    if not 1 <= setup.steps <= MAX_STEPS:
        raise PitfallError(f"steps must lie between 1 and {MAX_STEPS:,}, got {setup.steps}")
    if setup.corpus_chars < int((setup.seq_len + 2) / (1 - VALIDATION_FRACTION)) + 2 * setup.seq_len:
        raise PitfallError(f"{setup.corpus_chars:,} characters are too few for windows of {setup.seq_len}")


def pitfall_config(setup: PitfallSetup, vocab_size: int, placement: str = "pre") -> ModelConfig:
    """The decoder a comparison trains: GPT-2-like, learned positions; a post-norm stack has no final norm (2017)."""
    return ModelConfig(
        name=f"{setup.n_layers}-block {placement}-norm pitfall model",
        vocab_size=vocab_size,
        context_length=setup.seq_len,
        d_model=setup.d_model,
        n_heads=setup.n_heads,
        n_layers=setup.n_layers,
        d_ff=4 * setup.d_model,
        norm_placement=placement,  # type: ignore[arg-type]
        final_norm=placement == "pre",
    ).validated()


def _run_plan(experiment: str, key: str, setup: PitfallSetup) -> tuple[str, str, int]:
    """(mask mode, norm placement, warm-up steps) of one run."""
    if experiment == "masks":
        return key, "pre", setup.warmup_steps
    return "causal", "post" if key.startswith("post") else "pre", setup.warmup_steps if key == "post-warmup" else 0


@torch.no_grad()
def held_out_loss(model: Transformer, val_ids: torch.Tensor, seq_len: int, mask_mode: str, batch: int = 64) -> float:
    """Mean next-token loss over non-overlapping windows of the held-out ids, under `mask_mode`."""
    count = (len(val_ids) - 1) // seq_len
    if count < 1:
        raise PitfallError("the held-out split is shorter than one window")
    starts = torch.arange(count) * seq_len  # (N,)
    windows = val_ids[starts.unsqueeze(1) + torch.arange(seq_len + 1)]  # (N, T+1)
    model.eval()
    total = 0.0
    for first in range(0, count, batch):
        chunk = windows[first : first + batch]  # (b, T+1)
        logits = model(chunk[:, :-1], mask_mode=mask_mode)  # (b, T, V)
        total += float(F.cross_entropy(logits.flatten(0, 1).float(), chunk[:, 1:].flatten(), reduction="sum"))
    return total / (count * seq_len)


def run_comparison(
    experiment: str,
    text: str,
    setup: PitfallSetup,
    on_step: StepCallback | None = None,
    on_grad_norms: GradCallback | None = None,
    on_run_done: RunCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> PitfallComparison:
    """Train every run of `experiment` on the first setup.corpus_chars characters of `text`, in order.

    All runs share the seed, so they start from the same weights (where shapes match) and draw the same
    batches. should_stop() is polled between steps; a stop ends the current run early and skips the rest.
    """
    check_experiment(experiment, setup)
    corpus = text[: setup.corpus_chars]
    if len(corpus) < setup.corpus_chars:
        raise PitfallError(f"the corpus has {len(corpus):,} characters; the comparison trains on {setup.corpus_chars:,}")
    from core.tokenizers import CharTokenizer

    tokenizer = CharTokenizer.from_text(corpus)
    ids = torch.tensor(tokenizer.encode(corpus), dtype=torch.long)  # (N,)
    _, val_ids = split_corpus(ids)  # (N_val,) the split train() holds out
    runs: list[PitfallRun] = []
    stopped = False
    for key in run_keys(experiment):
        if should_stop is not None and should_stop():
            stopped = True
            break
        mask_mode, placement, warmup = _run_plan(experiment, key, setup)
        config = pitfall_config(setup, tokenizer.vocab_size, placement)
        try:
            result = train(
                config, corpus, steps=setup.steps, batch_size=setup.batch_size, seq_len=setup.seq_len, lr=setup.lr,
                seed=setup.seed, device="cpu", should_stop=should_stop, warmup_steps=warmup, eval_every=0,
                mask_mode=mask_mode, grad_norm_every=setup.grad_norm_every,
                on_progress=None if on_step is None else (lambda step, loss, *_rest, k=key: on_step(k, step, loss)),
                on_grad_norms=None if on_grad_norms is None else (lambda step, norms, k=key: on_grad_norms(k, step, norms)),
            )
        except TrainingError as error:
            raise PitfallError(str(error)) from None
        run = _measure(key, mask_mode, placement, warmup, result, val_ids, setup, tokenizer)
        runs.append(run)
        if on_run_done is not None:
            on_run_done(run)
        if result.stopped:
            stopped = True
            break
    return PitfallComparison(experiment, setup, tuple(runs), tokenizer.vocab_size, math.log(tokenizer.vocab_size), stopped)


def _measure(key, mask_mode, placement, warmup, result, val_ids, setup: PitfallSetup, tokenizer) -> PitfallRun:
    model = result.model
    losses = [loss for _, loss in result.loss_history]
    tail = losses[-max(1, round(len(losses) * TAIL_FRACTION)):]
    after_start = losses[max(1, len(losses) // 10):] or losses
    causal = held_out_loss(model, val_ids, setup.seq_len, "causal")
    own = causal if mask_mode == "causal" else held_out_loss(model, val_ids, setup.seq_len, mask_mode)
    prompt = val_ids[:1].tolist()
    sample = tokenizer.decode(generate(model, prompt, SAMPLE_CHARS, temperature=SAMPLE_TEMPERATURE, seed=setup.seed))
    return PitfallRun(
        key=key,
        label=RUN_LABELS[key],
        mask_mode=mask_mode,
        norm_placement=placement,
        warmup_steps=warmup,
        loss_history=tuple(result.loss_history),
        final_train_loss=float(np.mean(tail)) if tail else math.nan,
        causal_val_loss=causal,
        own_mask_val_loss=own,
        grad_norm_steps=tuple(step for step, _ in result.grad_norms),
        grad_norms=tuple(norms for _, norms in result.grad_norms),
        max_train_loss_after_warmup=float(max(after_start)) if after_start else math.nan,
        sample=sample,
        steps_done=result.steps_done,
        stopped=result.stopped,
    )


def summary_rows(comparison: PitfallComparison) -> list[dict[str, Any]]:
    """One row per run: the numbers the CLI table and the panel's table print."""
    rows = []
    for run in comparison.runs:
        rows.append({
            "run": run.key,
            "label": run.label,
            "steps": run.steps_done,
            "first_train_loss": run.loss_history[0][1] if run.loss_history else math.nan,
            "final_train_loss": run.final_train_loss,
            "max_train_loss_after_first_tenth": run.max_train_loss_after_warmup,
            "held_out_own_mask": run.own_mask_val_loss,
            "held_out_causal": run.causal_val_loss,
            "gradient_ratio_first_tenth": run.gradient_ratio("first"),
            "gradient_ratio_last_tenth": run.gradient_ratio("last"),
        })
    return rows


def verdict(comparison: PitfallComparison) -> str:
    """What the comparison measured, in sentences whose every claim is a comparison of its own numbers."""
    runs = {run.key: run for run in comparison.runs}
    if not runs:
        return "Stopped before the first run ended: nothing was measured."
    lines = []
    if comparison.experiment == "masks":
        causal = runs.get("causal")
        for key in ("after-softmax", "none"):
            leaky = runs.get(key)
            if causal is None or leaky is None:
                continue
            train_word = "below" if leaky.final_train_loss < causal.final_train_loss else "not below"
            honest_word = "worse than" if leaky.causal_val_loss > causal.causal_val_loss else "no worse than"
            lines.append(
                f"{leaky.label}: training loss {leaky.final_train_loss:.3f}, {train_word} the causal run's "
                f"{causal.final_train_loss:.3f}; held out with its own mask {leaky.own_mask_val_loss:.3f}, but scored "
                f"with the causal mask (what generation meets) {leaky.causal_val_loss:.3f}, {honest_word} the causal "
                f"run's {causal.causal_val_loss:.3f}.")
    else:
        ln_v = f"the uniform guess ln V = {comparison.uniform_loss:.3f}"
        diverged = [run for run in comparison.runs if run.max_train_loss_after_warmup > comparison.uniform_loss]
        if diverged:
            lines.extend(f"{run.label}: after the first tenth its training loss rose to "
                         f"{run.max_train_loss_after_warmup:.3f}, above {ln_v}: it diverged." for run in diverged)
        else:
            highest = max(run.max_train_loss_after_warmup for run in comparison.runs)
            lines.append(f"No run diverged: after the first tenth no training loss rose above {ln_v} "
                         f"(the highest was {highest:.3f}).")
        ratios = ", ".join(f"{run.label} x{run.gradient_ratio('first'):.3g}" for run in comparison.runs)
        lines.append(f"Last block's gradient over the first block's, over the first tenth: {ratios}.")
        post, pre = runs.get("post"), runs.get("pre")
        if post is not None and pre is not None:
            word = "higher" if post.final_train_loss > pre.final_train_loss else "no higher"
            lines.append(f"Post-norm without warm-up ends {word} than pre-norm "
                         f"({post.final_train_loss:.3f} vs {pre.final_train_loss:.3f}).")
        warm = runs.get("post-warmup")
        if post is not None and warm is not None:
            word = "lower" if warm.final_train_loss < post.final_train_loss else "no lower"
            lines.append(f"With a {warm.warmup_steps}-step warm-up post-norm ends {word} "
                         f"({warm.final_train_loss:.3f} vs {post.final_train_loss:.3f}).")
    if comparison.stopped:
        lines.append("Stopped early: the numbers are of the steps made.")
    return "\n".join(lines)


__all__ = [
    "CI",
    "EXPERIMENTS",
    "EXPERIMENT_TITLES",
    "LECTURE",
    "MASK_RUNS",
    "MAX_STEPS",
    "PitfallComparison",
    "PitfallError",
    "PitfallRun",
    "PitfallSetup",
    "RUN_LABELS",
    "WARMUP_RUNS",
    "check_experiment",
    "held_out_loss",
    "pitfall_config",
    "run_comparison",
    "run_keys",
    "summary_rows",
    "verdict",
]
