"""core.sampling: the cut-offs equal transformers' warpers, the edge cases, entropy, and the seeded draw."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from core import sampling
from core.config import ModelConfig
from core.model import Transformer
from core.training import generate

TINY = ModelConfig(vocab_size=23, context_length=16, d_model=16, n_heads=2, n_layers=1, d_ff=32)


def reference_kept(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """transformers' own warpers, in generate()'s order: which tokens keep a finite score."""
    scores = TemperatureLogitsWarper(temperature)(None, logits.unsqueeze(0).clone())  # (1, V)
    if top_k is not None:
        scores = TopKLogitsWarper(top_k)(None, scores)
    if top_p is not None:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return torch.isfinite(scores[0])  # (V,)


def untied_logits(generator: torch.Generator, vocab: int, scale: float) -> torch.Tensor:
    return torch.randn(vocab, generator=generator) * scale  # (V,) continuous: ties have probability 0


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("top_k", [None, 1, 5, 40])
@pytest.mark.parametrize("top_p", [None, 0.05, 0.5, 0.9, 0.999])
def test_the_cut_offs_equal_transformers_warpers(temperature, top_k, top_p):
    generator = torch.Generator().manual_seed(17)
    for _ in range(20):
        logits = untied_logits(generator, 97, scale=3.0)
        ours = sampling.kept_mask(logits, temperature, top_k, top_p)
        assert torch.equal(ours, reference_kept(logits, temperature, top_k, top_p))


def test_the_renormalised_distribution_is_softmax_over_the_kept_tokens():
    generator = torch.Generator().manual_seed(3)
    logits = untied_logits(generator, 50, scale=2.0)
    probabilities = sampling.sampling_probabilities(logits, 0.7, top_k=10, top_p=0.8)
    kept = sampling.kept_mask(logits, 0.7, top_k=10, top_p=0.8)
    expected = torch.zeros(50)
    expected[kept] = torch.softmax(logits[kept] / 0.7, dim=0)
    assert torch.allclose(probabilities, expected, rtol=0, atol=1e-6)
    assert probabilities[~kept].eq(0).all()
    assert math.isclose(float(probabilities.sum()), 1.0, abs_tol=1e-6)


def test_top_p_of_one_keeps_everything_and_a_tiny_top_p_keeps_the_argmax():
    generator = torch.Generator().manual_seed(5)
    logits = untied_logits(generator, 64, scale=1.0)
    assert sampling.kept_mask(logits, 1.0, None, 1.0).all()
    tiny = sampling.kept_mask(logits, 1.0, None, 1e-9)
    assert tiny.sum() == 1 and bool(tiny[int(logits.argmax())])


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    probabilities = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = probabilities.log()
    assert sampling.kept_mask(logits, 1.0, None, 0.5).tolist() == [True, False, False, False]
    assert sampling.kept_mask(logits, 1.0, None, 0.6).tolist() == [True, True, False, False]
    assert sampling.kept_mask(logits, 1.0, None, 0.85).tolist() == [True, True, True, False]


def test_ties_are_kept_or_dropped_together():
    logits = torch.tensor([2.0, 1.0, 1.0, 1.0, -1.0])
    # top-k 2 cuts between tied tokens: all three tied at the k-th value stay (as transformers does).
    assert sampling.kept_mask(logits, 1.0, 2, None).tolist() == [True, True, True, True, False]
    assert torch.equal(sampling.kept_mask(logits, 1.0, 2, None), reference_kept(logits, 1.0, 2, None))
    # top-p reaching into the tied group keeps the whole group, whatever order a sort gives them.
    p_first = float(torch.softmax(logits, 0)[0])
    assert sampling.kept_mask(logits, 1.0, None, p_first + 0.01).tolist() == [True, True, True, True, False]
    assert sampling.kept_mask(logits.flip(0), 1.0, None, p_first + 0.01).tolist() == [False, True, True, True, True]
    # greedy keeps one token even among tied maxima: the first, as argmax gives it.
    assert sampling.kept_mask(torch.tensor([1.0, 3.0, 3.0]), 0.0).tolist() == [False, True, False]


def test_temperature_zero_is_greedy_and_temperature_reshapes():
    generator = torch.Generator().manual_seed(11)
    logits = untied_logits(generator, 30, scale=1.0)
    greedy = sampling.sampling_probabilities(logits, 0.0)
    assert float(greedy[int(logits.argmax())]) == 1.0 and float(greedy.sum()) == 1.0
    sharp = sampling.entropy_nats(sampling.sampling_probabilities(logits, 0.5))
    plain = sampling.entropy_nats(sampling.sampling_probabilities(logits, 1.0))
    flat = sampling.entropy_nats(sampling.sampling_probabilities(logits, 4.0))
    assert sharp < plain < flat < math.log(30)


def test_entropy_in_nats_and_bits():
    assert sampling.entropy_nats(torch.tensor([1.0, 0.0, 0.0])) == 0.0
    uniform = torch.full((8,), 1 / 8)
    assert math.isclose(sampling.entropy_nats(uniform), math.log(8), rel_tol=1e-12)
    result = sampling.next_token_sampling(torch.zeros(8), 0, 1.0, None, None, seed=0, draw_index=0)
    assert math.isclose(result.entropy_bits, 3.0, rel_tol=1e-6)
    p = np.array([0.5, 0.25, 0.25])
    assert math.isclose(sampling.entropy_nats(torch.tensor(p)), float(-(p * np.log(p)).sum()), rel_tol=1e-12)


def test_the_uniform_stream_is_a_prefix_whatever_its_length():
    long = sampling.uniform_draws(7, 10_000)
    for count in (1, 2, 15, 16, 17, 100, 4096):
        assert torch.equal(sampling.uniform_draws(7, count), long[:count])
    assert sampling.uniform_draw(7, 123) == float(long[123])
    assert not torch.equal(sampling.uniform_draws(8, 16), long[:16])


def test_the_draw_is_the_inverse_cdf_most_likely_first():
    # Draw order: token 3 (0.5), then 1 and 4 (0.25 each, tie by id), then the zero-probability ones.
    probabilities = torch.tensor([0.0, 0.25, 0.0, 0.5, 0.25])
    assert sampling.draw_order(probabilities).tolist() == [3, 1, 4, 0, 2]
    assert sampling.draw(probabilities, 0.0) == 3
    assert sampling.draw(probabilities, 0.4999) == 3
    assert sampling.draw(probabilities, 0.5001) == 1
    assert sampling.draw(probabilities, 0.76) == 4
    assert sampling.draw(probabilities, 1.0 - 1e-16) == 4  # never a zero-probability token
    assert sampling.draw(torch.tensor([0.3, 0.7, 0.0]), 1.0 - 1e-17) == 0


def test_a_running_total_over_the_sorted_probabilities_finds_the_drawn_token():
    """What a student does with the bars: add them up most likely first until the total passes u."""
    generator = torch.Generator().manual_seed(5)
    for _ in range(200):
        probabilities = torch.rand(12, generator=generator, dtype=torch.float64) ** 3  # (12,)
        probabilities /= probabilities.sum()
        u = float(torch.rand((), generator=generator, dtype=torch.float64))
        by_hand = sorted(range(12), key=lambda i: (-float(probabilities[i]), i))
        total, expected = 0.0, by_hand[-1]
        for token in by_hand:
            total += float(probabilities[token])
            if total > u:
                expected = token
                break
        assert sampling.draw(probabilities, u) == expected


def test_draws_follow_the_distribution():
    probabilities = torch.tensor([0.1, 0.6, 0.3])
    uniforms = sampling.uniform_draws(0, 20_000)
    counts = np.bincount([sampling.draw(probabilities, float(u)) for u in uniforms], minlength=3)
    # 5 standard deviations of a binomial count: a correct sampler fails this about once in 10^6 runs.
    for count, p in zip(counts, probabilities.tolist()):
        assert abs(count - 20_000 * p) < 5 * math.sqrt(20_000 * p * (1 - p))


def test_a_draw_never_picks_a_cut_token():
    generator = torch.Generator().manual_seed(2)
    logits = untied_logits(generator, 40, scale=2.0)
    kept = sampling.kept_mask(logits, 1.3, 6, 0.7)
    for u in sampling.uniform_draws(4, 500):
        assert bool(kept[sampling.sample_next(logits, 1.3, 6, 0.7, float(u))])


@pytest.mark.parametrize(
    "settings, message",
    [((-0.1, None, None), "temperature must be zero or a positive"), ((math.nan, None, None), "temperature"),
     ((1.0, 0, None), "top_k must be at least 1"), ((1.0, None, 0.0), "top_p must be above 0 and at most 1"),
     ((1.0, None, 1.5), "top_p"), ((1.0, None, math.nan), "top_p")],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(sampling.SamplingError, match=message):
        sampling.kept_mask(torch.zeros(4), *settings)


def test_next_token_sampling_reports_what_it_kept():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    result = sampling.next_token_sampling(logits, 4, 1.0, 3, 0.8, seed=1, draw_index=2)
    assert result.after_top_k.tolist() == [True, True, True, False, False]
    assert result.kept_count == int(result.kept.sum()) and result.kept_count <= 3
    assert math.isclose(result.kept_mass, float(torch.softmax(logits, 0)[torch.from_numpy(result.kept)].sum()),
                        rel_tol=1e-6)
    assert result.uniform == sampling.uniform_draw(1, 2)
    assert result.token == sampling.draw(torch.from_numpy(result.probabilities), result.uniform)
    assert result.entropy_nats < result.model_entropy_nats


def test_generate_draws_what_stepping_token_by_token_draws():
    """generate's n-th token is next_token_sampling's draw n on the tokens so far: the panel steps the CLI's run."""
    model = Transformer.from_seed(TINY, seed=4)
    out = generate(model, [1, 2, 3], max_new=12, temperature=1.2, top_k=8, seed=9, top_p=0.9)
    tokens = [1, 2, 3]
    with torch.no_grad():
        for step in range(12):
            logits = model(torch.tensor([tokens]))[0, -1]  # (V,)
            tokens.append(sampling.next_token_sampling(logits, len(tokens) - 1, 1.2, 8, 0.9, 9, step).token)
    assert tokens == out


def test_generate_with_top_p_one_equals_no_top_p_and_tiny_top_p_equals_greedy():
    model = Transformer.from_seed(TINY, seed=4)
    assert generate(model, [5], 10, 1.0, None, 3, top_p=1.0) == generate(model, [5], 10, 1.0, None, 3)
    assert generate(model, [5], 10, 1.0, None, 3, top_p=1e-9) == generate(model, [5], 10, 0.0)
