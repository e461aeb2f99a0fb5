"""Sampling the next token: temperature, top-k and top-p (nucleus) cut-offs, entropy, and a seeded draw.

The order is Hugging Face transformers' (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper):
divide the logits by the temperature, keep the k largest, then keep the smallest set of the most
likely remaining tokens whose probability reaches p; the kept tokens' probabilities are renormalised
to sum to 1. Temperature 0 is greedy: only the argmax is kept.

Ties are kept or dropped together: a token whose logit equals the smallest kept logit is kept, at
top-k (as transformers does) and at top-p (where transformers' choice would depend on sort order).

A draw is by inverse CDF over the tokens from most to least likely (ties by token id): uniform number n
of the stream `torch.rand(..., generator=seed)` picks the first token whose running total of probability
exceeds it, so adding up bars sorted by probability finds the drawn token by eye. Draw n therefore depends on the seed and n
alone, not on the distributions of earlier steps, so a generation stepped through token by token
(the Generate panel) draws the same tokens as `generate` run in one go with the same seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

LN_2 = math.log(2.0)


class SamplingError(ValueError):
    """Sampling settings out of their range (a negative temperature, top-k below 1, top-p outside (0, 1])."""


def check_settings(temperature: float, top_k: int | None, top_p: float | None) -> None:
    if not math.isfinite(temperature) or temperature < 0:
        raise SamplingError(f"temperature must be zero or a positive number, got {temperature}")
    if top_k is not None and top_k < 1:
        raise SamplingError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise SamplingError(f"top_p must be above 0 and at most 1, got {top_p}")


def top_k_mask(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """True for the k largest logits and any logit tied with the k-th."""
    k = min(top_k, logits.numel())
    threshold = logits.topk(k).values[-1]
    return logits >= threshold  # (V,)


def top_p_mask(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """True for the smallest set of most likely tokens whose probability reaches top_p (at least one).

    transformers' formula: sorted ascending, a token goes when the mass at and below it is at most
    1 - top_p. Tokens tied with the least likely kept one are then kept too.
    """
    sorted_logits, order = torch.sort(logits, descending=False, stable=True)  # (V,) each
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (V,)
    removed_sorted = cumulative <= (1 - top_p)  # (V,)
    removed_sorted[-1] = False  # the most likely token always stays
    removed = removed_sorted.scatter(0, order, removed_sorted)  # (V,) back in vocabulary order
    kept = ~removed
    return logits >= logits[kept].min()  # (V,)


def kept_mask(logits: torch.Tensor, temperature: float, top_k: int | None = None,
              top_p: float | None = None) -> torch.Tensor:
    """Which tokens survive the cut-offs of one logits vector (V,)."""
    check_settings(temperature, top_k, top_p)
    logits = logits.float()  # (V,)
    if temperature == 0:
        kept = torch.zeros_like(logits, dtype=torch.bool)  # (V,)
        kept[int(logits.argmax())] = True
        return kept
    scaled = logits / temperature  # (V,)
    kept = torch.ones_like(scaled, dtype=torch.bool)  # (V,)
    if top_k is not None and top_k < scaled.numel():
        kept = top_k_mask(scaled, top_k)
    if top_p is not None and top_p < 1:
        kept = kept & top_p_mask(scaled.masked_fill(~kept, float("-inf")), top_p)
    return kept


def filtered_logits(logits: torch.Tensor, temperature: float, top_k: int | None = None,
                    top_p: float | None = None) -> torch.Tensor:
    """logits / temperature with the cut tokens at -inf (greedy: the argmax alone at 0)."""
    kept = kept_mask(logits, temperature, top_k, top_p)  # (V,)
    scaled = logits.float() / temperature if temperature > 0 else torch.zeros_like(logits, dtype=torch.float32)
    return scaled.masked_fill(~kept, float("-inf"))  # (V,)


def sampling_probabilities(logits: torch.Tensor, temperature: float, top_k: int | None = None,
                           top_p: float | None = None) -> torch.Tensor:
    """The renormalised distribution a token is drawn from (V,), zero outside the cut-offs."""
    return F.softmax(filtered_logits(logits, temperature, top_k, top_p), dim=-1)  # (V,)


def entropy_nats(probabilities: torch.Tensor) -> float:
    """-sum p ln p, with 0 ln 0 = 0."""
    p = probabilities.double()  # (V,)
    return float(-(p * torch.log(p.where(p > 0, torch.ones_like(p)))).sum())


def uniform_draws(seed: int, count: int) -> torch.Tensor:
    """The first `count` uniforms in [0, 1) of the seed's stream (a prefix of any longer stream)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(count, generator=generator, dtype=torch.float64)  # (count,)


def uniform_draw(seed: int, index: int) -> float:
    """Uniform number `index` (from 0) of the seed's stream."""
    return float(uniform_draws(seed, index + 1)[index])


def draw_order(probabilities: torch.Tensor) -> torch.Tensor:
    """Token ids from most to least likely, ties by id: the order in which a draw sums the probabilities."""
    p = probabilities.double()  # (V,)
    ids = torch.arange(p.numel())  # (V,)
    # A stable sort of ids already in ascending order keeps ties by id.
    return ids[torch.sort(-p, stable=True).indices]  # (V,)


def draw(probabilities: torch.Tensor, uniform: float) -> int:
    """Inverse CDF in draw order: the first token, most likely first, whose running total exceeds `uniform`."""
    p = probabilities.double()  # (V,)
    order = draw_order(p)  # (V,)
    cumulative = p[order].cumsum(dim=0)  # (V,)
    index = int(torch.searchsorted(cumulative, torch.tensor([uniform * float(cumulative[-1])],
                                                            dtype=torch.float64), right=True)[0])
    last_possible = int((p[order] > 0).sum()) - 1  # zero-probability tokens come last in draw order
    return int(order[min(index, last_possible)])  # a uniform at the rounding edge of the last sum picks the last kept token


def sample_next(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None,
                uniform: float) -> int:
    """The token drawn from one logits vector (V,) with one uniform; greedy at temperature 0."""
    if temperature == 0:
        check_settings(temperature, top_k, top_p)
        return int(logits.argmax())
    return draw(sampling_probabilities(logits, temperature, top_k, top_p), uniform)


@dataclass(frozen=True)
class NextTokenSampling:
    """One next-token distribution before and after the cut-offs, and the draw the seed makes from it."""

    position: int  # the position whose logits predict the next token
    temperature: float
    top_k: int | None
    top_p: float | None
    model_probabilities: np.ndarray  # (V,) softmax(logits): the model's own distribution
    tempered: np.ndarray  # (V,) softmax(logits / temperature), before the cut-offs
    after_top_k: np.ndarray  # (V,) bool: kept by top-k (all True without it)
    kept: np.ndarray  # (V,) bool: kept by top-k and top-p
    probabilities: np.ndarray  # (V,) the renormalised distribution the draw uses
    model_entropy_nats: float
    entropy_nats: float  # of `probabilities`
    seed: int
    draw_index: int  # which uniform of the seed's stream
    uniform: float
    token: int  # the token drawn

    @property
    def entropy_bits(self) -> float:
        return self.entropy_nats / LN_2

    @property
    def model_entropy_bits(self) -> float:
        return self.model_entropy_nats / LN_2

    @property
    def kept_count(self) -> int:
        return int(self.kept.sum())

    @property
    def kept_mass(self) -> float:
        """Probability the kept tokens had before renormalising (of the tempered distribution)."""
        return float(self.tempered[self.kept].sum())


def next_token_sampling(logits: torch.Tensor, position: int, temperature: float, top_k: int | None,
                        top_p: float | None, seed: int, draw_index: int) -> NextTokenSampling:
    """Everything the sampling view shows for one logits vector (V,)."""
    check_settings(temperature, top_k, top_p)
    if draw_index < 0:
        raise SamplingError(f"the draw index must be zero or more, got {draw_index}")
    logits = logits.detach().float().cpu()  # (V,)
    model_probabilities = F.softmax(logits, dim=-1)  # (V,)
    if temperature == 0:
        tempered = torch.zeros_like(logits)  # (V,) greedy: all mass on the argmax
        tempered[int(logits.argmax())] = 1.0
        after_top_k = torch.ones_like(logits, dtype=torch.bool)  # (V,)
    else:
        tempered = F.softmax(logits / temperature, dim=-1)  # (V,)
        after_top_k = kept_mask(logits, temperature, top_k, None)  # (V,)
    kept = kept_mask(logits, temperature, top_k, top_p)  # (V,)
    probabilities = sampling_probabilities(logits, temperature, top_k, top_p)  # (V,)
    uniform = uniform_draw(seed, draw_index)
    return NextTokenSampling(
        position=position,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        model_probabilities=model_probabilities.numpy(),
        tempered=tempered.numpy(),
        after_top_k=after_top_k.numpy(),
        kept=kept.numpy(),
        probabilities=probabilities.numpy(),
        model_entropy_nats=entropy_nats(model_probabilities),
        entropy_nats=entropy_nats(probabilities),
        seed=seed,
        draw_index=draw_index,
        uniform=uniform,
        token=sample_next(logits, temperature, top_k, top_p, uniform),
    )


__all__ = [
    "NextTokenSampling",
    "SamplingError",
    "check_settings",
    "draw",
    "draw_order",
    "entropy_nats",
    "filtered_logits",
    "kept_mask",
    "next_token_sampling",
    "sample_next",
    "sampling_probabilities",
    "top_k_mask",
    "top_p_mask",
    "uniform_draw",
    "uniform_draws",
]
