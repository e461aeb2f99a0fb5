"""Restoring a panel's settings (a session, a lesson step) reads and compares each view's inputs once, after
the last setting: each control it sets would otherwise make every view read its inputs (a text of up to
10,000 tokens) again."""

from __future__ import annotations

import pytest

from core.checkpoints import load_bundled
from gui.compute import ComputeController
from gui.panels.causal_lab import CausalLabPanel
from gui.state import LabState
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

SETTINGS = {"tab": "Induction", "answer": "e", "foil": "a", "site": "attn_out", "metric_position": 3,
            "heads": "L0H1, L1H0", "ffns": "0", "ablation": "mean", "period": 12, "seed": 7}


@pytest.fixture
def lab(qtbot):
    loaded = load_bundled("tiny-gpt")
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = CausalLabPanel(state, compute)
    panel.resize(1200, 800)
    panel.show()
    with qtbot.waitSignal(panel.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(loaded.tokenizer)
        state.set_model(loaded.model)
        state.set_text("ROMEO: to be or not to be")
        state.set_torch_ready(True)
    yield state, panel
    close_panel_lab(qtbot, compute, panel)


def _checks(panel) -> list[int]:
    return [view.input_checks for view in panel.views]


def test_a_held_restore_reads_each_views_inputs_once(qtbot, lab):
    _state, panel = lab
    before = _checks(panel)
    with panel.views_held():
        panel.restore_settings(SETTINGS)
        assert _checks(panel) == before  # nothing read while the settings go in
    assert [after - was for after, was in zip(_checks(panel), before)] == [1, 1, 1, 1]
    assert panel.settings()["period"] == 12 and panel.settings()["seed"] == 7
    induction = panel.induction_view
    with qtbot.waitSignal(induction.result_shown, timeout=RESULT_TIMEOUT_MS):
        pass
    assert induction.shown_inputs == induction._current_inputs()  # the result is of the restored settings


def test_without_the_hold_every_setting_reads_them_again(lab):
    _state, panel = lab
    before = _checks(panel)
    panel.restore_settings(SETTINGS)
    assert any(after - was > 1 for after, was in zip(_checks(panel), before))


def test_the_session_and_the_lesson_restore_under_the_hold():
    import inspect

    from gui import lessons, window_sessions

    for module in (lessons, window_sessions):
        source = inspect.getsource(module)
        assert "with panel.views_held():" in source and source.count("restore_settings(") == source.count(
            "with panel.views_held():")
