"""Nothing stale across models and edits: what the Causal lab and Families views show derives from (model, inputs).

Switching model resets every input the new model lacks (a layer, a head, a site, a period, a token) and says so in
the view's one-line note; selections agree wherever they are shown; the corrupted input follows a new clean text
only where that is unambiguous, and says so when it cannot; an edit mark goes with the text it was made on.
"""

from __future__ import annotations

import itertools

import pytest

from core.checkpoints import load_bundled
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.compute import ComputeController
from gui.panels.causal_lab import CausalLabPanel
from gui.panels.causal_lab.common import follow_clean
from gui.panels.families import FamiliesPanel
from gui.panels.families.cross_attention import MEAN
from gui.panels.tokens import TokensPanel
from gui.state import LabState, TokenEdit
from resources import resource_path
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

BUNDLED = ("tiny-gpt", "tiny-induction", "tiny-encoder", "tiny-encoder-decoder", "tiny-moe")
TEXT = "ROMEO: to be or not"


class Loaded:
    def __init__(self, model, tokenizer) -> None:
        self.model, self.tokenizer, self.config = model, tokenizer, model.config


@pytest.fixture(scope="module")
def models():
    loaded = {name: load_bundled(name) for name in BUNDLED}
    # One layer and a context of 8: every picker of a larger model has something to reset here.
    chars = CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))
    loaded["textbook-block"] = Loaded(Transformer.from_seed(get_preset("textbook-block"), 0).eval(), chars)
    return loaded


@pytest.fixture
def lab(qtbot, models):
    """The Causal lab, Families and Tokens panels on one state, none on screen (hidden views do not compute)."""
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panels = [CausalLabPanel(state, compute), FamiliesPanel(state, compute), TokensPanel(state, compute)]
    switch(state, models["tiny-gpt"])
    state.set_text(TEXT)
    state.set_torch_ready(True)
    yield state, panels
    for panel in panels:
        close_panel_lab(qtbot, compute, panel)


def switch(state, loaded) -> None:
    """As the window adopts a model: its tokenizer, the model, then its config."""
    state.set_tokenizer(loaded.tokenizer)
    state.set_model(loaded.model)
    state.set("config", loaded.config, undoable=False)


def choose_the_most(state, causal, families) -> None:
    """Every picker at the last layer and head of the current model, the other inputs at their largest."""
    config = state.model.config
    layer, head = config.n_layers - 1, config.n_heads - 1
    state.set_selected_layer(layer)
    state.set_selected_head(head)
    causal.ablation_view.heads_picker.set_selected([(layer, head)])
    causal.ablation_view.ffns_picker.set_selected([] if config.attention_only else [(layer, 0)])
    causal.induction_view._choose_head(layer, head)
    causal.induction_view.period_spin.setValue(max(2, config.context_length // 2))
    causal.patching_view.site_combo.setCurrentIndex(causal.patching_view.site_combo.findData(
        "resid_pre" if config.attention_only else "mlp_out"))
    causal.answer_edit.setText(f"#{config.vocab_size - 1}")
    causal.foil_edit.setText(f"#{config.vocab_size - 2}")
    if state.tokens:
        causal.corrupt_at(0, (state.tokens[0] + 1) % config.vocab_size)
    families.cross_layer_spin.setValue(families.cross_layer_spin.maximum())
    families.cross_head_combo.setCurrentIndex(families.cross_head_combo.count() - 1)
    families.router_layer_spin.setValue(families.router_layer_spin.maximum())


def assert_nothing_names_what_the_model_lacks(state, causal, families, tokens) -> None:
    from core.experiments.induction import period_problem
    from core.experiments.patching import site_problem

    model = state.model
    config = model.config
    name = config.name
    assert state.selected_layer < config.n_layers and state.selected_head < config.n_heads, name
    for spin_name, value in (("tokens-layer", state.selected_layer), ("tokens-head", state.selected_head),
                             ("worked-layer", state.selected_layer), ("worked-head", state.selected_head)):
        spin = tokens.findChild(type(families.router_layer_spin), spin_name)
        if spin_name == "tokens-layer" and config.architecture == "encoder-decoder":
            continue  # the encoder's blocks when the encoder's attention is chosen
        assert spin.value() == value, (name, spin_name)  # the lab's one selection, the same wherever shown
    ablation = causal.ablation_view
    heads, ffns = ablation.heads_picker.selected(), ablation.ffns_picker.selected()
    assert heads or ffns, name
    assert all(layer < config.n_layers and head < config.n_heads for layer, head in heads), name
    assert all(layer < config.n_layers for layer, _ in ffns) and not (config.attention_only and ffns), name
    chosen = causal.induction_view.chosen_head
    assert chosen is None or (chosen[0] < config.n_layers and chosen[1] < config.n_heads), name
    if config.architecture == "decoder":
        assert period_problem(model, causal.induction_view.period_spin.value()) is None, name
    assert site_problem(config, causal.patching_view.site) is None, name
    assert causal.controls.answer_and_foil(state.tokenizer, config.vocab_size)[2] == "", name
    corrupt = causal.controls.corrupt_ids
    assert len(corrupt) == len(state.tokens) and all(0 <= t < config.vocab_size for t in corrupt), name
    assert causal.corrupt_strip.tokens == corrupt
    assert families.cross_layer_spin.value() < config.n_layers, name
    head = families.cross_head_combo.currentData()
    assert head == MEAN or head < config.n_heads, name
    assert families.router_layer_spin.value() < config.n_layers, name


def test_a_new_model_with_a_layer_reached_for_clamps_the_selection_without_a_config(qtbot, models):
    state = LabState()
    state.set_selected_layer(3)
    state.set_selected_head(3)
    state.set_model(models["textbook-block"].model)  # a run or a folder: the model comes before its config
    assert (state.selected_layer, state.selected_head) == (0, 3)


def test_switching_models_in_every_order_resets_what_the_new_model_lacks_and_says_so(lab, models):
    state, (causal, families, tokens) = lab
    for first, second in itertools.permutations(("textbook-block", *BUNDLED), 2):
        switch(state, models[first])
        choose_the_most(state, causal, families)
        before = state.model.config
        switch(state, models[second])
        assert_reset_and_said(state, causal, families, tokens, before)


def assert_reset_and_said(state, causal, families, tokens, before) -> None:
    after = state.model.config
    assert_nothing_names_what_the_model_lacks(state, causal, families, tokens)
    # Each reset is said in its view, in one line that names the new model.
    if before.n_layers > after.n_layers:
        assert families.router_view.note_label.text() == (
            f"layer reset to {after.n_layers - 1}: {after.name} has {after.n_layers} layer"
            f"{'s' if after.n_layers > 1 else ''}")
        assert families.cross_view.note_label.text().startswith(f"layer reset to {after.n_layers - 1}: {after.name}")
        note = causal.ablation_view.note_label.text()
        assert f"L{before.n_layers - 1}H{before.n_heads - 1}" in note and after.name in note
        assert "strongest induction head" in causal.induction_view.note_label.text()
    else:
        assert families.router_view.note_label.text() == ""
    if not before.attention_only and after.attention_only:
        assert causal.patching_view.note_label.text().startswith("site reset to resid_pre")
    if before.context_length > after.context_length and after.architecture == "decoder":
        assert "tokens per repeat reset" in causal.induction_view.note_label.text()
    controls_note = causal.controls.note_label.text()
    if before.vocab_size - 1 >= after.vocab_size:  # the answer's #ID is past the new vocabulary
        assert "Answer" in controls_note and after.name in controls_note
    for label in (causal.controls.note_label, *(view.note_label for view in (*causal.views, *families.views)
                                                if hasattr(view, "note_label"))):
        assert "\n" not in label.text()


def test_the_note_goes_at_the_next_change_and_the_pickers_agree_with_what_is_drawn(qtbot, models):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = FamiliesPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    try:
        switch(state, models["tiny-gpt"])
        state.set_text(TEXT)
        panel.router_layer_spin.setValue(3)
        view = panel.router_view
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_torch_ready(True)
            switch(state, models["tiny-moe"])
        assert view.note_label.text() == "layer reset to 1: tiny-moe has 2 layers" and view.note_label.isVisible()
        assert panel.router_layer_spin.value() == 1
        assert panel.router_map.plot.getPlotItem().titleLabel.text.startswith("Router probabilities of layer 1 ")
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_text(TEXT + " be")
        assert view.note_label.text() == "" and not view.note_label.isVisible()
    finally:
        close_panel_lab(qtbot, compute, panel)


def test_the_induction_pattern_forgets_a_head_the_new_model_lacks(qtbot, models):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = CausalLabPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    view = panel.induction_view
    try:
        switch(state, models["tiny-gpt"])
        state.set_text(TEXT)
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_torch_ready(True)
            panel.tabs.setCurrentWidget(view)
        view._choose_head(3, 2)
        assert view.pattern_map.plot.getPlotItem().titleLabel.text.startswith("Attention of L3H2 ")
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            switch(state, models["tiny-induction"])
        layer, head = view.result.best_head()
        assert view.chosen_head is None
        assert view.pattern_map.plot.getPlotItem().titleLabel.text.startswith(f"Attention of L{layer}H{head} ")
        assert view.note_label.text().startswith("pattern's head L3H2 reset to the strongest induction head")
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            switch(state, models["tiny-gpt"])  # back: the old pick does not come back unasked
        assert view.chosen_head is None
    finally:
        close_panel_lab(qtbot, compute, panel)


# ---- the corrupted input follows the clean one only where that is unambiguous ------------------------------
CLEAN = [1, 2, 3, 4, 5]
CORRUPT = [1, 2, 9, 4, 5]  # an edit at position 2


def test_an_unedited_corrupted_input_stays_a_copy_silently():
    assert follow_clean(CLEAN, CLEAN, [7, 8], True) == ([7, 8], "")


def test_an_edit_keeps_its_position_when_positions_line_up():
    assert follow_clean(CLEAN, CORRUPT, [1, 6, 3, 4, 5], True) == ([1, 6, 9, 4, 5], "")


def test_an_edit_moves_with_one_known_insertion_or_deletion_before_it():
    inserted = TokenEdit("insert", 0, tuple(CLEAN))
    assert follow_clean(CLEAN, CORRUPT, [0, *CLEAN], True, inserted) == ([0, 1, 2, 9, 4, 5], "")
    deleted = TokenEdit("delete", 4, tuple(CLEAN))
    assert follow_clean(CLEAN, CORRUPT, CLEAN[:4], True, deleted) == ([1, 2, 9, 4], "")
    gone = TokenEdit("delete", 2, tuple(CLEAN))
    corrupted, note = follow_clean(CLEAN, CORRUPT, [1, 2, 4, 5], True, gone)
    assert corrupted == [1, 2, 4, 5] and note == ("The corrupted input lost the edit at position 2: its token was "
                                                  "deleted from the clean text.")


def test_an_edit_before_or_after_what_a_retyped_text_changed_keeps_its_token():
    assert follow_clean(CLEAN, CORRUPT, [1, 2, 3, 4, 5, 6, 7], True) == ([1, 2, 9, 4, 5, 6, 7], "")
    assert follow_clean(CLEAN, CORRUPT, [8, 8, 1, 2, 3, 4, 5], True) == ([8, 8, 1, 2, 9, 4, 5], "")


def test_an_ambiguous_change_resets_the_corrupted_input_and_says_so():
    corrupted, note = follow_clean(CLEAN, CORRUPT, [1, 2, 7, 7, 4, 5], True)  # the edited token itself retyped
    assert corrupted == [1, 2, 7, 7, 4, 5]
    assert note == ("Corrupted input reset to the clean text: the clean text changed from 5 to 6 tokens, so the edit "
                    "at position 2 has no clear place in it.")
    repeated = [3, 3, 3]  # one more 3: it went in before, between or after the edited one; no telling which
    assert follow_clean(repeated, [3, 9, 3], [3, 3, 3, 3], True)[0] == [3, 3, 3, 3]
    corrupted, note = follow_clean(CLEAN, CORRUPT, [1, 2, 3, 4, 6], False)  # the text read in another vocabulary
    assert corrupted == [1, 2, 3, 4, 6] and note.startswith("Corrupted input reset to the clean text: the new model "
                                                            "reads another vocabulary")
    assert follow_clean(CLEAN, CORRUPT, CLEAN, False) == (CORRUPT, "")  # ids unchanged: nothing to place anew


def test_the_panel_announces_a_reset_of_the_corrupted_input_and_clears_it_at_the_next_edit(qtbot, lab, models):
    state, (causal, _families, _tokens) = lab
    tokenizer = state.tokenizer
    causal.corrupt_at(2, tokenizer.id_of("X"))
    assert tokenizer.decode(causal.controls.corrupt_ids) == "ROXEO: to be or not"
    causal.clean_strip.insert_requested.emit(0, tokenizer.id_of("A"))  # one known insertion: the edit moves with it
    assert tokenizer.decode(causal.controls.corrupt_ids) == "AROXEO: to be or not"
    assert causal.controls.note_label.text() == ""
    state.set_text("AROMEO: to be or not to be")  # typed on at the end: the edit keeps its place
    assert tokenizer.decode(causal.controls.corrupt_ids) == "AROXEO: to be or not to be"
    state.set_text("AJULIET: to be or not to be")  # the edited word retyped: no telling where the edit belongs
    assert causal.controls.corrupt_ids == state.tokens
    assert causal.controls.note_label.text() == ("Corrupted input reset to the clean text: the clean text changed from "
                                                 "26 to 27 tokens, so the edit at position 3 has no clear place in it.")
    assert causal.corrupt_strip.marked == -1
    causal.corrupt_at(1, tokenizer.id_of("a"))
    assert causal.controls.note_label.text() == "" and causal.corrupt_strip.marked == 1
    switch(state, models["tiny-induction"])  # another vocabulary
    assert causal.controls.corrupt_ids == state.tokens
    assert "the new model reads another vocabulary" in causal.controls.note_label.text()


# ---- edit marks go with the text they were made on --------------------------------------------------------
def test_an_edit_mark_leaves_with_its_text_and_with_the_model(lab, models):
    state, (_causal, families, _tokens) = lab
    strip = families.strip
    strip.replace_requested.emit(4, state.tokenizer.id_of("X"))
    assert strip.marked == 4
    state.set_text("ROMEO: to be or nothing")
    assert strip.marked == -1
    strip.replace_requested.emit(2, state.tokenizer.id_of("X"))
    assert strip.marked == 2
    switch(state, models["tiny-moe"])  # the same text, another model: the fill view's comparison starts again
    assert families.history.before is None and strip.marked == -1


def test_a_token_strip_drops_its_mark_when_its_tokens_change(qtbot):
    from gui.widgets.token_strip import TokenStrip

    strip = TokenStrip()
    qtbot.addWidget(strip)
    strip.set_tokens([1, 2, 3])
    strip.set_marked(1)
    strip.set_tokens([1, 2, 3])
    assert strip.marked == 1
    strip.set_tokens([4, 5])
    assert strip.marked == -1


def test_a_sessions_corrupted_input_survives_the_arrival_of_its_model(qtbot, settings, tmp_path):
    """A session's ids belong to its model, which is built after the session is read: the corrupted input it holds
    is not reset when that model (another vocabulary than the one loaded) arrives."""
    from gui.main_window import MainWindow
    from tests.gui.file_opening import open_session

    win = MainWindow(settings=settings, panel_classes=[CausalLabPanel])
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):
        win.start_loading()
    panel = win.panels[0]
    with qtbot.waitSignal(win.model_loaded, timeout=30_000):
        win.state.set_config(get_preset("tiny-induction"))
    win.state.set_text("abcdefgh abcdefgh")
    panel.corrupt_at(3, win.state.tokenizer.id_of("z"))
    corrupt = list(panel.controls.corrupt_ids)
    path = tmp_path / "lab.json"
    assert win.save_session(path)
    with qtbot.waitSignal(win.model_loaded, timeout=30_000):
        win.state.set_config(get_preset("tiny-gpt"))  # another vocabulary
    with qtbot.waitSignal(win.model_loaded, timeout=30_000):
        assert open_session(qtbot, win, path) == ""
    assert win.state.model.config.name == "tiny-induction"
    assert win.state.text == "abcdefgh abcdefgh"  # not the session's ids decoded by the previous model's tokenizer
    assert panel.controls.corrupt_ids == corrupt and panel.controls.note_label.text() == ""
    win.close()
