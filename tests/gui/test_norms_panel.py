"""The Norms panel: curves equal core's norm_curves, the caption is computed, depth changes supersede."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gui.panels.norms import D_MODEL, MAX_DEPTH, NormsPanel
from gui.state import LabState
from gui.widgets.export import export


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    widget = NormsPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 700)
    widget.show()
    return widget


def start(qtbot, panel: NormsPanel, depth: int) -> None:
    with qtbot.waitSignal(panel.result_shown, timeout=90_000):
        panel.depth_spin.setValue(depth)
        panel.state.set_torch_ready(True)


def test_the_depth_limit_matches_the_experiment():
    from core.experiments import norms

    assert MAX_DEPTH == norms.MAX_DEPTH


def test_twelve_blocks_plot_exactly_what_norm_curves_measures(qtbot, panel, tmp_path):
    from core.experiments.norms import norm_curves

    start(qtbot, panel, 12)
    for placement in ("pre", "post"):
        expected = norm_curves(12, placement, "layernorm", seed=0, d_model=D_MODEL)
        x, y = panel.forward_curves[placement].getData()
        np.testing.assert_array_equal(x, np.arange(13))
        np.testing.assert_allclose(y, expected.forward_norms, rtol=1e-6)
        _, gradient = panel.gradient_curves[placement].getData()
        np.testing.assert_allclose(gradient, expected.gradient_norms, rtol=1e-6)

    caption = panel.caption.text()
    pre = panel.comparison["pre"].forward_norms
    assert f"×{pre[-1] / pre[0]:.2f} over 12 blocks" in caption
    assert "pre-norm grows" in caption and "post-norm stays at √d = 8.00" in caption
    assert "Gradient, last block → embeddings:" in caption

    readout = panel.show_layer_values(3)
    assert readout.startswith("layer 3:")
    assert f"pre-norm {pre[3]:.4g}," in readout
    assert panel.crosshairs[0].value() == 3 and panel.hover_labels[1].isVisible()

    panel.log_check.setChecked(True)
    assert panel.forward_plot.getPlotItem().ctrl.logYCheck.isChecked()
    assert panel.root_d_line.value() == pytest.approx(math.log10(math.sqrt(D_MODEL)))

    path = export(panel.forward_plot.getPlotItem(), tmp_path / "norms.svg", 800, 500)
    assert "<path" in path.read_text() or "<polyline" in path.read_text()


def test_rapid_depth_changes_show_only_the_newest(qtbot, panel):
    start(qtbot, panel, 1)
    for depth in (6, 5, 4, 3):  # each a separate event-loop turn: separate requests
        panel.depth_slider.setValue(depth)
        qtbot.wait(5)
    panel.depth_slider.setValue(2)
    assert panel.depth_spin.value() == 2
    qtbot.waitUntil(lambda: panel.comparison is not None and panel.comparison["pre"].depth == 2, timeout=90_000)
    qtbot.waitUntil(lambda: not panel.compute.busy, timeout=90_000)
    assert panel.comparison["pre"].depth == 2  # nothing older arrived after the newest
    assert panel.forward_curves["post"].getData()[1].shape == (3,)


def test_settings_round_trip_and_ignore_junk(qtbot, panel):
    panel.restore_settings({"depth": 7, "norm": "rmsnorm", "residual_scaling": True, "log_scale": True})
    assert panel.settings() == {"depth": 7, "norm": "rmsnorm", "residual_scaling": True, "log_scale": True}
    panel.restore_settings({"depth": 500, "norm": "batchnorm", "residual_scaling": "yes", "log_scale": None, "other": 1})
    assert panel.settings() == {"depth": 7, "norm": "rmsnorm", "residual_scaling": True, "log_scale": True}
    assert panel.depth_slider.value() == 7
    assert [label for label, _ in panel.export_targets()][1:] == ["Residual stream norm (plot)", "Gradient norm (plot)"]


def test_rmsnorm_with_residual_scaling_is_what_core_measures(qtbot, panel):
    from core.experiments.norms import norm_curves

    panel.norm_combo.setCurrentIndex(panel.norm_combo.findData("rmsnorm"))
    panel.scaling_check.setChecked(True)
    start(qtbot, panel, 3)
    expected = norm_curves(3, "pre", "rmsnorm", seed=0, d_model=D_MODEL, residual_scaling=True)
    np.testing.assert_allclose(panel.forward_curves["pre"].getData()[1], expected.forward_norms, rtol=1e-6)
    assert "rmsnorm, residual scaling" in panel.caption.text()


def test_a_failed_run_shows_a_message_not_a_traceback(qtbot, panel, monkeypatch):
    import gui.panels.norms as norms_module

    def broken(*args):
        raise RuntimeError("out of memory\nTraceback (most recent call last): ...")

    monkeypatch.setattr(norms_module, "_compare", broken)
    with qtbot.waitSignal(panel.error_shown, timeout=30_000) as blocker:
        panel.state.set_torch_ready(True)
    assert blocker.args == ["RuntimeError: out of memory"]
    assert panel.message_label.isVisibleTo(panel) and "Traceback" not in panel.message_label.text()
