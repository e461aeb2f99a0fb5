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
            hidden = model(torch.tensor([IDS]), head=False)[0, 5]  # (D,)
        expected = float(logits[7] - (logits[9] if foil is not None else 0))
        # The split unembeds its one position: the same dot products as the whole sequence's head, summed in
        # another order, so they agree within float32 rounding of a d_model-long dot product.
        weight = model.head.weight.detach()
        terms = hidden.abs() @ (weight[7].abs() + (weight[9].abs() if foil is not None else 0))  # ()
        assert abs(result.total - expected) <= model.config.d_model * np.finfo(np.float32).eps * float(terms)
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


def test_only_the_split_position_is_unembedded_and_kept():
    """At GPT-2's vocabulary a whole sequence's logits are the largest tensor of the run: the head reads the one
    position the split is of, and the captured activations keep that position alone."""
    from core.hooks import capture

    model = load_bundled("tiny-gpt").model
    rows = []
    handle = model.head.register_forward_hook(lambda _m, args, _out: rows.append(args[0].shape[:-1].numel()))
    try:
        result = direct_logit_attribution(model, IDS, answer=None, position=3)
    finally:
        handle.remove()
    assert rows == [1]
    with torch.no_grad(), capture(model, ["blocks.*.attn.hook_z", "blocks.*.hook_resid_pre"]) as seen:
        logits = model(torch.tensor([IDS]))[0, 3]  # (V,)
    assert result.answer == int(logits.argmax())
    # A head's direct effect, written here from the captured z at position 3: z @ W_O slice, through the final
    # norm with this run's scale, dotted with the answer's unembedding.
    config, layer, head = model.config, 1, 2
    z = seen[f"blocks.{layer}.attn.hook_z"][0, head, 3].double()  # (d_head,)
    w_out = model.blocks[layer].attn.out_proj.weight.detach().double()  # (D, H * d_head)
    w_out = w_out[:, head * config.d_head:(head + 1) * config.d_head]  # (D, d_head)
    with torch.no_grad(), capture(model, [f"blocks.{config.n_layers - 1}.hook_resid_post"]) as post:
        model(torch.tensor([IDS]))
        stream = post[f"blocks.{config.n_layers - 1}.hook_resid_post"][0, 3].double()  # (D,)
    norm = model.final_norm
    centred = stream - stream.mean()
    scale = 1.0 / torch.sqrt((centred * centred).mean() + norm.eps)
    part = w_out @ z  # (D,)
    weight = norm.weight.detach().double()  # (D,)
    expected = float(((part - part.mean()) * scale * weight) @ model.head.weight[result.answer].detach().double())
    assert result.head_matrix(config.n_layers, config.n_heads)[layer, head] == pytest.approx(expected, abs=1e-5)
