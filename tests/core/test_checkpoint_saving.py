"""Saving a checkpoint: one unit or nothing, never over someone else's files, with the user's umask."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from core import checkpoints
from core.checkpoints import (
    CONFIG_FILE,
    MANIFEST_FILE,
    METADATA_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    CheckpointError,
    check_destination,
    json_writer,
    load_checkpoint,
    save_checkpoint,
    write_checkpoint_folder,
)
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer

TINY = get_preset("tiny-gpt").replace(vocab_size=12, context_length=8, d_model=8, n_heads=2, n_layers=1, d_ff=16)
TINY_LLAMA = get_preset("tiny-llama").replace(
    vocab_size=12, context_length=8, d_model=8, n_heads=2, n_kv_heads=1, n_layers=1, d_ff=16
)
REPO = Path(__file__).resolve().parents[2]


def _tokenizer() -> CharTokenizer:
    return CharTokenizer(list("abcdefghijkl"))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _work_folders(parent: Path) -> list[str]:
    return sorted(name for name in os.listdir(parent) if ".partial-" in name or ".old-" in name)


def test_a_folder_of_someone_elses_files_is_refused_and_left_as_it_was(tmp_path):
    folder = tmp_path / "my-project"
    folder.mkdir()
    (folder / CONFIG_FILE).write_text('{"mine": true}\n')
    (folder / TOKENIZER_FILE).write_text('{"also": "mine"}\n')
    before = _snapshot(folder)

    with pytest.raises(CheckpointError, match=r"holds files this app did not write \(config\.json, tokenizer\.json\)"):
        save_checkpoint(Transformer.from_seed(TINY), folder, tokenizer=_tokenizer())

    assert _snapshot(folder) == before
    assert _work_folders(tmp_path) == []


def test_a_folder_the_app_wrote_is_replaced_whole_without_stale_files(tmp_path):
    folder = tmp_path / "ckpt"
    save_checkpoint(Transformer.from_seed(TINY), folder, tokenizer=_tokenizer(), metadata={"run": 1})
    assert (folder / METADATA_FILE).exists()

    save_checkpoint(Transformer.from_seed(TINY_LLAMA, seed=2), folder)

    assert sorted(os.listdir(folder)) == sorted([MODEL_FILE, CONFIG_FILE, MANIFEST_FILE])  # no stale training.json
    assert load_checkpoint(folder).config == TINY_LLAMA
    assert _work_folders(tmp_path) == []


def test_a_folder_saved_before_the_manifest_counts_as_the_apps(tmp_path):
    folder = tmp_path / "old"
    save_checkpoint(Transformer.from_seed(TINY), folder, tokenizer=_tokenizer())
    (folder / MANIFEST_FILE).unlink()
    save_checkpoint(Transformer.from_seed(TINY_LLAMA), folder)
    assert load_checkpoint(folder).config == TINY_LLAMA


def test_a_file_added_to_the_apps_folder_makes_it_foreign(tmp_path):
    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt")
    (folder / "notes.txt").write_text("my notes")
    with pytest.raises(CheckpointError, match=r"did not write \(notes\.txt\)"):
        save_checkpoint(Transformer.from_seed(TINY), folder)
    assert (folder / "notes.txt").read_text() == "my notes"


def test_a_file_in_the_way_and_an_empty_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="exists and is not a folder"):
        save_checkpoint(Transformer.from_seed(TINY), tmp_path / "file")
    (tmp_path / "empty").mkdir()
    save_checkpoint(Transformer.from_seed(TINY), tmp_path / "empty")
    assert load_checkpoint(tmp_path / "empty").config == TINY


def test_a_trailing_slash_and_missing_parents(tmp_path):
    target = tmp_path / "a" / "b" / "ckpt"
    written = save_checkpoint(Transformer.from_seed(TINY), str(target) + os.sep)
    assert written == target and load_checkpoint(target).config == TINY
    assert _work_folders(target.parent) == []


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_files_and_folder_follow_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt", tokenizer=_tokenizer(), metadata={})
    finally:
        os.umask(previous)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path.name


def test_a_writer_that_fails_leaves_the_old_folder_and_no_work_folder(tmp_path):
    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt", tokenizer=_tokenizer())
    before = _snapshot(folder)

    def full_disk(target: Path) -> None:
        target.write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device (in the system's language)", str(target))

    with pytest.raises(CheckpointError) as caught:
        write_checkpoint_folder(folder, {CONFIG_FILE: json_writer({}), MODEL_FILE: full_disk})
    assert str(caught.value) == f"could not save to {folder}: the disk is full"
    assert _snapshot(folder) == before
    assert _work_folders(tmp_path) == []


def test_a_read_only_disk_is_a_sentence_before_anything_is_written(tmp_path, monkeypatch):
    real_mkdir = os.mkdir

    def read_only(path, *args, **kwargs):
        if Path(path).parent == tmp_path:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(checkpoints.os, "mkdir", read_only)
    with pytest.raises(CheckpointError) as caught:
        check_destination(tmp_path / "ckpt")
    assert str(caught.value) == f"cannot save to {tmp_path / 'ckpt'}: the disk is read-only"
    assert "Errno" not in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_a_disk_without_room_for_the_weights_is_refused(tmp_path, monkeypatch):
    model = Transformer.from_seed(TINY)
    needed = checkpoints.weights_bytes(model)
    usage = checkpoints.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", lambda path: usage._replace(free=needed - 1))
    with pytest.raises(CheckpointError, match="the model needs .* MiB and the disk has .* MiB free"):
        save_checkpoint(model, tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


def test_file_names_must_be_plain(tmp_path):
    for name in ("../escape", "", MANIFEST_FILE, "a/b"):
        with pytest.raises(ValueError, match="not a plain file name"):
            write_checkpoint_folder(tmp_path / "x", {name: json_writer({})})


KILLED_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from core.checkpoints import CONFIG_FILE, MODEL_FILE, json_writer, write_checkpoint_folder

    def killed(target: Path) -> None:
        target.write_bytes(b"half a file")
        os.kill(os.getpid(), signal.SIGKILL)

    write_checkpoint_folder(sys.argv[1], {CONFIG_FILE: json_writer({"new": True}), MODEL_FILE: killed})
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_a_kill_between_files_leaves_the_old_folder_whole_and_the_next_save_cleans_up(tmp_path):
    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt", tokenizer=_tokenizer())
    before = _snapshot(folder)

    process = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(folder)], cwd=REPO, capture_output=True, timeout=120)

    assert process.returncode == -9, process.stderr.decode()
    assert _snapshot(folder) == before
    assert load_checkpoint(folder).config == TINY
    leftovers = _work_folders(tmp_path)
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.partial-")

    save_checkpoint(Transformer.from_seed(TINY_LLAMA), folder)
    assert _work_folders(tmp_path) == []
    assert load_checkpoint(folder).config == TINY_LLAMA


def test_the_weights_are_in_the_folder_only_once_renamed(tmp_path, monkeypatch):
    """While the files are written, the destination does not exist yet: nothing half-written is visible."""
    seen = []
    real = checkpoints._put_in_place

    def spy(work, folder):
        seen.append((folder.exists(), sorted(os.listdir(work))))
        real(work, folder)

    monkeypatch.setattr(checkpoints, "_put_in_place", spy)
    save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt", metadata={"a": 1})
    assert seen == [(False, sorted([CONFIG_FILE, MANIFEST_FILE, METADATA_FILE, MODEL_FILE]))]
    assert json.loads((tmp_path / "ckpt" / MANIFEST_FILE).read_text())["files"] == sorted(
        [CONFIG_FILE, METADATA_FILE, MODEL_FILE]
    )
    assert torch.equal(load_checkpoint(tmp_path / "ckpt").model.tok_emb.weight, Transformer.from_seed(TINY).tok_emb.weight)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_weights_load_as_float32(tmp_path, dtype):
    from safetensors.torch import save_file

    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt")
    # Copies: safetensors before 0.8 maps the file, and save_file below rewrites it in place.
    tensors = {name: t.clone() for name, t in checkpoints.read_safetensors(folder / MODEL_FILE).items()}
    save_file({name: t.to(dtype) for name, t in tensors.items()}, str(folder / MODEL_FILE))
    loaded = load_checkpoint(folder)
    expected = tensors["tok_emb.weight"].to(dtype).to(torch.float32)
    assert loaded.model.tok_emb.weight.dtype == torch.float32
    assert torch.equal(loaded.model.tok_emb.weight, expected)


def test_a_dtype_that_cannot_become_float32_is_one_sentence(monkeypatch):
    class Stubborn(torch.Tensor):
        def to(self, *args, **kwargs):
            raise NotImplementedError("no conversion")

    model = Transformer.from_seed(TINY)
    tensors = checkpoints.weights_to_store(model)
    tensors["tok_emb.weight"] = tensors["tok_emb.weight"].as_subclass(Stubborn)
    with pytest.raises(CheckpointError, match=r"tensor tok_emb.weight holds float32 values, which this app cannot convert"):
        checkpoints.model_from_tensors(TINY, tensors, "x")


def test_an_integer_of_thousands_of_digits_in_config_json_is_one_sentence(tmp_path):
    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt")
    header = (folder / CONFIG_FILE).read_text().replace('"format_version": 1', '"format_version": ' + "9" * 5000)
    (folder / CONFIG_FILE).write_text(header)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(folder)
    assert str(caught.value).startswith(f"{folder / CONFIG_FILE} cannot be the model config: ")
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_a_damaged_safetensors_header_is_one_sentence(tmp_path):
    folder = save_checkpoint(Transformer.from_seed(TINY), tmp_path / "ckpt")
    data = bytearray((folder / MODEL_FILE).read_bytes())
    data[8:12] = b"{{{{"  # the JSON header right after its 8-byte length
    (folder / MODEL_FILE).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="is not a readable safetensors file: ") as caught:
        load_checkpoint(folder)
    assert "\n" not in str(caught.value)
