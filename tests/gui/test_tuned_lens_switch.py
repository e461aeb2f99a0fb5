"""The logit lens's tuned-lens switch: the bundled lens's guesses and both KLs per block entrance, beside the logit
lens, for the followed token; a model the lens was not trained on says so instead."""

from __future__ import annotations

import math

import pytest

from core.checkpoints import load_bundled
from core.features.library import bundled_lens_for
from core.features.tuned_lens import follow_lenses, load_lens
from gui.compute import ComputeController
from gui.panels.architecture import COLUMNS, LENS_COLUMN, TUNED_HEADER, ArchitecturePanel
from gui.state import LabState
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

TEXT = "ROMEO: to be or"


@pytest.fixture
def lab(qtbot):
    loaded = load_bundled("tiny-llama")
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = ArchitecturePanel(state, compute)
    panel.resize(1366, 768)
    panel.show()
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(loaded.config)
        state.set_tokenizer(loaded.tokenizer)
        state.set_model(loaded.model)
        state.set_text(TEXT)
        state.set_torch_ready(True)
    yield state, panel, loaded
    close_panel_lab(qtbot, compute, panel)


def test_the_switch_adds_the_tuned_lens_and_both_kls_per_block(qtbot, lab):
    state, panel, loaded = lab
    assert panel.table.columnCount() == len(COLUMNS)
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tuned_box.setChecked(True)
    table, result = panel.table, panel.result
    assert table.columnCount() == len(COLUMNS) + 1 and table.horizontalHeaderItem(len(COLUMNS)).text() == TUNED_HEADER
    assert table.horizontalHeader().visualIndex(len(COLUMNS)) == LENS_COLUMN + 1  # read beside the logit lens
    lens = load_lens(bundled_lens_for("tiny-llama"), loaded.model)
    expected = follow_lenses(loaded.model, lens, loaded.tokenizer.encode(TEXT), result.position, result.stage_hooks, 5)
    entrances = [row for row in range(result.n_stages) if not math.isnan(expected["tuned_kl"][row])]
    assert len(entrances) == loaded.config.n_layers  # the embedding and every block's output but the last
    for row in entrances:
        cell = table.item(row, len(COLUMNS)).text()
        assert f"KL {expected['logit_kl'][row]:.2f} → {expected['tuned_kl'][row]:.2f}" in cell
    assert table.item(result.n_stages - 1, len(COLUMNS)).text() == "—"
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tuned_box.setChecked(False)
    assert table.columnCount() == len(COLUMNS)


def test_other_weights_get_a_note_not_the_lens(qtbot, lab):
    from core.model import Transformer

    state, panel, loaded = lab
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tuned_box.setChecked(True)
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(Transformer.from_seed(loaded.config, seed=9))
    assert "not these" in panel.table.item(0, len(COLUMNS)).text()
