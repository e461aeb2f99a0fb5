"""`train --out`: the destination is checked before the first step, and a refusal is one line, exit 2."""

from __future__ import annotations

import errno
import os

import pytest

from core import checkpoints
from core.cli import main, models
from core.checkpoints import CONFIG_FILE
from resources import resource_path


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:3000], encoding="utf-8")
    return path


@pytest.fixture
def no_training(monkeypatch):
    """Training must not start: a refusal comes first."""
    def refuse(*args, **kwargs):
        raise AssertionError("training started before the destination was checked")

    monkeypatch.setattr(models, "train", refuse)


def _train_error(capsys, out, corpus_file) -> str:
    argv = ["train", "--preset", "tiny-gpt", "--out", str(out), "--steps", "2", "--batch", "1", "--seq", "16",
            "--corpus", str(corpus_file), "--threads", "1", "--quiet"]  # fmt: skip
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_a_folder_of_other_files_is_refused_before_training(tmp_path, corpus_file, capsys, no_training):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / CONFIG_FILE).write_text("my own config")
    line = _train_error(capsys, folder, corpus_file)
    assert "holds files this app did not write (config.json)" in line and line.startswith("transformer-explorer train")
    assert (folder / CONFIG_FILE).read_text() == "my own config"


def test_a_read_only_destination_is_refused_before_training(tmp_path, corpus_file, capsys, no_training, monkeypatch):
    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(checkpoints.os, "mkdir", read_only)
    line = _train_error(capsys, tmp_path / "run", corpus_file)
    assert line.endswith("the disk is read-only") and "Errno" not in line


def test_a_full_disk_is_refused_before_training(tmp_path, corpus_file, capsys, no_training, monkeypatch):
    usage = checkpoints.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", lambda path: usage._replace(free=1000))
    line = _train_error(capsys, tmp_path / "run", corpus_file)
    assert "the model needs" in line and "MiB free" in line
    assert os.listdir(tmp_path) == ["corpus.txt"]


def test_a_destination_that_fails_after_training_keeps_the_model_elsewhere(tmp_path, corpus_file, capsys, monkeypatch):
    from core import hf_export
    from core.checkpoints import CheckpointError, resolve_checkpoint

    real = checkpoints.write_checkpoint_folder
    out = tmp_path / "run"

    def fails_at_out(folder, files):
        if os.path.abspath(folder) == str(out):
            raise CheckpointError(f"could not save to {out}: the disk is full")
        return real(folder, files)

    # tiny-gpt is a GPT-2 shape: it is saved as a folder transformers opens (core.hf_export writes it).
    monkeypatch.setattr(checkpoints, "write_checkpoint_folder", fails_at_out)
    monkeypatch.setattr(hf_export, "write_checkpoint_folder", fails_at_out)
    line = _train_error(capsys, out, corpus_file)
    assert line.endswith("instead") and "the disk is full; the trained model was saved to " in line
    rescued = line.split("saved to ", 1)[1].removesuffix(" instead")
    assert resolve_checkpoint(rescued).metadata["steps_done"] == 2
    import shutil

    shutil.rmtree(os.path.dirname(rescued))
