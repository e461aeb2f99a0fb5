"""Steering keeps the SAE's error term: no change is bit-identical to the model alone; a change is the feature's."""

from __future__ import annotations

import pytest
import torch

from core.features.sae import SAEFileError
from core.features.steering import FeatureEdit, steer, steered
from tests.features.small import small_model, small_sae, small_windows


def test_no_change_is_bit_identical_to_the_model_without_the_sae():
    model, sae, windows = small_model(), small_sae(), small_windows()
    with torch.no_grad():
        plain = model(windows)
        for edits in ([], [FeatureEdit(5, alpha=0.0)], [FeatureEdit(0), FeatureEdit(39, alpha=0.0)]):
            with steered(model, sae, edits):
                assert torch.equal(model(windows), plain)
    result = steer(model, sae, windows[0].tolist(), [FeatureEdit(2, alpha=0.0)], new_tokens=3)
    assert result.identical and result.clean_ids == result.steered_ids


def _with_stream(model, windows, change):
    """Logits with a plain forward hook adding change(x) to the stream at the SAE's hook."""
    handle = model.blocks[1].hook_resid_post.register_forward_hook(lambda _m, _i, out: out + change(out))
    try:
        with torch.no_grad():
            return model(windows)
    finally:
        handle.remove()


def test_steering_adds_alpha_times_the_decoder_direction_and_ablation_removes_the_feature():
    model, sae, windows = small_model(), small_sae(), small_windows()
    direction = sae.W_dec[7].clone()
    with torch.no_grad(), steered(model, sae, [FeatureEdit(7, alpha=2.5)]):
        steered_logits = model(windows)
    assert torch.allclose(steered_logits, _with_stream(model, windows, lambda x: 2.5 * direction), atol=1e-5)

    # The feature that fires most on the windows, removed: x - f_i(x) d_i, the other features and the error kept.
    x = {}
    handle = model.blocks[1].hook_resid_post.register_forward_hook(lambda _m, _i, out: x.setdefault("x", out))
    with torch.no_grad():
        model(windows)
    handle.remove()
    pre = (x["x"] - sae.b_dec) @ sae.W_enc + sae.b_enc  # (W, T, F)
    top = pre.topk(sae.config.k, dim=-1)
    features = torch.zeros_like(pre).scatter(-1, top.indices, top.values.relu())
    feature = int(features.sum(dim=(0, 1)).argmax())
    with torch.no_grad(), steered(model, sae, [FeatureEdit(feature, ablate=True)]):
        ablated = model(windows)
    expected = _with_stream(model, windows, lambda out: -features[..., feature:feature + 1] * sae.W_dec[feature])
    assert torch.allclose(ablated, expected, atol=1e-5) and not torch.equal(ablated, model(windows).detach())


def test_a_feature_out_of_range_is_refused_in_one_line():
    model, sae = small_model(), small_sae()
    with pytest.raises(SAEFileError, match=r"^feature 40 is out of range: this SAE has features 0..39$"):
        with steered(model, sae, [FeatureEdit(40, alpha=1.0)]):
            pass
