"""The Train panel: a short run through the panel, stop, install, save and reload, generation, bad input."""

from __future__ import annotations

import math
import os

import pytest
from PySide6.QtCore import Qt

from core.config import ModelConfig
from core.training_job import format_duration
from gui.panels import PANEL_CLASSES
from gui.panels.train import TrainPanel
from gui.state import LabState
from gui.widgets.config_form import CUSTOM_PRESET

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
    widget.steps_spin.setValue(20)
    widget.batch_spin.setValue(4)
    widget.seq_spin.setValue(32)
    widget.lr_spin.setValue(0.01)
    return widget


def train_to_end(qtbot, panel: TrainPanel) -> None:
    with qtbot.waitSignal(panel.training_finished, timeout=120_000):  # a ceiling for a loaded machine
        assert panel.start_training()


def test_the_panel_is_registered():
    assert TrainPanel in PANEL_CLASSES


def test_a_short_run_plots_its_losses_and_becomes_the_labs_model(qtbot, panel, tmp_path):
    import torch

    from core.checkpoints import resolve_checkpoint

    old_model = panel.state.model
    train_to_end(qtbot, panel)
    steps, losses = panel.train_curve.getData()
    assert list(steps) == list(range(1, 21))
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < losses[0]  # 20 steps at lr 0.01 leave the uniform guess behind
    val_steps, val_losses = panel.val_curve.getData()
    assert len(val_steps) >= 2 and math.isfinite(val_losses[-1])
    assert list(panel.final_val_marker.getData()[1]) == [panel.outcome.final_val_loss]
    assert "Finished after 20 steps" in panel.status_label.text()
    assert panel.sample_text.toPlainText()  # a sample arrived during the run

    outcome = panel.outcome
    assert panel.state.model is outcome.loaded.model and panel.state.model is not old_model
    assert panel.state.tokenizer is outcome.loaded.tokenizer
    assert panel.state.tokens == outcome.loaded.tokenizer.encode(panel.state.text)

    folder = tmp_path / "trained"
    with qtbot.waitSignal(panel.saved, timeout=30_000):
        assert panel.save_model(folder)
    loaded = resolve_checkpoint(folder)  # a GPT-2 shape: saved as a folder transformers opens
    assert loaded.config == TINY and loaded.metadata["steps_done"] == 20
    ids = torch.tensor([panel.state.tokens[:32]])
    with torch.no_grad():
        assert torch.equal(loaded.model(ids), outcome.loaded.model(ids))


def probe(qtbot, compute, channel: str = "probe") -> None:
    """Run one job on another channel and wait for its result: while a run trains, it runs between two steps."""
    with qtbot.waitSignal(compute.result_delivered, check_params_cb=lambda c: c == channel, timeout=30_000):
        compute.submit(channel, lambda: None, lambda _result: None, "probe")


def test_stop_ends_the_run_early_and_keeps_its_model(qtbot, panel):
    panel.steps_spin.setValue(100_000)
    assert panel.start_training()
    assert not panel.train_button.isEnabled() and not panel.generate_button.isEnabled()
    qtbot.waitUntil(lambda: len(panel.train_points[0]) >= 3, timeout=30_000)
    panel.toggle_pause()
    assert panel.pause_button.text() == "Resume"
    # Other channels' requests run while the run is paused; the paused run sends its last steps before it waits,
    # and makes none while it waits.
    probe(qtbot, panel.compute)
    paused_at = panel.train_points[0][-1]
    probe(qtbot, panel.compute)
    assert panel.train_points[0][-1] == paused_at and panel.training
    assert "paused" in panel.status_label.text()
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        panel.stop_training()
    assert panel.outcome.stopped and panel.outcome.steps_done == paused_at  # no step after the pause
    assert "Stopped after" in panel.status_label.text()
    assert panel.state.model is panel.outcome.loaded.model
    assert panel.train_button.isEnabled()


def test_steps_arrive_as_partial_results_in_order_while_other_requests_run_between_them(qtbot, panel):
    panel.steps_spin.setValue(100_000)
    assert panel.start_training()
    qtbot.waitUntil(lambda: len(panel.train_points[0]) >= 2, timeout=30_000)
    for _ in range(3):
        probe(qtbot, panel.compute)  # served between two steps of the running (not paused) run
    assert panel.training and not panel.control.paused.is_set()
    steps = panel.train_points[0]
    assert steps == list(range(1, len(steps) + 1))  # every step once, in order, through the one channel
    assert "tokens/s, ETA" in panel.status_label.text()
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        panel.stop_training()


def test_generation_shows_the_requested_number_of_characters(qtbot, panel):
    train_to_end(qtbot, panel)
    panel.prompt_edit.setText("ROMEO:\\n")
    panel.max_new_spin.setValue(37)
    panel.top_k_spin.setValue(5)
    with qtbot.waitSignal(panel.generated, timeout=30_000) as blocker:
        assert panel.generate_text()
    continuation = blocker.args[0]
    assert len(continuation) == 37
    assert panel.generated_text.toPlainText() == "ROMEO:\n" + continuation


def test_a_bad_corpus_file_shows_why_and_changes_nothing(qtbot, panel, tmp_path):
    before = panel.corpus
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("caf\xe9 ".encode("latin-1") * 500)
    short = tmp_path / "short.txt"
    short.write_text("To be.", encoding="utf-8")
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)  # opening it for reading must neither hang nor be read
    for path, reason in ((binary, "not UTF-8"), (short, "at least 1,000"), (tmp_path / "missing.txt", "does not exist"),
                         (fifo, "not a regular file"), (tmp_path, "is a folder")):
        with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000) as blocker:
            panel.load_corpus_file(path)
        assert blocker.args == [False]
        assert reason in panel.last_error and panel.message_label.isVisibleTo(panel)
        assert panel.corpus is before and panel.corpus_combo.count() == 3  # the bundled text, the repeated letters, the dates

    good = tmp_path / "abc.txt"
    good.write_text("abc " * 400, encoding="utf-8")
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000) as blocker:
        panel.load_corpus_file(good)
    assert blocker.args == [True]
    assert panel.corpus.vocab_size == 4
    assert not panel.start_training()  # the config's vocabulary is 65: the message says what to set
    assert "set vocab_size to 4" in panel.last_error
    assert not panel.training


def test_format_duration():
    assert format_duration(5.2) == "5 s"
    assert format_duration(125) == "2 min 05 s"
    assert format_duration(7300) == "2 h 01 min"


def test_opening_a_corrupt_model_folder_shows_a_message_and_keeps_the_model(qtbot, window, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text('{"format": "transformer-explorer-checkpoint", "format_version": 1, '
                                        '"config": {"name": "x", "vocab_size": 65}}', encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"not safetensors at all")
    model, config = window.state.model, window.state.config
    window.open_model(folder)
    qtbot.waitUntil(lambda: any(box.isVisible() for box in window.message_boxes), timeout=30_000)
    box = [box for box in window.message_boxes if box.isVisible()][-1]
    assert "model.safetensors" in box.text() and "Traceback" not in box.text()
    box.close()
    assert window.state.model is model and window.state.config == config


def test_save_model_as_then_open_model_folder_round_trips(qtbot, window, tmp_path):
    folder = tmp_path / "saved"
    with qtbot.waitSignal(window.compute.result_delivered, timeout=30_000):
        window.save_model(folder)
    old = window.state.model
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        window.open_model(folder)
    assert window.state.model is not old
    assert window.loaded.source.startswith(str(folder))
    assert window.state.config == window.loaded.config
    qtbot.wait(50)  # the config change must not make the window rebuild a random model
    assert not window.compute.busy and window.state.model is window.loaded.model


def test_in_the_window_a_finished_run_becomes_the_loaded_model(qtbot, settings):
    from gui.main_window import MainWindow

    win = MainWindow(settings=settings, panel_classes=[TrainPanel])
    win.remember_preferences = False
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):
        win.start_loading()
    panel = win.panels[0]
    panel.steps_spin.setValue(3)
    panel.batch_spin.setValue(2)
    panel.seq_spin.setValue(16)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        assert panel.start_training()
        qtbot.waitUntil(lambda: "training" in win.busy_label.text(), timeout=30_000)  # the status bar names the job
    assert win.loaded is panel.outcome.loaded and win.state.model is win.loaded.model
    assert "trained here (3 steps" in win.model_label.text()
    qtbot.wait(50)
    assert win.state.model is panel.outcome.loaded.model  # no rebuild replaced it
    win.close()


def test_cancel_in_the_status_bar_throws_the_run_away(qtbot, panel):
    old_model = panel.state.model
    panel.steps_spin.setValue(100_000)
    assert panel.start_training()
    qtbot.waitUntil(lambda: len(panel.train_points[0]) >= 2, timeout=30_000)
    panel.compute.cancel()
    qtbot.waitUntil(lambda: not panel.training, timeout=30_000)
    assert "cancelled" in panel.status_label.text() and panel.state.model is old_model
    assert panel.train_button.isEnabled()


def test_cancel_ends_a_paused_run(qtbot, panel):
    old_model = panel.state.model
    panel.steps_spin.setValue(100_000)
    assert panel.start_training()
    panel.toggle_pause()  # before the first step: the run waits at step 0
    assert panel.status_label.text().startswith("Paused before the first step")
    probe(qtbot, panel.compute)
    assert panel.training and panel.train_points == ([], [])
    panel.compute.cancel()
    qtbot.waitUntil(lambda: not panel.training, timeout=30_000)
    assert "cancelled" in panel.status_label.text() and panel.state.model is old_model


def window_with(qtbot, settings, *panel_classes):
    from gui.main_window import MainWindow

    win = MainWindow(settings=settings, panel_classes=list(panel_classes))
    win.remember_preferences = False
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):
        win.start_loading()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):
        win.state.set_config(TINY)  # its whole-split validation score at the end of a run takes a moment only
    return win


def test_norms_computes_while_a_run_is_paused_and_the_run_then_finishes(qtbot, settings):
    from gui.panels.norms import NormsPanel

    win = window_with(qtbot, settings, TrainPanel, NormsPanel)
    train, norms = win.panels
    train.steps_spin.setValue(12)
    train.batch_spin.setValue(2)
    train.seq_spin.setValue(16)
    win.tabs.setCurrentWidget(train)
    assert train.start_training()
    train.toggle_pause()  # the run waits before its first step
    view = norms.view
    with qtbot.waitSignal(view.result_shown, timeout=60_000):
        win.tabs.setCurrentWidget(norms)  # shown: it computes, between the paused run's steps
    with qtbot.waitSignal(view.result_shown, timeout=60_000):
        norms.depth_spin.setValue(3)
    assert view.shown_inputs.depth == 3 and view.result.pre.depth == 3
    with qtbot.waitSignal(view.result_shown, timeout=60_000):
        win.state.set_seed(win.state.seed + 1)  # the sidebar's seed too: the model is rebuilt while the run waits
    assert view.result.pre.seed == win.state.seed
    assert train.training and train.control.paused.is_set() and train.train_points == ([], [])

    win.tabs.setCurrentWidget(train)
    with qtbot.waitSignal(train.training_finished, timeout=60_000):
        train.toggle_pause()
    assert train.outcome.steps_done == 12 and not train.outcome.stopped
    assert win.loaded is train.outcome.loaded and win.state.model is train.outcome.loaded.model
    qtbot.waitUntil(lambda: not win.compute.busy, timeout=30_000)
    # The seed changed during the run: adopting the trained model takes its seed, so nothing rebuilds over it.
    assert win.state.model is train.outcome.loaded.model and win.state.seed == train.outcome.loaded.seed
    win.close()


def test_a_config_too_large_to_build_keeps_the_trained_unsaved_model(qtbot, settings):
    win = window_with(qtbot, settings, TrainPanel)
    panel = win.panels[0]
    panel.steps_spin.setValue(3)
    panel.batch_spin.setValue(2)
    panel.seq_spin.setValue(16)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        assert panel.start_training()
    trained = panel.outcome.loaded
    assert win.loaded is trained
    sidebar = win.sidebar
    for preset in ("gpt2-xl", "llama3-8b"):
        combo = sidebar.preset_combo
        combo.setCurrentIndex(combo.findText(preset))
        combo.activated.emit(combo.currentIndex())
        qtbot.waitUntil(lambda: any(box.isVisible() for box in win.message_boxes), timeout=30_000)
        box = next(box for box in win.message_boxes if box.isVisible())
        # The whole refusal: what cannot be built and why, to its last sentence, and what the lab does instead.
        assert box.text().startswith(f"{preset} cannot be built: {preset} has ")
        assert "the lab builds real weights up to 400,000,000" in box.text()
        assert box.text().endswith(f"The lab keeps the current model, {trained.config.name}, {trained.source}, "
                                   "and the sidebar shows its config again.")
        assert preset not in win.statusBar().currentMessage()  # not a line cut off in the status bar
        assert box.textFormat() == Qt.TextFormat.PlainText
        qtbot.waitUntil(lambda: win.state.config == trained.config, timeout=30_000)
        assert win.state.model is trained.model and win.loaded is trained
        assert combo.currentText() == CUSTOM_PRESET and trained.config.name == TINY.name
        assert sidebar.form.editors["n_layers"].text() == str(trained.config.n_layers)
        assert sidebar.form.editors["d_model"].text() == str(trained.config.d_model)
        assert "trained here (3 steps" in win.model_label.text()
        qtbot.waitUntil(lambda: not win.compute.busy, timeout=30_000)
        assert win.state.model is trained.model  # no rebuild replaced it
        box.close()
    assert panel.save_button.isEnabled()  # the trained model can still be saved
    win.close()


def test_open_model_folder_takes_a_hugging_face_gpt2_folder(qtbot, window, tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(vocab_size=65, n_positions=32, n_embd=16, n_layer=1, n_head=2)
    transformers.GPT2LMHeadModel(config).save_pretrained(str(tmp_path / "hf-gpt2"), safe_serialization=True)
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        window.open_model(tmp_path / "hf-gpt2")
    assert window.state.config.d_model == 16 and window.state.config.context_length == 32
    assert window.state.model is window.loaded.model and "Hugging Face" in window.loaded.source
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=30_000)  # the visible panel's views compute on it
    assert window.state.model is window.loaded.model  # and nothing replaced it meanwhile


def start_long_paused_run(qtbot, win, panel) -> None:
    panel.steps_spin.setValue(100_000)
    panel.batch_spin.setValue(2)
    panel.seq_spin.setValue(16)
    win.tabs.setCurrentWidget(panel)
    assert panel.start_training()
    qtbot.waitUntil(lambda: len(panel.train_points[0]) >= 2, timeout=30_000)
    panel.toggle_pause()


def test_a_config_change_while_paused_asks_first_and_keep_training_applies_it_after(qtbot, settings):
    """The sidebar's n_heads during a paused run: held back at once (the loaded model stays), asked, applied at the end."""
    win = window_with(qtbot, settings, TrainPanel)
    panel = win.panels[0]
    loaded_before = win.loaded
    start_long_paused_run(qtbot, win, panel)
    other = TINY.replace(n_heads=1)
    win.state.set_config(other)
    assert win.state.config == TINY  # held back in the same event: nothing is rebuilt for the asked config
    qtbot.waitUntil(lambda: not win._model_timer.isActive(), timeout=5_000)
    assert win.loaded is loaded_before and win.state.model is loaded_before.model and not win.compute.busy_with("model")
    question = panel.guard.question
    assert question is not None and question.isVisible() and "keep training" in question.text()
    question.buttonClicked.emit(panel.guard.keep_button)  # what a click on it does
    assert panel.training and "applied when the run ends" in panel.status_label.text()
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        panel.stop_training()
        assert "Stopping" in panel.status_label.text() and "ETA" not in panel.status_label.text()
    text = panel.status_label.text()
    assert "Stopped after" in text and "they now use a model of that config" in text
    assert panel.last_error == "" and not panel.message_label.isVisible()  # no banner beside the headline
    qtbot.waitUntil(lambda: win.loaded is not None and win.loaded.config == other, timeout=60_000)
    assert win.state.config == other and panel.outcome.loaded.config == TINY and panel.save_button.isEnabled()
    win.close()


def test_discarding_the_run_for_a_new_config_stops_it_and_installs_nothing_of_it(qtbot, settings):
    win = window_with(qtbot, settings, TrainPanel)
    panel = win.panels[0]
    start_long_paused_run(qtbot, win, panel)
    other = TINY.replace(d_ff=32)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        win.state.set_config(other)
        panel.guard.question.buttonClicked.emit(panel.guard.discard_button)
        assert win.state.config == other
        assert "then the run is discarded" in panel.status_label.text()
    assert "The run was discarded for the new config" in panel.status_label.text()
    qtbot.waitUntil(lambda: win.loaded is not None and win.loaded.config == other, timeout=60_000)
    assert win.state.model is not panel.outcome.loaded.model
    win.close()


def test_fine_tuning_starts_from_the_loaded_model_and_says_so(qtbot, settings):

    win = window_with(qtbot, settings, TrainPanel)
    panel = win.panels[0]
    loaded, tokenizer = win.loaded, win.state.tokenizer
    panel.start_combo.setCurrentIndex(panel.start_combo.findData("fine-tune"))
    panel.seed_spin.setValue(loaded.seed + 5)  # a fresh start from this seed would draw other weights
    panel.steps_spin.setValue(1)
    panel.lr_spin.setValue(1e-5)
    panel.batch_spin.setValue(2)
    panel.seq_spin.setValue(16)
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        assert panel.start_training()
        assert "fine-tuning a copy of the loaded model" in panel.status_label.text()
    trained = panel.outcome.loaded
    assert panel.outcome.metadata["start"] == "fine-tune" and trained.source.startswith("fine-tuned here")
    # One step at lr 1e-5 moves each weight by about 1e-5 (Adam): the copy is the loaded model, nudged.
    before, after = loaded.model.state_dict(), trained.model.state_dict()
    assert max(float((after[name] - before[name]).abs().max()) for name in before) < 1e-3
    assert trained.tokenizer is tokenizer  # fine-tuning keeps the model's own tokenizer
    win.close()


def test_the_repeated_letters_corpus_trains_the_induction_preset(qtbot, panel):
    from core.presets import get_preset
    from core.repeated_corpus import LETTERS, repeated_letters

    panel.state.set_config(get_preset("tiny-induction"))
    panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("repeated"))
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):  # made on the worker from the newest seed
        panel.seed_spin.setValue(4)
    assert panel.vocabulary_problem() == ""  # the letters and the space: the preset's 53 tokens
    panel.steps_spin.setValue(3)
    train_to_end(qtbot, panel)
    assert panel.corpus.text == repeated_letters(seed=4) and "seed 4" in panel.corpus.name
    assert panel.outcome.loaded.tokenizer.vocab_size == len(LETTERS) + 1


def test_an_encoder_trains_as_a_masked_lm_and_its_headline_counts_blanks(qtbot, panel):
    from core.presets import get_preset

    encoder = get_preset("tiny-encoder")
    panel.state.set_config(encoder.replace(vocab_size=65))
    assert "set vocab_size to 66" in panel.vocabulary_problem()  # the Shakespeare's 65 characters and the blank
    panel.state.set_config(encoder)
    assert panel.vocabulary_problem() == ""
    panel.steps_spin.setValue(4)
    train_to_end(qtbot, panel)
    quality = panel.outcome.metadata["quality"]
    headline = panel.status_label.text()
    assert panel.outcome.metadata["objective"] == "masked-lm"
    assert f"{quality['masked_accuracy']:.1%} of {quality['masked']:,} blanked positions filled right" in headline
    assert f"{quality['accuracy']:.1%} of all {quality['scored']:,} chosen positions" in headline
    assert "held-out blanks" in headline
    assert "causal mask" not in headline  # an encoder is scored with both sides, as it was trained


def test_an_encoder_decoder_trains_on_the_dates_and_refuses_plain_text(qtbot, panel):
    from core.presets import get_preset

    panel.state.set_config(get_preset("tiny-encoder-decoder"))
    assert "has no tab" in panel.vocabulary_problem()  # the bundled Shakespeare is not a list of pairs
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("dates"))
    assert panel.vocabulary_problem() == ""
    panel.steps_spin.setValue(3)
    train_to_end(qtbot, panel)
    quality = panel.outcome.metadata["quality"]
    assert panel.outcome.metadata["objective"] == "seq2seq" and quality["pairs"] == 4000
    assert f"{quality['exact_match']:.1%} of 4,000 rewritten exactly" in panel.status_label.text()


def test_a_mixture_of_experts_run_shows_its_expert_load(qtbot, panel):
    from core.presets import get_preset

    panel.state.set_config(get_preset("tiny-moe"))
    panel.steps_spin.setValue(3)  # an estimate (with its expert load) after step 1, and the end
    train_to_end(qtbot, panel)
    load = panel.outcome.metadata["expert_load"]
    assert load and all(sum(row) == pytest.approx(1.0) for row in load[-1][1])
    assert "expert load at the end: layer 0 " in panel.status_label.text()


def test_a_run_on_repeated_letters_plots_its_induction_score_live_under_the_loss(qtbot, panel):
    from core.presets import get_preset
    from tests.core.test_induction_probe import hand_score

    panel.state.set_config(get_preset("tiny-induction-attn"))
    assert not panel.track_check.isChecked() and panel.induction_plot.isHidden()
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("repeated"))
    assert panel.track_check.isChecked()  # the text induction heads form on: tracked unless unticked
    panel.steps_spin.setValue(100_000)
    assert panel.start_training()
    assert panel.induction_plot.isVisible() and not panel.track_check.isEnabled()
    qtbot.waitUntil(lambda: len(panel.run_plots.probe_points[0]) >= 2, timeout=120_000)  # 1,000 steps
    panel.toggle_pause()
    probe(qtbot, panel.compute)  # the paused run has sent every step it made
    steps, scores = panel.run_plots.induction_curve.getData()
    assert list(steps) == panel.run_plots.probe_points[0][:len(steps)] and steps[0] == 1
    assert steps[1] == 1000 and all(0 <= score <= 1 for score in scores)  # every hundredth of 100,000 steps
    title = panel.induction_plot.getPlotItem().titleLabel.text
    assert title == "Best induction score over layer-1 heads, on 20 random letters written twice (seed 0)"
    assert f", induction score {panel.run_plots.probe_points[1][-1]:.3f}. " in panel.status_label.text()
    with qtbot.waitSignal(panel.training_finished, timeout=60_000):
        panel.stop_training()
    outcome = panel.outcome
    steps, scores = panel.run_plots.induction_curve.getData()
    assert [(int(s), float(v)) for s, v in zip(steps, scores)] == list(outcome.probe_history)
    assert outcome.metadata["induction_probe"]["history"] == [list(entry) for entry in outcome.probe_history]
    step, score = outcome.probe_history[-1]
    assert f"Induction score {score:.3f} at step {step:,}." in panel.status_label.text()
    _, uniform = panel.run_plots.uniform_attention_line.getData()
    assert list(uniform) == [outcome.probe.uniform_score] * 2

    panel.steps_spin.setValue(3)
    train_to_end(qtbot, panel)  # 3 steps, a probe after each: the last one on the model the lab now holds
    assert panel.outcome.probe_history[-1][0] == 3
    assert panel.outcome.probe_history[-1][1] == pytest.approx(hand_score(panel.state.model, panel.outcome.probe),
                                                               abs=1e-6)

    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("bundled"))
    assert not panel.track_check.isChecked()
    assert panel.induction_plot.isVisible()  # the last run's score stays until the next run starts
    panel.state.set_config(TINY)
    panel.steps_spin.setValue(2)
    train_to_end(qtbot, panel)
    assert panel.induction_plot.isHidden() and panel.outcome.probe_history == ()
    steps, _ = panel.run_plots.induction_curve.getData()
    assert steps is None or len(steps) == 0
    assert panel.settings()["track_induction"] is False
    panel.restore_settings({"track_induction": True})
    assert panel.track_check.isChecked()
