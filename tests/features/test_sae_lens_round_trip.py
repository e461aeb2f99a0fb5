"""The SAELens layout both ways: SAELens opens what the app saves, the app opens what SAELens saves.

SAELens is a test dependency only (the `test` extra); the app never imports it.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from core.features.sae import load_sae, save_sae
from tests.features.small import small_sae

with warnings.catch_warnings():  # its own dependencies' import-time deprecations are not the app's
    warnings.simplefilter("ignore")
    import sae_lens

ATOL = 1e-5  # the same float32 products in another order: relative rounding of a few 1e-7 on values of size ~1


def _inputs() -> torch.Tensor:
    return torch.randn(32, 16, generator=torch.Generator().manual_seed(4))  # (N, d_in)


@pytest.mark.parametrize("architecture", ["topk", "standard"])
def test_sae_lens_opens_what_the_app_saves_and_encodes_and_decodes_alike(tmp_path, architecture):
    ours = small_sae(architecture)
    save_sae(ours, tmp_path / "sae")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sae_lens.SAE.load_from_disk(str(tmp_path / "sae"))
    assert theirs.cfg.architecture() == architecture and theirs.cfg.d_sae == 40
    assert theirs.cfg.metadata.hook_name == "blocks.1.hook_resid_post"
    x = _inputs()
    with torch.no_grad():
        features = ours.encode(x)
        assert (features > 0).any()
        assert torch.allclose(theirs.encode(x), features, atol=ATOL)
        assert torch.allclose(theirs.decode(features), ours.decode(features), atol=ATOL)


@pytest.mark.parametrize("architecture", ["topk", "standard"])
def test_the_app_opens_what_sae_lens_saves(tmp_path, architecture):
    config_class = sae_lens.TopKSAEConfig if architecture == "topk" else sae_lens.StandardSAEConfig
    extra = {"k": 5} if architecture == "topk" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = config_class(d_in=16, d_sae=24, metadata=sae_lens.saes.sae.SAEMetadata(
            hook_name="blocks.0.hook_resid_pre", model_name="small"), **extra)
        theirs = (sae_lens.TopKSAE if architecture == "topk" else sae_lens.StandardSAE)(cfg)
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for parameter in theirs.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    theirs.save_model(str(tmp_path / "theirs"))
    ours = load_sae(tmp_path / "theirs")
    assert ours.config.hook_name == "blocks.0.hook_resid_pre" and ours.config.d_sae == 24
    x = _inputs()
    with torch.no_grad():
        features = theirs.encode(x)
        assert (features > 0).any()
        assert torch.allclose(ours.encode(x), features, atol=ATOL)
        assert torch.allclose(ours.decode(features), theirs.decode(features), atol=ATOL)


def test_a_transcoder_trained_here_opens_in_sae_lens_and_splices_at_its_output(tmp_path):
    from core.features.activations import collect
    from core.features.sae import SAEConfig
    from core.features.sae_stats import sae_stats
    from core.features.sae_training import SAETrainSettings, train_sae
    from tests.features.small import small_model, small_windows

    model, windows = small_model(), small_windows()
    cache = collect(model, windows, ["blocks.1.hook_resid_mid", "blocks.1.hook_ffn_out"])
    config = SAEConfig("standard", 16, 24, "blocks.1.hook_resid_mid", "small", hook_name_out="blocks.1.hook_mlp_out",
                       d_out=16)
    ours = train_sae(config, cache["blocks.1.hook_resid_mid"], cache["blocks.1.hook_ffn_out"],
                     SAETrainSettings(steps=5, batch_tokens=32, l1_coefficient=0.1)).sae
    save_sae(ours, tmp_path / "transcoder")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sae_lens.SAE.load_from_disk(str(tmp_path / "transcoder"))
    assert type(theirs).__name__ == "Transcoder" and theirs.cfg.d_out == 16
    x = cache["blocks.1.hook_resid_mid"][:32]
    with torch.no_grad():
        assert torch.allclose(theirs.decode(theirs.encode(x)), ours.decode(ours.encode(x)), atol=ATOL)
    stats = sae_stats(model, load_sae(tmp_path / "transcoder"), windows)  # spliced in at blocks.1.hook_ffn_out
    assert stats.ce_zero != stats.ce_clean and 0 <= stats.dead_fraction <= 1
