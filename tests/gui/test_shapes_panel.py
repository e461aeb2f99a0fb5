"""The Tensor shapes view: every input marks the trace stale at once, the new trace matches the inputs,
an impossible what-if is refused, and a hidden panel traces nothing until it is shown."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from core.presets import get_preset
from gui.panels.shapes import ShapesPanel
from gui.state import LabState

RESULT_TIMEOUT_MS = 30_000


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    widget = ShapesPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    qtbot.waitExposed(widget)
    with qtbot.waitSignal(widget.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_torch_ready(True)
    yield widget
    qtbot.waitUntil(lambda: not compute.busy, timeout=RESULT_TIMEOUT_MS)


def shapes_of(panel: ShapesPanel) -> dict[str, tuple]:
    return {row.name: tuple(row.shape) for row in panel.trace.rows}


def assert_nothing_old_readable(panel: ShapesPanel) -> None:
    view = panel.shapes
    assert view.is_stale or view.showing_message
    assert panel.summary.text() == ""


@pytest.mark.parametrize("spin, value, row, expected", [
    ("batch_spin", 3, "token ids", (3, 128)),
    ("seq_spin", 40, "attention weights", (1, 4, 40, 40)),
    ("d_model_spin", 64, "FFN hidden", (1, 128, 256)),
    ("heads_spin", 8, "Q per head", (1, 8, 128, 16)),
])
def test_each_control_marks_the_trace_stale_then_shows_its_own(qtbot, panel, spin, value, row, expected):
    view = panel.shapes
    before = view.computations
    assert panel.summary.text() and not view.is_stale
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        getattr(panel, spin).setValue(value)
        assert_nothing_old_readable(panel)
    assert view.computations == before + 1
    assert shapes_of(panel)[row] == expected
    assert not view.is_stale and not view.is_dimmed
    trace = panel.trace
    assert f"B={trace.batch}, T={trace.seq}, d_model={trace.config.d_model}, h={trace.config.n_heads}" in panel.summary.text()
    assert panel.state.config == get_preset("tiny-gpt")  # a what-if leaves the model alone


def test_a_new_config_marks_the_trace_stale_and_brings_its_own_width(qtbot, panel):
    view = panel.shapes
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.state.set_config(get_preset("tiny-llama"))
        assert_nothing_old_readable(panel)
        assert (panel.d_model_spin.value(), panel.heads_spin.value()) == (128, 4)
    assert panel.trace.config == get_preset("tiny-llama")
    assert "tiny-llama" in panel.summary.text()


def test_impossible_inputs_are_refused_before_any_old_number_can_be_read(qtbot, panel):
    view = panel.shapes
    with qtbot.waitSignal(panel.error_shown, timeout=5000) as refused:
        panel.heads_spin.setValue(5)
        assert_nothing_old_readable(panel)
    assert "divisible" in refused.args[0] and view.showing_message and "divisible" in view.message.text()
    assert panel.trace is None
    with qtbot.waitSignal(panel.error_shown, timeout=5000) as refused:
        panel.controls.set_values({"heads": 4, "seq": 4096})
    assert refused.args[0].startswith("T = 4096 exceeds the context length of 256")
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.seq_spin.setValue(256)
    assert not view.showing_message and shapes_of(panel)["token ids"] == (1, 256)


def test_a_hidden_panel_traces_nothing_until_it_is_shown(qtbot, panel):
    view = panel.shapes
    before = view.computations
    panel.hide()
    panel.batch_spin.setValue(5)
    panel.state.set_config(get_preset("tiny-moe"))
    QApplication.processEvents()  # the update each edit queued has run
    assert view.is_stale and panel.summary.text() == ""
    assert view.computations == before and not panel.compute.busy_with(view.channel)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.show()
    assert view.computations == before + 1
    assert panel.trace.config == get_preset("tiny-moe") and panel.trace.batch == 5


def test_batch_and_length_reuse_the_meta_model(qtbot, panel):
    view = panel.shapes
    model = view.meta_models.model
    assert model is not None
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.seq_spin.setValue(64)
    assert view.meta_models.model is model
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.d_model_spin.setValue(64)
    assert view.meta_models.model is not model


def test_settings_round_trip_and_ignore_junk(qtbot, panel):
    view = panel.shapes
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({"batch": 2, "seq": 8, "d_model": 64, "heads": 4, "other": 1})
    assert panel.settings() == {"batch": 2, "seq": 8, "d_model": 64, "heads": 4, "source_seq": 128}
    assert shapes_of(panel)["Q per head"] == (2, 4, 8, 16)
    computations = view.computations
    panel.restore_settings({"batch": "two", "seq": True})
    panel.restore_settings(None)
    assert panel.settings() == {"batch": 2, "seq": 8, "d_model": 64, "heads": 4, "source_seq": 128}
    assert view.computations == computations
    labels = [label for label, _ in panel.export_targets()]
    assert labels == ["Tensor shapes", "Memory per tensor (plot)", "Growth with T (plot)", "Shape table"]


def test_a_new_config_fits_each_plot_title_at_most_once_per_event_loop_pass(qtbot, panel):
    """A new trace sets each plot's title, axes and size several times; each plot fits its title once for them."""
    import pyqtgraph as pg

    titles = [plot._wrapping_title for plot in panel.findChildren(pg.PlotWidget) if hasattr(plot, "_wrapping_title")]
    assert titles
    qtbot.waitUntil(lambda: not any(title._refit_pending for title in titles))
    fits = [title.fits for title in titles]
    deliveries = []
    panel.shapes.result_shown.connect(lambda: deliveries.append([title.fits for title in titles]))
    with qtbot.waitSignal(panel.shapes.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.state.set_config(get_preset("tiny-llama"))
    assert [after - was for after, was in zip(deliveries[0], fits)] == [0] * len(titles)  # all of it still pending
    qtbot.waitUntil(lambda: not any(title._refit_pending for title in titles))
    assert all(title.fits - was <= 1 for title, was in zip(titles, fits))
