"""The Tokens & masks panel shows what core.experiments measures, for edits made through the strip."""

from __future__ import annotations


import numpy as np
import pytest
from PySide6.QtCore import Qt

from core.experiments.attention_maps import attention_maps
from core.experiments.causal_edit import causal_edit_diff
from core.model import MASK_MODES
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.compute import ComputeController
from gui.panels.tokens import MASK_MODE_CHOICES, SUB_TABS, TokensPanel
from gui.state import LabState
from resources import resource_path
from tests.gui.panel_labs import close_panel_lab

RESULT_TIMEOUT_MS = 20_000
EDIT_POSITION = 8


@pytest.fixture(scope="module")
def model():
    return Transformer.from_seed(get_preset("tiny-gpt"), seed=0).eval()


@pytest.fixture(scope="module")
def tokenizer():
    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


@pytest.fixture
def lab(qtbot, model, tokenizer):
    """A LabState with the model loaded, one compute worker and the panel showing its first result.

    The fixture owns the panel's lifetime (no qtbot.addWidget): pytest-qt would close the panel
    before this teardown runs, while the worker may still have a result on its way to it.
    """
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = TokensPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(tokenizer)
        state.set_model(model)
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def replace(qtbot, panel: TokensPanel, position: int, token_id: int) -> None:
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        assert panel.strip.replace_at(position, token_id)


def set_mode(qtbot, panel: TokensPanel, mode: str) -> None:
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.mode_combo.setCurrentIndex(panel.mode_combo.findData(mode))


def test_the_mask_modes_are_the_models(lab):
    assert tuple(mode for mode, _label in MASK_MODE_CHOICES) == MASK_MODES
    assert lab[1].mode_combo.count() == len(MASK_MODES)


def test_a_chip_edit_shows_the_measured_diff_with_an_exact_past(qtbot, lab, model, tokenizer):
    state, panel = lab
    tokens = state.tokens
    new = tokenizer.id_of("X")
    replace(qtbot, panel, EDIT_POSITION, new)

    expected = causal_edit_diff(model, tokens, EDIT_POSITION, new, mask_mode="causal", tokenizer_or_labels=tokenizer)
    assert state.tokens == tokens[:EDIT_POSITION] + [new] + tokens[EDIT_POSITION + 1:]
    assert np.array_equal(panel.propagation.values, expected.max_change, equal_nan=True)
    assert np.array_equal(panel.propagation.exact, expected.exactly_unchanged)
    # The map's colours are log10 of the same numbers; exact zeros have no colour (they are hatched).
    shown = panel.propagation_map.matrix
    moved = expected.max_change > 0
    assert np.array_equal(np.isnan(shown), ~moved)
    np.testing.assert_allclose(shown[moved], np.log10(expected.max_change[moved]), rtol=1e-6)
    assert panel.propagation.exact[:, :EDIT_POSITION].all()
    assert "bitwise unchanged" in panel.verdict.text()

    panel.propagation._map_hovered(2, 0, 0.0)
    assert "0 (exact)" in panel.propagation_map.readout.text()
    panel.propagation._map_hovered(2, EDIT_POSITION, 0.0)
    assert "0 (exact)" not in panel.propagation_map.readout.text()


def test_without_a_mask_the_past_moves(qtbot, lab, model, tokenizer):
    state, panel = lab
    tokens = state.tokens
    new = tokenizer.id_of("X")
    replace(qtbot, panel, EDIT_POSITION, new)
    set_mode(qtbot, panel, "none")

    expected = causal_edit_diff(model, tokens, EDIT_POSITION, new, mask_mode="none", tokenizer_or_labels=tokenizer)
    assert np.array_equal(panel.propagation.values, expected.max_change, equal_nan=True)
    assert not panel.propagation.exact[1:, :EDIT_POSITION].any()
    assert expected.leaks_into_past
    assert "the past moves" in panel.verdict.text()


def test_off_by_one_shows_nan_with_the_note(qtbot, lab):
    _state, panel = lab
    set_mode(qtbot, panel, "off-by-one")
    assert panel.propagation.nan.any()
    assert "NaN" in panel.verdict.text()
    assert "NaN" in panel.propagation.note.text()


def test_depth_runs_only_the_first_blocks(qtbot, lab):
    _state, panel = lab
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.depth_spin.setValue(2)
    assert panel.propagation.values.shape[0] == 3  # the embedding and two blocks


def test_unknown_characters_are_refused_and_the_tokens_stay(qtbot, lab):
    state, panel = lab
    tokens = state.tokens
    panel.strip.text_edit.setText("To be, or not to be€")
    panel.strip.submit_text()
    assert "'€'" in panel.strip.message_label.text()
    assert not panel.strip.message_label.isHidden()
    assert state.tokens == tokens
    assert panel.strip.tokens == tokens


def test_undo_restores_the_tokens(qtbot, lab, tokenizer):
    state, panel = lab
    tokens = state.tokens
    replace(qtbot, panel, EDIT_POSITION, tokenizer.id_of("X"))
    assert state.tokens != tokens
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.undo_button.click()
    assert state.tokens == tokens
    assert panel.strip.tokens == tokens


def test_insert_and_delete_change_the_length_and_can_be_undone(qtbot, lab, tokenizer):
    state, panel = lab
    tokens = state.tokens
    panel.strip.select(3)
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.insert_token(3, tokenizer.id_of("Z"))
    assert state.tokens == tokens[:3] + [tokenizer.id_of("Z")] + tokens[3:]
    assert panel.propagation.values.shape[1] == len(tokens) + 1
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.delete_token(0)
    assert len(state.tokens) == len(tokens)
    state.undo_stack.undo()
    state.undo_stack.undo()
    assert state.tokens == tokens


def test_the_attention_tab_shows_the_selected_head(qtbot, lab, model, tokenizer):
    state, panel = lab
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(SUB_TABS.index("Attention"))
    state.set_selected_layer(2)
    state.set_selected_head(1)
    expected = attention_maps(model, state.tokens, mask_mode="causal", tokenizer_or_labels=tokenizer)
    assert np.array_equal(panel.attention.map.matrix, expected.weights[2, 1])
    assert panel.layer_spin.value() == 2 and panel.head_spin.value() == 1


def test_the_other_tabs_show_their_results(qtbot, lab):
    state, panel = lab
    for tab in ("Mask", "Head split", "Predictions"):
        with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
            panel.tabs.setCurrentIndex(SUB_TABS.index(tab))
    split = panel.head_split.result
    assert split.correct_difference < 1e-6 < split.wrong_difference
    predictions = panel.predictions.result
    assert predictions.position == len(state.tokens) - 1
    masks = panel.mask.result
    assert [grid.kind for grid in masks] == ["decoder-self"]
    assert np.array_equal(panel.mask.maps[0].matrix, masks[0].visible.astype(np.float32))
    assert panel.last_error == ""


def test_settings_round_trip_and_ignore_bad_values(qtbot, lab):
    _state, panel = lab
    panel.mode_combo.setCurrentIndex(panel.mode_combo.findData("after-softmax"))
    panel.temperature_spin.setValue(0.5)
    saved = panel.settings()
    panel.restore_settings({"mask_mode": "causal", "temperature": 2.0, "top_k": "many", "n_blocks": None, "sub_tab": 3})
    assert panel.mask_mode == "causal"
    panel.restore_settings(saved)
    assert panel.settings() == saved
    assert panel.mask_mode == "after-softmax"
    assert all(label and target is not None for label, target in panel.export_targets())


def test_typing_on_a_chip_replaces_it(qtbot, lab, tokenizer):
    state, panel = lab
    tokens = state.tokens
    panel.strip.select(5)
    qtbot.keyClick(panel.strip.chips, "Q")
    assert panel.strip.replace_combo.currentText() == "Q"
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        qtbot.keyClick(panel.strip.replace_combo.lineEdit(), "\r")
    assert state.tokens == tokens[:5] + [tokenizer.id_of("Q")] + tokens[6:]
    assert panel.strip.text_edit.text() == tokenizer.decode(state.tokens)


def test_an_unknown_replacement_is_refused(qtbot, lab):
    state, panel = lab
    tokens = state.tokens
    assert not panel.strip.replace_with_text(2, "€")
    assert "not a token" in panel.strip.message_label.text()
    assert state.tokens == tokens
    # The outline marks the field the refusal is about: Replace with, not the text field.
    assert "border" in panel.strip.replace_combo.styleSheet() and panel.strip.text_edit.styleSheet() == ""
    panel.strip.clear_message()
    assert panel.strip.replace_combo.styleSheet() == ""


# The offscreen platform cannot grab the keyboard or raise a popup; those notices are no defect of the panel.
# (This marker replaces the conftest one, so it repeats its propagateSizeHints exemption.)
@pytest.mark.qt_log_ignore("does not support grabbing the keyboard", "does not support raise", "propagateSizeHints")
def test_double_clicking_a_chip_opens_the_vocabulary(qtbot, lab):
    _state, panel = lab
    chips = panel.strip.chips
    qtbot.mouseDClick(chips, Qt.MouseButton.LeftButton, pos=chips.chip_rect(4).center())
    assert panel.strip.selected == 4
    assert panel.strip.replace_combo.view().isVisible()
    panel.strip.replace_combo.hidePopup()


def test_bar_labels_fit_above_the_bars_or_give_way_on_a_short_plot(qtbot, lab):
    state, panel = lab
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text("the dog bites the man")
    view = panel.bar_plot.getViewBox()

    def wanted_labels():
        return [label for label in panel.propagation._bar_labels if label.property("wanted")]

    panel.resize(1200, 1400)
    qtbot.waitUntil(lambda: view.height() > 250, timeout=5000)
    panel.propagation._update_bar_ticks()
    labels = wanted_labels()
    assert len(labels) == len(state.tokens)
    assert all(label.isVisible() for label in labels)
    panel.bar_plot.grab()  # a paint: TextItem places its rotated text when drawn
    top = view.sceneBoundingRect().top()
    assert all(label.sceneBoundingRect().top() >= top - 1 for label in labels)

    panel.resize(1200, 560)
    qtbot.waitUntil(lambda: view.height() < 120, timeout=5000)
    panel.propagation._update_bar_ticks()
    assert not any(label.isVisible() for label in wanted_labels())


# ---- views: nothing stale on screen, only what is visible computes ------------------------------------
def show_tab(qtbot, panel: TokensPanel, name: str):
    view = panel.views[SUB_TABS.index(name)]
    if view.shown_inputs is not None and not view.is_stale:
        panel.tabs.setCurrentWidget(view)  # what it shows is current: nothing to compute
        return view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentWidget(view)
    return view


def assert_stale_now(view) -> None:
    """Nothing the view showed for the old inputs can still be read."""
    assert view.is_stale or view.showing_message
    assert all(label.text().strip() == "" for label in view.readouts)
    assert all(label.text() == "" for label in view.stale_labels)


def test_a_hover_readout_goes_the_moment_the_mask_changes_and_follows_the_new_data(qtbot, lab, tokenizer):
    _state, panel = lab
    view = panel.propagation
    replace(qtbot, panel, EDIT_POSITION, tokenizer.id_of("X"))
    viewbox = view.map.plot.getViewBox()
    cell_centre = viewbox.mapViewToScene(pg_point(0.5, 2.5))  # row 2, position 0: before the edit
    view.map._mouse_moved(cell_centre)
    assert "0 (exact)" in view.map.readout.text()
    panel.mode_combo.setCurrentIndex(panel.mode_combo.findData("none"))
    assert_stale_now(view)  # synchronously: no event loop turn in between
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        pass
    assert "0 (exact)" not in view.map.readout.text()
    view.map._mouse_moved(cell_centre)
    assert "0 (exact)" not in view.map.readout.text() and "max |change|" in view.map.readout.text()


def pg_point(x: float, y: float):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def test_every_view_is_stale_at_once_when_any_of_its_inputs_changes(qtbot, lab, tokenizer):
    state, panel = lab
    changes = {
        "tokens": lambda: panel.replace_token(3, tokenizer.id_of("Q") if state.tokens[3] != tokenizer.id_of("Q")
                                              else tokenizer.id_of("R")),
        "mask": lambda: panel.mode_combo.setCurrentIndex(
            panel.mode_combo.findData("none" if panel.mask_mode != "none" else "causal")),
    }
    per_view = {
        "Propagation": {"depth": lambda: panel.depth_spin.setValue(panel.depth_spin.value() - 1 or 2)},
        "Mask": {},
        "Attention": {},
        "Head split": {"seed": lambda: state.set_seed(state.seed + 1)},
        "Predictions": {"temperature": lambda: panel.temperature_spin.setValue(panel.temperature_spin.value() + 0.5),
                        "top k": lambda: panel.top_k_spin.setValue(panel.top_k_spin.value() - 1),
                        "selected chip": lambda: panel.strip.select(2)},
    }
    for name, own in per_view.items():
        view = show_tab(qtbot, panel, name)
        for label, change in {**changes, **own}.items():
            if name == "Head split" and label == "tokens":
                continue  # the head-split check reads the sequence length only, not the ids
            view = show_tab(qtbot, panel, name)
            assert not view.is_stale and view.shown_inputs is not None
            before = view.shown_inputs
            change()
            assert_stale_now(view), (name, label)
            qtbot.waitUntil(lambda v=view: not v.is_stale and v.shown_inputs is not None, timeout=RESULT_TIMEOUT_MS)
            assert view.shown_inputs != before, (name, label)


def test_hidden_views_do_no_work_on_an_edit_and_catch_up_when_shown(qtbot, lab, tokenizer):
    state, panel = lab
    show_tab(qtbot, panel, "Attention")
    show_tab(qtbot, panel, "Propagation")
    hidden = [view for view in panel.views if view is not panel.propagation]
    before = {view.name: view.computations for view in hidden}
    replace(qtbot, panel, 4, tokenizer.id_of("Z"))
    replace(qtbot, panel, 6, tokenizer.id_of("Y"))
    assert {view.name: view.computations for view in hidden} == before
    assert panel.attention.is_stale  # it still holds the attention of the old tokens
    view = show_tab(qtbot, panel, "Attention")
    assert view.computations == before["Attention"] + 1
    assert view.shown_inputs.tokens == tuple(state.tokens)


def test_a_model_that_cannot_take_the_text_clears_the_old_result(qtbot, lab, model, tokenizer):
    import dataclasses

    state, panel = lab
    view = panel.propagation
    replace(qtbot, panel, EDIT_POSITION, tokenizer.id_of("X"))
    assert "bitwise unchanged" in view.verdict.text()
    short = Transformer.from_seed(dataclasses.replace(model.config, context_length=len(state.tokens) - 1), seed=0).eval()
    state.set_model(short)
    assert_stale_now(view)
    qtbot.waitUntil(lambda: view.showing_message, timeout=RESULT_TIMEOUT_MS)
    assert "context length" in view.message.text()
    assert view.result is None and not view.content.isVisible()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(model)
    assert not view.showing_message


def test_the_edit_carries_its_own_position_and_undo_measures_the_same_place(qtbot, lab, tokenizer):
    state, panel = lab
    tokens = state.tokens
    replace(qtbot, panel, 7, tokenizer.id_of("X"))
    shown = panel.propagation.shown_inputs
    assert (shown.base, shown.position, shown.measured_edit) == (tuple(tokens), 7, True)
    with qtbot.waitSignal(panel.propagation.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.undo_stack.undo()
    shown = panel.propagation.shown_inputs
    assert shown.position == 7 and shown.measured_edit and shown.new_token == tokens[7]
    with qtbot.waitSignal(panel.propagation.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.insert_token(2, tokenizer.id_of("Z"))
    shown = panel.propagation.shown_inputs
    assert shown.position == 2 and not shown.measured_edit and len(shown.base) == len(tokens) + 1


def test_the_kept_run_diff_equals_the_two_sequence_batch(qtbot, lab, model, tokenizer):
    """The view runs only the edited sequence (the unedited run is kept); the figures are the batch's."""
    state, panel = lab
    tokens = state.tokens
    replace(qtbot, panel, 5, tokenizer.id_of("X"))
    replace(qtbot, panel, 9, tokenizer.id_of("Y"))  # its reference is the previous edit's run, kept
    edited_once = tokens[:5] + [tokenizer.id_of("X")] + tokens[6:]
    batch = causal_edit_diff(model, edited_once, 9, tokenizer.id_of("Y"), mask_mode="causal",
                             tokenizer_or_labels=tokenizer)
    view = panel.propagation
    assert view.result.reference_reused
    assert np.array_equal(view.exact, batch.exactly_unchanged)
    assert np.array_equal(view.nan, batch.nan_entries)
    assert view.exact[:, :9].all()
    # Batches of one and of two may take other GEMM blockings: the moved cells agree to float32 rounding
    # of the residual stream (its values are O(10), one ulp ~1e-6), never bitwise.
    np.testing.assert_allclose(view.values, batch.max_change, rtol=0, atol=1e-4)


def test_the_overview_is_small_at_any_length_and_keeps_every_peak():
    from gui.panels.tokens.attention import MAX_TILE_PX, overview_image

    rng = np.random.default_rng(0)
    small = rng.random((2, 3, 5, 5), dtype=np.float32)
    same = overview_image(small)
    assert same.factor == 1
    assert np.array_equal(same.image[0:5, 0:5], small[0, 0]) and np.array_equal(same.image[-5:, -5:], small[1, 2])
    long = np.zeros((12, 12, 1000, 1000), dtype=np.float32)
    long[3, 7, 999, 2] = 1.0  # one sharp weight at the far corner of one head
    image = overview_image(long)
    assert image.factor == 16 and max(image.image.shape) <= 12 * (MAX_TILE_PX + 6)
    row, col = 3 * image.pitch_q // image.factor + 999 // 16, 7 * image.pitch_k // image.factor + 2 // 16
    assert image.image[row, col] == 1.0 and np.nansum(image.image) == 1.0


def test_the_first_probe_says_nothing_was_edited_and_an_insert_says_the_length_changed(qtbot, lab, tokenizer):
    state, panel = lab
    assert panel.propagation.note.text().startswith("Nothing has been edited yet")
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.insert_token(3, tokenizer.id_of("Z"))
    assert panel.propagation.note.text().startswith("The sequence changed length or was retyped")


def test_a_hidden_view_drops_a_large_result_and_computes_it_again_when_shown(qtbot, lab, monkeypatch):
    """A result past the bound is not held while its tab is hidden (every head's maps of GPT-2 small at 1,024
    tokens are 604 MB); shown again, the view computes the same inputs once. A small result stays."""
    import gc
    import weakref

    from gui import hidden_results

    state, panel = lab
    attention = show_tab(qtbot, panel, "Attention")
    inputs, weights = attention.shown_inputs, weakref.ref(attention.result.maps.weights.base
                                                         if attention.result.maps.weights.base is not None
                                                         else attention.result.maps.weights)
    size = hidden_results.result_bytes(attention.result)
    assert size >= attention.result.maps.weights.nbytes > 0
    before = attention.computations
    show_tab(qtbot, panel, "Mask")  # under the bound: kept
    assert attention.result is not None and attention.shown_inputs == inputs
    view = show_tab(qtbot, panel, "Attention")
    assert view.computations == before
    monkeypatch.setattr(hidden_results, "HIDDEN_RESULT_BYTES", size)
    show_tab(qtbot, panel, "Mask")
    assert attention.result is None and attention.is_stale
    gc.collect()
    assert weights() is None  # nothing else (the heatmap, the overview's hover) keeps the maps alive
    show_tab(qtbot, panel, "Attention")
    assert attention.computations == before + 1
    assert attention.shown_inputs == inputs and not attention.is_stale
    assert np.array_equal(panel.attention.map.matrix,
                          attention.result.maps.weights[state.selected_layer, state.selected_head])


def test_a_large_result_that_arrives_after_its_view_was_hidden_is_not_kept(qtbot, lab, tokenizer, monkeypatch):
    from gui import hidden_results

    state, panel = lab
    monkeypatch.setattr(hidden_results, "HIDDEN_RESULT_BYTES", 1)  # every result with an array is large
    attention, compute = panel.attention, panel.attention.compute
    before = attention.computations
    panel.tabs.setCurrentWidget(attention)
    attention.update_now()  # its computation starts ...
    assert attention.computations == before + 1
    panel.tabs.setCurrentWidget(panel.mask)  # ... and its view is hidden before the result can be delivered
    delivered = []
    compute.result_delivered.connect(delivered.append)
    qtbot.waitUntil(lambda: "attention" in " ".join(delivered) and not compute.busy, timeout=RESULT_TIMEOUT_MS)
    assert attention.result is None and attention.shown_inputs is None
    with qtbot.waitSignal(attention.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentWidget(attention)
    assert attention.computations == before + 2 and attention.shown_inputs.tokens == tuple(state.tokens)
