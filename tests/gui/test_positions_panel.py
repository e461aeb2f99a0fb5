"""The Positions panel: the RoPE scrubber shows core's scores while dragging, a locked offset keeps RoPE flat,
the permutation check tells noise from order, and q/k can come from a RoPE model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

import pyqtgraph as pg
from core.experiments.positions import model_qk, rope_score, seeded_qk, sinusoidal_pe_table
from core.model import Transformer
from core.presets import get_preset
from gui import theme
from gui.panels import PANEL_CLASSES
from gui.panels.positions import PositionsPanel, format_difference, parse_permutation
from gui.state import LabState

READING_PAIR = seeded_qk(0, 8)  # the reading's np.random.seed(0), d = 8


@pytest.fixture
def state():
    return LabState()


@pytest.fixture
def panel(qtbot, state, compute):
    widget = PositionsPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.show()
    with qtbot.waitSignal(widget.result_shown, timeout=30_000):
        state.set_torch_ready(True)
    assert widget.last_error == ""
    return widget


def shown_rope(panel) -> float:
    return float(panel.rope_score_label.text())


def shown_sinusoidal(panel) -> float:
    return float(panel.sinusoidal_score_label.text())


def additive_score(m: int, n: int) -> float:
    table = sinusoidal_pe_table(max(m, n) + 1, 8)
    return float((READING_PAIR.q + table[m]) @ (READING_PAIR.k + table[n]))


def test_the_panel_is_registered():
    assert PositionsPanel in PANEL_CLASSES


def test_sliders_and_lines_drag_the_score(qtbot, panel):
    q, k = READING_PAIR.q, READING_PAIR.k
    assert shown_rope(panel) == pytest.approx(5.9478093347, abs=1e-10)  # the reading's m = 3, n = 1
    panel.m_slider.setValue(13)
    panel.n_slider.setValue(11)
    assert (panel.m, panel.n) == (13, 11)
    assert shown_rope(panel) == pytest.approx(rope_score(q, k, 13, 11), abs=1e-9)
    assert shown_sinusoidal(panel) == pytest.approx(additive_score(13, 11), abs=1e-9)

    panel.m_line.setValue(40.3)  # what a mouse drag of the dashed line does
    panel.n_line.setValue(25)
    assert (panel.m, panel.n) == (40, 25)
    assert (panel.m_slider.value(), panel.n_slider.value()) == (40, 25)
    assert shown_rope(panel) == pytest.approx(rope_score(q, k, 40, 25), abs=1e-9)
    assert panel.n_line.value() == 25 and panel.m_caption.text() == "query m = 40"
    assert panel.offset_label.text() == "m - n = 15"
    qtbot.waitUntil(lambda: "offset m - n = 15" in panel.trace_plot.getPlotItem().titleLabel.text, timeout=2000)


def test_locked_offset_keeps_rope_flat_and_sinusoids_drift(panel):
    panel.m_slider.setValue(3)
    panel.n_slider.setValue(1)
    panel.lock_check.setChecked(True)
    rope_seen, sinusoidal_seen = [], []
    for m in (3, 13, 103):
        panel.m_slider.setValue(m)
        assert panel.n == m - 2 and panel.n_slider.value() == m - 2
        rope_seen.append(shown_rope(panel))
        sinusoidal_seen.append(shown_sinusoidal(panel))
    assert rope_seen == pytest.approx([5.9478093347] * 3, abs=1e-10)
    # The reading's drift at offset 2:
    assert sinusoidal_seen == pytest.approx([12.0287056485, 8.2543303859, 7.0843151351], abs=1e-9)

    xs, rope, sinusoidal = panel.locked_traces()
    assert xs[0] == 2 and xs[-1] == panel.positions_spin.value() - 1
    assert np.ptp(rope) < 1e-9
    assert np.ptp(sinusoidal) > 1.0

    panel.n_line.setValue(50)  # with the lock, dragging the key moves the query too
    assert (panel.m, panel.n) == (52, 50)
    panel.m_slider.setValue(1)  # the key cannot go below 0, so m stops at the offset
    assert (panel.m, panel.n) == (2, 0)


def test_norms_are_preserved_and_shown_as_noise(panel):
    text = panel.norm_label.text()
    assert f"‖q‖ = {np.linalg.norm(READING_PAIR.q):.10f}" in text
    assert "e-1" in text and "largest change" in text  # measured, like 8.88e-16, never a rounded 0
    assert np.abs(panel.scrubber.q_norms - panel.scrubber.q_norm).max() < 1e-12


def test_permutation_separates_noise_from_order(qtbot, panel):
    figures = panel.permutation_figures()
    assert set(figures) == {"none", "sinusoidal", "learned", "rope"}
    assert figures["none"] < 1e-5
    assert all(figures[name] > 1e-3 for name in ("sinusoidal", "learned", "rope"))
    none_text = panel.permutation_table.item(0, 1).text()
    assert "e-" in none_text and none_text != "0"
    assert panel.permutation_edit.text() == "3 1 5 0 2 4"

    shown = panel._shown_permutation
    for text, message in (("3 1 5 0 2", "5 entries"), ("3 1 1 0 2 4", "more than once"), ("a b", "not a position"),
                          ("3 1 5 0 2 9", "outside 0..5")):
        panel.permutation_edit.setText(text)
        panel.permutation_edit.editingFinished.emit()
        assert not panel.permutation_message.isHidden()
        assert message in panel.permutation_message.text()
        qtbot.wait(30)
        assert panel._shown_permutation is shown  # the last result stays

    with qtbot.waitSignal(panel.result_shown, timeout=20_000):
        panel.permutation_edit.setText("5 4 3 2 1 0")
        panel.permutation_edit.editingFinished.emit()
    assert panel.permutation_message.isHidden()
    assert list(panel._shown_permutation.permutation) == [5, 4, 3, 2, 1, 0]
    assert panel.permutation_figures()["none"] < 1e-5


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
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        state.set_model(gpt)
    assert not item.isEnabled()
    assert "learned" in item.toolTip() and "tiny-llama" in item.toolTip()
    assert not panel.learned_map.isHidden()
    assert panel.learned_map.matrix.shape == tuple(gpt.pos_emb.weight.shape)

    llama = Transformer.from_seed(get_preset("tiny-llama"), seed=0)
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        state.set_model(llama)
    assert item.isEnabled()
    assert panel.learned_map.isHidden() and "uses RoPE positions" in panel.learned_note.text()
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.source_combo.setCurrentIndex(1)
    assert panel.last_error == ""
    layer, head = panel.layer_spin.value(), panel.head_spin.value()
    q_token, k_token = panel.query_token_spin.value(), panel.key_token_spin.value()
    pair = model_qk(llama, torch.tensor(state.tokens), layer, head, q_token, k_token)
    assert panel.scrubber.q.shape == (llama.config.d_head,)
    panel.m_slider.setValue(20)
    panel.n_slider.setValue(7)
    assert shown_rope(panel) == pytest.approx(rope_score(pair.q, pair.k, 20, 7, pair.base, pair.scale), rel=1e-6)
    assert "tiny-llama" in panel.source_label.text()
    panel.compare_sinusoidal_check.setChecked(False)  # trained q, k are short: fit the axis to RoPE alone
    assert not panel.trace_sinusoidal.isVisible()
    low, high = panel.row_plot.getViewBox().viewRange()[1]
    assert low <= panel.scrubber.rope.min() and high - low < 2 * np.ptp(panel.scrubber.rope)

    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        state.set_model(gpt)  # the option goes away, and the panel falls back to the random pair
    assert panel.source_combo.currentIndex() == 0 and not item.isEnabled()


def test_settings_round_trip_and_ignore_bad_values(qtbot, panel):
    panel.m_slider.setValue(13)
    panel.n_slider.setValue(11)
    panel.lock_check.setChecked(True)
    saved = json.loads(json.dumps(panel.settings()))
    assert saved["m"] == 13 and saved["lock_offset"] is True and saved["base"] == 10000.0

    panel.restore_settings({"base": "huge", "m": -4, "positions": 3.5, "tab": "nope", "unknown": [1]})
    assert panel.base_spin.value() == 10000.0 and panel.m == 13

    saved.update(base=500000.0, m=40, n=38, tab="Permutation")
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.restore_settings(saved)
    assert panel.base_spin.value() == 500000.0
    assert (panel.m, panel.n) == (40, 38)
    assert panel.tabs.tabText(panel.tabs.currentIndex()) == "Permutation"
    assert shown_rope(panel) == pytest.approx(rope_score(READING_PAIR.q, READING_PAIR.k, 40, 38, 500000.0), abs=1e-9)


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
        assert panel.grab().width() > 0
    finally:
        theme.apply_theme(app, "light", 1.0)
        state.set_theme("light")
        state.set_font_scale(1.0)
    panel.tabs.setCurrentIndex(1)
    panel.rope_grid.clicked.emit(30, 12)
    assert (panel.m, panel.n) == (30, 12)
    assert Qt.Orientation.Horizontal == panel.m_slider.orientation()
