"""Faults in the core: an accelerator out of memory falls back to the CPU and says so; a run larger than
the memory estimate allows is refused before anything is allocated; a session save interrupted half-way
leaves the old complete file (or none), never half a file.
"""

from __future__ import annotations

import errno
import json

import pytest
import torch

import core.model
import core.whole_file as whole_file_module
from core.cli import main as cli_main
from core.device import MemoryBudgetError, check_fits, estimate_memory, is_out_of_memory, run_with_cpu_fallback
from core.presets import get_preset
from gui.session import Session, SessionError, read_session, write_session

# ---- out of memory on an accelerator ------------------------------------------------------------


def _oom() -> BaseException:
    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return oom("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_out_of_memory_on_a_fake_accelerator_falls_back_to_the_cpu():
    devices = []

    def forward(device: torch.device) -> torch.Tensor:
        devices.append(device.type)
        if device.type != "cpu":
            raise _oom()
        return torch.ones(2, device=device) * 3  # (2,)

    result, message = run_with_cpu_fallback(forward, torch.device("cuda"))
    assert devices == ["cuda", "cpu"]
    assert result.device.type == "cpu" and result.tolist() == [3.0, 3.0]
    assert message is not None and "ran out of memory" in message and "CPU" in message


def test_an_old_style_runtime_oom_message_also_falls_back():
    def forward(device):
        if device.type == "mps":
            raise RuntimeError("MPS backend out of memory (MPS allocated: 9 GB)")
        return device.type

    assert run_with_cpu_fallback(forward, torch.device("mps")) == ("cpu", "mps ran out of memory; this result was computed on the CPU")


def test_other_errors_and_cpu_ooms_are_not_hidden():
    def broken(device):
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        run_with_cpu_fallback(broken, torch.device("cuda"))

    def cpu_oom(device):
        raise _oom()

    with pytest.raises(type(_oom())):
        run_with_cpu_fallback(cpu_oom, torch.device("cpu"))  # nothing to fall back to


def test_is_out_of_memory():
    assert is_out_of_memory(_oom())
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    assert not is_out_of_memory(MemoryError())


def test_a_model_that_runs_out_of_accelerator_memory_is_built_on_the_cpu(monkeypatch):
    """The lab's model loader: a CUDA out-of-memory while placing the model falls back to the CPU and says so."""
    from core.device import DeviceChoice
    from core.model import Transformer
    from core.presets import get_preset
    from gui import model_loader

    real_from_seed = Transformer.from_seed.__func__

    def from_seed(cls, config, seed=0, device="cpu", **kwargs):
        if torch.device(device).type != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
        return real_from_seed(cls, config, seed=seed, device=device, **kwargs)

    monkeypatch.setattr(Transformer, "from_seed", classmethod(from_seed))
    monkeypatch.setattr("core.device.choose_device", lambda requested=None: DeviceChoice(torch.device("cuda")))
    monkeypatch.setattr("core.device.check_fits", lambda estimate, device, headroom=0.8: None)
    monkeypatch.setenv("TRANSFORMER_EXPLORER_NO_BUNDLED", "1")
    loaded = model_loader.load_model(get_preset("tiny-gpt"), seed=0, device="cuda")
    assert loaded.device == "cpu"
    assert "cuda ran out of memory; this result was computed on the CPU" in loaded.message
    assert next(loaded.model.parameters()).device.type == "cpu"


# ---- memory estimates refuse before allocating --------------------------------------------------


@pytest.fixture
def no_allocation(monkeypatch):
    """Fail the test if a real model is built."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built although the estimate should have refused the run")

    monkeypatch.setattr(core.model.Transformer, "from_seed", classmethod(lambda cls, *a, **k: refuse()))
    monkeypatch.setattr(core.model.Transformer, "__init__", lambda self, *a, **k: refuse())


def test_check_fits_refuses_with_the_estimate(monkeypatch):
    estimate = estimate_memory(get_preset("mixtral-8x7b"), batch=2, seq=4096)
    monkeypatch.setattr("core.device.available_memory", lambda device: 16 << 30)
    with pytest.raises(MemoryBudgetError) as caught:
        check_fits(estimate, torch.device("cpu"))
    message = str(caught.value)
    assert "weights" in message and "activations" in message and "attention maps" in message
    assert "GB" in message or "GiB" in message
    assert caught.value.estimate == estimate and caught.value.available == 16 << 30


def test_causal_cli_on_a_huge_preset_is_refused_before_allocating(no_allocation, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("core.device.available_memory", lambda device: 8 << 30)
    code = cli_main(["causal", "--preset", "mixtral-8x7b", "--text", "abc", "--edit", "1=x"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "needs about" in err and "weights" in err and "free" in err


def test_gui_model_loader_refuses_a_model_too_large_for_real_weights(no_allocation):
    from gui.model_loader import MAX_INTERACTIVE_PARAMETERS, ModelTooLargeError, load_model

    with pytest.raises(ModelTooLargeError) as caught:
        load_model(get_preset("mixtral-8x7b"), seed=0, device="cpu")
    message = str(caught.value)
    assert "mixtral-8x7b" in message and f"{MAX_INTERACTIVE_PARAMETERS:,}" in message and "parameters" in message


# ---- an interrupted session save ----------------------------------------------------------------


def _session(seed: int) -> Session:
    return Session(config=get_preset("tiny-gpt"), seed=seed, text="To be" * 200, panels={"Norms": {"depth": seed}})


def _interrupt_writes_after(monkeypatch, chars: int, error: BaseException) -> None:
    """Make the next whole-file write put `chars` characters on disk and then fail."""
    real_open = open

    def opened(file, *args, **kwargs):
        stream = real_open(file, *args, **kwargs)
        real_write = stream.write

        def write(text):
            real_write(text[:chars])
            stream.flush()
            raise error

        stream.write = write
        return stream

    monkeypatch.setattr(whole_file_module, "open", opened, raising=False)


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "interrupted"])
def test_an_interrupted_save_keeps_the_old_file(tmp_path, monkeypatch, error):
    path = tmp_path / "lab.json"
    write_session(path, _session(1))
    before = path.read_bytes()
    _interrupt_writes_after(monkeypatch, 100, error)
    with pytest.raises((SessionError, KeyboardInterrupt)) as caught:
        write_session(path, _session(2))
    if isinstance(error, OSError):
        assert "No space left" in str(caught.value)
    assert path.read_bytes() == before  # the old complete file, untouched
    assert read_session(path).seed == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.json"]  # no half-written temporary left


def test_an_interrupted_first_save_leaves_no_file(tmp_path, monkeypatch):
    path = tmp_path / "new.json"
    _interrupt_writes_after(monkeypatch, 10, OSError(errno.EIO, "Input/output error"))
    with pytest.raises(SessionError):
        write_session(path, _session(3))
    assert list(tmp_path.iterdir()) == []


def test_a_failing_replace_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "lab.json"
    write_session(path, _session(1))

    def broken_replace(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(whole_file_module.os, "replace", broken_replace)
    with pytest.raises(SessionError):
        write_session(path, _session(2))
    assert read_session(path).seed == 1
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]


def test_unserialisable_panel_settings_are_a_session_error(tmp_path):
    path = tmp_path / "lab.json"
    write_session(path, _session(1))
    bad = Session(config=get_preset("tiny-gpt"), panels={"Broken": {"value": object()}})
    with pytest.raises(SessionError, match="Broken|JSON"):
        write_session(path, bad)
    assert json.loads(path.read_text(encoding="utf-8"))["seed"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]
