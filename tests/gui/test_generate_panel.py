"""The Generate panel shows what core.sampling and core.experiments.kv_cache compute, and steps the tokens."""

from __future__ import annotations


import numpy as np
import pyqtgraph as pg
import pytest
import torch

from core import sampling
from core.display import display_token
from core.experiments import kv_cache
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from core.training import generate
from gui.compute import ComputeController
from gui.panels.generate import SUB_TABS, GeneratePanel
from gui.state import LabState
from resources import resource_path
from tests.gui.panel_labs import close_panel_lab

RESULT_TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def model():
    return Transformer.from_seed(get_preset("tiny-gpt"), seed=0).eval()


@pytest.fixture(scope="module")
def tokenizer():
    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


@pytest.fixture
def lab(qtbot, model, tokenizer):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = GeneratePanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.sampling.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(tokenizer)
        state.set_model(model)
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def last_logits(model, tokens) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tokens]))[0, -1]  # (V,)


def change(qtbot, view, action) -> None:
    """Do `action`; the view is stale (numbers cleared, plot titles faded) at once, then shows the new result."""
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        action()
        assert view.is_stale or view.showing_message
        assert all(label.text().strip() == "" for label in (*view.stale_labels, *view.readouts))
        has_plots = bool(view.content.findChildren(pg.PlotWidget))
        assert view.showing_message or not has_plots or view._stale.titles_faded()
    assert not view._stale.titles_faded()


def test_the_sampling_view_shows_core_samplings_numbers(qtbot, lab, model):
    state, panel = lab
    view = panel.sampling
    change(qtbot, view, lambda: panel.top_p_spin.setValue(0.8))
    change(qtbot, view, lambda: panel.top_k_spin.setValue(8))
    change(qtbot, view, lambda: panel.temperature_spin.setValue(0.7))
    expected = sampling.next_token_sampling(last_logits(model, state.tokens), len(state.tokens) - 1, 0.7, 8, 0.8,
                                            seed=0, draw_index=0)
    shown = view.result.sampling
    assert np.array_equal(shown.kept, expected.kept) and shown.token == expected.token
    assert np.allclose(shown.probabilities, expected.probabilities, rtol=0, atol=1e-6)
    assert f"{expected.entropy_nats:.3f} nats = {expected.entropy_bits:.3f} bits" in panel.entropy_label.text()
    assert f"Kept {expected.kept_count:,} of" in panel.entropy_label.text()
    assert f"u = {expected.uniform:.6f}" in panel.draw_label.text()
    # The cut-off lines sit between the last kept bar and the first cut one (bars in the model's order).
    assert view.top_p_line.isVisible() and view.top_p_line.value() == expected.kept_count - 0.5
    assert view.top_k_line.isVisible() and view.top_k_line.value() == 7.5
    bar_widths = view.sampled_bars.opts["width"]
    assert np.allclose(bar_widths, expected.probabilities[view.result.order], atol=1e-7)


def test_adding_up_the_bars_as_drawn_lands_on_the_drawn_token(qtbot, lab, model):
    """The bars go in the order the draw sums them: the running total passes u exactly at the drawn bar."""
    state, panel = lab
    view = panel.sampling
    for draw in range(1, 7):
        change(qtbot, view, lambda d=draw: panel.draw_spin.setValue(d))
        result = view.result
        widths = np.asarray(view.sampled_bars.opts["width"], dtype=np.float64)  # (N,) the filled bars as drawn
        total = np.cumsum(widths)  # (N,) what a student adds up, top down
        u = result.sampling.uniform
        rank = result.drawn_rank
        if rank < len(widths):
            assert int(result.order[rank]) == result.sampling.token
            assert total[rank] > u - 1e-6 and (rank == 0 or total[rank - 1] <= u + 1e-6)
            assert f"(rank {rank + 1}, " in panel.draw_label.text() and "first passes u at its bar" in panel.draw_label.text()
        else:  # an untrained model's flat distribution: the total passes u further down
            assert total[-1] <= u + 1e-6 and "below the" in panel.draw_label.text()
        assert np.allclose(view.running_total_curve.xData, total, atol=1e-6)
        assert view.uniform_line.value() == pytest.approx(u)


def test_sample_next_appends_the_draw_and_steps_equal_generate(qtbot, lab, model):
    state, panel = lab
    view = panel.sampling
    change(qtbot, view, lambda: panel.seed_spin.setValue(7))
    change(qtbot, view, lambda: panel.top_k_spin.setValue(5))
    prompt = state.tokens
    for _ in range(4):
        drawn = view.result.sampling.token
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            assert view.sample_next()
            assert view.is_stale and panel.draw_label.text() == "" and not panel.sample_button.isEnabled()
        assert state.tokens[-1] == drawn
    assert panel.draw_spin.value() == 4
    assert state.tokens == generate(model, prompt, 4, temperature=1.0, top_k=5, seed=7)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        assert view.step_back()
    assert state.tokens == generate(model, prompt, 3, temperature=1.0, top_k=5, seed=7)
    assert panel.draw_spin.value() == 3
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.undo_stack.undo()  # the step back is an undoable edit like the strip's
    assert len(state.tokens) == len(prompt) + 4
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text("A new prompt")
    assert panel.draw_spin.value() == 0  # a new prompt starts at the seed's first draw


def test_sample_next_refuses_while_stale(qtbot, lab):
    state, panel = lab
    before = state.tokens
    with qtbot.waitSignal(panel.sampling.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.temperature_spin.setValue(1.5)
        assert not panel.sampling.sample_next()  # the shown draw belongs to the old temperature
    assert state.tokens == before


def test_greedy_draws_the_argmax(qtbot, lab, model):
    state, panel = lab
    change(qtbot, panel.sampling, lambda: panel.temperature_spin.setValue(0.0))
    assert panel.sampling.result.sampling.token == int(last_logits(model, state.tokens).argmax())
    assert "0.000 nats" in panel.entropy_label.text()


def test_the_kv_cache_view_proves_the_cache(qtbot, lab, model):
    state, panel = lab
    view = panel.kv_cache
    assert view.computations == 0  # hidden: no work
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentWidget(view)
    assert view.computations == 1
    proof = view.result
    assert proof.prefill_length == len(state.tokens) - 8 and len(proof.steps) == 8
    expected = kv_cache.kv_cache_proof(model, state.tokens, 8)
    assert proof.measured_bytes_per_token == expected.measured_bytes_per_token
    assert f"{proof.measured_bytes_per_token:,} bytes per token" in panel.bytes_label.text()
    assert proof.cause in panel.proof_label.text()
    assert panel.steps_table.rowCount() == 9 and panel.layers_table.rowCount() == model.config.n_layers
    assert panel.variants_table.rowCount() == len(proof.variants) == 3
    assert panel.variants_table.item(0, 0).text() == "multi-head (this model)"
    tokenizer = state.tokenizer  # each decoded token is named as the text shows it, with its id
    for row, step in enumerate(proof.steps, start=1):
        assert panel.steps_table.item(row, 2).text() == f"'{display_token(tokenizer.token_text(step.token))}' ({step.token})"
    change(qtbot, view, lambda: panel.decode_steps_spin.setValue(3))
    assert len(view.result.steps) == 3 and panel.steps_table.rowCount() == 4
    change(qtbot, view, lambda: state.set_text("To be or not"))
    assert view.result.prefill_length == len(state.tokens) - 3


def test_hidden_views_do_no_work_and_catch_up(qtbot, lab):
    state, panel = lab
    sampling_view, cache_view = panel.sampling, panel.kv_cache
    before = cache_view.computations
    with qtbot.waitSignal(sampling_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text("Now is the winter")
    assert cache_view.computations == before and cache_view.is_stale is False
    with qtbot.waitSignal(cache_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentWidget(cache_view)
    assert cache_view.computations == before + 1
    count = sampling_view.computations
    with qtbot.waitSignal(cache_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_text("Now is the summer")
    assert sampling_view.computations == count  # hidden now
    with qtbot.waitSignal(sampling_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentWidget(sampling_view)
    assert sampling_view.computations == count + 1


def test_an_encoder_is_refused_in_words(qtbot, lab):
    state, panel = lab
    encoder = Transformer.from_seed(get_preset("tiny-gpt").replace(architecture="encoder", attention="bidirectional"))
    with qtbot.waitSignal(panel.sampling.error_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(encoder)
    text = panel.sampling.message.text()
    assert panel.sampling.showing_message and "is an encoder" in text and "does not continue text" in text


def test_settings_round_trip(qtbot, lab):
    _, panel = lab
    panel.restore_settings({"temperature": 0.5, "top_k": 7, "top_p": 0.9, "seed": 3, "decode_steps": 4,
                            "sub_tab": "KV cache"})
    assert panel.settings() == {"sub_tab": "KV cache", "temperature": 0.5, "top_k": 7, "top_p": 0.9, "seed": 3,
                                "decode_steps": 4}
    panel.restore_settings({"temperature": "hot", "top_k": True, "sub_tab": "nope", "top_p": float("nan")})
    assert panel.settings()["temperature"] == 0.5 and panel.settings()["top_k"] == 7
    assert tuple(panel.tabs.tabText(i) for i in range(panel.tabs.count())) == SUB_TABS


def test_the_panel_is_registered():
    from gui.panels import PANEL_CLASSES

    assert GeneratePanel in PANEL_CLASSES


def test_the_hover_readout_reads_the_bar_under_the_cursor_and_clears_when_stale(qtbot, lab, model):
    state, panel = lab
    view = panel.sampling
    view._hover_row = 1
    view.refresh_hover()
    token_id = int(view.result.order[1])
    probability = float(view.result.sampling.model_probabilities[token_id])
    assert f"(id {token_id}, rank 2)" in view.hover_label.text() and f"{probability:.3f}" in view.hover_label.text()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.top_k_spin.setValue(1)
        assert view.hover_label.text().strip() == ""
        view.refresh_hover()  # a hover while stale prints nothing
        assert view.hover_label.text().strip() == ""
    assert "cut by top-k" in view.hover_label.text()  # recomputed for the new result: rank 2 is cut now
