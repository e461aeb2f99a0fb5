"""Every save path writes a folder transformers opens with the same logits, and the lab opens it exactly as saved."""

from __future__ import annotations

import json

import pytest
import torch

from core.checkpoints import load_bundled, resolve_checkpoint
from core.cli import main
from core.hf_import import GENERATION_CONFIG_FILE
from core.model_saving import has_hf_family, save_model
from core.presets import get_preset
from core.model import Transformer
from resources import resource_path

transformers = pytest.importorskip("transformers")


def assert_opens_in_transformers_and_the_lab(folder, model, tokenizer, text="To be, or not"):
    ids = torch.tensor([tokenizer.encode(text)])  # (1, T)
    with torch.no_grad():
        ours = model(ids)  # (1, T, V)
        theirs = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()(ids).logits  # (1, T, V)
    assert (theirs - ours).abs().max().item() < 1e-4
    reopened = resolve_checkpoint(folder)
    assert reopened.config == model.config and reopened.tokenizer.kind == tokenizer.kind
    assert reopened.tokenizer.encode(text) == tokenizer.encode(text)
    with torch.no_grad():
        assert torch.equal(reopened.model(ids), ours)  # the lab's own reading is exact
    return reopened


def test_train_out_writes_a_folder_transformers_opens(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:3000], encoding="utf-8")
    out = tmp_path / "trained"
    argv = ["train", "--preset", "tiny-gpt", "--out", str(out), "--steps", "2", "--batch", "1", "--seq", "16",
            "--corpus", str(corpus), "--threads", "1", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads((out / "config.json").read_text())["model_type"] == "gpt2"
    reopened = resolve_checkpoint(out)
    assert reopened.metadata["steps_done"] == 2  # the lab's training record beside transformers' files
    assert_opens_in_transformers_and_the_lab(out, reopened.model, reopened.tokenizer)


@pytest.mark.parametrize("preset", ["tiny-gpt", "tiny-llama"])
def test_save_model_of_a_transformers_family_writes_its_layout_and_keeps_the_record(tmp_path, preset):
    bundled = load_bundled(preset)
    generation = {"do_sample": True, "top_p": 0.5, "temperature": 0.9}
    folder = save_model(bundled.model, tmp_path / preset, bundled.tokenizer, {"steps_done": 7}, generation)
    reopened = assert_opens_in_transformers_and_the_lab(folder, bundled.model, bundled.tokenizer)
    assert reopened.metadata["steps_done"] == 7 and reopened.metadata["generation"] == generation


def test_a_model_transformers_has_no_family_for_is_saved_in_the_labs_own_format(tmp_path):
    config = get_preset("tiny-gpt").replace(norm_placement="post", name="post-norm")
    model = Transformer.from_seed(config, seed=0).eval()
    assert not has_hf_family(model)
    folder = save_model(model, tmp_path / "post", None)
    assert "model_type" not in json.loads((folder / "config.json").read_text())
    assert resolve_checkpoint(folder).config == config


def test_export_keeps_the_folders_generation_settings(tmp_path, capsys):
    bundled = load_bundled("tiny-gpt")
    first = save_model(bundled.model, tmp_path / "first", bundled.tokenizer, None, {"do_sample": True, "top_p": 0.5})
    assert main(["export", "--checkpoint", str(first), "--out", str(tmp_path / "second")]) == 0
    capsys.readouterr()
    kept = json.loads((tmp_path / "second" / GENERATION_CONFIG_FILE).read_text())
    assert kept == {"do_sample": True, "top_p": 0.5}


def test_generation_keys_the_sampler_does_not_apply_are_named_and_kept_on_export(tmp_path, capsys):
    bundled = load_bundled("tiny-gpt")
    settings = {"do_sample": True, "top_p": 0.9, "repetition_penalty": 1.3, "min_p": 0.05, "typical_p": 1.0}
    first = save_model(bundled.model, tmp_path / "first", bundled.tokenizer, None, settings)
    assert main(["generate", "--checkpoint", str(first), "--text", "KING:", "--max-new", "5", "--seed", "1"]) == 0
    note = capsys.readouterr().err
    assert "repetition_penalty 1.3" in note and "min_p 0.05" in note and "typical_p" not in note  # 1.0 is its default
    assert main(["generate", "--checkpoint", str(first), "--text", "KING:", "--max-new", "5", "--temperature", "0"]) == 0
    assert "repetition_penalty" not in capsys.readouterr().err  # greedy: no sampling settings apply
    assert main(["export", "--checkpoint", str(first), "--out", str(tmp_path / "second")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "second" / GENERATION_CONFIG_FILE).read_text()) == settings
    assert not (tmp_path / "second" / "training.json").exists()  # the folder's settings are no training record
