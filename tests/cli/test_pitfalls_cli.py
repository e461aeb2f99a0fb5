"""`train --mask` and `pitfalls`: the mask is recorded with the model, bad inputs exit 2 in one line."""

from __future__ import annotations

import json

import pytest

from core.checkpoints import METADATA_FILE, resolve_checkpoint
from core.training import training_mask_mode
from resources import resource_path
from tests.cli.helpers import run


def exit_code(capsys, *argv):
    """(exit code, stderr) of a call argparse itself may refuse (it exits from parse_args)."""
    try:
        code, _stdout, stderr = run(capsys, *argv)
    except SystemExit as exit_:
        code, stderr = exit_.code, capsys.readouterr().err
    return code, stderr


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:3000], encoding="utf-8")
    return path


def _train(capsys, out, corpus_file, *extra):
    return run(capsys, "train", "--preset", "tiny-gpt", "--out", str(out), "--steps", "2", "--batch", "1", "--seq", "16",
               "--corpus", str(corpus_file), "--threads", "1", "--quiet", *extra)


def test_train_mask_round_trips_into_the_training_record(capsys, tmp_path, corpus_file):
    out = tmp_path / "leaky"
    code, stdout, stderr = _train(capsys, out, corpus_file, "--mask", "after-softmax")
    assert code == 0, stderr
    record = json.loads((out / METADATA_FILE).read_text(encoding="utf-8"))
    assert record["settings"]["mask_mode"] == "after-softmax" and record["val_loss_mask"] == "causal"
    assert training_mask_mode(resolve_checkpoint(out).metadata) == "after-softmax"
    assert "trained with the after-softmax mask" in stdout
    code, stdout, stderr = run(capsys, "evaluate", "--checkpoint", str(out), "--text-file", str(corpus_file), "--json")
    assert code == 0 and json.loads(stdout)["trained_mask_mode"] == "after-softmax"
    code, stdout, stderr = run(capsys, "generate", "--checkpoint", str(out), "--text", "ROMEO", "--max-new", "3")
    assert code == 0 and "trained with the after-softmax mask" in stderr and stdout.startswith("ROMEO")


def test_train_without_mask_records_causal(capsys, tmp_path, corpus_file):
    out = tmp_path / "honest"
    code, stdout, stderr = _train(capsys, out, corpus_file)
    assert code == 0, stderr
    assert training_mask_mode(resolve_checkpoint(out).metadata) == "causal" and "trained with" not in stdout
    code, stdout, stderr = run(capsys, "generate", "--checkpoint", str(out), "--text", "ROMEO", "--max-new", "3")
    assert code == 0 and "trained with" not in stderr


@pytest.mark.parametrize("mask", ["off-by-one", "future", ""])
def test_train_refuses_a_mask_it_cannot_train_with(capsys, tmp_path, corpus_file, mask):
    code, stderr = exit_code(capsys, "train", "--preset", "tiny-gpt", "--out", str(tmp_path / "never"), "--steps", "2",
                             "--corpus", str(corpus_file), "--quiet", "--mask", mask)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "--mask" in stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("argv, needle", [
    (["pitfalls", "dropout"], "invalid choice"),
    (["pitfalls"], "required"),
    (["pitfalls", "masks", "--steps", "0"], "--steps"),
    (["pitfalls", "masks", "--steps", "5001"], "--steps"),
    (["pitfalls", "masks", "--seed", "-1"], "--seed"),
    (["pitfalls", "warmup", "--size", "huge"], "--size"),
])
def test_pitfalls_refuses_bad_input_in_one_line(capsys, argv, needle):
    code, stderr = exit_code(capsys, *argv)
    assert code == 2 and needle in stderr and len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr


def test_pitfalls_prints_one_row_per_run(capsys):
    code, stdout, stderr = run(capsys, "pitfalls", "masks", "--size", "ci", "--steps", "3", "--seed", "2", "--quiet")
    assert code == 0, stderr
    assert "3 steps, seed 2" in stdout
    for label in ("mask: causal", "mask: after the softmax", "mask: none (bidirectional)"):
        assert sum(line.startswith(label + "  ") for line in stdout.splitlines()) == 1  # its table row
        assert f"{label} generates:" in stdout
    assert "scored with the causal mask" in stdout


def test_pitfalls_json_holds_every_curve(capsys):
    code, stdout, stderr = run(capsys, "pitfalls", "warmup", "--size", "ci", "--steps", "4", "--json", "--quiet")
    assert code == 0, stderr
    data = json.loads(stdout)
    assert [r["run"] for r in data["runs"]] == ["pre", "post", "post-warmup"]
    for entry in data["runs"]:
        assert [step for step, _ in entry["loss_history"]] == [1, 2, 3, 4]
        assert entry["grad_norm_steps"][0] == 1 and all(len(n) == data["setup"]["n_layers"] for n in entry["grad_norms"])
