"""The Families panel: each view shows core's figures for the inputs beside it, marks itself stale the moment an
input changes, refuses a model of another family in words with a button that loads the right one, and only the
view on screen computes."""

from __future__ import annotations

import numpy as np
import pytest

from core.checkpoints import load_bundled
from core.experiments.cross_attention import greedy_decode, special_ids
from core.experiments.fill_mask import fill_mask, mask_id_of
from core.experiments.routing import routing
from core.presets import get_preset
from gui.compute import ComputeController
from gui.panels import PANEL_CLASSES
from gui.panels.families import SUB_TABS, FamiliesPanel
from gui.state import LabState
from tests import family_models
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

TEXT = "To be, or n_t to be, that is the question:"
BLANK = TEXT.index("_")


@pytest.fixture
def lab(qtbot):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = FamiliesPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(family_models.encoder_tokenizer())
        state.set_model(family_models.encoder(seed=1))
        state.set_text(TEXT)
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def _replace(qtbot, panel, view, position: int, char: str) -> None:
    tokenizer = panel.state.tokenizer
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.strip.replace_requested.emit(position, tokenizer.id_of(char))
        assert view.is_stale and panel.fill_verdict.text() == ""  # at once: no old verdict beside the new text


def test_the_panel_is_registered():
    assert FamiliesPanel in PANEL_CLASSES


def test_fill_in_the_blank_shows_the_encoder_s_predictions(lab):
    state, panel = lab
    view = panel.fill_view
    assert panel.current_view() is view and not view.is_stale
    tokenizer = state.tokenizer
    expected = fill_mask(state.model, tokenizer.encode(TEXT), mask_id_of(tokenizer), 5, tokenizer)
    assert expected.blanks == (BLANK,)
    table = panel.fill_table
    assert table.horizontalHeaderItem(1).text() == "encoder"
    for rank in range(5):
        cell = table.item(rank, 1).text().split()
        assert cell == [expected.top_labels[0][rank], f"{expected.top_probabilities[0][rank]:.4f}"]
    assert "No edit around this blank yet" in panel.fill_verdict.text() and "tiny-gpt" in panel.fill_verdict.text()
    # One blank, one position, wherever it is named: the decoder predicts it from the left, and is not given its own.
    assert f"predicts the blank at position {BLANK} " in panel.fill_verdict.text()
    assert f"position {BLANK - 1}" not in panel.fill_verdict.text() + panel.fill_plot.getPlotItem().titleLabel.text
    assert f"(position {BLANK})" in panel.fill_plot.getPlotItem().titleLabel.text
    assert "(x" not in panel.fill_plot.getAxis("bottom").labelString()  # probabilities under 1 stay as they are
    assert panel.cross_view.computations == 0 and panel.router_view.computations == 0  # hidden views do no work


def test_an_edit_after_the_blank_moves_the_encoder_only_and_one_before_moves_both(qtbot, lab):
    _state, panel = lab
    view = panel.fill_view
    _replace(qtbot, panel, view, BLANK + 15, "X")
    verdict = panel.fill_verdict.text()
    assert f"after the blank at {BLANK}" in verdict and "encoder's logits at the blank moved: max |delta logit|" in verdict
    assert f"tiny-gpt's logits for the blank at {BLANK}" in verdict and "bitwise unchanged (torch.equal)" in verdict
    before, after = panel.fill_texts.text().splitlines()
    assert before.startswith("Before:") and "that ⟨i⟩s" in before
    assert after.startswith("After:") and "that ⟨X⟩s" in after and "n⟦_⟧t" in after
    headers = [panel.fill_table.horizontalHeaderItem(c).text() for c in range(panel.fill_table.columnCount())]
    assert headers == ["rank", "encoder\nbefore", "encoder\nafter", "tiny-gpt\nbefore", "tiny-gpt\nafter"]
    _replace(qtbot, panel, view, 1, "a")
    verdict = panel.fill_verdict.text()
    assert f"before the blank at {BLANK}" in verdict and verdict.count("moved: max |delta logit|") == 2
    assert "T⟨a⟩ be," in panel.fill_texts.text().splitlines()[1] and "bitwise" not in verdict


def test_a_second_blank_has_no_before_until_an_edit_around_it(qtbot, lab):
    state, panel = lab
    text = TEXT.replace("question", "qu_stion")
    with qtbot.waitSignal(panel.fill_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text(text)  # one character retyped: an edit after the first blank
    assert f"after the blank at {BLANK}" in panel.fill_verdict.text()
    assert panel.blank_spin.maximum() == 2 and panel.blank_spin.suffix() == " of 2"
    with qtbot.waitSignal(panel.fill_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.blank_spin.setValue(2)
    second = text.index("qu_") + 2
    assert f"position {second}" in panel.fill_plot.getPlotItem().titleLabel.text
    assert "No edit around this blank yet" in panel.fill_verdict.text()  # the edit made this blank
    assert panel.fill_texts.text().splitlines()[0].startswith("Before: (no edit")


def test_each_view_refuses_another_family_and_offers_its_own(qtbot, lab):
    state, panel = lab
    decoder = load_bundled("tiny-gpt")
    state.set_tokenizer(decoder.tokenizer)
    state.set_model(decoder.model)
    for index, (phrase, offer) in enumerate((("cannot fill a blank from both sides", "tiny-encoder"),
                                             ("has no cross-attention", "tiny-encoder-decoder"),
                                             ("there is no router", "tiny-moe"))):
        panel.tabs.setCurrentIndex(index)
        view = panel.views[index]
        qtbot.waitUntil(lambda view=view, phrase=phrase: view.showing_message and phrase in view.message.text(),
                        timeout=5000)
        assert view.offering_model and view.offer_button.isVisible() and view.offer_button.text() == f"Load {offer}"
    assert panel.router_view.computations == 0
    panel.router_view.offer_button.click()
    assert state.config == get_preset("tiny-moe")


def test_a_model_of_another_family_turns_the_panel_to_its_view(qtbot, lab):
    state, panel = lab
    with qtbot.waitSignal(panel.router_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(family_models.shakespeare_tokenizer())
        state.set_model(family_models.moe(seed=3))
    assert panel.current_view() is panel.router_view and panel.strip.isVisible()


def test_cross_attention_steps_runs_to_end_and_resets(qtbot, lab):
    state, panel = lab
    view = panel.cross_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(family_models.date_tokenizer())
        state.set_model(family_models.encoder_decoder(seed=2))
    assert panel.current_view() is view and not panel.strip.isVisible()  # it reads its own source
    assert "No step yet" in panel.cross_output.text() and panel.cross_steps.rowCount() == 0
    tokenizer = state.tokenizer
    start, end = special_ids(tokenizer)
    source = tokenizer.encode(panel.source_edit.text())
    for steps in (1, 2):
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            panel.step_button.click()
            assert view.is_stale
        expected = greedy_decode(state.model, source, start, end, steps, tokenizer=tokenizer)
        assert panel.cross_steps.rowCount() == steps
        np.testing.assert_array_equal(panel.cross_map.matrix, expected.head_mean(0).astype(np.float32))
    assert panel.cross_map.row_labels[0].startswith("START→")
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.cross_head_combo.setCurrentIndex(2)  # H1: a slice of the shown result, no new computation
        panel.cross_layer_spin.setValue(1)
        panel.run_button.click()
    expected = greedy_decode(state.model, source, start, end, view.max_steps(), tokenizer=tokenizer)
    assert panel.cross_steps.rowCount() == expected.steps
    np.testing.assert_array_equal(panel.cross_map.matrix, expected.cross_attention[1, 1])
    assert "cross-attention of layer 1, head 1" in panel.cross_map.plot.getPlotItem().titleLabel.text.lower()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.source_edit.setText("May 1, 1999")
        assert view.is_stale and panel.cross_output.text() == ""
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.reset_button.click()
    assert panel.cross_steps.rowCount() == 0
    panel.source_edit.setText("5 Mai!")
    qtbot.waitUntil(lambda: view.refused and view.message.text().startswith("Source: ") and "remove it" in
                    view.message.text(), timeout=5000)
    assert panel.source_edit.isVisible() and panel.source_edit.isEnabled()  # corrected where it was typed


def test_router_shows_core_s_routing_and_the_active_share(qtbot, lab):
    state, panel = lab
    view = panel.router_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(family_models.shakespeare_tokenizer())
        state.set_model(family_models.moe(seed=3))
        state.set_text("To be, or not to be")
    expected = routing(state.model, state.tokens, state.tokenizer)
    np.testing.assert_array_equal(panel.router_map.matrix, expected.probabilities[0].T.astype(np.float32))
    text = panel.active_label.text()
    assert f"{expected.total_parameters:,} parameters" in text and f"uses {expected.active_parameters:,}" in text
    assert f"{expected.active_share:.1%}" in text
    load = ", ".join(f"E{e} {n}" for e, n in enumerate(expected.load[1]))
    assert f"layer 1 {load}" in panel.load_summary.text()
    panel.router_layer_spin.setValue(1)
    np.testing.assert_array_equal(panel.router_map.matrix, expected.probabilities[1].T.astype(np.float32))
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text("To be")
        assert view.is_stale and panel.active_label.text() == ""


def test_settings_round_trip(qtbot, lab):
    _state, panel = lab
    settings = panel.settings()
    assert settings["tab"] == SUB_TABS[0] and settings["steps"] == 0
    panel.restore_settings({**settings, "tab": "Router", "source": "June 2, 2020", "steps": 3, "top_k": 7,
                            "blank": "x", "cross_head": True})
    assert panel.current_view() is panel.router_view and panel.cross_view.steps == 3
    assert panel.source_edit.text() == "June 2, 2020" and panel.fill_top_spin.value() == 7


def test_cross_attention_marks_a_source_outside_the_dates_translators_spellings(qtbot, lab):
    state, panel = lab
    view = panel.cross_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(family_models.date_tokenizer())
        state.set_model(family_models.encoder_decoder(seed=2))
    assert panel.source_edit.text() == "5 March 2021" and "⚠" not in panel.cross_output.text()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.source_edit.setText("5th March 2021")
    shown = panel.cross_output.text()
    assert "⚠ Outside the spellings it learned: the day '5th' is an ordinal" in shown
    learned = panel.cross_output.toolTip()
    assert "'5 March 2021', 'March 5, 2021', 'Friday, 5 March 2021'" in learned and "1900 to 2099" in learned
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.source_edit.setText("March 5, 2021")
    assert "⚠" not in panel.cross_output.text()


def test_the_strip_marks_positions_past_the_models_trained_length(qtbot, lab):
    state, panel = lab
    assert panel.strip.past_label.isHidden()  # the encoder's table holds the whole text
    short = family_models.encoder(seed=1, positional="rope", context_length=16)  # trained at 16, computes past it
    state.set_model(short)
    assert not panel.strip.past_label.isHidden()
    assert panel.strip.past_label.text().startswith("Positions 16 and beyond (dashed) lie past the length")
    assert panel.strip.chips._trained == 16
