"""Faults in the running window: a job that raises, a panel whose display raises, an out-of-memory error,
a model too large for real weights, and a session save interrupted half-way. Each gives a message, the
app keeps working, and the next request works."""

from __future__ import annotations

import errno
import sys

import pytest
import torch

import core.model
import core.whole_file as whole_file_module
from core.presets import get_preset
from gui.panels.shapes import ShapesPanel, ShapesView
from gui.session import read_session


@pytest.fixture
def uncaught(monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: seen.append(f"{kind.__name__}: {value}"))
    return seen


def shapes(window) -> ShapesPanel:
    return window.panel(ShapesPanel.title)


def wait_idle(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=30_000)


def test_a_job_that_raises_mid_computation_shows_a_message_and_the_next_request_works(qtbot, window, monkeypatch, uncaught):
    panel = shapes(window)
    real = ShapesView.compute_fn
    calls = []

    def half_then_boom(inputs, token):
        calls.append(inputs.seq)
        real(inputs, token)  # the work is done, then the job fails before returning
        raise RuntimeError("the trace lost a tensor half-way")

    monkeypatch.setattr(ShapesView, "compute_fn", staticmethod(half_then_boom))
    with qtbot.waitSignal(panel.error_shown, timeout=30_000) as shown:
        panel.seq_spin.setValue(48)
    assert shown.args[0] == "RuntimeError: the trace lost a tensor half-way"
    assert panel.shapes.showing_message and "half-way" in panel.shapes.message.text()
    wait_idle(qtbot, window)
    assert "half-way" in window.statusBar().currentMessage()
    assert calls

    monkeypatch.setattr(ShapesView, "compute_fn", staticmethod(real))
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.seq_spin.setValue(32)
    assert panel.shapes.last_error == "" and not panel.shapes.showing_message
    assert panel.trace.row("attention weights").shape[-1] == 32
    assert uncaught == []  # a job's failure is a message, not an uncaught error


def test_a_display_bug_is_reported_and_the_worker_keeps_delivering(qtbot, window, monkeypatch, uncaught):
    panel = shapes(window)
    real_show = ShapesView.show_result

    def broken_show(self, result):
        raise IndexError("the table had no row 99")

    monkeypatch.setattr(ShapesView, "show_result", broken_show)
    with qtbot.waitSignal(window.compute.error, timeout=30_000) as reported:
        panel.seq_spin.setValue(40)
    assert "IndexError: the table had no row 99" in reported.args[0]
    qtbot.waitUntil(lambda: bool(uncaught), timeout=5000)
    assert uncaught == ["IndexError: the table had no row 99"]  # logged and shown by the app's error reporter
    monkeypatch.setattr(ShapesView, "show_result", real_show)
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.seq_spin.setValue(24)
    assert panel.trace.row("attention weights").shape[-1] == 24


def test_out_of_memory_in_a_panel_job_is_a_message_and_the_app_recovers(qtbot, window, monkeypatch, uncaught):
    # The GUI does not route panel jobs through core.device.run_with_cpu_fallback yet (see
    # tests/core/test_faults.py), so an accelerator OOM arrives as a message rather than a CPU result.
    panel = shapes(window)
    real = ShapesView.compute_fn
    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError

    def out_of_memory(inputs, token):
        raise oom("CUDA out of memory. Tried to allocate 40.00 GiB")

    monkeypatch.setattr(ShapesView, "compute_fn", staticmethod(out_of_memory))
    with qtbot.waitSignal(panel.error_shown, timeout=30_000) as shown:
        panel.seq_spin.setValue(56)
    assert "out of memory" in shown.args[0]
    monkeypatch.setattr(ShapesView, "compute_fn", staticmethod(real))
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.seq_spin.setValue(20)
    assert uncaught == []


def test_a_model_too_large_for_real_weights_is_refused_without_allocating(qtbot, window, monkeypatch, uncaught):
    built = []
    real_from_seed = core.model.Transformer.from_seed.__func__

    def tracking_from_seed(cls, config, *args, **kwargs):
        built.append(config.name)
        return real_from_seed(cls, config, *args, **kwargs)

    monkeypatch.setattr(core.model.Transformer, "from_seed", classmethod(tracking_from_seed))
    model, loaded = window.state.model, window.loaded
    combo = window.sidebar.preset_combo
    combo.setCurrentIndex(combo.findText("mixtral-8x7b"))
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: any(box.isVisible() for box in window.message_boxes), timeout=30_000)
    box = next(box for box in window.message_boxes if box.isVisible())
    assert box.text().startswith("mixtral-8x7b cannot be built: ") and "the lab builds real weights up to" in box.text()
    # The loaded model stays, and the sidebar and every panel show its config again.
    qtbot.waitUntil(lambda: window.state.config == loaded.config, timeout=30_000)
    assert window.state.model is model and window.loaded is loaded
    assert combo.currentText() == loaded.config.name and loaded.config.name in window.model_label.text()
    assert "mixtral-8x7b" not in built
    wait_idle(qtbot, window)
    assert window.state.model is model
    box.close()
    view = shapes(window).shapes
    qtbot.waitUntil(lambda: view.result is not None and not view.is_stale
                    and view.result.trace.config == loaded.config, timeout=60_000)

    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        combo.setCurrentIndex(combo.findText("tiny-llama"))
        combo.activated.emit(combo.currentIndex())
    assert window.state.model is not None and window.loaded.config == get_preset("tiny-llama")
    assert "building" not in window.model_label.text() and "tiny-llama" in window.model_label.text()
    assert uncaught == []


def test_a_save_interrupted_half_way_keeps_the_old_session(qtbot, window, tmp_path, monkeypatch):
    path = tmp_path / "lab.json"
    window.state.set_seed(7)
    assert window.save_session(path)
    before = path.read_bytes()
    window.state.set_seed(8)

    real_open = open

    def half_write_open(file, *args, **kwargs):
        stream = real_open(file, *args, **kwargs)
        real_write = stream.write

        def write(text):
            real_write(text[: len(text) // 2])
            stream.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

        stream.write = write
        return stream

    monkeypatch.setattr(whole_file_module, "open", half_write_open, raising=False)
    assert window.save_session(path) is False
    assert "No space left on device" in window.message_boxes[-1].text()
    assert path.read_bytes() == before and read_session(path).seed == 7
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]
    monkeypatch.delattr(whole_file_module, "open")
    assert window.save_session(path)
    assert read_session(path).seed == 8


def test_restoring_positions_beyond_the_shown_range(qtbot, compute):
    from gui.panels.positions import PositionsPanel
    from gui.state import LabState

    state = LabState()
    panel = PositionsPanel(state, compute)
    qtbot.addWidget(panel)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        state.set_torch_ready(True)
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.positions_spin.setValue(16)
    panel.restore_settings({"positions": 128, "m": 27, "n": 3})  # a session saved with P = 128
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        pass
    assert (panel.m, panel.n) == (27, 3)
