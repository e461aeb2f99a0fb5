"""Induction heads: a repeated random sequence, and which heads copy from the first repeat.

A sequence of N random tokens (seeded) is followed by the same N tokens again. On the second
repeat a model that has learnt in-context copying attends from each token back to the token that
followed its previous occurrence (key q - N + 1 for query q) and predicts it: its loss falls far
below the first repeat's, where the tokens are unpredictable. The induction score of a head is its
mean attention weight on that key over the second repeat's queries; the previous-token score its
mean weight on key q - 1 over every query q >= 1 (the other half of the two-head circuit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.experiments.ablation import position_losses
from core.hooks import capture
from core.model import Transformer

DEFAULT_PERIOD = 20
MAX_PERIOD = 4096


class InductionError(ValueError):
    """A period the model cannot take; the message says why."""


@dataclass(frozen=True)
class Induction:
    tokens: tuple[int, ...]  # (2N,)
    period: int  # N
    repeat_start: int  # index of the second repeat's first token (= N)
    seed: int
    induction_score: np.ndarray  # (L, H)
    previous_token_score: np.ndarray  # (L, H)
    loss_first: np.ndarray  # (N - 1,) loss of predicting token i + 1 of the first repeat (i = 0..N-2)
    loss_second: np.ndarray  # (N - 1,) loss of predicting token N + i + 1, the same token one repeat later
    patterns: np.ndarray  # (L, H, 2N, 2N) attention weights

    def best_head(self) -> tuple[int, int]:
        layer, head = np.unravel_index(int(np.argmax(self.induction_score)), self.induction_score.shape)
        return int(layer), int(head)


def repeated_tokens(vocab_size: int, period: int, seed: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    first = torch.randint(0, vocab_size, (period,), generator=generator)  # (N,)
    return torch.cat([first, first]).tolist()


def period_problem(model: Transformer, period: int) -> str | None:
    if period < 2:
        return "the period must be at least 2 tokens, so that a token has a successor to copy"
    if 2 * period > model.config.context_length:
        return (f"two repeats of {period} tokens ({2 * period}) exceed the model's context length of "
                f"{model.config.context_length}; choose a period of at most {model.config.context_length // 2}")
    if model.config.architecture != "decoder":
        return "induction needs a decoder-only model: its attention looks back, and the loss is next-token"
    return None


def induction(model: Transformer, period: int = DEFAULT_PERIOD, seed: int = 0) -> Induction:
    problem = period_problem(model, period)
    if problem:
        raise InductionError(problem)
    ids = repeated_tokens(model.config.vocab_size, period, seed)
    tokens = torch.tensor([ids], device=next(model.parameters()).device)  # (1, 2N)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.config.n_layers)]
    with torch.no_grad(), capture(model, names) as seen:
        logits = model(tokens)  # (1, 2N, V)
    patterns = torch.stack([seen[name][0] for name in names]).double()  # (L, H, 2N, 2N)
    queries = torch.arange(period, 2 * period)  # second repeat
    induction_score = patterns[:, :, queries, queries - period + 1].mean(dim=-1)  # (L, H)
    later = torch.arange(1, 2 * period)
    previous_score = patterns[:, :, later, later - 1].mean(dim=-1)  # (L, H)
    losses = position_losses(logits, tokens).double().cpu()  # (2N - 1,)
    return Induction(
        tokens=tuple(ids), period=period, repeat_start=period, seed=seed,
        induction_score=induction_score.cpu().numpy(), previous_token_score=previous_score.cpu().numpy(),
        loss_first=losses[: period - 1].numpy(), loss_second=losses[period: 2 * period - 1].numpy(),
        patterns=patterns.float().cpu().numpy(),
    )
