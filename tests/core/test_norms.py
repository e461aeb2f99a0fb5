"""Norm curves: forward, stream-gradient and weight-gradient norms per layer, checked against a hand-written loop."""

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
    for x in stream:
        x.retain_grad()
    loss.backward()  # fills .grad of every parameter and of the retained stream tensors
    forward = [float(t.detach().norm(dim=-1).mean()) for t in stream]
    backward = [float(torch.sqrt((t.grad.double() ** 2).sum())) for t in stream]
    matrices = {"attn.qkv.weight", "attn.out_proj.weight", "ffn.up.weight", "ffn.down.weight"}
    parameter = []
    for block in model.blocks:
        named = dict(block.named_parameters())
        assert {name for name, p in named.items() if p.dim() == 2} == matrices
        parameter.append(math.sqrt(sum(float((named[name].grad.double() ** 2).sum()) for name in matrices)))
    return np.array(forward), np.array(backward), np.array(parameter), float(loss.detach())


@pytest.mark.parametrize(
    "placement, norm, residual_scaling",
    [("pre", "layernorm", False), ("post", "layernorm", False), ("pre", "rmsnorm", True), ("post", "rmsnorm", False)],
)
def test_norm_curves_equal_a_direct_computation(placement, norm, residual_scaling):
    settings = dict(depth=4, placement=placement, norm=norm, seed=5, d_model=32, n_heads=4, seq=8, batch=3)
    curves = norm_curves(residual_scaling=residual_scaling, **settings)
    forward, backward, parameter, loss = direct_norms(residual_scaling=residual_scaling, **settings)
    assert curves.layers.tolist() == list(range(5))
    np.testing.assert_allclose(curves.forward_norms, forward, rtol=1e-6)
    np.testing.assert_allclose(curves.gradient_norms, backward, rtol=1e-5)
    # Same graph, same float32 gradients; only the order of the float64 sum of squares differs.
    assert curves.parameter_gradient_norms.shape == (4,)
    np.testing.assert_allclose(curves.parameter_gradient_norms, parameter, rtol=1e-5)
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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_post_norm_weight_gradients_are_level_and_pre_norm_ones_fall_with_block_and_depth(seed):
    """The shape of the per-block weight-gradient curves at GPT-2's initialisation (std 0.02)."""
    pre = {depth: norm_curves(depth, "pre", seed=seed).parameter_gradient_norms for depth in (3, 12, 48)}
    post = {depth: norm_curves(depth, "post", seed=seed).parameter_gradient_norms for depth in (3, 12, 48)}

    def spread(values):
        return values.max() / values.min()

    for depth in (3, 12, 48):
        # Pre-norm: the first block gets the largest gradient, the last far less; post-norm spreads a fraction of that.
        assert pre[depth].argmax() == 0 and pre[depth][-1] < pre[depth][0] / 1.25
        assert spread(post[depth]) - 1 < (spread(pre[depth]) - 1) / 5
    # Pre-norm's last block gets less the deeper the stack; post-norm's does not move by a tenth of that.
    assert pre[3][-1] > pre[12][-1] > pre[48][-1]
    pre_fall, post_change = pre[3][-1] / pre[48][-1], post[48][-1] / post[3][-1]
    assert pre_fall > 2 and abs(math.log(post_change)) < math.log(pre_fall) / 10


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_post_norm_stream_gradient_ratio_is_one_step_into_the_embeddings(norm):
    """Post-norm's stream gradient: level from block to block; its whole change is the first norm's stretch."""
    steps = []
    for depth in (1, 12, 96):
        curves = norm_curves(depth, "post", norm=norm, seed=0, seq=8, batch=2)
        gradient, forward = curves.gradient_norms, curves.forward_norms
        assert gradient[1:].max() / gradient[1:].min() < 1.05  # after block 1: the same at every boundary
        step, stretch = gradient[0] / gradient[1], forward[1] / forward[0]
        assert stretch > 20 and abs(math.log(step / stretch)) < math.log(1.1)
        steps.append(step)
    # Depth 1 and depth 96 take the same step: it is not a depth effect.
    assert max(steps) / min(steps) < 1.05


def test_residual_scaling_slows_the_growth_of_a_deep_pre_norm_stack():
    plain = norm_curves(24, "pre", seed=1)
    scaled = norm_curves(24, "pre", seed=1, residual_scaling=True)
    assert scaled.forward_norms[-1] - scaled.forward_norms[0] < plain.forward_norms[-1] - plain.forward_norms[0]
    # The shorter stream brings the blocks' weight gradients closer together.
    def spread(curves):
        return curves.parameter_gradient_norms.max() / curves.parameter_gradient_norms.min()
    assert spread(scaled) - 1 < (spread(plain) - 1) / 3
    # Pre-norm's stream gradient grows at every step down toward the embeddings, with or without the scaling.
    assert (np.diff(plain.gradient_norms) < 0).all() and (np.diff(scaled.gradient_norms) < 0).all()
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
