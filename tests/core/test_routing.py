"""The router view's figures: choices against the top k of router scores recomputed here, the load counted here,
the mixing weights as the block uses them, and total and active parameters counted by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.experiments.routing import RoutingError, moe_problem, routing
from core.presets import get_preset
from tests import family_models

TEXT = "To be, or not to be, that is the question:"


@pytest.fixture(scope="module")
def model():
    return family_models.moe(seed=4)


def router_scores_written_out(model, ids: list[int]) -> torch.Tensor:
    """(L, T, E): each block's stream entering its FFN (a plain forward hook on hook_resid_mid), RMS-normed and
    multiplied by the router's matrix here."""
    captured = []
    handles = [block.hook_resid_mid.register_forward_hook(lambda _m, _i, out: captured.append(out.detach()[0].double()))
               for block in model.blocks]
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for handle in handles:
            handle.remove()
    scores = []
    for block, stream in zip(model.blocks, captured):  # stream: (T, D)
        weight = block.norm2.weight.detach().double()
        normed = stream * torch.rsqrt(stream.pow(2).mean(dim=-1, keepdim=True) + model.config.norm_eps) * weight
        scores.append(normed @ block.ffn.router.weight.detach().double().T)  # (T, E)
    return torch.stack(scores)  # (L, T, E)


def test_choices_probabilities_weights_and_load_against_the_test_s_own(model):
    tokenizer = family_models.shakespeare_tokenizer()
    ids = tokenizer.encode(TEXT)
    result = routing(model, ids, tokenizer)
    config = model.config
    scores = router_scores_written_out(model, ids)  # (L, T, E)
    assert result.router_logits.shape == (config.n_layers, len(ids), config.n_experts)
    np.testing.assert_allclose(result.router_logits, scores.numpy(), rtol=0, atol=1e-5)
    chosen = scores.topk(config.top_k, dim=-1).indices.numpy()  # (L, T, k)
    assert np.array_equal(result.chosen, chosen)
    np.testing.assert_allclose(result.probabilities, torch.softmax(scores, dim=-1).numpy(), rtol=0, atol=1e-5)
    for layer in range(config.n_layers):
        counts = np.bincount(chosen[layer].ravel(), minlength=config.n_experts)
        assert result.load[layer].tolist() == counts.tolist()
        assert result.load[layer].sum() == len(ids) * config.top_k
        for t in range(len(ids)):
            # The block mixes its chosen experts by the softmax of their scores alone; the rest get weight 0.
            picked = scores[layer, t, chosen[layer, t]]
            expected = np.zeros(config.n_experts)
            expected[chosen[layer, t]] = torch.softmax(picked, dim=-1).numpy()
            np.testing.assert_allclose(result.weights[layer, t], expected, rtol=0, atol=1e-5)
    assert result.balanced_load == len(ids) * config.top_k / config.n_experts


def test_total_and_active_parameters_against_a_hand_count(model):
    result = routing(model, [1, 2, 3])
    c = model.config
    d, v, f, e, k = c.d_model, c.vocab_size, c.d_ff, c.n_experts, c.top_k
    kv = c.kv_heads * c.d_head
    # Untied head, RoPE (no position table), no biases, RMSNorm (one vector), SwiGLU (three matrices per expert).
    expert = 3 * d * f
    per_block = (d * d + 2 * d * kv + d * d) + d * e + e * expert + 2 * d
    total = 2 * v * d + c.n_layers * per_block + d
    assert result.total_parameters == total == sum(p.numel() for p in model.parameters())
    assert result.instantiated_parameters == total
    assert result.expert_parameters == expert
    assert result.active_parameters == total - c.n_layers * (e - k) * expert
    assert result.active_share == pytest.approx(result.active_parameters / total)


def test_a_dense_model_is_refused_in_words():
    assert "there is no router" in moe_problem(get_preset("tiny-gpt"))
    assert "load a mixture of experts" in moe_problem(get_preset("tiny-gpt"))
    with pytest.raises(RoutingError, match="no router"):
        routing(family_models.encoder(), [1, 2, 3])
