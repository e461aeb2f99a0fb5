"""`download` and `models` against a Hub served on 127.0.0.1 (tests/hub_server.py), through huggingface_hub's real download path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.hub_download import DownloadCancelled, download_model
from core.tokenizers import load_pretrained_tokenizer
from tests.cli.helpers import run
from tests.hf_folders import gpt2_folder
from tests.hub_server import closed_port, repo_from_folder, start_hub, stop_hub

pytest.importorskip("transformers")  # the served model is written by transformers

REPO = "lab/tiny-gpt2"
SMALL_CHUNK = 16 * 1024  # huggingface_hub writes 10 MB chunks; the test model is 0.2 MB


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return gpt2_folder(tmp_path_factory.mktemp("served") / "tiny-gpt2")


@pytest.fixture
def hub(model_folder, tmp_path, monkeypatch):
    server = start_hub([repo_from_folder(REPO, model_folder)])
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    yield server
    stop_hub(server)


def _snapshot_files(folder):
    return sorted(path.name for path in folder.iterdir())


def test_download_fetches_only_what_the_app_reads(capsys, hub, model_folder, tmp_path):
    code, out, err = run(capsys, "download", REPO)
    assert code == 0, err
    folder = tmp_path / "cache" / "models--lab--tiny-gpt2" / "snapshots"
    (snapshot,) = list(folder.iterdir())
    assert str(snapshot) in out
    assert _snapshot_files(snapshot) == sorted(path.name for path in model_folder.iterdir())
    assert "pytorch_model.bin" not in _snapshot_files(snapshot) and not (snapshot / "onnx").exists()
    assert (snapshot / "model.safetensors").read_bytes() == (model_folder / "model.safetensors").read_bytes()
    code, out, _ = run(capsys, "models", "--json")
    listed = {entry["name"]: entry for entry in json.loads(out)["models"]}
    assert listed[REPO]["where"] == "cache" and listed[REPO]["path"] == str(snapshot)
    assert listed[REPO]["problem"] is None
    code, _, err = run(capsys, "logits", "--checkpoint", str(snapshot), "--text", "To be", "--out", str(tmp_path / "l.npy"))
    assert code == 0, err
    tokens = load_pretrained_tokenizer(snapshot).encode("To be")
    assert np.load(tmp_path / "l.npy").shape[0] == len(tokens)


def test_an_interrupted_transfer_resumes_with_a_range_request(capsys, hub, model_folder, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", SMALL_CHUNK)
    hub.cut_once.add("model.safetensors")  # the first GET drops the connection half-way
    result = download_model(REPO)
    ranges = hub.gets_of("model.safetensors")
    assert ranges[0] is None and len(ranges) == 2
    assert ranges[1].startswith("bytes=") and int(ranges[1][len("bytes=") : -1]) > 0  # resumed, not restarted
    assert (result.folder / "model.safetensors").read_bytes() == (model_folder / "model.safetensors").read_bytes()


def test_a_cancelled_download_leaves_no_partial_file_and_keeps_finished_ones(hub, model_folder, tmp_path, monkeypatch):
    """Cancel stops the weights mid-transfer; the next download fetches only the files not yet complete.

    (huggingface_hub resumes a broken connection within a download, as the test above shows, but
    drops the partial file of a cancelled one: that file starts over.)
    """
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", SMALL_CHUNK)
    weights = (model_folder / "model.safetensors").stat().st_size
    seen = []

    def cancel_half_way() -> bool:
        return bool(seen) and seen[-1][0] > weights // 2

    with pytest.raises(DownloadCancelled, match="not fetched again"):
        download_model(REPO, on_progress=lambda done, total: seen.append((done, total)), cancelled=cancel_half_way)
    assert seen and seen[-1][0] < weights + 10_000  # stopped during the weights, not after them
    leftovers = [path.name for path in (tmp_path / "cache").rglob("*") if path.name.endswith(".incomplete")]
    assert leftovers == []
    result = download_model(REPO)
    assert len(hub.gets_of("model.safetensors")) == 2
    assert len(hub.gets_of("config.json")) == 1  # finished before the cancel: not fetched again
    assert (result.folder / "model.safetensors").read_bytes() == (model_folder / "model.safetensors").read_bytes()


def test_without_a_network_download_fails_at_once_in_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    code, out, err = run(capsys, "download", "gpt2")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "cannot reach http://127.0.0.1:" in err and "openai-community/gpt2" in err
    code, out, _ = run(capsys, "models")  # everything else keeps working
    assert code == 0 and "tiny-gpt" in out


def test_a_downloaded_model_needs_no_network_afterwards(capsys, hub, tmp_path, monkeypatch):
    assert run(capsys, "download", REPO)[0] == 0
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    code, out, err = run(capsys, "download", REPO)  # the cache answers
    assert code == 0, err
    assert "models--lab--tiny-gpt2" in out


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gpt5", "not in the catalogue"),
        ("../../etc", "not a Hub model id"),
        ("lab/missing", "no model 'lab/missing'"),
    ],
)
def test_bad_names_get_one_line(capsys, hub, name, message):
    code, _, err = run(capsys, "download", name)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_cancels_a_download_cleanly(hub, tmp_path):
    """SIGINT during a transfer: one line, exit 130, no traceback; a second download completes the model."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    hub.slow.add("model.safetensors")
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, str(root / "main.py"), "download", REPO], cwd=root, env=dict(os.environ),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while not hub.gets_of("model.safetensors"):  # wait for the transfer to begin, not for a fixed time
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "cancelled" in err and "Traceback" not in err
    assert not (tmp_path / "cache" / "models--lab--tiny-gpt2" / "snapshots" / "0123456789abcdef0123456789abcdef01234567" / "model.safetensors").exists()
    hub.slow.clear()
    result = download_model(REPO)
    assert (result.folder / "model.safetensors").is_file()
