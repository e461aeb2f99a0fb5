"""The Train panel fills in a preset's recipe, shows it, keeps what the user typed, and trains the recipe it shows."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from core.config import ModelConfig
from core.presets import get_preset
from core.recipes import BUNDLED_RECIPES
from gui.panels.train import TrainPanel
from gui.state import LabState
from resources import resource_path

TINY = ModelConfig(name="test-tiny", vocab_size=65, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64)


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    state.set_config(TINY)
    widget = TrainPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    state.set_torch_ready(True)
    return widget


def fields(panel: TrainPanel) -> dict:
    return {"steps": panel.steps_spin.value(), "batch_size": panel.batch_spin.value(),
            "seq_len": panel.seq_spin.value(),
            "lr": round(panel.lr_spin.value(), 6), "seed": panel.seed_spin.value(),
            "corpus": panel.corpus_combo.currentData()}


def recipe_fields(name: str, corpus: str) -> dict:
    recipe = BUNDLED_RECIPES[name]
    return {"steps": recipe["steps"], "batch_size": recipe["batch_size"], "seq_len": recipe["seq_len"],
            "lr": recipe["lr"], "seed": recipe["seed"], "corpus": corpus}


def test_choosing_a_preset_with_a_recipe_fills_it_in_and_shows_it(qtbot, panel):
    assert panel.recipe_row.row.isHidden()  # the test's config is no preset
    defaults = fields(panel)
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):  # the recipe's corpus, made on the worker
        panel.state.set_config(get_preset("tiny-induction-attn"))
    assert fields(panel) == recipe_fields("tiny-induction-attn", "repeated")
    assert panel.track_check.isChecked()  # the repeated letters: the induction score is tracked
    assert "random letters" in panel.corpus.name and panel.vocabulary_problem() == ""
    line = panel.recipe_label.text()
    assert line.startswith("Recipe of tiny-induction-attn (not shipped trained")
    assert "3,000 steps, batch 32 x 64, lr 0.001, 50 warm-up steps, then cosine to 0.1 of it, seed 0" in line
    assert line.endswith("corpus: repeated random letters. The run's settings are this recipe.")
    assert panel.recipe_row.row.isVisible() and not panel.use_recipe_button.isEnabled()

    panel.state.set_config(get_preset("tiny-induction"))  # the panel's own values follow the next preset
    assert fields(panel) == recipe_fields("tiny-induction", "repeated")
    line = panel.recipe_label.text()
    assert line.startswith("Recipe of the bundled tiny-induction: 4,000 steps, batch 32 x 64, lr 0.003, ")
    record = resource_path("models", "tiny-induction", "training.json").read_text(encoding="utf-8")
    seconds = round(json.loads(record)["wall_time_s"])
    assert f"; the bundled run took {seconds // 60} min {seconds % 60:02d} s on 1 CPU thread (" in line

    panel.state.set_config(get_preset("gpt2-small"))  # no recipe: untouched fields go back to the defaults
    assert panel.recipe_row.row.isHidden()
    assert fields(panel) == defaults | {"seq_len": 128}  # the panel's window, no longer clipped to 32


def test_a_value_the_user_typed_survives_a_preset_change_and_use_recipe_puts_the_recipe_back(qtbot, panel):
    panel.steps_spin.setValue(777)  # typed by the user
    panel.state.set_config(get_preset("tiny-induction-attn"))
    assert panel.steps_spin.value() == 777
    assert panel.corpus_combo.currentData() == "bundled"  # nothing else was filled in either
    line = panel.recipe_label.text()
    assert line.endswith("Your settings differ in steps, batch, seq len, learning rate, corpus: Use recipe puts it "
                         "back.")
    assert panel.use_recipe_button.isEnabled()
    qtbot.mouseClick(panel.use_recipe_button, Qt.MouseButton.LeftButton)
    assert fields(panel) == recipe_fields("tiny-induction-attn", "repeated")
    assert panel.recipe_label.text().endswith("The run's settings are this recipe.")
    assert not panel.use_recipe_button.isEnabled()

    panel.lr_spin.setValue(0.003)  # an edit after the recipe: the line says so, and the next preset keeps it
    assert panel.recipe_label.text().endswith("Your settings differ in learning rate: Use recipe puts it back.")
    panel.state.set_config(get_preset("tiny-induction"))
    assert panel.lr_spin.value() == pytest.approx(0.003) and panel.steps_spin.value() == 3000


def test_restored_settings_are_the_users_and_stay(panel):
    panel.restore_settings({"steps": 123, "batch_size": 3})
    panel.state.set_config(get_preset("tiny-encoder-decoder"))
    assert (panel.steps_spin.value(), panel.batch_spin.value()) == (123, 3)
    assert "Your settings differ in steps, batch" in panel.recipe_label.text()


def test_an_edited_preset_has_no_recipe(panel):
    panel.state.set_config(get_preset("tiny-induction").replace(d_model=32))
    assert panel.recipe_row.row.isHidden() and panel.steps_spin.value() != 4000


def test_what_a_run_takes_from_the_recipe_besides_its_fields(panel):
    panel.state.set_config(get_preset("tiny-gpt-bpe"))
    assert panel.recipe_row.request_extras() == {"tokenizer": "bpe", "bpe_vocab": 1536, "warmup_steps": 100,
                                                 "bf16_autocast": True}
    panel.steps_spin.setValue(50)  # a run of the user's own: the panel's warm-up, float32; still the preset's BPE
    assert panel.recipe_row.request_extras() == {"tokenizer": "bpe", "bpe_vocab": 1536}
    panel.start_combo.setCurrentIndex(panel.start_combo.findData("fine-tune"))  # the loaded model's tokenizer
    assert panel.recipe_row.request_extras() == {}
    panel.state.set_config(TINY)
    assert panel.recipe_row.request_extras() == {}


def test_a_run_of_the_recipe_trains_with_the_recipes_settings(qtbot, panel):
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.state.set_config(get_preset("tiny-induction-attn"))
    assert panel.start_training()
    assert panel.request.warmup_steps == 50 and panel.request.lr == pytest.approx(1e-3)
    assert not panel.use_recipe_button.isEnabled()  # the fields are locked while the run trains
    qtbot.waitUntil(lambda: panel.last_progress is not None, timeout=60_000)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        panel.stop_training()
    recorded = panel.outcome.metadata["settings"]
    recipe = BUNDLED_RECIPES["tiny-induction-attn"]
    assert {key: recorded[key] for key in recipe} == recipe
    assert recorded["tokenizer"] == "char" and recorded["bf16_autocast"] is False
