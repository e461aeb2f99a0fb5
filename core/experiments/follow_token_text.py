"""The Follow one token table's words: its lens headers, the tuned lens's cell and what a stage read.

Torch-free (the computation is core.experiments.follow_token); the window and the offline pages both write the
table from here, so they say the same.
"""

from __future__ import annotations

from collections.abc import Callable
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


def follow_caption(result: Any, token: Callable[[str], str], model_name: str) -> str:
    """The caption over the table: which token, what its head is asked, what the model answers.

    `token` writes a token's label as the caller shows it (quoted or as an id, plain or marked up) and
    `model_name` is the model's name as the caller writes it.
    """
    name = model_name
    if result.tower == "encoder":
        return (f"Source token {result.position} {token(result.token_label)} through {name}'s encoder: its last "
                "vector is one row of the memory that every decoder block's cross-attention reads. The encoder's "
                "vectors never reach the head, so its stages have no logit lens.")
    top = f"{token(result.top_labels[-1][0])} ({result.top_probs[-1][0]:.0%})"
    if result.predicts == "here":
        what = (f"Token {result.position} {token(result.token_label)} of an encoder: it attends both ways, and its "
                "masked-LM head scores which token belongs at this position (filling in a blank), not what comes "
                f"next; {name} puts {top} first here.")
    else:
        following = (f"the text continues with {token(result.next_token_label)}"
                     if result.next_token_label is not None else "the last token (the text has no next one)")
        what = f"Token {result.position} {token(result.token_label)}: {following}; {name} predicts {top}."
    if result.architecture == "encoder-decoder":
        what += (f" Its encoder read a source of {len(result.source_labels)} tokens (here the same text); the "
                 "cross-attention rows say which source tokens this token read.")
    transform = ", the head transform" if "head-transform" in result.stage_kinds else ""
    norm = "the final norm" if "final-norm" in result.stage_kinds else "no final norm"
    post = " Post-norm: each stage includes its norm." if result.placement == "post" else ""
    return (what + f" Each row reads the vector after a stage through {norm}{transform} and the head (a logit lens)."
            + post)


__all__ = ["follow_caption", "LENS_HEADERS", "TOP_K", "TUNED_HEADER", "describe_reads", "tuned_cell"]
