"""The masked-LM recipe's proportions and loss, and the load-balancing loss against transformers' own function."""

from __future__ import annotations

import math

import pytest
import torch

from core.objectives.load_balance import expert_load, load_balancing_loss
from core.objectives.masked_lm import IGNORED, MaskingError, mask_tokens, masked_lm_loss


def within_binomial(count: int, trials: int, p: float, sigmas: float = 5.0) -> bool:
    """A correct recipe misses this about once in 10^6 runs."""
    return abs(count - trials * p) <= sigmas * math.sqrt(trials * p * (1 - p))


def test_the_recipe_chooses_15_percent_and_splits_them_80_10_10():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 60, (200, 500), generator=generator)  # (B, T) 100,000 positions
    batch = mask_tokens(ids, mask_id=63, vocab_size=64, generator=generator)
    positions, chosen = ids.numel(), int(batch.chosen.sum())
    assert within_binomial(chosen, positions, 0.15)
    assert within_binomial(int(batch.masked.sum()), chosen, 0.8)
    assert within_binomial(int(batch.randomised.sum()), chosen, 0.1)
    kept = batch.chosen & ~batch.masked & ~batch.randomised
    assert within_binomial(int(kept.sum()), chosen, 0.1)
    assert torch.equal(batch.inputs[batch.masked], torch.full((int(batch.masked.sum()),), 63))
    assert torch.equal(batch.inputs[kept], ids[kept]) and torch.equal(batch.inputs[~batch.chosen], ids[~batch.chosen])
    # A random replacement is uniform over the vocabulary: it equals the original about 1 time in 64.
    same = int((batch.inputs[batch.randomised] == ids[batch.randomised]).sum())
    assert within_binomial(same, int(batch.randomised.sum()), 1 / 64)
    assert torch.equal(batch.labels[batch.chosen], ids[batch.chosen])
    assert bool((batch.labels[~batch.chosen] == IGNORED).all())


def test_special_tokens_are_never_chosen_and_bad_settings_are_refused():
    generator = torch.Generator().manual_seed(1)
    ids = torch.zeros(50, 50, dtype=torch.long)
    ids[:, ::2] = 5
    batch = mask_tokens(ids, mask_id=9, vocab_size=10, generator=generator, special_ids=[0])
    assert not bool(batch.chosen[ids == 0].any()) and bool(batch.chosen.any())
    with pytest.raises(MaskingError, match="outside the vocabulary"):
        mask_tokens(ids, mask_id=10, vocab_size=10, generator=generator)
    with pytest.raises(MaskingError, match="at most 1"):
        mask_tokens(ids, mask_id=9, vocab_size=10, generator=generator, mask_p=0.95, random_p=0.1)


def test_the_loss_is_taken_at_the_chosen_positions_only():
    generator = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 30, (4, 40), generator=generator)
    batch = mask_tokens(ids, mask_id=31, vocab_size=32, generator=generator, select_p=0.3)
    logits = torch.randn(4, 40, 32, generator=generator, dtype=torch.float64)  # (B, T, V)
    by_hand = [-torch.log_softmax(logits[b, t], dim=-1)[ids[b, t]] for b, t in batch.chosen.nonzero().tolist()]
    expected = torch.stack(by_hand).mean()
    assert masked_lm_loss(logits, batch.labels).item() == pytest.approx(expected.item(), rel=1e-12)
    nothing = torch.full_like(ids, IGNORED)
    assert masked_lm_loss(logits, nothing).item() == 0.0


def test_the_load_balancing_loss_is_transformers_mixtral_loss():
    mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral")
    generator = torch.Generator().manual_seed(3)
    for n_experts, top_k, layers in ((8, 2, 3), (4, 1, 1), (6, 3, 2)):
        logits = [torch.randn(37, n_experts, generator=generator) for _ in range(layers)]  # (N, E) per layer
        ours = load_balancing_loss(logits, top_k)
        theirs = mixtral.load_balancing_loss_func(tuple(logits), num_experts=n_experts, top_k=top_k)
        assert ours.item() == pytest.approx(float(theirs), rel=1e-5)


def test_a_uniform_router_gives_top_k_and_a_collapsed_one_gives_e_times_top_k():
    n_experts, top_k, tokens = 4, 2, 64
    # Every token's router prefers a different pair in turn: loads and probabilities equal.
    logits = torch.zeros(tokens, n_experts)
    for token in range(tokens):
        logits[token, token % n_experts] += 1e-3
        logits[token, (token + 1) % n_experts] += 1e-3
    assert load_balancing_loss([logits], top_k).item() == pytest.approx(top_k, rel=1e-3)
    collapsed = torch.tensor([[20.0, 19.0, -20.0, -20.0]]).repeat(tokens, 1)
    # f = (1, 1, 0, 0), P ~ (0.73, 0.27, 0, 0): E * sum f P = 4 * 1.0
    assert load_balancing_loss([collapsed], top_k).item() == pytest.approx(n_experts * 1.0, rel=1e-6)
    load = expert_load([collapsed], top_k)
    assert load.assignments.tolist() == [[tokens, tokens, 0, 0]] and load.tokens == tokens


def test_the_loss_trains_the_router_towards_balance():
    logits = torch.tensor([[3.0, 0.0, 0.0, 0.0]]).repeat(32, 1).requires_grad_(True)  # (N, E) all to expert 0
    load_balancing_loss([logits], top_k=1).backward()
    assert logits.grad[:, 0].mean() > 0 > logits.grad[:, 1:].mean()  # descent lowers expert 0, raises the others
