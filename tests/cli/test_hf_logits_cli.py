"""`logits --checkpoint FOLDER --text` gives transformers' logits: its model fed by its own tokenizer.

Each folder is written by transformers; the reference is AutoTokenizer + AutoModelForCausalLM on
the same folder, so the token ids (special tokens included) and the logits must both agree.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli.helpers import run
from tests.hf_folders import SAMPLE_TEXT, gpt2_folder, llama_folder, qwen2_folder, reference_logits

pytest.importorskip("transformers")

TOLERANCE = 1e-4


def _cli_logits(capsys, folder, text, tmp_path):
    out = tmp_path / "logits.npy"
    code, stdout, stderr = run(capsys, "logits", "--checkpoint", str(folder), "--text", text, "--out", str(out))
    assert code == 0, stderr
    return np.load(out)


def _assert_matches(capsys, folder, tmp_path, text=SAMPLE_TEXT):
    ids, expected = reference_logits(folder, text)
    actual = _cli_logits(capsys, folder, text, tmp_path)
    assert actual.shape == tuple(expected.shape)
    assert float(expected.abs().max()) > 1.0  # logits large enough for the comparison to mean something
    np.testing.assert_allclose(actual, expected.numpy(), atol=TOLERANCE, rtol=0)
    return ids


@pytest.mark.parametrize("layout", ["tokenizer.json", "vocab+merges"])
def test_gpt2_folder_in_both_tokenizer_layouts(capsys, tmp_path, layout):
    folder = gpt2_folder(tmp_path / "gpt2", layout=layout)
    assert (folder / "tokenizer.json").exists() == (layout == "tokenizer.json")
    ids = _assert_matches(capsys, folder, tmp_path, SAMPLE_TEXT + "<|endoftext|>")
    assert ids[-1] == 0  # <|endoftext|> is one special token, not seven pieces


def test_llama_folder_adds_bos(capsys, tmp_path):
    folder = llama_folder(tmp_path / "llama")
    ids = _assert_matches(capsys, folder, tmp_path)
    assert ids[0] == 1  # <s>, as the tokenizer's post-processor adds it


@pytest.mark.parametrize("bos_in_post_processor", [True, False])
def test_tokenizer_json_post_processor_decides_over_tokenizer_config(capsys, tmp_path, bos_in_post_processor):
    """With a tokenizer.json, transformers 5 follows its post-processor, whatever add_bos_token says."""
    folder = llama_folder(
        tmp_path / "llama", bos_in_post_processor=bos_in_post_processor, add_bos_token=not bos_in_post_processor
    )
    ids = _assert_matches(capsys, folder, tmp_path)
    assert (ids[0] == 1) == bos_in_post_processor


def test_vocab_and_merges_folder_follows_add_bos_token(capsys, tmp_path):
    """Without a tokenizer.json, tokenizer_config.json's add_bos_token decides (GPT-2's default: no BOS)."""
    folder = gpt2_folder(tmp_path / "gpt2", layout="vocab+merges")
    (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True}), encoding="utf-8")
    ids = _assert_matches(capsys, folder, tmp_path)
    assert ids[0] == 0  # <|endoftext|>, GPT-2's BOS


def test_qwen2_folder(capsys, tmp_path):
    folder = qwen2_folder(tmp_path / "qwen2")
    _assert_matches(capsys, folder, tmp_path)


@pytest.mark.parametrize(
    "keys",
    [
        {"rope_parameters": {"rope_type": "default", "rope_theta": 300.0}, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
        {"rope_theta": 500.0, "rope_parameters": {"rope_type": "linear", "factor": 3.0, "rope_theta": 2000.0}},
        {"rope_theta": 500.0, "rope_parameters": {"rope_type": "default", "rope_theta": 300.0}, "rope_scaling": None},
    ],
    ids=["scaling-replaces-parameters", "parameters-theta-wins", "null-scaling"],
)
def test_llama_config_with_both_rope_keys_reads_as_transformers(capsys, tmp_path, keys):
    folder = llama_folder(tmp_path / "llama")
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.pop("rope_parameters", None)
    config.pop("rope_theta", None)
    config.update(keys)
    path.write_text(json.dumps(config), encoding="utf-8")
    _assert_matches(capsys, folder, tmp_path)


def test_rope_parameters_per_layer_type_are_refused(capsys, tmp_path):
    folder = llama_folder(tmp_path / "llama")
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["rope_parameters"] = {"full_attention": {"rope_type": "default", "rope_theta": 10.0}}
    path.write_text(json.dumps(config), encoding="utf-8")
    capsys.readouterr()  # transformers' save progress
    code, _, stderr = run(capsys, "logits", "--checkpoint", str(folder), "--text", "To be", "--out", str(tmp_path / "x.npy"))
    assert code == 2
    assert "RoPE parameters per layer type are not supported" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_generate_follows_generation_config(capsys, tmp_path):
    """generation_config.json's do_sample false makes generation greedy, and its eos_token_id ends the text."""
    import torch
    import transformers

    folder = gpt2_folder(tmp_path / "gpt2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    prompt = tokenizer("ROMEO:")["input_ids"]
    with torch.no_grad():
        logits_steps = []
        tokens = list(prompt)
        for _ in range(8):  # greedy by hand: argmax of transformers' own logits
            logits_steps.append(model(torch.tensor([tokens])).logits[0, -1])
            tokens.append(int(logits_steps[-1].argmax()))
    continuation = tokens[len(prompt) :]
    eos = continuation[4]
    end = continuation.index(eos)
    (folder / "generation_config.json").write_text(
        json.dumps({"do_sample": False, "eos_token_id": eos, "bos_token_id": 0}), encoding="utf-8"
    )
    capsys.readouterr()
    code, stdout, stderr = run(capsys, "generate", "--checkpoint", str(folder), "--text", "ROMEO:", "--max-new", "8")
    assert code == 0, stderr
    assert stdout == tokenizer.decode(prompt + continuation[:end]) + "\n"


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_folders_the_lab_saved_match_transformers(capsys, tmp_path, name):
    folder = tmp_path / f"{name}-hf"
    code, out, err = run(capsys, "export", "--checkpoint", name, "--out", str(folder))
    assert code == 0, err
    assert "a Hugging Face" in out
    _assert_matches(capsys, folder, tmp_path)


def test_export_refuses_a_model_without_a_hugging_face_equivalent(capsys, tmp_path):
    from core.checkpoints import save_checkpoint
    from core.config import ModelConfig
    from core.model import Transformer

    source = save_checkpoint(Transformer(ModelConfig(norm_placement="post").validated()), tmp_path / "post-norm")
    code, _, err = run(capsys, "export", "--checkpoint", str(source), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "no Hugging Face equivalent" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
