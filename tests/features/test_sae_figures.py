"""The four figures of `sae stats`, each recomputed here in float64 from the definitions, on a small case."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.features.sae_stats import sae_stats
from tests.features.small import small_model, small_sae, small_windows


def _encode64(sae, x: np.ndarray) -> np.ndarray:
    W_enc, b_enc, b_dec = (getattr(sae, n).double().numpy() for n in ("W_enc", "b_enc", "b_dec"))
    pre = (x - b_dec) @ W_enc + b_enc  # (N, F)
    if sae.config.architecture == "standard":
        return np.maximum(pre, 0.0)
    keep = np.argsort(-pre, axis=-1)[:, : sae.config.k]  # (N, k)
    out = np.zeros_like(pre)
    rows = np.arange(len(pre))[:, None]
    out[rows, keep] = np.maximum(pre[rows, keep], 0.0)
    return out


def _loss64(logits: torch.Tensor, windows: torch.Tensor) -> float:
    z = logits[:, :-1].double().numpy()  # (W, T-1, V)
    log_probs = z - z.max(-1, keepdims=True) - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True))
    targets = windows[:, 1:].numpy()
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]  # (W, T-1)
    return float(-picked.mean())


def _run(model, windows, replacement=None):
    """Logits with the hooked activation read (and optionally replaced) by a plain torch forward hook."""
    seen = {}

    def hook(_module, _inputs, output):
        seen["x"] = output.detach().clone()
        return None if replacement is None else replacement(output)

    handle = model.blocks[1].hook_resid_post.register_forward_hook(hook)
    try:
        with torch.no_grad():
            logits = model(windows)
    finally:
        handle.remove()
    return logits, seen["x"]


@pytest.mark.parametrize("one_window_a_chunk", [False, True], ids=["whole", "chunked"])
@pytest.mark.parametrize("architecture", ["topk", "standard"])
def test_the_four_figures_follow_their_definitions(architecture, one_window_a_chunk, monkeypatch):
    model, windows = small_model(), small_windows()
    sae = small_sae(architecture)
    if one_window_a_chunk:  # as GPT-2's 50,257-token head is read: one window's logits at a time
        import core.features.sae_stats as module

        monkeypatch.setattr(module, "LOGITS_PER_CHUNK", 1)
        assert windows.shape[0] > 1
    stats = sae_stats(model, sae, windows)

    clean_logits, x = _run(model, windows)
    x64 = x.double().flatten(0, 1).numpy()  # (N, D)
    features = _encode64(sae, x64)  # (N, F)
    reconstruction = features @ sae.W_dec.double().numpy() + sae.b_dec.double().numpy()
    variance_explained = 1 - ((x64 - reconstruction) ** 2).sum() / ((x64 - x64.mean(axis=0)) ** 2).sum()
    l0 = (features > 0).sum(axis=1).mean()
    dead = (~(features > 0).any(axis=0)).mean()
    spliced = torch.from_numpy(reconstruction).float().view_as(x)
    ce_clean = _loss64(clean_logits, windows)
    ce_spliced = _loss64(_run(model, windows, lambda _out: spliced)[0], windows)
    ce_zero = _loss64(_run(model, windows, torch.zeros_like)[0], windows)

    assert 0 < dead < 1 and 0 < l0  # the case exercises every figure
    assert stats.l0 == pytest.approx(l0, abs=1e-9)  # counts: a float32 near-tie at zero would be the only change
    assert stats.dead_fraction == pytest.approx(dead, abs=1e-9)
    # float32 activations of size ~1 through 16-wide products: relative errors of a few 1e-7.
    assert 1 - stats.variance_explained == pytest.approx(1 - variance_explained, rel=1e-5)
    assert stats.ce_clean == pytest.approx(ce_clean, abs=1e-5)
    assert stats.ce_spliced == pytest.approx(ce_spliced, abs=1e-4)
    assert stats.ce_zero == pytest.approx(ce_zero, abs=1e-5)
    assert stats.ce_recovered == pytest.approx((ce_zero - ce_spliced) / (ce_zero - ce_clean), abs=1e-3)
