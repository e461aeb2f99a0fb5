"""Train's mask choice and its Compare tab: pitfall runs on one plot, numbers only of the comparison drawn."""

from __future__ import annotations

import pytest

from core.config import ModelConfig
from core.experiments.pitfall_setups import RUN_LABELS
from gui.panels.train import TrainPanel
from gui.state import LabState

TINY = ModelConfig(name="test-tiny", vocab_size=65, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64)
STEPS = 4


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    state.set_config(TINY)
    widget = TrainPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    state.set_torch_ready(True)
    widget.compare_page.size = "ci"
    widget.compare_page.steps_spin.setValue(STEPS)
    return widget


def compare_to_end(qtbot, panel: TrainPanel) -> None:
    with qtbot.waitSignal(panel.compared, timeout=120_000):
        assert panel.start_compare()


def legend_names(plot) -> list[str]:
    return [label.text for _sample, label in plot.getPlotItem().legend.items]


def test_a_run_trains_with_the_chosen_mask_and_says_so(qtbot, panel, tmp_path):
    from resources import resource_path

    small = tmp_path / "small.txt"  # a short corpus: the whole-split score at the end stays quick
    text = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:4000]
    small.write_text(text, encoding="utf-8")
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.load_corpus_file(small)
    panel.state.set_config(TINY.replace(vocab_size=panel.corpus.vocab_size))
    panel.mask_combo.setCurrentIndex(panel.mask_combo.findData("after-softmax"))
    panel.steps_spin.setValue(3)
    panel.batch_spin.setValue(2)
    panel.seq_spin.setValue(16)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        assert panel.start_training()
    assert panel.outcome.metadata["settings"]["mask_mode"] == "after-softmax"
    assert "after the softmax mask" in panel.status_label.text() and "scored with the causal mask" in panel.status_label.text()
    assert panel.outcome.loaded.model.trained_mask_mode == "after-softmax"  # the model's description names it
    warning = panel.trained_mask_warning  # above Train > Generate's text
    assert not warning.isHidden() and warning.text().startswith("Leaky training mask: after the softmax,")


def test_off_by_one_is_not_offered_to_train():
    from core.choices import TRAIN_MASK_MODES

    assert "off-by-one" not in TRAIN_MASK_MODES and "causal" in TRAIN_MASK_MODES


def test_the_mask_experiment_draws_every_run_on_one_plot(qtbot, panel):
    model_before = panel.state.model
    compare_to_end(qtbot, panel)
    comparison = panel.compare_page.comparison
    assert [run.key for run in comparison.runs] == ["causal", "after-softmax", "none"]
    assert legend_names(panel.compare_plot) == [RUN_LABELS[k] for k in ("causal", "after-softmax", "none")]
    for run in comparison.runs:
        steps, losses = panel.compare_page.loss_curves[run.key].getData()
        assert list(steps) == list(range(1, STEPS + 1)) and list(losses) == [loss for _, loss in run.loss_history]
    summary = panel.compare_summary.text()
    for run in comparison.runs:
        assert f"{run.causal_val_loss:.3f}" in summary and f"{run.final_train_loss:.3f}" in summary
    assert "scored with the causal mask" in panel.compare_verdict.text()
    assert panel.state.model is model_before  # a comparison never installs its models
    assert panel.train_button.isEnabled() and panel.compare_button.isEnabled()


def test_the_warmup_experiment_plots_each_blocks_gradient_norm(qtbot, panel):
    page = panel.compare_page
    page.experiment_combo.setCurrentIndex(page.experiment_combo.findData("warmup"))
    page.steps_spin.setValue(STEPS)
    compare_to_end(qtbot, panel)
    run = page.comparison.run(page.gradient_run_combo.currentData())
    assert run.key == "post"  # the pitfall is drawn first
    curves = panel.gradient_plot.getPlotItem().listDataItems()
    assert len(curves) == page.comparison.setup.n_layers
    xs, ys = curves[-1].getOriginalDataset()
    assert list(xs) == list(run.grad_norm_steps)
    assert list(ys) == [norms[-1] for norms in run.grad_norms]  # the last block
    page.gradient_run_combo.setCurrentIndex(page.gradient_run_combo.findData("pre"))
    _xs, ys_pre = panel.gradient_plot.getPlotItem().listDataItems()[0].getOriginalDataset()
    assert list(ys_pre) == [norms[0] for norms in page.comparison.run("pre").grad_norms]  # the first block


@pytest.mark.parametrize("change", ["steps", "seed", "experiment"])
def test_a_changed_input_clears_the_numbers_at_once(qtbot, panel, change):
    compare_to_end(qtbot, panel)
    page = panel.compare_page
    assert panel.compare_summary.text() and not page.is_stale
    if change == "steps":
        page.steps_spin.setValue(STEPS + 1)
    elif change == "seed":
        page.seed_spin.setValue(7)
    else:
        page.experiment_combo.setCurrentIndex(page.experiment_combo.findData("warmup"))
    assert page.is_stale and panel.compare_summary.text() == ""
    assert "press Compare" in panel.compare_verdict.text()
    assert panel.compare_plot.opacity() < 1.0
    if change == "steps":  # back to the settings drawn: the numbers are true again
        page.steps_spin.setValue(STEPS)
        assert not page.is_stale and panel.compare_summary.text() and panel.compare_plot.opacity() == 1.0


def test_stop_ends_the_comparison_with_the_steps_made(qtbot, panel):
    page = panel.compare_page
    page.steps_spin.setValue(2000)
    with qtbot.waitSignal(panel.compared, timeout=120_000):
        assert panel.start_compare()
        assert not panel.train_button.isEnabled() and not page.compare_button.isEnabled()
        qtbot.waitUntil(lambda: bool(page.partial_losses["causal"][0]), timeout=60_000)
        panel.stop_training()
    comparison = page.comparison
    assert comparison.stopped and len(comparison.runs) == 1 and comparison.runs[0].steps_done < 2000
    assert "Stopped early" in panel.compare_verdict.text()


def test_settings_round_trip(qtbot, panel):
    panel.mask_combo.setCurrentIndex(panel.mask_combo.findData("none"))
    panel.plot_tabs.setCurrentIndex(1)
    page = panel.compare_page
    page.experiment_combo.setCurrentIndex(page.experiment_combo.findData("warmup"))
    page.steps_spin.setValue(123)
    page.seed_spin.setValue(5)
    saved = panel.settings()
    assert saved["mask_mode"] == "none" and saved["plot_tab"] == "compare"
    panel.restore_settings({"mask_mode": "causal", "plot_tab": "run", "compare_experiment": "masks", "compare_steps": 7})
    assert panel.mask_combo.currentData() == "causal" and panel.plot_tabs.currentIndex() == 0
    assert page.experiment_combo.currentData() == "masks" and page.steps_spin.value() == 7
    panel.restore_settings(saved)
    assert panel.settings() == saved
    panel.restore_settings({"mask_mode": "off-by-one", "compare_experiment": "dropout", "compare_steps": 10**9})
    assert panel.settings() == saved  # values outside the choices change nothing


def test_a_session_restored_during_the_run_leaves_the_comparison_and_its_numbers(qtbot, panel):
    page = panel.compare_page
    with qtbot.waitSignal(panel.compared, timeout=120_000):
        assert panel.start_compare()
        panel.restore_settings({"compare_seed": 9, "compare_steps": STEPS + 5})  # a session opened mid-run
        assert not page.is_stale and page.request() == page.request_shown
    assert not page.is_stale and f"{page.comparison.runs[0].causal_val_loss:.3f}" in panel.compare_summary.text()
    page.seed_spin.setValue(9)  # afterwards a change clears them, as any other
    assert page.is_stale and panel.compare_summary.text() == ""


def test_a_theme_change_while_stale_brings_no_old_number_back(qtbot, panel):
    compare_to_end(qtbot, panel)
    page = panel.compare_page
    page.seed_spin.setValue(7)
    for theme_name in ("dark", "light"):
        panel.state.set_theme(theme_name)
        assert page.is_stale and panel.compare_summary.text() == "" and panel.compare_samples.text() == ""
    panel.state.set_font_scale(1.6)
    assert panel.compare_summary.text() == "" and panel.compare_plot.opacity() < 1.0
