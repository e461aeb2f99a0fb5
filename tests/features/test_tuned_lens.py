"""The tuned lens's file layout and its KL figures, recomputed here from the file's tensors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from core.features.tuned_lens import LensFileError, TunedLens, lens_kl, load_lens, save_lens, train_lens
from tests.features.small import small_model, small_windows


def _log_softmax64(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _layer_norm64(x: np.ndarray, norm) -> np.ndarray:
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    weight, bias = norm.weight.detach().double().numpy(), norm.bias.detach().double().numpy()
    return (x - mean) / np.sqrt(var + norm.eps) * weight + bias


def test_lens_file_layout_and_kl_per_block_follow_the_definitions(tmp_path):
    model, windows = small_model(), small_windows()
    lens = train_lens(model, windows, steps=3, batch_tokens=32).lens
    path = save_lens(lens, tmp_path / "lens.safetensors")
    tensors = load_file(str(path))
    assert sorted(tensors) == sorted(f"layer_translators.{i}.{p}" for i in range(2) for p in ("weight", "bias"))
    assert tensors["layer_translators.1.weight"].shape == (16, 16)
    assert tensors["layer_translators.1.bias"].shape == (16,)
    assert tensors["layer_translators.0.weight"].abs().max() > 0  # trained away from the logit lens's zeros

    streams = {}
    handles = [model.blocks[i].hook_resid_pre.register_forward_hook(
        lambda _m, _inp, out, i=i: streams.__setitem__(i, out.detach().double().flatten(0, 1).numpy()))
        for i in range(2)]
    try:
        with torch.no_grad():
            final = _log_softmax64(model(windows).double().flatten(0, 1).numpy())  # (N, V)
    finally:
        for handle in handles:
            handle.remove()
    head = model.head.weight.detach().double().numpy()  # (V, D)
    report = lens_kl(model, load_lens(path, model), windows)
    for i in range(2):
        h = streams[i]  # (N, D)
        W = tensors[f"layer_translators.{i}.weight"].double().numpy()
        b = tensors[f"layer_translators.{i}.bias"].double().numpy()
        for key, read in (("logit_lens_kl", h), ("tuned_lens_kl", h + h @ W.T + b)):
            log_q = _log_softmax64(_layer_norm64(read, model.final_norm) @ head.T)
            kl = (np.exp(final) * (final - log_q)).sum(-1).mean()
            assert report[key][i] == pytest.approx(kl, rel=1e-4, abs=1e-6)


def test_a_lens_for_another_model_is_refused_in_one_line(tmp_path):
    path = save_lens(TunedLens(3, 16, "other"), tmp_path / "other.safetensors")
    with pytest.raises(LensFileError,
                       match=r"is a lens for other \(3 blocks of width 16\), not for small \(2 of 16\)$"):
        load_lens(path, small_model())
    (tmp_path / "bad.safetensors").write_bytes(b"not a lens")
    with pytest.raises(LensFileError, match="is not a readable safetensors file"):
        load_lens(tmp_path / "bad.safetensors")
