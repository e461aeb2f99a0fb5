"""The Norms panel: curves equal core's norm_curves, the caption is computed, each input marks the view stale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gui.panels.norms import BATCH, D_MODEL, MAX_DEPTH, SEQ, NormsInputs, NormsPanel, NormsView
from gui.state import LabState
from gui.widgets.export import export

RESULT_TIMEOUT_MS = 90_000


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    widget = NormsPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 700)
    widget.show()
    return widget


def start(qtbot, panel: NormsPanel, depth: int) -> None:
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.depth_spin.setValue(depth)
        panel.state.set_torch_ready(True)


def wait_result(qtbot, view: NormsView) -> None:
    qtbot.waitUntil(lambda: view.shown_inputs is not None and not view.is_stale, timeout=RESULT_TIMEOUT_MS)


def assert_nothing_old_readable(view: NormsView) -> None:
    assert view.is_stale or view.showing_message
    assert view.caption.text() == "" and view.parameter_caption.text() == ""
    assert view.hover_text == "" and not any(line.isVisible() for line in view.crosshairs)
    assert view.show_layer_values(2) == ""  # a hover while stale prints nothing (and is read out later)


def test_the_depth_limit_matches_the_experiment():
    from core.experiments import norms

    assert MAX_DEPTH == norms.MAX_DEPTH
    from gui.panels import norms as panel_norms

    assert panel_norms.MAX_WIDTH == norms.MAX_WIDTH and panel_norms.MAX_STACK_WEIGHTS == norms.MAX_STACK_WEIGHTS
    assert (panel_norms.PAPER_WIDTH, panel_norms.PAPER_HEADS, panel_norms.PAPER_DEPTH) == (
        norms.PAPER_WIDTH, norms.PAPER_HEADS, norms.PAPER_DEPTH)
    assert [value for _, value in panel_norms.INIT_CHOICES] == list(norms.INITS)


def test_twelve_blocks_plot_exactly_what_norm_curves_measures(qtbot, panel, tmp_path):
    from core.experiments.norms import norm_curves

    start(qtbot, panel, 12)
    view = panel.view
    assert view.shown_inputs == NormsInputs(12, "layernorm", 0, False, "gpt2", D_MODEL, 4)
    for placement in ("pre", "post"):
        expected = norm_curves(12, placement, "layernorm", seed=0, d_model=D_MODEL, seq=SEQ, batch=BATCH)
        x, y = view.forward_curves[placement].getData()
        np.testing.assert_array_equal(x, np.arange(13))
        np.testing.assert_allclose(y, expected.forward_norms, rtol=1e-6)
        _, gradient = view.gradient_curves[placement].getData()
        np.testing.assert_allclose(gradient, expected.gradient_norms, rtol=1e-6)
        blocks, weights = view.parameter_curves[placement].getData()
        np.testing.assert_array_equal(blocks, np.arange(1, 13))  # block l under "after block l"
        np.testing.assert_allclose(weights, expected.ffn_out_gradient_norms, rtol=1e-6)

    caption = panel.caption.text()
    pre = view.result.pre.forward_norms
    assert f"×{pre[-1] / pre[0]:.2f} over 12 blocks" in caption
    assert "pre-norm grows" in caption and "post-norm stays at √d = 8.00" in caption
    assert "Stream gradient, last block → embeddings:" in caption
    # Post-norm's stream-gradient ratio is told as its two measured parts: level blocks, one step into the embeddings.
    post_gradient, post_forward = view.result.post.gradient_norms, view.result.post.forward_norms
    within, step = post_gradient[1] / post_gradient[-1], post_gradient[0] / post_gradient[1]
    assert f"post-norm's is ×{within:.2f} from block 12 down to block 1, then ×{step:.0f} in the one step" in caption
    assert f"whose length {post_forward[0]:.2f} the first LayerNorm stretched to {post_forward[1]:.2f}" in caption
    weights = {p: getattr(view.result, p).parameter_gradient_norms for p in ("pre", "post")}
    pre_w, post_w = weights["pre"], weights["post"]
    assert panel.parameter_caption.text().splitlines()[0] == (
        f"Weight gradient ‖∂L/∂W‖ over all its matrices, block 12 against block 1: pre-norm ×{pre_w[-1] / pre_w[0]:.2f} "
        f"({pre_w[0]:.3g} → {pre_w[-1]:.3g}); post-norm ×{post_w[-1] / post_w[0]:.2f} "
        f"({post_w[0]:.3g} → {post_w[-1]:.3g}). Largest ÷ smallest block: "
        f"pre-norm ×{pre_w.max() / pre_w.min():.2f}, post-norm ×{post_w.max() / post_w.min():.2f}.")

    ffn_out = {p: getattr(view.result, p).ffn_out_gradient_norms for p in ("pre", "post")}
    readout = view.show_layer_values(3)
    assert readout.startswith("layer 3:")
    assert f"pre-norm {pre[3]:.4g}," in readout
    assert readout.splitlines()[2] == f"block 3:  pre-norm {ffn_out['pre'][2]:.4g},  post-norm {ffn_out['post'][2]:.4g}"
    assert view.crosshairs[0].value() == 3 and view.hover_labels[1].isVisible() and view.hover_labels[2].isVisible()
    assert view.hover_text == readout
    assert len(view.show_layer_values(0).splitlines()) == 2  # the embeddings have no block weights
    assert not view.hover_labels[2].isVisible() and not view.crosshairs[2].isVisible()

    panel.log_check.setChecked(True)  # a way of drawing: no recomputation, nothing goes stale
    assert not view.is_stale and view.computations == 1
    assert panel.forward_plot.getPlotItem().ctrl.logYCheck.isChecked()
    assert view.root_d_line.value() == pytest.approx(math.log10(math.sqrt(D_MODEL)))

    path = export(panel.forward_plot.getPlotItem(), tmp_path / "norms.svg", 800, 500)
    assert "<path" in path.read_text() or "<polyline" in path.read_text()


def test_each_input_marks_the_view_stale_at_once_and_the_hover_follows_the_new_result(qtbot, panel):
    start(qtbot, panel, 4)
    view = panel.view
    state = panel.state
    changes = {
        "depth spin": lambda: panel.depth_spin.setValue(panel.depth_spin.value() + 1),
        "depth slider": lambda: panel.depth_slider.setValue(panel.depth_slider.value() - 2),
        "norm": lambda: panel.norm_combo.setCurrentIndex(1 - panel.norm_combo.currentIndex()),
        "residual scaling": lambda: panel.scaling_check.setChecked(not panel.scaling_check.isChecked()),
        "seed": lambda: state.set_seed(state.seed + 1),
    }
    for name, change in changes.items():
        wait_result(qtbot, view)
        before = view.shown_inputs
        assert view.show_layer_values(2).startswith("layer 2:"), name
        change()
        assert_nothing_old_readable(view)  # synchronously: no event-loop turn in between
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            pass
        assert view.shown_inputs != before and view.shown_inputs == view.inputs(), name
        # The readout came back at the same layer, with the new result's numbers.
        pre, post = view.result.pre, view.result.post
        assert view.hover_labels[0].isVisible(), name
        assert view.hover_labels[0].toPlainText() == (f"layer 2:  pre-norm {pre.forward_norms[2]:.4g},  "
                                                      f"post-norm {post.forward_norms[2]:.4g}"), name
        assert view.shown_inputs.seed == state.seed and view.result.pre.seed == state.seed
        assert view.caption.text() and view.parameter_caption.text(), name
        weights = view.result.pre.ffn_out_gradient_norms, view.result.post.ffn_out_gradient_norms
        assert view.hover_labels[2].toPlainText() == (f"block 2:  pre-norm {weights[0][1]:.4g},  "
                                                      f"post-norm {weights[1][1]:.4g}"), name
    assert view.shown_inputs == NormsInputs(3, "rmsnorm", 1, True, "gpt2", D_MODEL, 4)


def test_a_hidden_panel_does_no_work_and_catches_up_when_shown(qtbot, panel):
    start(qtbot, panel, 2)
    view = panel.view
    done = view.computations
    panel.hide()
    panel.depth_spin.setValue(5)
    panel.state.set_seed(3)
    qtbot.waitUntil(lambda: view.is_stale, timeout=5000)
    assert not panel.compute.busy and view.computations == done
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.show()
    assert view.computations == done + 1
    assert view.shown_inputs == NormsInputs(5, "layernorm", 3, False) and view.result.pre.depth == 5


def test_rapid_depth_changes_show_only_the_newest(qtbot, panel):
    start(qtbot, panel, 1)
    view = panel.view
    shown: list[int] = []
    view.result_shown.connect(lambda: shown.append(view.result.pre.depth))
    for depth in (6, 5, 4, 3):  # each a separate event-loop turn: separate requests
        panel.depth_slider.setValue(depth)
        qtbot.wait(5)
    panel.depth_slider.setValue(2)
    assert panel.depth_spin.value() == 2
    qtbot.waitUntil(lambda: view.result is not None and view.result.pre.depth == 2, timeout=RESULT_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not panel.compute.busy, timeout=RESULT_TIMEOUT_MS)
    assert view.result.pre.depth == 2 and shown[-1] == 2  # nothing older arrived after the newest
    assert all(depth in (6, 5, 4, 3, 2) for depth in shown)
    assert view.forward_curves["post"].getData()[1].shape == (3,)


def test_settings_round_trip_and_ignore_junk(qtbot, panel):
    saved = {"depth": 7, "norm": "rmsnorm", "residual_scaling": True, "log_scale": True, "init": "gpt2",
             "d_model": 96, "n_heads": 6}
    panel.restore_settings(saved)
    assert panel.settings() == saved
    panel.restore_settings({"depth": 500, "norm": "batchnorm", "residual_scaling": "yes", "log_scale": None, "other": 1,
                            "init": "he", "d_model": 5000, "n_heads": True})
    assert panel.settings() == saved
    assert panel.depth_slider.value() == 7
    assert [label for label, _ in panel.export_targets()][1:] == ["Residual stream norm (plot)", "Gradient norm (plot)",
                                                                  "Weight gradient norm (plot)"]


def test_rmsnorm_with_residual_scaling_is_what_core_measures(qtbot, panel):
    from core.experiments.norms import norm_curves

    panel.norm_combo.setCurrentIndex(panel.norm_combo.findData("rmsnorm"))
    panel.scaling_check.setChecked(True)
    start(qtbot, panel, 3)
    expected = norm_curves(3, "pre", "rmsnorm", seed=0, d_model=D_MODEL, seq=SEQ, batch=BATCH, residual_scaling=True)
    np.testing.assert_allclose(panel.view.forward_curves["pre"].getData()[1], expected.forward_norms, rtol=1e-6)
    assert "rmsnorm, residual scaling" in panel.caption.text()


def test_a_failed_run_shows_a_message_not_a_traceback(qtbot, panel, monkeypatch):
    def broken(inputs, token):
        raise RuntimeError("out of memory\nTraceback (most recent call last): ...")

    monkeypatch.setattr(NormsView, "compute_fn", staticmethod(broken))
    with qtbot.waitSignal(panel.error_shown, timeout=30_000) as blocker:
        panel.state.set_torch_ready(True)
    assert blocker.args == ["RuntimeError: out of memory"]
    view = panel.view
    assert view.showing_message and view.message.isVisibleTo(panel) and "Traceback" not in view.message.text()
    assert view.show_layer_values(2) == "" and view.hover_text == ""


def test_one_block_captions_name_the_single_step_and_the_single_block(qtbot, panel):
    start(qtbot, panel, 1)
    result = panel.view.result
    gradient, forward = result.post.gradient_norms, result.post.forward_norms
    caption = panel.caption.text()
    step = gradient[0] / gradient[1]
    assert f"post-norm's is ×{step:.0f} in the one step from block 1 into the embeddings" in caption
    assert "down to block 1" not in caption  # one block: there is nothing level to report
    assert f"stretched to {forward[1]:.2f}" in caption
    assert panel.parameter_caption.text().splitlines()[0] == (
        f"Weight gradient ‖∂L/∂W‖ over all its matrices of the one block: pre-norm {result.pre.parameter_gradient_norms[0]:.3g}; "
        f"post-norm {result.post.parameter_gradient_norms[0]:.3g}.")
    assert panel.view.parameter_curves["pre"].getData()[0].tolist() == [1.0]


def test_the_weight_gradient_plot_goes_under_the_others_when_three_would_be_too_narrow(qtbot, panel):
    start(qtbot, panel, 2)  # the plots are laid out once a result replaces the waiting message
    view = panel.view
    area = view.plot_area
    forward, gradient, parameter = view.plots

    def laid_out(width: int) -> None:
        panel.resize(width, 700)
        qtbot.waitUntil(lambda: area.width() > 0 and abs(panel.width() - width) <= 1, timeout=5000)
        qtbot.waitUntil(lambda: parameter.geometry().isValid() and not parameter.geometry().isEmpty(), timeout=5000)

    readable = area.readable_width()
    laid_out(3 * readable + 200)
    qtbot.waitUntil(lambda: area.columns == 3, timeout=5000)
    qtbot.waitUntil(lambda: parameter.y() == forward.y() and parameter.x() > gradient.x() > forward.x(), timeout=5000)
    laid_out(2 * readable + 50)
    qtbot.waitUntil(lambda: area.columns == 2, timeout=5000)
    # Below the other two, as wide as both together: every plot keeps a readable width.
    qtbot.waitUntil(lambda: parameter.y() > forward.y() + forward.height() - 1 and gradient.y() == forward.y(),
                    timeout=5000)
    assert parameter.width() >= forward.width() + gradient.width()
    assert min(plot.width() for plot in view.plots) >= readable - 2 * area.grid.spacing()


def test_a_larger_text_size_can_wrap_the_plots_without_a_resize(qtbot, panel):
    from PySide6.QtWidgets import QApplication

    from gui import theme

    start(qtbot, panel, 2)
    area = panel.view.plot_area
    normal = area.readable_width()
    panel.resize(3 * normal + 100, 700)
    qtbot.waitUntil(lambda: area.columns == 3 and area.width() >= 3 * normal, timeout=5000)
    width = area.width()
    try:
        theme.apply_theme(QApplication.instance(), "light", 2.0)
        panel.state.set_font_scale(2.0)  # the signal the window sends with it: the view restyles itself
        assert area.readable_width() * 3 > width  # the same width no longer holds three readable plots
        assert area.columns == 2 and area.width() == width
    finally:
        theme.apply_theme(QApplication.instance(), "light", 1.0)
        panel.state.set_font_scale(1.0)


def test_xavier_regime_and_sizes_reach_the_worker_and_the_captions_say_which_regime(qtbot, panel):
    from core.experiments.norms import norm_curves

    start(qtbot, panel, 4)
    view = panel.view
    assert "GPT-2's N(0, 0.02)" in panel.parameter_caption.text()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.controls.set_sizes(4, 48, 4, "xavier")
    assert view.shown_inputs == NormsInputs(4, "layernorm", 0, False, "xavier", 48, 4)
    assert not panel.scaling_check.isEnabled()
    expected = norm_curves(4, "post", seed=0, d_model=48, n_heads=4, seq=SEQ, batch=BATCH, init="xavier")
    np.testing.assert_allclose(view.parameter_curves["post"].getData()[1], expected.ffn_out_gradient_norms, rtol=1e-6)
    text = panel.parameter_caption.text()
    assert "Xavier, as Xiong et al. (2020) (d = 48, 4 heads" in text
    assert f"writes {expected.write_ratios.mean():.2f} × the length" in text
    assert view.root_d_line.label.format == f"√d = {48 ** 0.5:.4g}"


def test_sizes_that_do_not_fit_are_refused_in_words(qtbot, panel):
    start(qtbot, panel, 2)
    panel.heads_spin.setValue(5)  # 64 does not divide into 5 heads
    qtbot.waitUntil(lambda: panel.view.showing_message, timeout=RESULT_TIMEOUT_MS)
    assert "does not divide into 5 heads" in panel.view.message.text()
    panel.heads_spin.setValue(8)
    panel.controls.set_sizes(96, 1024, 8)
    qtbot.waitUntil(lambda: "more than the 60,000,000" in panel.view.message.text(), timeout=RESULT_TIMEOUT_MS)


def test_loaded_model_sizes_button_copies_depth_width_and_heads(qtbot, panel):
    config = panel.state.config
    panel.model_button.click()
    assert (panel.depth_spin.value(), panel.width_spin.value(), panel.heads_spin.value()) == (
        min(config.n_layers, MAX_DEPTH), config.d_model, config.n_heads)
