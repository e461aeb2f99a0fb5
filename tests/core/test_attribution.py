"""Direct logit attribution: the parts sum to the model's logit on every bundled family, and each head's
direct effect equals one computed from plain forward hooks on a `transformers` model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from core.checkpoints import load_bundled, resolve_checkpoint
from core.experiments.attribution import AttributionError, direct_logit_attribution
from core.model import Transformer
from core.presets import get_preset
from tests.core import hf_reference_hooks as reference

IDS = [5, 10, 20, 30, 40, 50, 12, 33]


def _models():
    yield "tiny-gpt", load_bundled("tiny-gpt").model
    yield "tiny-llama", load_bundled("tiny-llama").model
    yield "tiny-moe", Transformer.from_seed(get_preset("tiny-moe"), seed=3)


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama", "tiny-moe"])
def test_parts_sum_to_the_models_logit(name):
    model = dict(_models())[name]
    for foil in (None, 9):
        result = direct_logit_attribution(model, IDS, answer=7, foil=foil, position=5)
        with torch.no_grad():
            logits = model(torch.tensor([IDS]))[0, 5]  # (V,)
        expected = float(logits[7] - (logits[9] if foil is not None else 0))
        assert result.total == expected
        # float32 rounding: the logit is a d_model-long dot product of sums of these parts.
        scale = sum(abs(part.value) for part in result.components)
        assert abs(result.parts_sum - result.total) <= 64 * np.finfo(np.float32).eps * scale
        assert result.agrees
        kinds = {part.kind for part in result.components}
        assert "head" in kinds
        assert ("expert" in kinds) == (name == "tiny-moe")
        # The logit lens of the whole final stream is the model's logit; the parts summed through each
        # layer are the lens read through the final run's scale.
        assert result.lens[-1] == pytest.approx(result.total, abs=1e-4 * (1 + scale))
        assert np.allclose(result.accumulated, result.lens_final_scale, atol=1e-4 * (1 + scale))


def test_post_norm_is_refused_in_words():
    config = dataclasses.replace(get_preset("tiny-gpt"), norm_placement="post")
    model = Transformer.from_seed(config, seed=0)
    with pytest.raises(AttributionError, match="post-norm"):
        direct_logit_attribution(model, IDS, answer=7)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_head_direct_effects_match_plain_forward_hooks_on_transformers(kind, tmp_path):
    transformers = pytest.importorskip("transformers")
    from tests import hf_folders

    folder = hf_folders.gpt2_folder(tmp_path / "m") if kind == "gpt2" else hf_folders.llama_folder(tmp_path / "m")
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    lab_model = resolve_checkpoint(folder).model
    ids, answer, foil = [11, 25, 37, 42, 58, 61, 70], 80, 90
    expected, hf_total = reference.head_direct_effects(hf_model, ids, answer, foil)
    result = direct_logit_attribution(lab_model, ids, answer, foil)
    lab = result.head_matrix(lab_model.config.n_layers, lab_model.config.n_heads)
    scale = 1 + float(np.abs(expected.numpy()).max())
    assert np.allclose(lab, expected.numpy(), atol=1e-4 * scale), np.abs(lab - expected.numpy()).max()
    assert result.total == pytest.approx(hf_total, abs=1e-4 * scale)
