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


def head_scores(
    model: Transformer, ids: list[int], period: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(induction score (L, H), previous-token score (L, H), logits (1, 2N, V), patterns (L, H, 2N, 2N)) of
    the sequence `ids`, whose second half repeats its first N = period tokens."""
    tokens = torch.tensor([ids], device=next(model.parameters()).device)  # (1, 2N)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.config.n_layers)]
    with torch.no_grad(), capture(model, names) as seen:
        logits = model(tokens)  # (1, 2N, V)
    patterns = torch.stack([seen[name][0] for name in names]).double()  # (L, H, 2N, 2N)
    queries = torch.arange(period, 2 * period)  # second repeat
    induction_score = patterns[:, :, queries, queries - period + 1].mean(dim=-1)  # (L, H)
    later = torch.arange(1, 2 * period)
    previous_score = patterns[:, :, later, later - 1].mean(dim=-1)  # (L, H)
    return induction_score, previous_score, logits, patterns


def induction(model: Transformer, period: int = DEFAULT_PERIOD, seed: int = 0) -> Induction:
    problem = period_problem(model, period)
    if problem:
        raise InductionError(problem)
    ids = repeated_tokens(model.config.vocab_size, period, seed)
    tokens = torch.tensor([ids], device=next(model.parameters()).device)  # (1, 2N)
    induction_score, previous_score, logits, patterns = head_scores(model, ids, period)
    losses = position_losses(logits, tokens).double().cpu()  # (2N - 1,)
    return Induction(
        tokens=tuple(ids), period=period, repeat_start=period, seed=seed,
        induction_score=induction_score.cpu().numpy(), previous_token_score=previous_score.cpu().numpy(),
        loss_first=losses[: period - 1].numpy(), loss_second=losses[period: 2 * period - 1].numpy(),
        patterns=patterns.float().cpu().numpy(),
    )


# ---- the score a training run tracks ----------------------------------------------------------------
PROBE_PERIOD = 20  # letters of the tracked sequence (fewer where the context or the vocabulary is short)
PROBE_SEED = 0
PROBES_PER_RUN = 100  # probes along a training run (and one at step 1): a smooth curve, a few ms each


@dataclass(frozen=True)
class InductionProbe:
    """A fixed sequence of distinct letters written twice, and the best induction score of a model's heads on it.

    Only heads from the second layer on are scored: an induction head reads what a previous-token head
    of an earlier layer wrote, so a first-layer head that scores high copies by position, not by content.
    A one-layer model has no earlier layer, so its own heads are scored.
    """

    ids: tuple[int, ...]  # (2N,) the letters' token ids, the second half repeating the first
    text: str  # the letters as written
    period: int  # N
    seed: int
    first_layer: int  # the first layer whose heads are scored
    n_layers: int

    @property
    def heads_text(self) -> str:
        if self.first_layer == 0:
            return "layer-0 heads (the model has one layer)"
        if self.n_layers == 2:
            return "layer-1 heads"
        return f"the heads of layers 1 to {self.n_layers - 1}"

    def description(self) -> str:
        return (f"best induction score over {self.heads_text}, on {self.period} random letters written twice "
                f"(seed {self.seed})")

    @property
    def uniform_score(self) -> float:
        """The score of a head that spreads each query evenly over the keys it may read: mean of 1 / (q + 1)."""
        return sum(1.0 / (query + 1) for query in range(self.period, 2 * self.period)) / self.period

    def score(self, model: Transformer) -> float:
        """The best induction score of the scored heads (the caller chooses the mode and grad state)."""
        induction_score, *_ = head_scores(model, list(self.ids), self.period)
        return float(induction_score[self.first_layer:].max())

    @staticmethod
    def every(steps: int) -> int:
        """Steps between probes of a run of `steps` steps."""
        return max(1, steps // PROBES_PER_RUN)

    def record(self, history: list[tuple[int, float]] | tuple[tuple[int, float], ...]) -> dict:
        """The probe and its history, as training.json keeps them."""
        return {"what": self.description(), "text": self.text, "period": self.period, "seed": self.seed,
                "layers_scored": list(range(self.first_layer, self.n_layers)),
                "history": [[int(step), float(value)] for step, value in history]}


def letter_probe(tokenizer, context_length: int, n_layers: int, seed: int = PROBE_SEED) -> InductionProbe | str:
    """The probe for a model with this tokenizer and shape, or a sentence saying why there is none.

    The letters are those of core.repeated_corpus that the tokenizer holds as one token each, drawn
    without repeats from `seed`, so each query of the second copy has exactly one earlier occurrence.
    """
    import random

    from core.repeated_corpus import LETTERS

    ids_of: dict[str, int] = {}
    for letter in LETTERS:
        try:
            encoded = tokenizer.encode(letter)
        except Exception:  # each tokenizer has its own unknown-token error
            continue
        if len(encoded) == 1 and encoded[0] not in ids_of.values():
            ids_of[letter] = int(encoded[0])
    period = min(PROBE_PERIOD, context_length // 2, len(ids_of))
    if period < 2:
        return (f"the induction score needs at least 2 distinct letters written twice; the vocabulary holds "
                f"{len(ids_of)} letters and the context {context_length} tokens")
    letters = random.Random(seed).sample(sorted(ids_of), period)
    ids = [ids_of[letter] for letter in letters] * 2
    return InductionProbe(ids=tuple(ids), text="".join(letters) * 2, period=period, seed=seed,
                          first_layer=1 if n_layers >= 2 else 0, n_layers=n_layers)
