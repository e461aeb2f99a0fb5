"""The Follow one token table's words: its lens headers, the tuned lens's cell and what a stage read.

Torch-free (the computation is core.experiments.follow_token); the window and the offline pages both write the
table from here, so they say the same.
"""

from __future__ import annotations

from typing import Any

TOP_K = 5  # guesses the lens columns show
LENS_HEADERS = {"next": f"top-{TOP_K} next-token guesses (logit lens)",
                "here": f"top-{TOP_K} guesses for this position (logit lens)",
                "": "no lens: the encoder never meets the head"}
TUNED_HEADER = "tuned lens (KL: logit → tuned)"


def tuned_cell(result: Any, row: int) -> str:
    """The tuned lens's guesses and both KLs at a stage a translator reads; why not, or a dash, elsewhere."""
    if result.tuned_note:
        return result.tuned_note if row == 0 else ""
    labels = result.tuned_top_labels[row] if row < len(result.tuned_top_labels) else ()
    if not labels:
        return "—"
    guesses = "  │  ".join(f"{label} {prob:.0%}" for label, prob in zip(labels, result.tuned_top_probs[row]))
    return f"{guesses}   KL {result.logit_kl[row]:.2f} → {result.tuned_kl[row]:.2f}"


def describe_reads(result: Any, stage: int, ids_only: bool = False) -> str:
    """What a stage read, as the table's cell: the keys of largest mean weight, or the chosen experts."""
    prefix = "id " if ids_only else ""
    experts = result.experts(stage)
    if experts:
        return "experts " + ", ".join(f"{expert} {weight:.0%}" for expert, weight in experts)
    reads = result.reads(stage)
    if not reads:
        return ""
    where = "source " if result.stage_kinds[stage] == "cross-attention" else ""
    return where + "  ".join(f"{position}:{prefix}{label} {weight:.0%}" for position, label, weight in reads)


__all__ = ["LENS_HEADERS", "TOP_K", "TUNED_HEADER", "describe_reads", "tuned_cell"]
