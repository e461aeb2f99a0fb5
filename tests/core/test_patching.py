"""Activation patching: bitwise checks on the bundled models, and maps equal to ones made from plain
forward hooks on a `transformers` model (GPT-2 and Llama with grouped-query attention)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.checkpoints import load_bundled, resolve_checkpoint
from core.experiments.patching import SITES, PatchingError, activation_patch
from tests.core import hf_reference_hooks as reference

transformers = pytest.importorskip("transformers")

CLEAN = [5, 10, 20, 30, 40, 50, 12, 33]
CORRUPT = [5, 10, 21, 30, 40, 50, 12, 33]


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_patching_everything_gives_clean_and_nothing_gives_corrupted_bitwise(name):
    model = load_bundled(name).model
    result = activation_patch(model, CLEAN, CORRUPT, answer=7, foil=9, site="resid_pre")
    assert result.patch_all_equal == (True,) * model.config.n_layers
    assert result.patch_none_equal
    assert result.changed_positions == (2,)
    # Patching the stream before block 0 at the edited position restores the clean input, hence the clean metric.
    assert result.values[0, 2] == pytest.approx(result.clean_metric, abs=1e-4)
    # Positions whose tokens were not edited carry the same stream before block 0 in both runs.
    unchanged = [t for t in range(len(CLEAN)) if t != 2]
    assert np.allclose(result.values[0, unchanged], result.corrupt_metric, atol=1e-4)
    normalised = result.normalised
    assert normalised[0, 2] == pytest.approx(1.0, abs=1e-3)


def test_different_lengths_are_refused_in_words():
    model = load_bundled("tiny-gpt").model
    with pytest.raises(PatchingError, match="without adding or removing"):
        activation_patch(model, CLEAN, CORRUPT[:-1], answer=7)


def _folder(kind, tmp_path):
    from tests import hf_folders

    return hf_folders.gpt2_folder(tmp_path / "gpt2") if kind == "gpt2" else hf_folders.llama_folder(tmp_path / "llama")


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_patching_maps_match_plain_forward_hooks_on_transformers(kind, tmp_path):
    folder = _folder(kind, tmp_path)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    lab_model = resolve_checkpoint(folder).model
    clean = [11, 25, 37, 42, 58, 61, 70]
    corrupt = [11, 25, 99, 42, 58, 61, 70]
    answer, foil = 80, 90
    for site in SITES:
        lab = activation_patch(lab_model, clean, corrupt, answer, foil, site=site)
        expected = reference.patching_map(hf_model, clean, corrupt, answer, foil, site).numpy()
        scale = 1 + np.abs(expected).max()
        assert lab.values.shape == expected.shape
        assert np.allclose(lab.values, expected, atol=1e-4 * scale), (site, np.abs(lab.values - expected).max())
        assert lab.clean_metric == pytest.approx(reference.metric(hf_model, clean, answer, foil), abs=1e-4 * scale)
        assert lab.corrupt_metric == pytest.approx(reference.metric(hf_model, corrupt, answer, foil), abs=1e-4 * scale)


def test_rows_arrive_in_order_and_progress_reaches_one():
    model = load_bundled("tiny-gpt").model
    rows, fractions = [], []
    result = activation_patch(model, CLEAN, CORRUPT, 7, 9, site="head",
                              progress=lambda fraction, _text: fractions.append(fraction),
                              on_row=lambda layer, values: rows.append((layer, values)))
    assert [layer for layer, _ in rows] == list(range(model.config.n_layers))
    assert all(np.array_equal(values, result.values[layer]) for layer, values in rows)
    assert fractions[-1] == 1.0
    assert torch.is_grad_enabled()


def test_a_map_beyond_the_cost_bound_is_refused_in_words():
    from core.experiments.patching import cost_problem
    from core.presets import get_preset

    assert cost_problem(get_preset("tiny-gpt"), 256, "resid_pre") is None
    assert cost_problem(get_preset("gpt2-small"), 20, "resid_pre") is None
    problem = cost_problem(get_preset("gpt2-small"), 1024, "resid_pre")
    assert problem is not None and "shorten the text" in problem


ONE_ULP_ABOVE = float(np.float32(2.5) + np.spacing(np.float32(2.5)))


@pytest.mark.parametrize("clean, corrupt, agree", [(2.5, 2.5, True), (2.5, ONE_ULP_ABOVE, True), (2.5, 2.4, False),
                                                    (-300.0, -300.0 + 1e-3, False)])
def test_the_normalised_map_is_undefined_only_where_the_metrics_agree_to_float32_rounding(clean, corrupt, agree):
    from core.experiments.patching import PatchingResult

    values = np.array([[2.45, 2.5]])
    result = PatchingResult("resid_pre", 0, None, clean, corrupt, values, (), None, ())
    assert result.metrics_agree is agree
    if agree:
        assert np.isnan(result.normalised).all()  # a share of a difference of rounding error is no number
    else:
        assert np.allclose(result.normalised, (values - corrupt) / (clean - corrupt))
