"""The "Reading's script" mode of the Tokens & masks and Positions panels: the window shows the figures the
reading prints, computed here by the reading's own scripts; a changed seed clears them at once; leaving
the mode shows the user's model, tokens and settings as they were, without recomputing them."""

from __future__ import annotations


import numpy as np
import pytest
from PySide6.QtCore import Qt

from core.experiments.reading import causal_printout, permutation_printout, rope_printout
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.compute import ComputeController
from gui.panels.positions import PositionsPanel
from gui.panels.tokens import TokensPanel
from gui.state import LabState
from resources import resource_path
from tests.core.test_causal import _ReadingBlock, _run_reading_script
from tests.core.test_positions import reading_permutation_script, reading_rope_script
from tests.float32 import assert_printed_close, float32_tolerance, printed_tolerance
from tests.reading_figures import READING_LINES, READING_SCALE
from tests.gui.panel_labs import close_panel_lab

RESULT_TIMEOUT_MS = 30_000
READING_PERMUTATION = {"no PE:  max |attn(shuffled x) - shuffle(attn(x))|": "0.00000012",
                       "with PE: max |attn(shuffled x+PE) - shuffle(attn(x+PE))|": "0.14426041"}
PERMUTATION_SCALE = 0.15
TEXT = "To be, o"  # the textbook block's context: 8 tokens


@pytest.fixture(scope="module")
def tokenizer():
    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


def _lab(qtbot, tokenizer, panel_class):
    """A panel on a LabState with the textbook-block preset loaded, showing its first result.

    The fixture owns the panel's lifetime (no qtbot.addWidget): the worker may still have a result
    on its way to the panel when pytest-qt would close it.
    """
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = panel_class(state, compute)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(tokenizer)
        state.set_text(TEXT)
        state.set_model(Transformer.from_seed(get_preset("textbook-block"), seed=0).eval())
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


@pytest.fixture
def tokens_lab(qtbot, tokenizer):
    yield from _lab(qtbot, tokenizer, TokensPanel)


@pytest.fixture
def positions_lab(qtbot, tokenizer):
    yield from _lab(qtbot, tokenizer, PositionsPanel)


def enter(qtbot, panel) -> dict[str, str]:
    view = panel.reading_view
    assert panel.tabs.cornerWidget(Qt.Corner.TopLeftCorner) is panel.reading_check and panel.reading_check.isVisible()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.reading_check.setChecked(True)
        # Above the view, outside its content: it can be unchecked while the view says "Computing...".
        assert view.showing_message and panel.reading_check.isVisible() and panel.reading_seed_spin.isVisible()
    assert panel.reading_script and view.isVisible() and not panel.tabs.isVisible()
    return view.shown_figures()


def leave(panel) -> None:
    panel.reading_check.setChecked(False)
    assert not panel.reading_script and panel.tabs.isVisible() and not panel.reading_seed_spin.isVisible()
    assert panel.tabs.cornerWidget(Qt.Corner.TopLeftCorner) is panel.reading_check and panel.reading_check.isVisible()


def assert_cleared_now(view) -> None:
    """Stale the moment its input changed: no figure, setup or contrast line of the old seed is readable."""
    assert view.is_stale
    assert all(text == "" for text in view.shown_figures().values())
    assert all(label.text() == "" for label in view.stale_labels)


# ---- Tokens & masks ----------------------------------------------------------------------------------
def test_the_tokens_mode_shows_the_readings_figures_from_its_script_run_here(qtbot, tokens_lab):
    _state, panel = tokens_lab
    shown = enter(qtbot, panel)
    diff, diff_nc = _run_reading_script()
    assert int(shown["parameters"]) == sum(p.numel() for p in _ReadingBlock(64, 4, 256).parameters())
    for t, script in enumerate(diff.tolist()):
        figure = shown[f"position {t}: max |change|"]
        if t < 5:
            assert float(figure) == script == 0.0
        else:
            assert abs(float(figure) - script) <= printed_tolerance(figure) + float32_tolerance(READING_SCALE)
    past = shown["no mask, positions 0-4 max |change|"]
    assert abs(float(past) - float(diff_nc[:5].max())) <= printed_tolerance(past)
    # ... and they are the figures the reading prints, to its digits and float32 rounding.
    for expected in READING_LINES:
        words, _, figure = expected.rpartition(" = ")
        if words:
            assert_printed_close(shown[words], figure, READING_SCALE)
    assert "x ~ N(0,1), seed 0, as in the reading" in panel.reading_view.setup_label.text()
    assert "token embeddings" in panel.reading_view.contrast_label.text()
    heights = panel.reading_view.masked_bars.opts["height"]
    np.testing.assert_array_equal(heights, causal_printout().masked_change)


def test_a_new_seed_clears_the_tokens_figures_at_once_then_shows_that_seeds_script(qtbot, tokens_lab):
    _state, panel = tokens_lab
    enter(qtbot, panel)
    view = panel.reading_view
    computations = view.computations
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.reading_seed_spin.setValue(7)
        assert_cleared_now(view)
        assert not view.masked_bars.isVisible()
    assert view.computations == computations + 1
    expected = causal_printout(7)
    shown = view.shown_figures()
    for line in expected.lines:
        if line.value is not None:
            assert abs(float(shown[line.caption]) - line.value) <= printed_tolerance(line.figure)
    assert "seed 7 (the reading's is 0)" in view.setup_label.text()


def test_the_tokens_mode_computes_only_on_screen_and_reads_none_of_the_lab(qtbot, tokens_lab, tokenizer):
    state, panel = tokens_lab
    view = panel.reading_view
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        assert panel.strip.replace_at(3, tokenizer.id_of("Z"))
    assert view.computations == 0  # hidden until the mode is entered
    enter(qtbot, panel)
    assert view.computations == 1
    propagation = panel.propagation.computations
    state.set_text("or not t")
    qtbot.waitUntil(lambda: not view.update_scheduled and not panel.propagation.update_scheduled)
    assert not view.is_stale and view.computations == 1  # the script reads no tokens
    assert panel.propagation.computations == propagation  # hidden behind the script
    with qtbot.waitSignal(panel.propagation.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.reading_check.setChecked(False)
    assert panel.propagation.shown_inputs.base == tuple(state.tokens)  # caught up with the edit made meanwhile


def test_leaving_the_tokens_mode_restores_the_users_model_tokens_and_settings(qtbot, tokens_lab, tokenizer):
    state, panel = tokens_lab
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.mode_combo.setCurrentIndex(panel.mode_combo.findData("none"))
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        assert panel.strip.replace_at(4, tokenizer.id_of("Q"))
    model, tokens, settings = state.model, list(state.tokens), panel.settings()
    shown_inputs, verdict = panel.propagation.shown_inputs, panel.verdict.text()
    computations = panel.propagation.computations
    enter(qtbot, panel)
    assert panel.settings()["reading_script"] is True
    leave(panel)
    assert panel.current_view() is panel.propagation
    assert state.model is model and state.tokens == tokens
    assert panel.settings() == settings
    assert panel.propagation.shown_inputs == shown_inputs and not panel.propagation.is_stale
    assert panel.verdict.text() == verdict and panel.propagation.computations == computations


def test_the_tokens_mode_round_trips_through_settings_and_a_lesson_step_leaves_it(qtbot, tokens_lab):
    _state, panel = tokens_lab
    panel.restore_settings({"reading_script": True, "reading_seed": 3})
    assert panel.reading_script and panel.reading_check.isChecked() and panel.reading_seed_spin.value() == 3
    saved = panel.settings()
    assert saved["reading_script"] is True and saved["reading_seed"] == 3
    panel.restore_settings({"sub_tab": "Mask"})  # a lesson step that sets up a sub-tab
    assert not panel.reading_script and panel.current_view() is panel.mask
    panel.restore_settings(saved)
    assert panel.reading_script
    panel.restore_settings({"reading_script": "yes", "reading_seed": 2.5})
    assert not panel.reading_script and panel.reading_seed_spin.value() == 3


# ---- Positions ---------------------------------------------------------------------------------------
def test_the_positions_mode_shows_the_readings_figures_from_its_scripts_run_here(qtbot, positions_lab):
    _state, panel = positions_lab
    shown = enter(qtbot, panel)
    rope_scores, additive = reading_rope_script()
    rope = [line for line in rope_printout().lines]
    assert len(rope) == len(rope_scores) + len(additive)
    for line, script in zip(rope, [*rope_scores, *additive]):
        figure = shown[line.caption]
        assert abs(float(figure) - script) <= printed_tolerance(figure)
    no_pe, with_pe, _pe = reading_permutation_script()
    for caption, script in zip(READING_PERMUTATION, (no_pe, with_pe)):
        figure = shown[caption]
        assert abs(float(figure) - script) <= printed_tolerance(figure)
        assert_printed_close(figure, READING_PERMUTATION[caption], PERMUTATION_SCALE)  # the reading's printed figure
    setups = (panel.reading_view.permutation_section.setup.text(), panel.reading_view.rope_section.setup.text())
    assert "x ~ N(0,1), seed 0, as in the reading" in setups[0] and "seed 0, as in the reading" in setups[1]
    assert "fused QKV" in panel.reading_view.permutation_section.contrast.text()


def test_a_new_seed_clears_the_positions_figures_at_once_then_shows_that_seeds_scripts(qtbot, positions_lab):
    _state, panel = positions_lab
    enter(qtbot, panel)
    view = panel.reading_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        view.reading_seed_spin.setValue(11)
        assert_cleared_now(view)
    shown = view.shown_figures()
    for line in (*rope_printout(11).lines, *permutation_printout(11).lines):
        if line.value is not None:
            assert abs(float(shown[line.caption]) - line.value) <= printed_tolerance(line.figure)


def test_leaving_the_positions_mode_restores_the_views_and_settings(qtbot, positions_lab):
    _state, panel = positions_lab
    with qtbot.waitSignal(panel.scrubber_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.base_spin.setValue(500.0)
    settings, score = panel.settings(), panel.rope_score_label.text()
    scrubber = panel.scrubber_view
    computations, shown_inputs = scrubber.computations, scrubber.shown_inputs
    enter(qtbot, panel)
    assert panel.reading_view.computations == 1
    leave(panel)
    assert panel.current_view() is scrubber
    assert {k: v for k, v in panel.settings().items() if not k.startswith("reading")} == \
           {k: v for k, v in settings.items() if not k.startswith("reading")}
    assert scrubber.shown_inputs == shown_inputs and not scrubber.is_stale and scrubber.computations == computations
    assert panel.rope_score_label.text() == score
    panel.restore_settings({**settings, "reading_script": True})
    assert panel.reading_script
    panel.restore_settings({"tab": "Permutation"})
    assert not panel.reading_script and panel.current_view() is panel.permutation_view
