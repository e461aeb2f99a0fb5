"""A model opened in the GUI says which mask it was trained with, from its checkpoint's training.json: in the
status bar's model description and above the text Generate and Train > Generate show; a causal one says nothing."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from core.checkpoints import save_checkpoint
from core.config import ModelConfig
from core.model import Transformer
from core.tokenizers import CharTokenizer
from resources import resource_path

OPEN_TIMEOUT_MS = 60_000


@pytest.fixture
def window(qtbot, settings):
    from gui.main_window import MainWindow
    from gui.panels.generate import GeneratePanel
    from gui.panels.train import TrainPanel

    win = MainWindow(settings=settings, panel_classes=[GeneratePanel, TrainPanel])
    win.remember_preferences = False
    qtbot.addWidget(win)
    win.resize(1366, 768)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=OPEN_TIMEOUT_MS):
        win.start_loading()
    yield win
    win.close()


def tiny_checkpoint(folder, training_record: dict | None):
    tokenizer = CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:20_000])
    config = ModelConfig(name="tiny-checkpoint", vocab_size=tokenizer.vocab_size, context_length=32, d_model=32,
                         n_heads=2, n_layers=1, d_ff=64)
    return save_checkpoint(Transformer.from_seed(config, seed=0), folder, tokenizer=tokenizer, metadata=training_record)


def open_folder(qtbot, win, folder) -> None:
    with qtbot.waitSignal(win.model_loaded, timeout=OPEN_TIMEOUT_MS):
        win.open_model(folder)


def warnings(win) -> list:
    generate, train = win.panels
    return [generate.trained_mask_warning, train.trained_mask_warning]


def test_a_checkpoint_trained_without_a_mask_says_so_before_its_text(qtbot, window, tmp_path):
    folder = tiny_checkpoint(tmp_path / "leaky", {"settings": {"mask_mode": "none"}, "steps_done": 3})
    open_folder(qtbot, window, folder)
    assert window.loaded.model.trained_mask_mode == "none"
    assert "trained with a leaky mask: none (bidirectional)" in window.model_label.text()
    for label in warnings(window):
        assert not label.isHidden()
        assert label.text().startswith("Leaky training mask: none (bidirectional), recorded in its training.json;")
        assert "causal mask" in label.toolTip()
        assert label.textFormat() == Qt.TextFormat.PlainText
    generate = window.panels[0]
    layout = generate.layout()
    assert layout.indexOf(generate.trained_mask_warning) < layout.indexOf(generate.tabs)  # above the draws


@pytest.mark.parametrize("record", [{"settings": {"mask_mode": "causal"}}, {"steps_done": 3}, None],
                         ids=["causal", "record-before-the-mask-choice", "no-training-json"])
def test_a_causal_checkpoint_shows_no_warning(qtbot, window, tmp_path, record):
    leaky = tiny_checkpoint(tmp_path / "leaky", {"settings": {"mask_mode": "after-softmax"}})
    open_folder(qtbot, window, leaky)
    assert all(not label.isHidden() for label in warnings(window))
    open_folder(qtbot, window, tiny_checkpoint(tmp_path / "causal", record))
    assert window.loaded.model.trained_mask_mode == "causal"
    assert "leaky" not in window.model_label.text()
    assert all(label.isHidden() and label.text() == "" for label in warnings(window))


def test_a_leaky_model_saved_again_still_says_so(qtbot, window, tmp_path):
    open_folder(qtbot, window, tiny_checkpoint(tmp_path / "leaky", {"settings": {"mask_mode": "after-softmax"}}))
    copy = tmp_path / "copy"
    window.save_model(copy)  # File > Save model as: no training record of the lab's own to pass on
    qtbot.waitUntil(lambda: (copy / "model.safetensors").exists() and not window.compute.busy, timeout=OPEN_TIMEOUT_MS)
    open_folder(qtbot, window, tiny_checkpoint(tmp_path / "causal", None))
    assert window.loaded.model.trained_mask_mode == "causal"
    open_folder(qtbot, window, copy)
    assert window.loaded.model.trained_mask_mode == "after-softmax"
    assert "trained with a leaky mask: after the softmax" in window.model_label.text()
