"""Norm curves: forward and gradient norms per block boundary, checked against a hand-written loop."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.experiments.norms import (
    MAX_DEPTH,
    NormsError,
    compare_placements,
    norm_curve_config,
    norm_curves,
    random_tokens,
)
from core.model import Transformer


def direct_norms(depth, placement, norm, seed, d_model, n_heads, seq, batch, residual_scaling):
    """The same numbers by a manual loop over model.blocks, with no hooks involved."""
    config = norm_curve_config(depth, placement, norm, d_model, n_heads, seq)
    model = Transformer.from_seed(config, seed, residual_scaling=residual_scaling)
    tokens = random_tokens(config.vocab_size, batch, seq, seed)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    x = model.embed(inputs)
    stream = [x]
    for block in model.blocks:
        x = block(x, mask_mode="causal")
        stream.append(x)
    logits = model.head(model.final_norm(x))
    torch.testing.assert_close(logits, model(inputs), rtol=0, atol=0)  # the loop is the model's own path
    loss = F.cross_entropy(logits.reshape(-1, config.vocab_size), targets.reshape(-1))
    grads = torch.autograd.grad(loss, stream)
    forward = [float(t.detach().norm(dim=-1).mean()) for t in stream]
    backward = [float(torch.sqrt((g.double() ** 2).sum())) for g in grads]
    return np.array(forward), np.array(backward), float(loss.detach())


@pytest.mark.parametrize(
    "placement, norm, residual_scaling",
    [("pre", "layernorm", False), ("post", "layernorm", False), ("pre", "rmsnorm", True), ("post", "rmsnorm", False)],
)
def test_norm_curves_equal_a_direct_computation(placement, norm, residual_scaling):
    settings = dict(depth=4, placement=placement, norm=norm, seed=5, d_model=32, n_heads=4, seq=8, batch=3)
    curves = norm_curves(residual_scaling=residual_scaling, **settings)
    forward, backward, loss = direct_norms(residual_scaling=residual_scaling, **settings)
    assert curves.layers.tolist() == list(range(5))
    np.testing.assert_allclose(curves.forward_norms, forward, rtol=1e-6)
    np.testing.assert_allclose(curves.gradient_norms, backward, rtol=1e-5)
    assert curves.loss == pytest.approx(loss, rel=1e-6)
    # Random weights predict nothing: the loss sits near ln(vocab).
    assert abs(loss - math.log(65)) < 0.2


def test_twelve_blocks_post_norm_is_flat_at_sqrt_d_and_pre_norm_grows():
    comparison = compare_placements(12, seed=0)
    d = comparison.pre.d_model
    # Post-norm: every block ends in a LayerNorm with unit scale and zero shift, so each token has norm sqrt(d).
    np.testing.assert_allclose(comparison.post.forward_norms[1:], math.sqrt(d), rtol=1e-3)
    # Pre-norm: the stream is never normalised, and each block adds to it.
    pre = comparison.pre.forward_norms
    assert (np.diff(pre) > 0).all()
    assert pre[-1] > 2 * pre[1]
    # Both stacks read the same embeddings.
    assert comparison.pre.forward_norms[0] == comparison.post.forward_norms[0]
    assert np.isfinite(comparison.pre.gradient_norms).all() and np.isfinite(comparison.post.gradient_norms).all()


def test_residual_scaling_slows_the_growth_of_a_deep_pre_norm_stack():
    plain = norm_curves(24, "pre", seed=1)
    scaled = norm_curves(24, "pre", seed=1, residual_scaling=True)
    assert scaled.forward_norms[-1] - scaled.forward_norms[0] < plain.forward_norms[-1] - plain.forward_norms[0]
    assert scaled.residual_scaling and "residual scaling" in scaled.label


def test_the_deepest_stack_runs():
    curves = norm_curves(MAX_DEPTH, "post", norm="rmsnorm", seq=4, batch=1)
    assert curves.forward_norms.shape == curves.gradient_norms.shape == (MAX_DEPTH + 1,)
    assert np.isfinite(curves.gradient_norms).all()


def test_bad_requests_raise_norms_error():
    for kwargs in ({"depth": 0}, {"depth": MAX_DEPTH + 1}, {"depth": 2, "seq": 1}, {"depth": 2, "d_model": 30},
                   {"depth": 2, "batch": 0}, {"depth": 2, "norm": "batchnorm"}, {"depth": 2, "placement": "middle"}):
        with pytest.raises(NormsError):
            norm_curves(**kwargs)


def test_norm_curves_leave_the_global_rng_alone():
    state = torch.get_rng_state()
    norm_curves(2)
    assert torch.equal(torch.get_rng_state(), state)
