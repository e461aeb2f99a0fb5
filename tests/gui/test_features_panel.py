"""The Features panel on the bundled tiny-gpt and its SAE: the dashboard's figures are core's for the inputs beside
them, the text's features follow every edit, and steering with strength 0 is bit-identical to the model."""

from __future__ import annotations

import pytest

from core.checkpoints import load_bundled
from gui.compute import ComputeController
from gui.panels import PANEL_CLASSES
from gui.panels.features import SUB_TABS, FeaturesPanel
from gui.state import LabState
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

TEXT = "ROMEO: to be or"


@pytest.fixture(scope="module")
def loaded():
    return load_bundled("tiny-gpt")


@pytest.fixture
def lab(qtbot, loaded):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = FeaturesPanel(state, compute)
    panel.resize(1366, 768)
    panel.show()
    with qtbot.waitSignal(panel.dashboard.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(loaded.config)
        state.set_tokenizer(loaded.tokenizer)
        state.set_model(loaded.model)
        state.set_text(TEXT)
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def test_registered_once():
    assert PANEL_CLASSES.count(FeaturesPanel) == 1 and FeaturesPanel.title == "Features"


def test_the_dashboard_and_the_texts_features_follow_the_inputs(qtbot, lab, loaded):
    from core.features.library import open_sae
    from core.features.sae_stats import feature_activations, features_at

    state, panel = lab
    view = panel.dashboard
    assert panel.feature_spin.maximum() == 511
    result = view.result
    assert [c.activation for c in result.contexts] == sorted((c.activation for c in result.contexts), reverse=True)
    assert f"Feature 0 of 512" in view.summary_label.text()
    assert view.token_table.rowCount() == len(TEXT)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text(TEXT + "t")  # an edit: the per-token features are recomputed for the new text
    assert view.token_table.rowCount() == len(TEXT) + 1
    import torch

    own = feature_activations(loaded.model, open_sae(panel.controls.sae_path),
                              torch.tensor([loaded.tokenizer.encode(TEXT + "t")]))[0]
    assert view.result.per_token[-1] == features_at(own, [len(TEXT)], 3)
    first = view.result.search[0][0]
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.search_table.cellClicked.emit(0, 0)  # a searched feature opens
    assert panel.feature_spin.value() == first and view.result.feature == first


def test_steering_with_strength_zero_is_bit_identical_and_a_strength_moves_the_distribution(qtbot, lab):
    state, panel = lab
    view = panel.steering
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index("Steer"))
    assert view.result.identical and "bit-identical" in view.summary_label.text()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.alpha_spin.setValue(20.0)
    assert not view.result.identical and "moved by" in view.summary_label.text()


def test_a_model_the_sae_was_not_trained_on_is_refused_with_the_offer_of_its_own(qtbot, lab):
    from core.model import Transformer

    state, panel = lab
    view = panel.dashboard
    state.set_model(Transformer.from_seed(state.model.config, seed=5))  # tiny-gpt's name and shape, other weights
    qtbot.waitUntil(lambda: view.refused, timeout=RESULT_TIMEOUT_MS)
    assert "not tiny-gpt's" in view.message.text() and view.refusal.offer == "tiny-gpt"


def test_an_sae_trained_in_the_window_draws_its_loss_reports_its_figures_and_saves(qtbot, lab, tmp_path):
    from core.features.sae import load_sae

    state, panel = lab
    view = panel.training
    view.steps_spin.setValue(20)
    view.d_sae_spin.setValue(64)
    view.k_spin.setValue(8)
    partials = []
    view.show_partial = lambda losses, original=view.show_partial: (partials.append(losses), original(losses))
    computations = view.computations
    panel.tabs.setCurrentIndex(SUB_TABS.index("Train"))
    qtbot.waitUntil(lambda: view.showing_message and "Press Train" in view.message.text())
    # Showing the tab trains nothing: the event loop has run the view's update, which only asked for the press.
    assert view.computations == computations and view.result is None and not partials
    with qtbot.waitSignal(view.result_shown, timeout=120_000):
        view.train_button.click()
    assert partials and partials[-1][-1][0] == 20  # drawn while it trained, to the last step
    assert "64 features, k = 8, at blocks.2.hook_resid_post: 20 steps" in view.summary_label.text()
    assert f"variance explained {view.result.stats.variance_explained:.3f}" in view.summary_label.text()
    view.save_to(str(tmp_path / "mine"))
    assert load_sae(tmp_path / "mine").config.d_sae == 64
    assert panel.controls.sae_path == str(tmp_path / "mine") and panel.feature_spin.maximum() == 63
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("mine")
    view.save_to(str(tmp_path / "theirs"))  # a folder the app did not write is left untouched
    assert view.saved_label.text().startswith("Not saved:")
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "mine"
    view.steps_spin.setValue(30)  # new settings: the old figures go, and the next training waits for a press
    assert view.summary_label.text() == ""  # at once, before the event loop runs
    qtbot.waitUntil(lambda: view.showing_message and "Press Train" in view.message.text())
    assert view.result is None
