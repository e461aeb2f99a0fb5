"""The Causal lab panel: each view shows the figures of core's experiment for the inputs beside it, refuses
what it cannot compute in words, computes only while on screen, and patching draws rows as they arrive."""

from __future__ import annotations

import numpy as np
import pytest

from core.checkpoints import load_bundled
from core.experiments.attribution import direct_logit_attribution
from core.experiments.induction import induction
from core.experiments.patching import activation_patch
from gui.compute import ComputeController
from gui.panels import PANEL_CLASSES
from gui.panels.causal_lab import SUB_TABS, CausalLabPanel
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
    panel = CausalLabPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    panel.answer_edit.setText(" ")
    panel.foil_edit.setText("e")
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(loaded.tokenizer)
        state.set_model(loaded.model)
        state.set_text(TEXT)
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def _show_tab(qtbot, panel, name):
    view = panel.views[SUB_TABS.index(name)]
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index(name))
    return view


def test_the_panel_is_registered():
    assert CausalLabPanel in PANEL_CLASSES


def test_attribution_shows_the_models_logit_and_the_parts_sum(lab, loaded):
    state, panel = lab
    view = panel.attribution_view
    assert panel.current_view() is view and not view.is_stale
    ids = loaded.tokenizer.encode(TEXT)
    expected = direct_logit_attribution(loaded.model, ids, loaded.tokenizer.id_of(" "), loaded.tokenizer.id_of("e"))
    text = view.summary_label.text()
    assert f"the model's own {expected.total:.6g}" in text and f"sum to {expected.parts_sum:.6g}" in text
    assert "they agree" in text
    config = loaded.config
    assert np.allclose(view.heads_map.matrix, expected.head_matrix(config.n_layers, config.n_heads), atol=1e-6)
    assert panel.patching_view.computations == 0  # hidden views do no work


def test_patching_says_an_unedited_input_changes_nothing_then_maps_a_replacement(qtbot, lab, loaded):
    state, panel = lab
    view = _show_tab(qtbot, panel, "Patching")
    assert "equals the clean one" in view.summary_label.text()
    rows = []
    view.show_partial = (lambda original: lambda partial: (rows.append(partial.layer), original(partial)))(view.show_partial)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.corrupt_at(2, loaded.tokenizer.id_of("X"))
    assert rows == list(range(loaded.config.n_layers))
    clean = loaded.tokenizer.encode(TEXT)
    corrupt = list(clean)
    corrupt[2] = loaded.tokenizer.id_of("X")
    expected = activation_patch(loaded.model, clean, corrupt, loaded.tokenizer.id_of(" "), loaded.tokenizer.id_of("e"))
    assert np.allclose(view.shown_values(), expected.values, atol=1e-5)
    assert f"{expected.clean_metric:.5g}" in view.summary_label.text()
    assert "4 of 4 layers" in view.checks_label.text() and "corrupted logits: yes" in view.checks_label.text()
    # A different length is refused in words, and no old number stays beside it.
    panel.controls._insert(0, clean[0])
    qtbot.waitUntil(lambda: view.showing_message and "without inserting or deleting" in view.message.text(),
                    timeout=5000)


def test_ablation_and_induction_match_core(qtbot, lab, loaded):
    state, panel = lab
    view = _show_tab(qtbot, panel, "Ablation")
    assert "zero-ablating L0H0" in view.summary_label.text()
    # The picker holds the model's heads alone: a head it lacks cannot be chosen, and a session's L9H0 is not ticked.
    picker = panel.ablation_view.heads_picker
    assert picker.shape == (loaded.config.n_layers, loaded.config.n_heads) and picker.box(9, 0) is None
    panel.restore_settings({"heads": "L9H0, L1H1"})
    assert picker.selected() == ((1, 1),)
    qtbot.waitUntil(lambda: not view.is_stale and "zero-ablating L1H1:" in view.summary_label.text(), timeout=5000)
    picker.set_selected([])
    qtbot.waitUntil(lambda: view.refused and "none is ticked" in view.message.text(), timeout=5000)
    view = _show_tab(qtbot, panel, "Induction")
    expected = induction(loaded.model, 20, 0)
    assert np.allclose(view.induction_map.matrix, expected.induction_score, atol=1e-6)
    assert f"first repeat {expected.loss_first.mean():.3f}" in view.summary_label.text()


def test_a_post_norm_model_is_refused_in_words_by_attribution(qtbot, lab):
    import dataclasses

    from core.model import Transformer

    state, panel = lab
    config = dataclasses.replace(state.model.config, norm_placement="post")
    state.set_model(Transformer.from_seed(config, seed=0))
    view = panel.attribution_view
    qtbot.waitUntil(lambda: view.showing_message and "post-norm" in view.message.text(), timeout=5000)


def test_an_empty_answer_measures_the_top_prediction(qtbot, lab, loaded):
    state, panel = lab
    view = panel.attribution_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.answer_edit.setText("")
    ids = loaded.tokenizer.encode(TEXT)
    expected = direct_logit_attribution(loaded.model, ids, None, loaded.tokenizer.id_of("e"))
    assert "(the top prediction)" in view.summary_label.text()
    assert f"the model's own {expected.total:.6g}" in view.summary_label.text()
    panel.answer_edit.setText("#999")
    qtbot.waitUntil(lambda: view.showing_message and "outside the vocabulary" in view.message.text(), timeout=5000)


def test_an_attention_only_model_has_no_ffn_parts_site_or_field(qtbot, lab, loaded):
    from core.model import Transformer

    state, panel = lab
    model = Transformer.from_seed(loaded.config.replace(attention_only=True, name="attn-only"), seed=0)
    view = panel.attribution_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(model)
    expected = direct_logit_attribution(model, loaded.tokenizer.encode(TEXT), loaded.tokenizer.id_of(" "),
                                        loaded.tokenizer.id_of("e"))
    assert "ffn" not in {part.kind for part in expected.components}
    assert f"sum to {expected.parts_sum:.6g}" in view.summary_label.text() and "they agree" in view.summary_label.text()
    assert "attention-only, so no FFN writes" in view.key_label.text()
    assert view.parts_plot.getPlotItem().titleLabel.text == "Biases (no FFNs)"

    patching = _show_tab(qtbot, panel, "Patching")
    patching.site_combo.setCurrentIndex(patching.site_combo.findData("mlp_out"))
    qtbot.waitUntil(lambda: patching.showing_message and "Patch site: attention-only attn-only has no FFN in its "
                    "blocks, so there is no mlp_out to patch" in patching.message.text(), timeout=5000)
    item = patching.site_combo.model().item(patching.site_combo.findData("mlp_out"))
    assert not item.isEnabled() and "no mlp_out to patch" in item.toolTip()

    ablation = _show_tab(qtbot, panel, "Ablation")
    picker = ablation.ffns_picker
    assert not picker.isEnabled() and picker.text() == "none: attention-only ▾" and picker.shape[0] == 0
    panel.restore_settings({"ffns": "0"})  # as a lesson or a session could: there is no FFN to tick
    assert picker.selected() == () and not ablation.showing_message
    state.set_model(loaded.model)
    assert picker.isEnabled() and picker.shape == (loaded.config.n_layers, 1) and picker.text() == "none ▾"


def test_patching_cells_are_undefined_when_clean_and_corrupted_agree(qtbot, lab, loaded):
    """A corrupted token after the metric's position cannot move a decoder's metric there: the two runs agree, and
    no cell may show a number (or "nan") for a share of a difference of zero."""
    from PySide6.QtCore import QPointF

    state, panel = lab
    view = _show_tab(qtbot, panel, "Patching")
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.position_spin.setValue(3)  # the metric at position 3
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.corrupt_at(8, loaded.tokenizer.id_of("X"))  # a token after it
    assert view.result.clean_metric == view.result.corrupt_metric  # causal: bitwise the same logits there
    summary = view.summary_label.text()
    assert "map: undefined: clean and corrupted agree" in summary and "nan" not in summary.lower()
    assert np.isnan(view.patch_map.matrix).all()
    assert view.patch_map.plot.getPlotItem().titleLabel.text == "Normalised metric undefined: clean and corrupted agree"
    scene = view.patch_map.plot.getViewBox().mapViewToScene(QPointF(2.5, 1.5))  # position 2, layer 1
    view.patch_map._mouse_moved(scene)
    assert view.patch_map.readout.text() == "row 1 'L1'  x  column 2 'M':  undefined: clean and corrupted agree"
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.corrupt_at(2, loaded.tokenizer.id_of("X"))  # before it: a defined map again
    assert not np.isnan(view.patch_map.matrix).any()
    assert view.patch_map.plot.getPlotItem().titleLabel.text.startswith("Metric with one activation patched")


def test_the_attribution_bars_name_what_they_plot(lab):
    _state, panel = lab
    view = panel.attribution_view
    assert view.parts_plot.getAxis("bottom").labelText == "direct effect on the logit difference"  # a foil is set
    assert "share" not in view.parts_plot.getAxis("bottom").labelText


def test_no_unitless_axis_of_a_view_writes_a_scale_factor(qtbot, lab):
    """pyqtgraph writes "(x0.001)" beside a unitless axis whose values stay under 1: every plot the views style
    keeps its numbers as they are."""
    import pyqtgraph as pg

    _state, panel = lab
    for plot in panel.findChildren(pg.PlotWidget):
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.setRange(0.0, 0.004)
            assert "(x" not in axis.labelString() and axis.autoSIPrefixScale == 1.0, (plot.objectName(), name)


def test_both_strips_mark_positions_past_the_models_trained_length(lab, loaded):
    from core.model import Transformer

    state, panel = lab
    strips = (panel.clean_strip, panel.controls.corrupt_strip)
    assert all(strip.past_label.isHidden() for strip in strips)
    config = loaded.model.config.replace(positional="rope", context_length=8, name="short-rope")
    state.set_model(Transformer.from_seed(config, 0))  # trained at 8, computes past it
    clean = panel.clean_strip
    assert not clean.past_label.isHidden() and clean.chips._trained == 8
    assert clean.past_label.text().startswith("Positions 8 and beyond (dashed) lie past the length")
    assert panel.controls.corrupt_strip.chips._trained in (8, 1 << 30)  # dashed only where it is past 8 itself
    assert panel.controls.corrupt_strip._trained == 8
