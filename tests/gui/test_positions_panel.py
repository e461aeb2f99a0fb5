"""The Positions panel: the RoPE scrubber shows core's scores while dragging, a locked offset keeps RoPE flat,
the permutation check tells noise from order, q/k can come from a RoPE model; and every view is stale the
moment one of its inputs changes, computes only while on screen, and never shows a number of old inputs."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pyqtgraph as pg
import pytest
import torch
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication, QWidget

from core.experiments.positions import (
    alibi_matrix,
    model_qk,
    permutation_equivariance,
    random_learned_table,
    rope_score,
    rope_score_grid,
    seeded_qk,
    sinusoidal_heatmap,
    sinusoidal_pe_table,
)
from core.model import Transformer
from core.presets import get_preset
from gui import theme
from gui.panels import PANEL_CLASSES
from gui.panels.positions import SUB_TABS, PositionsPanel, format_difference, parse_permutation
from gui.state import LabState

READING_PAIR = seeded_qk(0, 8)  # the reading's np.random.seed(0), d = 8
RESULT_TIMEOUT_MS = 30_000
# Scores are float64 dot products of O(1) vectors over at most 512 positions: the grid and a single
# rope_score round differently, by a few hundred float64 epsilons at most.
F64_TOLERANCE = 1024 * float(np.finfo(np.float64).eps)
# q and k taken from a float32 model: the test's forward and the worker's may round differently.
F32_RELATIVE = 256 * float(np.finfo(np.float32).eps)
READING_PRINTED = 1e-9  # the reading prints ten decimals


@pytest.fixture
def state():
    return LabState()


@pytest.fixture
def panel(qtbot, state, compute):
    widget = PositionsPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.show()
    with qtbot.waitSignal(widget.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_torch_ready(True)
    assert widget.last_error == ""
    yield widget
    qtbot.waitUntil(lambda: not compute.busy, timeout=RESULT_TIMEOUT_MS)


@pytest.fixture
def hold_worker(compute):
    """Keep the one worker busy on another channel, so a view's request waits until release()."""
    gate = threading.Event()

    def hold() -> None:
        compute.submit("test-hold", lambda token: gate.wait(RESULT_TIMEOUT_MS / 1000), lambda _result: None, "hold")

    yield hold, gate.set
    gate.set()


def shown_rope(panel) -> float:
    return float(panel.rope_score_label.text())


def shown_sinusoidal(panel) -> float:
    return float(panel.sinusoidal_score_label.text())


def additive_score(m: int, n: int) -> float:
    table = sinusoidal_pe_table(max(m, n) + 1, 8)
    return float((READING_PAIR.q + table[m]) @ (READING_PAIR.k + table[n]))


def show_tab(qtbot, panel, name: str):
    """Bring a sub-tab on screen and wait until its view shows the result of its current inputs."""
    view = panel.views[SUB_TABS.index(name)]
    panel.tabs.setCurrentIndex(SUB_TABS.index(name))
    qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None and view.shown_inputs == view.inputs(),
                    timeout=RESULT_TIMEOUT_MS)
    return view


def wait_current(qtbot, view) -> None:
    qtbot.waitUntil(lambda: not view.is_stale and view.shown_inputs is not None and view.shown_inputs == view.inputs(),
                    timeout=RESULT_TIMEOUT_MS)


def assert_stale_now(view, what: str) -> None:
    """Nothing the view showed for the old inputs can still be read."""
    assert view.is_stale or view.showing_message, what
    assert all(label.text().strip() == "" for label in view.readouts), what
    assert all(label.text() == "" for label in view.stale_labels), what
    for child in view.content.findChildren(QWidget, "heatmap-readout"):
        assert child.text().strip() == "", what


def hover_cell(heatmap, row: int, col: int) -> None:
    """What moving the mouse over a heatmap cell does."""
    heatmap._mouse_moved(heatmap.plot.getViewBox().mapViewToScene(QPointF(col + 0.5, row + 0.5)))


def test_the_panel_is_registered():
    assert PositionsPanel in PANEL_CLASSES
    assert SUB_TABS == ("RoPE scrubber", "Score grids", "Encodings", "Permutation")


def test_sliders_and_lines_drag_the_score(qtbot, panel):
    q, k = READING_PAIR.q, READING_PAIR.k
    assert panel.shown_scores()[0] == pytest.approx(rope_score(q, k, 3, 1), abs=F64_TOLERANCE)
    assert shown_rope(panel) == pytest.approx(5.9478093347, abs=READING_PRINTED)  # the reading's m = 3, n = 1
    panel.m_slider.setValue(13)
    panel.n_slider.setValue(11)
    assert (panel.m, panel.n) == (13, 11)
    assert panel.shown_scores()[0] == pytest.approx(rope_score(q, k, 13, 11), abs=F64_TOLERANCE)
    assert panel.shown_scores()[1] == pytest.approx(additive_score(13, 11), abs=F64_TOLERANCE)
    assert panel.rope_score_label.text() == f"{panel.shown_scores()[0]:.10f}"

    panel.m_line.setValue(40.3)  # what a mouse drag of the dashed line does
    panel.n_line.setValue(25)
    assert (panel.m, panel.n) == (40, 25)
    assert (panel.m_slider.value(), panel.n_slider.value()) == (40, 25)
    assert panel.shown_scores()[0] == pytest.approx(rope_score(q, k, 40, 25), abs=F64_TOLERANCE)
    assert panel.n_line.value() == 25 and panel.m_caption.text() == "query m = 40"
    assert panel.offset_label.text() == "m - n = 15"
    # The title names the offset of the trace drawn under it in the same update, not after the drag pauses.
    assert "offset m - n = 15" in panel.trace_plot.getPlotItem().titleLabel.text
    computed = panel.scrubber_view.computations
    for m in range(60, 90):
        panel.m_slider.setValue(m)
        drawn_m, _, _ = panel.locked_traces()
        offset = m - panel.n
        assert f"offset m - n = {offset} " in panel.trace_plot.getPlotItem().titleLabel.text + " "
        assert drawn_m[0] == max(0, offset)  # the trace drawn is that offset's diagonal
    assert panel.scrubber_view.computations == computed  # a drag indexes the shown arrays, it never computes


def test_locked_offset_keeps_rope_flat_and_sinusoids_drift(panel):
    panel.m_slider.setValue(3)
    panel.n_slider.setValue(1)
    panel.lock_check.setChecked(True)
    rope_seen, sinusoidal_seen = [], []
    for m in (3, 13, 103):
        panel.m_slider.setValue(m)
        assert panel.n == m - 2 and panel.n_slider.value() == m - 2
        rope, sinusoidal = panel.shown_scores()
        rope_seen.append(rope)
        sinusoidal_seen.append(sinusoidal)
    assert rope_seen == pytest.approx([rope_score(READING_PAIR.q, READING_PAIR.k, 3, 1)] * 3, abs=F64_TOLERANCE)
    assert sinusoidal_seen == pytest.approx([additive_score(m, m - 2) for m in (3, 13, 103)], abs=F64_TOLERANCE)
    # The reading's drift at offset 2:
    assert sinusoidal_seen == pytest.approx([12.0287056485, 8.2543303859, 7.0843151351], abs=READING_PRINTED)

    xs, rope, sinusoidal = panel.locked_traces()
    assert xs[0] == 2 and xs[-1] == panel.positions_spin.value() - 1
    assert np.ptp(rope) < F64_TOLERANCE
    assert np.ptp(sinusoidal) > 1.0

    panel.n_line.setValue(50)  # with the lock, dragging the key moves the query too
    assert (panel.m, panel.n) == (52, 50)
    panel.m_slider.setValue(1)  # the key cannot go below 0, so m stops at the offset
    assert (panel.m, panel.n) == (2, 0) and panel.m_slider.value() == 2


def test_norms_are_preserved_and_shown_as_noise(panel):
    text = panel.norm_label.text()
    assert f"‖q‖ = {np.linalg.norm(READING_PAIR.q):.10f}" in text
    assert "e-1" in text and "largest change" in text  # measured, like 8.88e-16, never a rounded 0
    assert np.abs(panel.scrubber.q_norms - panel.scrubber.q_norm).max() < F64_TOLERANCE


def test_permutation_separates_noise_from_order(qtbot, panel):
    view = show_tab(qtbot, panel, "Permutation")
    figures = panel.permutation_figures()
    expected = permutation_equivariance(None, seed=0, T=6, d_model=32)
    assert figures == {name: float(value) for name, value in zip(expected.encodings, expected.max_diff)}
    assert figures["none"] <= expected.noise_tolerance
    assert all(figures[name] > 1e3 * expected.noise_tolerance for name in ("sinusoidal", "learned", "rope"))
    none_text = panel.permutation_table.item(0, 1).text()
    assert none_text == format_difference(figures["none"]) and "e-" in none_text
    assert panel.permutation_edit.text() == "3 1 5 0 2 4"
    summary = panel.permutation_summary.text()  # the lesson quotes it: the table's numbers, in words
    assert f"no encoding: {none_text} (within float noise)" in summary
    assert f"sinusoidal (added): {format_difference(figures['sinusoidal'])} (above float noise)" in summary
    decades = math.log10(figures["sinusoidal"] / figures["none"])
    assert f"lifts it {decades:.1f} orders of magnitude" in summary

    shown = view.result
    computed = view.computations
    for text, message in (("3 1 5 0 2", "5 entries"), ("3 1 1 0 2 4", "more than once"), ("a b", "not a position"),
                          ("3 1 5 0 2 9", "outside 0..5")):
        panel.permutation_edit.setText(text)
        panel.permutation_edit.editingFinished.emit()
        assert not panel.permutation_message.isHidden()
        assert message in panel.permutation_message.text()
        assert view.result is shown and not view.is_stale  # the last result stays, and it is still current
    assert view.computations == computed

    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.permutation_edit.setText("5 4 3 2 1 0")
        panel.permutation_edit.editingFinished.emit()
        assert_stale_now(view, "order")
        assert panel.permutation_table.item(0, 1).text() == "" and panel.permutation_figures() == {}
        assert panel.permutation_summary.text() == ""
    assert panel.permutation_message.isHidden()
    assert list(view.result.permutation) == [5, 4, 3, 2, 1, 0]
    assert panel.permutation_figures()["none"] <= expected.noise_tolerance


def test_parse_permutation_and_formatting():
    assert parse_permutation("3, 1 5 0 2 4", 6) == (3, 1, 5, 0, 2, 4)
    with pytest.raises(ValueError, match="6 tokens"):
        parse_permutation("0 1", 6)
    with pytest.raises(ValueError, match="Type the new order"):
        parse_permutation("  ", 3)
    assert format_difference(1.2e-07) == "1.20e-07"
    assert format_difference(0.0) == "0 (exactly)"


def test_from_model_needs_rope_and_uses_trained_vectors(qtbot, state, panel):
    item = panel.source_combo.model().item(1)
    assert not item.isEnabled()
    gpt = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    state.set_tokens([5, 9, 14, 3, 7, 22, 11])
    encodings = show_tab(qtbot, panel, "Encodings")
    with qtbot.waitSignal(encodings.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(gpt)
    assert not item.isEnabled()
    assert "learned" in item.toolTip() and "tiny-llama" in item.toolTip()
    assert not panel.learned_map.isHidden()
    assert panel.learned_map.matrix.shape == tuple(gpt.pos_emb.weight.shape)

    llama = Transformer.from_seed(get_preset("tiny-llama"), seed=0)
    with qtbot.waitSignal(encodings.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(llama)
    assert item.isEnabled()
    assert panel.learned_map.isHidden() and "uses RoPE positions" in panel.learned_note.text()
    scrubber = show_tab(qtbot, panel, "RoPE scrubber")
    with qtbot.waitSignal(scrubber.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.source_combo.setCurrentIndex(1)
    wait_current(qtbot, scrubber)
    assert panel.last_error == ""
    assert (panel.base_spin.value(), panel.scale_spin.value()) == (llama.config.rope_base, llama.config.rope_scale)
    layer, head = panel.layer_spin.value(), panel.head_spin.value()
    q_token, k_token = panel.query_token_spin.value(), panel.key_token_spin.value()
    pair = model_qk(llama, torch.tensor(state.tokens), layer, head, q_token, k_token)
    assert panel.scrubber.q.shape == (llama.config.d_head,)
    panel.m_slider.setValue(20)
    panel.n_slider.setValue(7)
    expected = rope_score(pair.q, pair.k, 20, 7, pair.base, pair.scale)
    assert panel.shown_scores()[0] == pytest.approx(expected, rel=F32_RELATIVE, abs=F32_RELATIVE)
    assert "tiny-llama" in panel.source_label.text()
    panel.compare_sinusoidal_check.setChecked(False)  # trained q, k are short: fit the axis to RoPE alone
    assert not panel.trace_sinusoidal.isVisible()
    low, high = panel.row_plot.getViewBox().viewRange()[1]
    assert low <= panel.scrubber.rope.min() and high - low < 2 * np.ptp(panel.scrubber.rope)

    # The pair's inputs: each marks the scrubber stale at once and brings the new pair's scores.
    for what, change in (("tokens", lambda: state.set_tokens([5, 9, 14, 3, 7, 22, 12])),
                         ("query token", lambda: panel.query_token_spin.setValue(q_token - 1)),
                         ("key token", lambda: panel.key_token_spin.setValue(k_token + 1)),
                         ("head", lambda: panel.head_spin.setValue((head + 1) % llama.config.n_heads)),
                         ("layer", lambda: panel.layer_spin.setValue((layer + 1) % llama.config.n_layers))):
        before = scrubber.shown_inputs
        change()
        assert_stale_now(scrubber, what)
        assert panel.source_label.text() == ""
        wait_current(qtbot, scrubber)
        assert scrubber.shown_inputs != before, what
    source = scrubber.shown_inputs.source
    pair = model_qk(llama, torch.tensor(source.tokens), source.layer, source.head, source.query_token,
                    source.key_token)
    np.testing.assert_allclose(panel.scrubber.q, pair.q, rtol=F32_RELATIVE, atol=F32_RELATIVE)

    with qtbot.waitSignal(scrubber.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(gpt)  # the option goes away, and the panel falls back to the random pair
    assert panel.source_combo.currentIndex() == 0 and not item.isEnabled()
    assert panel.scrubber.label == READING_PAIR.label


def test_a_model_change_does_not_touch_the_random_pair(qtbot, state, panel):
    scrubber = panel.scrubber_view
    shown, computed = scrubber.shown_inputs, scrubber.computations
    state.set_model(Transformer.from_seed(get_preset("tiny-llama"), seed=0))
    state.set_tokens([1, 2, 3])
    qtbot.waitUntil(lambda: not scrubber.update_scheduled, timeout=RESULT_TIMEOUT_MS)
    assert not scrubber.is_stale and scrubber.shown_inputs == shown and scrubber.computations == computed
    assert panel.rope_score_label.text() != ""


def test_every_scrubber_input_marks_it_stale_at_once_and_brings_core_s_scores(qtbot, panel):
    view = panel.scrubber_view
    for control, value in (("seed_spin", 3), ("d_spin", 16), ("base_spin", 500.0), ("scale_spin", 4.0),
                           ("positions_spin", 64)):
        panel.m_slider.setValue(9)
        panel.n_slider.setValue(4)
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            getattr(panel, control).setValue(value)
            assert_stale_now(view, control)
            assert panel.source_label.text() == ""
            panel.m_slider.setValue(12)  # a drag while stale writes no old score
            assert panel.rope_score_label.text() == "" and panel.m == 12
        pair = seeded_qk(panel.seed_spin.value(), panel.d_spin.value())
        expected = rope_score(pair.q, pair.k, 12, 4, panel.base_spin.value(), panel.scale_spin.value())
        assert panel.shown_scores()[0] == pytest.approx(expected, abs=F64_TOLERANCE * max(1.0, abs(expected))), control
        assert panel.rope_score_label.text() == f"{panel.shown_scores()[0]:.10f}"
        assert panel.scrubber.positions.shape == (panel.positions_spin.value(),)
        assert panel.source_label.text() == pair.label


def test_a_theme_change_while_stale_shows_no_old_number(qtbot, state, panel, hold_worker):
    hold, release = hold_worker
    view = panel.scrubber_view
    hold()
    panel.base_spin.setValue(900.0)
    assert_stale_now(view, "base")
    try:
        state.set_font_scale(1.3)
        assert_stale_now(view, "font scale while stale")
    finally:
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            release()
        state.set_font_scale(1.0)
    assert shown_rope(panel) == pytest.approx(panel.shown_scores()[0], abs=1e-10)


def test_the_norm_readout_keeps_its_two_lines_after_going_stale(qtbot, state, panel, hold_worker):
    from PySide6.QtGui import QFontMetrics

    hold, release = hold_worker
    view, label = panel.scrubber_view, panel.scrubber_view.norm_label

    def two_lines() -> int:
        return 2 * QFontMetrics(theme.font()).lineSpacing()

    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.seed_spin.setValue(5)  # stale, then fresh: the height held while stale is let go
    assert label.minimumHeight() == two_lines()
    hold()
    panel.seed_spin.setValue(6)
    assert_stale_now(view, "seed")
    try:
        state.set_font_scale(1.6)  # a larger text while stale: the readout's own minimum follows it
    finally:
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            release()
    assert label.minimumHeight() == two_lines()
    state.set_font_scale(1.0)
    assert label.minimumHeight() == two_lines()


def test_every_grid_input_marks_the_grids_stale_and_clears_the_hover(qtbot, panel):
    view = show_tab(qtbot, panel, "Score grids")
    for control, value in (("seed_spin", 5), ("base_spin", 700.0), ("scale_spin", 2.0), ("positions_spin", 32)):
        hover_cell(panel.rope_grid, 5, 2)
        assert "column 2" in panel.rope_grid.readout.text()
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            getattr(panel, control).setValue(value)
            assert_stale_now(view, control)
            hover_cell(panel.rope_grid, 5, 2)  # hovering while stale reads nothing out
            assert panel.rope_grid.readout.text().strip() == ""
        pair = seeded_qk(panel.seed_spin.value(), 8)
        positions = np.arange(panel.positions_spin.value())
        expected = rope_score_grid(pair.q, pair.k, positions, panel.base_spin.value(), panel.scale_spin.value())
        np.testing.assert_allclose(view.result.rope, expected.scores, rtol=0, atol=F64_TOLERANCE)
        np.testing.assert_allclose(panel.rope_grid.matrix, expected.scores.astype(panel.rope_grid.matrix.dtype),
                                   rtol=np.finfo(np.float32).eps * 4, atol=np.finfo(np.float32).eps * 4)
        learned = random_learned_table(positions.shape[0], 8, seed=panel.seed_spin.value())
        np.testing.assert_allclose(view.result.learned, (pair.q + learned) @ (pair.k + learned).T,
                                   rtol=F64_TOLERANCE, atol=F64_TOLERANCE * 100)
        hover_cell(panel.rope_grid, 5, 2)
        assert f"{float(panel.rope_grid.matrix[5, 2]):.7g}" in panel.rope_grid.readout.text(), control


def test_a_grid_click_moves_the_scrubber_too(qtbot, panel):
    show_tab(qtbot, panel, "Score grids")
    panel.rope_grid.clicked.emit(30, 12)
    assert (panel.m, panel.n) == (30, 12)
    assert [marker.data["x"][0] for marker in panel.grids_view.grid_markers] == [12.5] * 3
    show_tab(qtbot, panel, "RoPE scrubber")
    assert (panel.m_slider.value(), panel.n_slider.value()) == (30, 12)
    assert panel.shown_scores()[0] == pytest.approx(rope_score(READING_PAIR.q, READING_PAIR.k, 30, 12),
                                                    abs=F64_TOLERANCE)


def test_every_encodings_input_marks_it_stale_and_brings_core_s_tables(qtbot, panel):
    view = show_tab(qtbot, panel, "Encodings")
    for control, value in (("encoding_width_spin", 16), ("alibi_heads_spin", 4), ("alibi_length_spin", 12),
                           ("positions_spin", 40)):
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            getattr(panel, control).setValue(value)
            assert_stale_now(view, control)
        expected = sinusoidal_heatmap(panel.positions_spin.value(), panel.encoding_width_spin.value())
        np.testing.assert_array_equal(view.result.sinusoidal.table, expected.table)
        alibi = alibi_matrix(panel.alibi_heads_spin.value(), panel.alibi_length_spin.value())
        assert panel.alibi_head_combo.count() == panel.alibi_heads_spin.value()
        np.testing.assert_array_equal(panel.alibi_map.matrix, alibi.bias[0].astype(panel.alibi_map.matrix.dtype))
        assert panel.fingerprint_spin.maximum() == panel.positions_spin.value() - 1
        assert panel.learned_note.text() == "No model is loaded yet.", control


def test_the_encodings_view_follows_the_model(qtbot, state, panel):
    view = show_tab(qtbot, panel, "Encodings")
    gpt = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(gpt)
        assert_stale_now(view, "model")
    np.testing.assert_allclose(view.result.learned.table, gpt.pos_emb.weight.detach().numpy(), rtol=0, atol=0)


def test_every_permutation_input_marks_it_stale_and_brings_core_s_figures(qtbot, panel):
    view = show_tab(qtbot, panel, "Permutation")
    for control, value in (("permutation_length_spin", 7), ("permutation_width_spin", 16),
                           ("permutation_seed_spin", 3)):
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            getattr(panel, control).setValue(value)
            assert_stale_now(view, control)
            assert panel.permutation_table.item(1, 1).text() == "" and panel.permutation_figures() == {}
        expected = permutation_equivariance(None, seed=panel.permutation_seed_spin.value(),
                                            T=panel.permutation_length_spin.value(),
                                            d_model=panel.permutation_width_spin.value())
        figures = {name: float(v) for name, v in zip(expected.encodings, expected.max_diff)}
        assert panel.permutation_figures() == figures, control
        assert panel.permutation_edit.text() == " ".join(str(int(i)) for i in expected.permutation)


def test_hidden_views_do_no_work_and_catch_up_when_shown(qtbot, state, panel):
    hidden = [view for view in panel.views if view is not panel.scrubber_view]
    before = {view.name: view.computations for view in hidden}
    with qtbot.waitSignal(panel.scrubber_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.base_spin.setValue(2000.0)
    with qtbot.waitSignal(panel.scrubber_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.positions_spin.setValue(48)
    panel.permutation_seed_spin.setValue(9)
    panel.alibi_heads_spin.setValue(2)
    state.set_model(Transformer.from_seed(get_preset("tiny-gpt"), seed=0))
    qtbot.waitUntil(lambda: all(not view.update_scheduled for view in panel.views), timeout=RESULT_TIMEOUT_MS)
    assert {view.name: view.computations for view in hidden} == before
    for name in ("Score grids", "Encodings", "Permutation"):
        view = show_tab(qtbot, panel, name)
        assert view.computations == before[name] + 1, name
    assert panel.grids_view.result.positions.shape == (48,) and panel.grids_view.result.base == 2000.0
    assert panel.encodings_view.result.alibi.bias.shape[0] == 2
    assert panel.permutation_view.result.seed == 9


def test_settings_round_trip_and_ignore_bad_values(qtbot, panel):
    panel.m_slider.setValue(13)
    panel.n_slider.setValue(11)
    panel.lock_check.setChecked(True)
    saved = json.loads(json.dumps(panel.settings()))
    assert saved["m"] == 13 and saved["lock_offset"] is True and saved["base"] == 10000.0
    assert saved["tab"] == "RoPE scrubber" and saved["permutation"] is None

    panel.restore_settings({"base": "huge", "m": -4, "positions": 3.5, "tab": "nope", "unknown": [1]})
    assert panel.base_spin.value() == 10000.0 and panel.m == 13
    assert not panel.scrubber_view.is_stale

    saved.update(base=500000.0, m=40, n=38, tab="Permutation", permutation=[5, 4, 3, 2, 1, 0])
    panel.restore_settings(saved)
    assert panel.base_spin.value() == 500000.0
    assert (panel.m, panel.n) == (40, 38)
    assert panel.tabs.tabText(panel.tabs.currentIndex()) == "Permutation"
    permutation = show_tab(qtbot, panel, "Permutation")
    assert list(permutation.result.permutation) == [5, 4, 3, 2, 1, 0]
    show_tab(qtbot, panel, "RoPE scrubber")
    expected = rope_score(READING_PAIR.q, READING_PAIR.k, 40, 38, 500000.0)
    assert panel.shown_scores()[0] == pytest.approx(expected, abs=F64_TOLERANCE)


def test_restored_positions_beyond_the_shown_range_are_kept(qtbot, panel):
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.positions_spin.setValue(16)
    assert (panel.m, panel.n) == (3, 1)
    panel.m_slider.setValue(15)
    with qtbot.waitSignal(panel.scrubber_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({"positions": 128, "m": 100, "n": 3})
    assert (panel.m, panel.n) == (100, 3) and panel.m_slider.maximum() == 127
    assert panel.shown_scores()[0] == pytest.approx(rope_score(READING_PAIR.q, READING_PAIR.k, 100, 3),
                                                    abs=F64_TOLERANCE)


def test_lesson_names_stay_reachable_on_the_panel(panel):
    from gui.answer_cover import find_panel_widget
    from resources import resource_path

    names = set()
    for lesson in resource_path("lessons").glob("*.json"):
        for step in json.loads(lesson.read_text(encoding="utf-8"))["steps"]:
            if step.get("panel") != "Positions":
                continue
            names.add(step.get("focus"))
            for part in (step.get("text", ""), step.get("reveal", ""), step.get("predict", "")):
                names.update(piece.split("}}")[0] for piece in part.split("{{")[1:])
    names.discard(None)
    assert names >= {"rope_score_label", "permutation_table", "sinusoid_map", "norm_label"}
    for name in names:
        assert find_panel_widget(panel, name) is not None, name


def test_export_targets_and_projector_theme(qtbot, state, panel):
    targets = panel.export_targets()
    assert len(targets) >= 10
    assert all(isinstance(target, (QWidget, pg.PlotItem)) for _, target in targets)
    app = QApplication.instance()
    normal = panel.rope_score_label.font().pointSizeF()
    try:
        theme.apply_theme(app, "projector", 1.6)
        state.set_theme("projector")
        state.set_font_scale(1.6)
        assert panel.rope_score_label.font().pointSizeF() > 1.5 * normal
        assert panel.trace_rope.opts["pen"].widthF() == theme.current().line_width
        assert panel.rope_score_label.text() == f"{panel.shown_scores()[0]:.10f}"
        assert panel.grab().width() > 0
    finally:
        theme.apply_theme(app, "light", 1.0)
        state.set_theme("light")
        state.set_font_scale(1.0)
    assert Qt.Orientation.Horizontal == panel.m_slider.orientation()


@pytest.mark.parametrize(("theme_name", "scale", "size"), [("light", 1.0, (700, 600)), ("projector", 1.6, (900, 760)),
                                                          ("projector", 1.6, (1400, 900))])
def test_the_rotating_pairs_labels_stay_inside_the_plot_and_apart(qtbot, qapp, panel, state, theme_name, scale, size):
    from gui import theme

    theme.apply_theme(qapp, theme_name, scale)
    state.set_theme(theme_name)
    state.set_font_scale(scale)
    panel.resize(*size)
    scrubber = panel.scrubber_view
    view = scrubber.arrow_plot.getViewBox()

    def placed() -> list:
        QApplication.processEvents()
        shown = [label for label in scrubber.pair_labels if label.isVisible()]
        return [label.mapRectToItem(view, label.boundingRect()) for label in shown]

    def fits() -> bool:
        rects = placed()
        inside = all(view.boundingRect().contains(rect) for rect in rects)
        apart = all(not a.intersects(b) for a, b in zip(rects, rects[1:]))
        return len(rects) >= 2 and inside and apart

    try:
        qtbot.waitUntil(fits, timeout=5_000)
    finally:
        theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)


def test_the_score_grids_titles_wrap_between_words_beside_a_lesson_at_projector_scale(qtbot, qapp, panel, state):
    from gui import theme
    from gui.legibility import broken_title, cut_plot

    theme.apply_theme(qapp, "projector", 1.6)
    state.set_theme("projector")
    state.set_font_scale(1.6)
    panel.resize(914, 900)  # the panel's width beside a lesson on a 1920 x 1080 projector
    try:
        grids = show_tab(qtbot, panel, "Score grids").score_grids()
        assert grids[0].plot.getPlotItem().getAxis("left").isVisible()  # the shared rows labelled once
        assert not any(grid.plot.getPlotItem().getAxis("left").isVisible() for grid in grids[1:])

        def whole_words() -> list:
            QApplication.processEvents()
            return [problem for grid in grids for problem in broken_title(grid.plot) + cut_plot(grid.plot)]

        qtbot.waitUntil(lambda: not whole_words(), timeout=5_000)
    finally:
        theme.apply_theme(qapp, theme.DEFAULT_THEME, 1.0)
        state.set_theme(theme.DEFAULT_THEME)
        state.set_font_scale(1.0)


def test_the_alibi_head_on_show_is_saved_and_restored(qtbot, panel):
    """A session (and a page exported from it) shows the head the student picked, not head 0."""
    view = show_tab(qtbot, panel, "Encodings")
    panel.alibi_head_combo.setCurrentIndex(5)
    saved = json.loads(json.dumps(panel.settings()))
    assert saved["alibi_head"] == 5
    alibi = alibi_matrix(panel.alibi_heads_spin.value(), panel.alibi_length_spin.value())
    np.testing.assert_array_equal(panel.alibi_map.matrix, alibi.bias[5].astype(panel.alibi_map.matrix.dtype))
    panel.alibi_head_combo.setCurrentIndex(0)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({**saved, "alibi_heads": 4, "alibi_head": 6})  # more than the layer has: its last
    assert panel.alibi_head_combo.count() == 4 and panel.settings()["alibi_head"] == 3
    np.testing.assert_array_equal(panel.alibi_map.matrix, alibi_matrix(4, panel.alibi_length_spin.value())
                                  .bias[3].astype(panel.alibi_map.matrix.dtype))
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({"alibi_heads": 8})
    assert panel.settings()["alibi_head"] == 6  # the head asked for, once the layer has it again
