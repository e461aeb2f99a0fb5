"""generation_config.json's sampling defaults: what the import reads and what sampling then keeps."""

from __future__ import annotations

import json

import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

from core.checkpoints import CheckpointError, resolve_checkpoint
from core.cli.models import generation_settings
from core.sampling import kept_mask
from tests.hf_folders import gpt2_folder, reference_logits


def test_a_folders_top_p_is_read_and_cuts_as_transformers_does(tmp_path):
    folder = gpt2_folder(tmp_path / "gpt2")
    (folder / "generation_config.json").write_text(
        json.dumps({"do_sample": True, "temperature": 0.7, "top_p": 0.8}), encoding="utf-8"
    )
    loaded = resolve_checkpoint(folder)
    assert loaded.metadata["generation"]["top_p"] == 0.8
    temperature, top_k, _, top_p = generation_settings(loaded, None, None, None)
    assert (temperature, top_k, top_p) == (0.7, None, 0.8)

    ids, hf_logits = reference_logits(folder, "ROMEO: To be")  # transformers' own logits (T, V)
    last = hf_logits[-1:].float()  # (1, V)
    warped = TopPLogitsWarper(top_p)(torch.tensor([ids]), TemperatureLogitsWarper(temperature)(None, last.clone()))
    expected = torch.isfinite(warped[0])  # (V,) what transformers leaves to sample from
    ours = kept_mask(hf_logits[-1], temperature, top_k, top_p)  # (V,)
    assert 1 < int(expected.sum()) < expected.numel()  # the cut really cuts
    assert torch.equal(ours, expected)


@pytest.mark.parametrize("value", [0, -0.5, 1.5])
def test_a_top_p_outside_zero_to_one_is_refused_in_words(tmp_path, value):
    folder = gpt2_folder(tmp_path / "gpt2")
    (folder / "generation_config.json").write_text(json.dumps({"top_p": value}), encoding="utf-8")
    with pytest.raises(CheckpointError, match="top_p must be above 0 and at most 1"):
        resolve_checkpoint(folder)
