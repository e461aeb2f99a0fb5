"""What the Train panel's status line says about a run, from the run's own records (no Qt).

One place composes every sentence, so the headline, the stop message and the progress line come from the
same request, progress and outcome, and never contradict the model the other panels use.
"""

from __future__ import annotations

import math

from core.choices import MASK_MODE_LABELS
from core.training_job import TrainingProgress, TrainOutcome, TrainRequest, format_duration


def progress_line(request: TrainRequest, progress: TrainingProgress | None, last_validation: float | None,
                  paused: bool, stopping: bool, discarding: bool, last_probe: float | None = None) -> str | None:
    """The line under the controls while a run is on; None when there is nothing new to say. last_probe: the
    newest induction score of a run that tracks it."""
    if stopping:
        # What the wait is for, until the model arrives: no step count or ETA of a run that has ended.
        held_out = len(request.corpus.text) // 10
        at = f" at step {progress.losses[-1][0]:,} of {request.steps:,}" if progress is not None else ""
        then = "then the run is discarded" if discarding else "then the trained model replaces the one the other panels use"
        how = {"masked-lm": "filling its blanks", "seq2seq": "rewriting every held-out source"}.get(
            objective_name(request.config), "with the causal mask")
        return (f"Stopping{at}: scoring the whole held-out split (about {held_out:,} characters) {how}; "
                f"{then}. The buttons come back when it is done.")
    if progress is None:
        return "Paused before the first step; the other panels keep computing." if paused else None
    step, loss = progress.losses[-1]
    val = f", validation {last_validation:.3f}" if last_validation is not None else ""
    val += f", induction score {last_probe:.3f}" if last_probe is not None else ""
    eta = "paused; the other panels keep computing" if paused else f"ETA {format_duration(progress.eta_s)}"
    load = ""
    if progress.expert_load is not None:
        at, shares = progress.expert_load
        load = f" Expert load to step {at:,}: {expert_load_text(shares)}."
    return f"Step {step:,} of {request.steps:,}: loss {loss:.3f}{val}. {progress.tokens_per_s:,.0f} tokens/s, {eta}.{load}"


def expert_load_text(shares: list[list[float]]) -> str:
    """Each layer's share of routing assignments per expert, as the status line reads them."""
    return "; ".join(f"layer {layer} " + " ".join(f"{share:.0%}" for share in row) for layer, row in enumerate(shares))


def objective_name(config) -> str:
    """The run's objective, or "" for a config the trainer refuses (the refusal is said elsewhere)."""
    from core.training import TrainingError, objective_of

    try:
        return objective_of(config)
    except TrainingError:
        return ""


def outcome_headline(outcome: TrainOutcome, installed: bool, config_applied_after: bool) -> str:
    """The headline when a run ends (rich text): how it ended, its held-out loss, and which model the panels use."""
    how = "Stopped" if outcome.stopped else "Finished"
    mode = outcome.metadata.get("settings", {}).get("mask_mode", "causal")
    if mode != "causal":
        how += f" training with the {MASK_MODE_LABELS.get(mode, mode)} mask"
    if not installed:
        where = "The run was discarded for the new config: the other panels keep their model"
    elif config_applied_after:
        where = ("The other panels used it until the config you asked for during the run was applied; they now use "
                 "a model of that config")
    else:
        where = "The other panels now use this model"
    vocab = outcome.loaded.config.vocab_size
    quality = outcome.metadata.get("quality") or {}
    if "accuracy" in quality:
        from core.objectives.masked_lm import blanks_filled_text

        scored = (f"held-out blanks: loss {outcome.final_val_loss:.3f} nats a blank (unigram guess "
                  f"{quality['unigram_loss']:.3f}), {blanks_filled_text(quality)} (unigram "
                  f"{quality['unigram_accuracy']:.1%})")
    elif "exact_match" in quality:
        scored = (f"held-out pairs: loss {outcome.final_val_loss:.3f} nats a target character (uniform guess "
                  f"{math.log(vocab):.3f}), {quality['exact_match']:.1%} of {quality['pairs']:,} rewritten exactly")
    else:
        scored = (f"validation loss {outcome.final_val_loss:.3f} nats/char on the whole held-out split, scored with "
                  f"the causal mask (uniform guess {math.log(vocab):.3f})")
    load = outcome.metadata.get("expert_load")
    if load:
        scored += "; expert load at the end: " + expert_load_text(load[-1][1])
    induction = ""
    if outcome.probe_history:
        step, score = outcome.probe_history[-1]
        induction = f" Induction score {score:.3f} at step {step:,}."
    return (f"<b>{how} after {outcome.steps_done:,} steps</b>: {scored}, "
            f"{outcome.tokens_per_s:,.0f} tokens/s.{induction} {where}; Save model... writes it.")


__all__ = ["outcome_headline", "progress_line"]
