"""The Going deeper panel: Stretching draws the context models' curves, the learned table stops where it refuses,
the rope_scale slider adds ctx-rope rescaled; Ladder draws every seed and opens a rung's model on a click."""

from __future__ import annotations

import pytest

from gui.compute import ComputeController
from gui.panels.going_deeper import GoingDeeperPanel
from gui.state import LabState
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

STRETCH_TIMEOUT_MS = 3 * RESULT_TIMEOUT_MS  # six models scored on one thread of a shared machine


@pytest.fixture
def lab(qtbot):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = GoingDeeperPanel(state, compute)
    panel.resize(1366, 768)
    panel.show()
    state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def _settled(view) -> bool:
    return view.result is not None and not view.is_stale and not view.showing_message


def test_stretching_stops_the_learned_curve_where_it_refuses_and_rescales_rope(qtbot, lab):
    _state, panel = lab
    view = panel.stretching_view
    qtbot.waitUntil(lambda: _settled(view), timeout=STRETCH_TIMEOUT_MS)
    learned = next(curve for curve in view.result.curves if curve.model == "ctx-learned")
    assert learned.refused_at.length == 128 and "64 rows" in learned.refused_at.refused
    assert list(view.curves["ctx-learned"].xData) == [32, 64]  # the curve stops at the last length it accepts
    assert "ctx-learned refuses 128 (a table of 64 rows)" in view.summary_label.text()
    refused_cells = [view.table.item(row, column).text() for row in range(view.table.rowCount())
                     for column in range(view.table.columnCount()) if view.table.item(row, column) is not None]
    assert refused_cells.count("refused") == 3  # 128, 256 and 512 for the learned table alone
    assert view.result.rescaled is None
    with qtbot.waitSignal(view.result_shown, timeout=STRETCH_TIMEOUT_MS):
        panel.restore_settings({"rope_scale": 4.0})
    assert view.result.rescaled.rope_scale == 4.0 and "ctx-rope at rope_scale 4" in view.summary_label.text()
    assert panel.settings() == {"tab": "Stretching", "rope_scale": 4.0}


def test_ladder_shows_every_seed_and_a_click_opens_the_rung_model(qtbot, lab):
    state, panel = lab
    view = panel.ladder_view
    panel.restore_settings({"tab": "Ladder"})
    qtbot.waitUntil(lambda: _settled(view), timeout=STRETCH_TIMEOUT_MS)
    rungs = view.result["rungs"]
    assert view.table.rowCount() == len(rungs)
    assert len(view.seed_points.data) == sum(len(rung["seeds"]) for rung in rungs)
    assert view.table.item(0, 0).text() == "2017" and view.table.item(0, 1).text() == rungs[0]["change"]
    view.open_rung(len(rungs) - 1)
    assert state.config.name == rungs[-1]["model"] and "Opened" in view.opened_label.text()
    view.rung_combo.setCurrentIndex(0)
    view.open_button.click()
    assert state.config.name == "ladder-2017"


def test_the_token_strip_marks_positions_past_the_trained_length(qtbot):
    from core.tokenizers import CharTokenizer
    from gui.widgets.token_strip import TokenStrip

    strip = TokenStrip()
    qtbot.addWidget(strip)
    strip.set_tokenizer(CharTokenizer.from_text("abcdefghij"))
    strip.set_max_tokens(1024, 8)  # a RoPE model trained at 8
    strip.set_tokens(list(range(6)))
    assert strip.past_label.isHidden() and strip.chips._trained > 6
    strip.set_tokens(list(range(10)))
    assert not strip.past_label.isHidden() and strip.chips._trained == 8
    assert strip.past_label.text().startswith("Positions 8 and beyond (dashed) lie past the length")
    strip.set_max_tokens(8, 8)  # a learned table: it accepts no more than it trained at
    strip.set_tokens(list(range(8)))
    assert strip.past_label.isHidden()
