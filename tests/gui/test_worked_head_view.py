"""The "One head" view of Tokens & masks: the hand computation on screen, stale at once on any input's change,
no work while hidden, and a verdict that flips when a step is left out."""

from __future__ import annotations


import numpy as np
import pytest
from PySide6.QtCore import Qt

from core.experiments.worked_head import worked_head
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.compute import ComputeController
from gui.panels.tokens import SUB_TABS, TokensPanel
from gui.panels.tokens.worked_head import LAST_TOKEN, TOP_KEYS
from gui.state import LabState
from resources import resource_path
from tests.gui.panel_labs import close_panel_lab

RESULT_TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def model():
    return Transformer.from_seed(get_preset("tiny-llama"), seed=0).eval()  # RoPE, 4 query heads on 2 kv heads


@pytest.fixture(scope="module")
def tokenizer():
    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


@pytest.fixture
def lab(qtbot, model, tokenizer):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = TokensPanel(state, compute)
    panel.resize(1366, 768)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(tokenizer)
        state.set_model(model)
        state.set_torch_ready(True)
    view = panel.worked_head
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index("One head"))
    yield state, panel, view
    close_panel_lab(qtbot, compute, panel)


def cells(table_model) -> list[list[str]]:
    return [[table_model.data(table_model.index(r, c)) for c in range(table_model.columnCount())]
            for r in range(table_model.rowCount())]


def assert_stale_now(view) -> None:
    assert view.is_stale or view.showing_message
    for label in view.stale_labels:
        assert label.text() == ""
    assert view.keys_model.rowCount() == 0 and view.vectors_model.rowCount() == 0


def test_the_view_shows_the_hand_computation_of_the_last_token(lab, model, tokenizer):
    state, _panel, view = lab
    worked = view.result
    expected = worked_head(model, state.tokens, state.selected_layer, state.selected_head,
                           tokenizer_or_labels=tokenizer)
    assert worked.query == len(state.tokens) - 1 == expected.query
    np.testing.assert_array_equal(worked.weights, expected.weights)
    assert view.verdict_label.text() == f"Hand result {worked.verdict}"
    assert worked.equal and "equal to the model's head output to" in view.verdict_label.text()
    # Grouped-query attention and RoPE are named where the config uses them.
    assert "reads kv head 0, shared with query head 1" in view.head_caption.text()
    assert "RoPE rotates" in view.head_caption.text()
    rows = cells(view.keys_model)
    assert len(rows) == min(TOP_KEYS, len(state.tokens))  # bounded: the largest weights only
    headers = view.keys_model.headers
    shown_keys = view._key_rows
    weight_column = headers.index("weight")
    for row, key in zip(rows, shown_keys):
        assert row[0] == worked.labels[key]
        assert float(row[weight_column]) == pytest.approx(float(worked.weights[key]), rel=1e-3)
    top = int(worked.keys_by_weight()[0])
    assert top in shown_keys
    vectors = cells(view.vectors_model)
    assert len(vectors) == worked.d_head
    hand, model_out = view.vectors_model.headers.index("hand output"), view.vectors_model.headers.index("model output")
    assert float(vectors[0][hand]) == pytest.approx(float(worked.hand_output[0]), rel=1e-3)
    assert float(vectors[0][model_out]) == pytest.approx(float(worked.model_output[0]), rel=1e-3)
    assert f"{worked.tolerance:.1e}" in view.tolerance_caption.text()


def test_all_keys_lists_every_key_in_order_and_a_click_picks_the_vectors(qtbot, lab):
    state, _panel, view = lab
    computations = view.computations
    view.all_keys_box.setChecked(True)  # presentation only: no new computation
    assert view.computations == computations
    assert view._key_rows == list(range(len(state.tokens)))
    assert "masked" not in " ".join(row[headers] for row in cells(view.keys_model)
                                    for headers in [view.keys_model.headers.index("mask")])
    view._key_clicked(view.keys_model.index(2, 0))
    assert view.selected_key == 2 and "key 2" in view.vectors_caption.text()
    assert view.vectors_model.headers[2] == "k2"


def test_every_input_marks_the_view_stale_at_once_and_the_new_result_follows(qtbot, lab, tokenizer):
    state, panel, view = lab
    changes = {
        "tokens": lambda: panel.replace_token(3, tokenizer.id_of("Q") if state.tokens[3] != tokenizer.id_of("Q")
                                              else tokenizer.id_of("R")),
        "mask": lambda: panel.mode_combo.setCurrentIndex(panel.mode_combo.findData("none")),
        "layer": lambda: view.layer_spin.setValue(1),
        "head": lambda: view.head_spin.setValue(3),
        "query": lambda: view.query_spin.setValue(4),
        "omit": lambda: view.omit_combo.setCurrentIndex(view.omit_combo.findData("scale")),
        "last token again": lambda: view.query_spin.setValue(LAST_TOKEN),
    }
    for label, change in changes.items():
        before = view.shown_inputs
        change()
        assert_stale_now(view), label
        qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None, timeout=RESULT_TIMEOUT_MS)
        assert view.shown_inputs != before, label
        assert view.verdict_label.text() and view.keys_model.rowCount() > 0, label
    inputs = view.shown_inputs
    assert (inputs.layer, inputs.head, inputs.query, inputs.mask_mode, inputs.omit) == (
        1, 3, len(state.tokens) - 1, "none", "scale")
    assert (state.selected_layer, state.selected_head) == (1, 3)


@pytest.mark.parametrize(("step", "query"), [("scale", LAST_TOKEN), ("mask", 3), ("rope", LAST_TOKEN)])
def test_leaving_out_a_step_flips_the_verdict_on_screen(qtbot, lab, step, query):
    _state, _panel, view = lab
    if view.query_spin.value() != query:
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            view.query_spin.setValue(query)
    assert view.result.equal
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.omit_combo.setCurrentIndex(view.omit_combo.findData(step))
    assert not view.result.equal
    assert view.verdict_label.text().startswith("Hand result NOT the model's head output")
    assert "left out" in view.verdict_label.text()
    if step == "rope":  # the unrotated q is not the model's hook_q either, and the caption says so
        assert "would turn (left out here)" in view.vectors_caption.text()
        assert "q " in view.tolerance_caption.text() and "(above its tolerance)" in view.tolerance_caption.text()
        assert "k_rotated" not in view.vectors_model.headers and "q rotated" not in view.vectors_model.headers


def test_only_the_models_own_steps_can_be_left_out(qtbot, lab, tokenizer):
    state, _panel, view = lab
    offered = [view.omit_combo.itemData(i) for i in range(view.omit_combo.count())]
    assert offered == ["", "scale", "mask", "rope"]
    learned = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(learned)
    assert [view.omit_combo.itemData(i) for i in range(view.omit_combo.count())] == ["", "scale", "mask"]
    assert "RoPE" not in view.head_caption.text() and "kv head" not in view.head_caption.text()


def test_a_hidden_view_does_no_work_and_catches_up_when_shown(qtbot, lab, tokenizer):
    state, panel, view = lab
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index("Attention"))
    before = view.computations
    panel.replace_token(2, tokenizer.id_of("Z"))
    view.query_spin.setValue(1)
    qtbot.waitUntil(lambda: not panel.compute.busy, timeout=RESULT_TIMEOUT_MS)
    assert view.computations == before and view.is_stale
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index("One head"))
    assert view.computations == before + 1
    assert view.shown_inputs.tokens == tuple(state.tokens) and view.result.query == 1


def test_a_text_past_the_context_is_refused_in_words(qtbot, lab):
    state, _panel, view = lab
    state.set_tokens([1] * (state.model.config.accepted_length + 1))  # RoPE: past the app's bound, not 256
    assert_stale_now(view)
    qtbot.waitUntil(lambda: view.showing_message, timeout=RESULT_TIMEOUT_MS)
    assert "exceed" in view.message.text()


def test_settings_round_trip_through_the_panel(qtbot, lab):
    _state, panel, view = lab
    view.query_spin.setValue(2)
    view.omit_combo.setCurrentIndex(view.omit_combo.findData("mask"))
    view.all_keys_box.setChecked(True)
    saved = panel.settings()
    assert (saved["worked_query"], saved["worked_omit"], saved["worked_all_keys"], saved["sub_tab"]) == (
        2, "mask", True, "One head")
    panel.restore_settings({"worked_query": None, "worked_omit": "alibi", "worked_all_keys": "yes"})
    assert view.query is None and view.omit_combo.currentData() == "mask" and view.all_keys_box.isChecked()
    panel.restore_settings(saved)
    assert panel.settings() == saved


def test_clicking_a_chip_makes_it_the_query_and_the_figures_follow(qtbot, lab, model, tokenizer):
    state, panel, view = lab
    chips = panel.strip.chips
    qtbot.mouseClick(chips, Qt.MouseButton.LeftButton, pos=chips.chip_rect(4).center())
    assert panel.strip.selected == 4 and view.query_spin.value() == 4
    assert_stale_now(view)  # the old query's numbers go at once
    qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None, timeout=RESULT_TIMEOUT_MS)
    expected = worked_head(model, state.tokens, state.selected_layer, state.selected_head, 4,
                           tokenizer_or_labels=tokenizer)
    assert view.result.query == view.shown_inputs.query == 4
    np.testing.assert_array_equal(view.result.weights, expected.weights)
    np.testing.assert_array_equal(view.result.hand_output, expected.hand_output)
    assert f"query 4 '{expected.labels[4]}'" in view.head_caption.text()
    assert f"{int(expected.visible.sum())} of {len(state.tokens)} visible to query 4" in view.keys_caption.text()


def test_a_query_chosen_in_the_view_selects_its_chip_in_one_undo_step(qtbot, lab, model, tokenizer):
    state, panel, view = lab
    stack = state.undo_stack
    steps = stack.count()
    assert panel.strip.selected == -1 and view.query_spin.value() == LAST_TOKEN
    view.query_spin.setValue(2)
    assert panel.strip.selected == 2 and stack.count() == steps + 1
    view.query_spin.setValue(5)  # a run of choices is one step, as the arrow keys walking the strip are
    qtbot.keyClick(panel.strip.chips, Qt.Key.Key_Right)
    assert panel.strip.selected == 6 == view.query_spin.value() and stack.count() == steps + 1
    qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None, timeout=RESULT_TIMEOUT_MS)
    expected = worked_head(model, state.tokens, state.selected_layer, state.selected_head, 6,
                           tokenizer_or_labels=tokenizer)
    np.testing.assert_array_equal(view.result.weights, expected.weights)
    assert panel.predictions.inputs().position == 6  # the predictions read the same chip
    stack.undo()
    assert panel.strip.selected == -1 and view.query_spin.value() == LAST_TOKEN
    assert_stale_now(view)
    qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None, timeout=RESULT_TIMEOUT_MS)
    assert view.result.query == len(state.tokens) - 1
    stack.redo()
    assert panel.strip.selected == 6 == view.query_spin.value()
    # A token edit after the selection is a step of its own; undoing it leaves the selection.
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.replace_token(6, tokenizer.id_of("Q") if state.tokens[6] != tokenizer.id_of("Q") else tokenizer.id_of("R"))
    assert stack.count() == steps + 2
    stack.undo()
    assert panel.strip.selected == 6 == view.query_spin.value()


def test_a_restored_query_selects_its_chip_without_an_undo_step(qtbot, lab):
    state, panel, view = lab
    steps = state.undo_stack.count()
    panel.restore_settings({"worked_query": 3})
    assert panel.strip.selected == 3 == view.query_spin.value() and state.undo_stack.count() == steps
    panel.restore_settings({"worked_query": None})
    assert panel.strip.selected == -1 and view.query is None and state.undo_stack.count() == steps
