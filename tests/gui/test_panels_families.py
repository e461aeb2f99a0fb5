"""The Tokens & masks, Tensor shapes, Causal lab and Generate panels on an encoder, an encoder-decoder and BERT:
each view shows core's figures for the kind of attention or tower chosen, with its own labels, or refuses
in words."""

from __future__ import annotations

import numpy as np
import pytest

from core.checkpoints import resolve_checkpoint
from core.experiments.attention_maps import attention_maps
from core.experiments.causal_edit import causal_edit_diff
from core.experiments.shapes import trace_shapes
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.compute import ComputeController
from gui.panels.causal_lab import SUB_TABS as CAUSAL_TABS
from gui.panels.causal_lab import CausalLabPanel
from gui.panels.generate import GeneratePanel
from gui.panels.shapes import ShapesPanel
from gui.panels.tokens import SUB_TABS, TokensPanel
from gui.state import LabState
from resources import resource_path
from tests.encoder_folders import bert_folder
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

TEXT = "the cat sat on"
CHARS = CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


def _config(name: str):
    """A preset's shape over the Shakespeare characters, under a name no bundled model has: random weights that read
    the lab's text (the bundled tiny-encoder-decoder reads only the characters of dates)."""
    return get_preset(name).replace(name=f"random-{name}", vocab_size=CHARS.vocab_size, n_encoder_layers=None)


def _model(name: str, seed: int = 0) -> Transformer:
    return Transformer.from_seed(_config(name), seed=seed).eval()


@pytest.fixture
def lab(qtbot):
    """Build a panel class on its own state and worker, with a model and a text, and tear it down safely."""
    made = []

    def build(panel_class, model, tokenizer=CHARS, text=TEXT):
        state = LabState()
        compute = ComputeController(torch_threads=1)
        panel = panel_class(state, compute)
        panel.resize(1300, 850)
        panel.show()
        made.append((compute, panel))
        with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_tokenizer(tokenizer)
            state.set_text(text)
            state.set_config(model.config)
            state.set_model(model)
            state.set_torch_ready(True)
        return state, panel

    yield build
    for compute, panel in made:
        close_panel_lab(qtbot, compute, panel)


def _show(qtbot, panel, tabs, name):
    view = panel.views[tabs.index(name)]
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(tabs.index(name))
    return view


# ---- Tokens & masks -------------------------------------------------------------------------------------
def test_an_encoder_decoders_three_kinds_of_attention(qtbot, lab):
    model = _model("tiny-encoder-decoder")
    state, panel = lab(TokensPanel, model)
    view = _show(qtbot, panel, SUB_TABS, "Attention")
    assert view.kind_combo.isVisible()
    labels = tuple(CHARS.token_text(t) for t in state.tokens)
    state.set_selected_layer(1)
    state.set_selected_head(2)
    for kind, title, x_label in (("self", "decoder self-attention: decoder block 1, head 2 (causal mask)", "key"),
                                 ("cross", "cross-attention (decoder × source): decoder block 1, head 2 (no mask)",
                                  "source position (key)"),
                                 ("encoder", "encoder self-attention (both ways): encoder block 1, head 2 (no mask)",
                                  "source position (key)")):
        if view.kind_combo.currentData() != kind:
            with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
                view.choose_kind(kind)
        expected = attention_maps(model, state.tokens, attention=kind, tokenizer_or_labels=CHARS)
        assert np.array_equal(view.map.matrix, expected.weights[1, 2]), kind
        assert view.map.plot.getPlotItem().titleLabel.text == title
        assert view.map.plot.getAxis("bottom").labelText == x_label
        assert tuple(view.map.col_labels) == tuple(expected.key_labels)
        assert len(expected.key_labels) == len(labels)  # this lab's encoder reads the same text
    assert view.layer_spin.maximum() == model.config.encoder_layers - 1
    assert panel.settings()["attention"] == "encoder"
    # Causal where it must be: the decoder's own weights above the diagonal are exactly 0, the encoder's are not.
    decoder = attention_maps(model, state.tokens, attention="self").weights
    encoder = attention_maps(model, state.tokens, attention="encoder").weights
    assert (np.triu(decoder, 1) == 0).all() and (np.triu(encoder, 1) > 0).any()


def test_an_encoder_propagates_both_ways_as_expected_and_predicts_no_next_token(qtbot, lab):
    model = _model("tiny-encoder")
    _state, panel = lab(TokensPanel, model)
    view = panel.propagation
    diff = view.result
    expected = causal_edit_diff(model, list(view.shown_inputs.base), diff.edit_position, view.shown_inputs.new_token,
                                tokenizer_or_labels=CHARS)
    assert np.array_equal(view.values, expected.max_change, equal_nan=True)
    verdict = panel.verdict.text()
    assert "as expected for a bidirectional model" in verdict and "✘" not in verdict and "the past moves" not in verdict
    assert "not a leak" in view.note.text()
    assert not view.source_combo.isVisible()
    panel.tabs.setCurrentIndex(SUB_TABS.index("Predictions"))  # refused already, without a computation
    qtbot.waitUntil(lambda: panel.predictions.showing_message, timeout=RESULT_TIMEOUT_MS)
    assert panel.predictions.computations == 0
    assert "is an encoder" in panel.predictions.message.text() and "does not continue text" in panel.predictions.message.text()
    attention = _show(qtbot, panel, SUB_TABS, "Attention")
    assert not attention.kind_combo.isVisible()
    assert attention.map.plot.getPlotItem().titleLabel.text.startswith("self-attention (both ways): block 0")
    assert "An encoder attends both ways" in attention.note.text()


def test_an_encoder_decoders_propagation_with_the_source_fixed_or_edited(qtbot, lab):
    model = _model("tiny-encoder-decoder")
    _state, panel = lab(TokensPanel, model)
    view = panel.propagation
    assert view.source_combo.isVisible()
    assert "bitwise unchanged" in panel.verdict.text()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.source_combo.setCurrentIndex(1)
    inputs = view.shown_inputs
    expected = causal_edit_diff(model, list(inputs.base), inputs.position, inputs.new_token, edit_source=True)
    assert inputs.edit_source and np.array_equal(view.values, expected.max_change, equal_nan=True)
    assert "through cross-attention" in panel.verdict.text() and "✘" not in panel.verdict.text()
    assert "governs only the decoder's self-attention" in view.note.text()


# ---- Tensor shapes --------------------------------------------------------------------------------------
def test_the_shapes_of_an_encoder_decoder_with_its_own_source_length(qtbot, lab):
    model = _model("tiny-encoder-decoder")
    state, panel = lab(ShapesPanel, model)
    assert panel.source_seq_spin.isVisible()
    with qtbot.waitSignal(panel.shapes.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({"batch": 2, "seq": 9, "source_seq": 5})
    expected = trace_shapes(model.config, 2, 9, source_seq=5)
    shown = {panel.table.item(row, 0).text(): panel.table.item(row, 1).text() for row in range(panel.table.rowCount())}
    assert shown == {row.name: "(" + ", ".join(map(str, row.shape)) + ")" for row in expected.rows}
    assert shown["cross-attention weights"] == "(2, 4, 9, 5)" and shown["cross-attention K per head"] == "(2, 4, 5, 16)"
    assert "S=5" in panel.summary.text() and "block 0 of each tower" in panel.summary.text()
    from core.display import format_bytes

    assert f"{format_bytes(expected.all_attention_weights_bytes)} if every layer keeps its weights" in panel.summary.text()
    with qtbot.waitSignal(panel.shapes.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(get_preset("tiny-moe"))
    assert not panel.source_seq_spin.isVisible() and panel.trace.source_seq is None
    assert panel.trace.row("router logits").shape == (2, 9, 4)


def test_a_model_of_a_shorter_context_brings_t_down_to_it(qtbot, lab):
    state, panel = lab(ShapesPanel, _model("tiny-gpt"))
    assert panel.seq_spin.value() == 128
    config = get_preset("tiny-encoder").replace(context_length=64, name="short")
    with qtbot.waitSignal(panel.shapes.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(config)
    assert panel.seq_spin.value() == 64 and panel.trace.seq == 64


# ---- Causal lab -----------------------------------------------------------------------------------------
def test_the_causal_lab_on_an_encoder(qtbot, lab):
    from core.experiments.attribution import direct_logit_attribution
    from core.experiments.patching import activation_patch

    model = _model("tiny-encoder", seed=2)
    state, panel = lab(CausalLabPanel, model)
    view = panel.attribution_view
    expected = direct_logit_attribution(model, state.tokens, None, None, len(state.tokens) - 1)
    assert view.result.total == expected.total and view.result.agrees
    assert "an encoder's logit there scores the token that belongs at that position" in view.summary_label.text()
    panel.tabs.setCurrentIndex(CAUSAL_TABS.index("Ablation"))
    qtbot.waitUntil(lambda: panel.ablation_view.showing_message, timeout=RESULT_TIMEOUT_MS)
    assert "an encoder predicts no next token" in panel.ablation_view.message.text()
    patching = panel.patching_view
    panel.tabs.setCurrentIndex(CAUSAL_TABS.index("Patching"))
    corrupt = list(state.tokens)
    corrupt[1] = (corrupt[1] + 1) % 65
    with qtbot.waitSignal(patching.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.controls._set_corrupt(corrupt)
        patching.position_spin.setValue(2)
    result = activation_patch(model, state.tokens, corrupt, None, None, position=2)
    assert patching.result.position == 2 and np.array_equal(patching.result.values, result.values)
    assert "at position 2 (an encoder's logits there score" in patching.summary_label.text()
    assert panel.settings()["metric_position"] == 2


def test_the_causal_lab_refuses_berts_head_in_words(qtbot, lab, tmp_path):
    loaded = resolve_checkpoint(bert_folder(tmp_path / "bert"))
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = CausalLabPanel(state, compute)
    panel.show()
    try:
        with qtbot.waitSignal(panel.attribution_view.error_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_tokenizer(loaded.tokenizer)
            state.set_text(TEXT)
            state.set_model(loaded.model)
            state.set_torch_ready(True)
        message = panel.attribution_view.message.text()
        assert "head transform" in message and "not linear in the stream" in message
    finally:
        close_panel_lab(qtbot, compute, panel)


# ---- Generate -------------------------------------------------------------------------------------------
def test_generate_refuses_an_encoder_decoder_with_its_reason(qtbot):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = GeneratePanel(state, compute)
    panel.show()
    try:
        with qtbot.waitSignal(panel.sampling.error_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_tokenizer(CHARS)
            state.set_text(TEXT)
            state.set_model(_model("tiny-encoder-decoder"))
            state.set_torch_ready(True)
        text = panel.sampling.message.text()
        assert "is an encoder-decoder: its decoder writes a target for a source" in text
        panel.tabs.setCurrentIndex(1)
        qtbot.waitUntil(lambda: panel.kv_cache.showing_message, timeout=RESULT_TIMEOUT_MS)
        assert "cross-attention's keys and values of the source once" in panel.kv_cache.message.text()
    finally:
        close_panel_lab(qtbot, compute, panel)


# ---- the window: a model without a tokenizer of its own ---------------------------------------------------
def test_a_model_without_its_own_tokenizer_reads_the_labs_characters_not_the_last_models_pieces(qtbot, window, tmp_path):
    folder = bert_folder(tmp_path / "bert")
    state = window.state
    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        window.open_model(folder)
    assert state.tokenizer.vocab_size == 200 and state.model.config.architecture == "encoder"  # BERT's WordPiece
    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        state.set_config(_config("tiny-moe"))  # a random model: no tokenizer of its own
    assert state.tokenizer is window.runtime.tokenizer
    assert state.tokens == window.runtime.tokenizer.encode(state.text) and max(state.tokens) < 65


def test_the_causal_lab_refuses_ids_outside_the_vocabulary_in_words(qtbot, lab):
    state, panel = lab(CausalLabPanel, _model("tiny-moe"))
    for name in ("Attribution", "Patching", "Ablation"):
        panel.tabs.setCurrentIndex(CAUSAL_TABS.index(name))
        view = panel.views[CAUSAL_TABS.index(name)]
        with qtbot.waitSignal(view.error_shown, timeout=RESULT_TIMEOUT_MS):
            state.set_tokens([3, 100 + CAUSAL_TABS.index(name), 5])  # ids a tokenizer of a bigger vocabulary makes
        assert "outside random-tiny-moe's vocabulary of 65" in view.message.text() and view.last_error == "", name
