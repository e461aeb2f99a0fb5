"""Train: fit the current config to a corpus, watch the losses fall, then sample from the result.

The run is one job on the one compute worker (core.training_job.run_training) and the status bar
names it; the corpus is read and checked by core.corpus, and samples come from core.text_generation.
This panel only sets up a run and shows it: the job's partial results (the steps since the last
batch) reach it on the GUI thread through the compute controller. Pause and stop are flags the job
polls between steps; the status bar's Cancel throws the run away instead. When a run ends, its model
becomes the lab's model: `model_ready` carries it to the main window, which installs it as it
installs any built model.

A run may train with one of the reading's leaky masks (Mask); its validation loss is still scored
with the causal mask. The Compare tab trains the reading's pitfalls beside their fix (train_compare.py)
as a job of the same kind on the same channel, so a run and a comparison never overlap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.choices import MASK_MODE_DESCRIPTIONS, MASK_MODE_LABELS, TRAIN_MASK_MODES
from core.comparison_job import ComparisonProgress, run_pitfall_job
from core.corpus import Corpus, vocabulary_problem, window_problem
from core.experiments.pitfall_setups import EXPERIMENTS
from core.text_generation import GeneratedText, run_generation
from core.training_job import (
    TrainingControl,
    TrainingProgress,
    TrainOutcome,
    TrainRequest,
    run_training,
)
from core.training_status import outcome_headline, progress_line
from gui import theme
from gui.panels.base import Panel
from gui.panels.train_compare import ComparePage
from gui.panels.train_config_guard import RunConfigGuard
from gui.panels.train_corpus import CorpusPicker
from gui.panels.train_curves import RunPlots
from gui.panels.train_generate import GeneratePage, spin
from gui.panels.train_recipe import RecipeRow
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.page_tabs import PageTabs
from gui.widgets.turning_splitter import TurningSplitter

GENERATE_CHANNEL = "train-generate"  # not the training channel: a request there would cancel the run
SAVE_CHANNEL = "train-save"


class TrainPanel(Panel):
    title = "Train"
    refresh_on = frozenset({"config", "model", "tokenizer"})

    model_ready = Signal(object)  # core.lab_model.LabModel of a finished run
    training_finished = Signal()  # a run ended (finished or stopped) and its model is installed
    generated = Signal(str)  # the continuation just shown
    saved = Signal(str)  # the checkpoint folder just written
    corpus_loaded = Signal(bool)  # a chosen corpus was made or read and is now used (True), or refused (False)
    compared = Signal()  # a pitfall comparison ended (finished or stopped) and is shown

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.control: TrainingControl | None = None  # set while a run or a comparison is on the worker
        self.comparing = False  # the job under `control` is a comparison
        self.request: TrainRequest | None = None
        self.outcome: TrainOutcome | None = None
        self.last_progress: TrainingProgress | None = None
        self.guard = RunConfigGuard(state, self, self._run_config, self.stop_training, self._config_answered)
        layout = self.layout()

        # ---- corpus and settings ----
        settings_box = QGroupBox("Training run")
        grid = QGridLayout(settings_box)
        self.corpus_combo = QComboBox()
        self.corpus_combo.addItem("Tiny Shakespeare (bundled)", "bundled")
        # Made from the run's seed; with the tiny-induction preset its induction heads form in a minute or two.
        self.corpus_combo.addItem("Repeated random letters (induction heads)", "repeated")
        self.corpus_combo.addItem("Dates in words to ISO (encoder-decoder pairs)", "dates")
        self.corpus_combo.setToolTip("the text to train on; the last 10% is held out for validation")
        self.corpus_button = QPushButton("Text file...")
        self.corpus_button.setToolTip("train on a UTF-8 text file of your own")
        self.corpus_label = QLabel("")
        self.corpus_label.setWordWrap(True)
        self.steps_spin = spin(1, 1_000_000, 500, "optimizer steps", 100)
        self.batch_spin = spin(1, 1024, 16, "sequences per step")
        self.seq_spin = spin(2, 100_000, 128, "characters per sequence (at most the config's context length)", 16)
        self.lr_spin = QDoubleSpinBox()
        self.lr_spin.setDecimals(5)
        self.lr_spin.setRange(1e-5, 1.0)
        self.lr_spin.setSingleStep(5e-4)
        self.lr_spin.setValue(3e-3)
        self.lr_spin.setToolTip("peak learning rate (AdamW; linear warm-up, then a cosine decay to a tenth)")
        self.lr_spin.setKeyboardTracking(False)
        self.seed_spin = spin(0, 999_999, 0, "seeds the initial weights and the batch order")
        self.start_combo = QComboBox()
        self.start_combo.addItem("fresh weights", "fresh")
        self.start_combo.addItem("the loaded model", "fine-tune")
        self.start_combo.setToolTip("fresh: random weights from the seed; the loaded model: fine-tune a copy of the "
                                    "model the other panels use now (its tokenizer too; the seed orders the batches)")
        self.mask_combo = QComboBox()
        self.mask_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mask_combo.setMinimumContentsLength(8)  # the settings grid must not widen the panel at projector scale
        for mode in TRAIN_MASK_MODES:
            self.mask_combo.addItem(MASK_MODE_LABELS[mode], mode)
            self.mask_combo.setItemData(self.mask_combo.count() - 1, MASK_MODE_DESCRIPTIONS[mode], Qt.ItemDataRole.ToolTipRole)
        self.mask_combo.setToolTip("the self-attention mask of the training forward; the reading's leaky pitfalls are "
                                   "here to train on purpose (validation is always scored with the causal mask)")
        self.track_check = QCheckBox("Track induction score")
        self.track_check.setToolTip("measure the induction score of the second layer's heads on a seeded sequence "
                                    "of letters written twice, at step 1 and every hundredth of the run, and plot it "
                                    "under the loss (on for the repeated letters, where induction heads form)")
        # Two short rows rather than one long one: at the projector's text size one row outgrows the window.
        # A row of its own, so the wide file button does not set the width of a settings column.
        # Flows, not fixed columns: beside a lesson at projector text the settings wrap instead of scrolling.
        self.recipe_row = RecipeRow(self.steps_spin, self.batch_spin, self.seq_spin, self.lr_spin, self.seed_spin,
                                    self.corpus_combo, self.start_combo, self.mask_combo, lambda: self.training, self)
        self.recipe_label, self.use_recipe_button = self.recipe_row.label, self.recipe_row.use_button
        grid.addWidget(self.recipe_row.row, 2, 0, 1, 7)  # under the fields it describes, above the buttons
        corpus_row = FlowLayout()
        corpus_row.addWidget(control_group(QLabel("Corpus"), self.corpus_combo))
        corpus_row.addWidget(self.corpus_button)
        corpus_row.addWidget(self.corpus_label)
        grid.addLayout(corpus_row, 0, 0, 1, 7)
        settings_row = FlowLayout(spacing=18)
        for caption, box in (("Start from", self.start_combo), ("Steps", self.steps_spin), ("Batch", self.batch_spin),
                             ("Seed", self.seed_spin), ("Seq len", self.seq_spin), ("Learning rate", self.lr_spin),
                             ("Mask", self.mask_combo)):
            label = QLabel(caption)
            label.setBuddy(box)
            settings_row.addWidget(control_group(label, box))
        settings_row.addWidget(self.track_check)
        grid.addLayout(settings_row, 1, 0, 1, 7)
        buttons = QHBoxLayout()
        self.train_button = QPushButton("Train")
        self.train_button.setToolTip("train the current config from fresh weights or fine-tune the loaded model "
                                     "(Start from); the other panels keep computing between its steps")
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("hold the run between steps; Resume continues it")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("end the run after this step and keep the model trained so far")
        self.save_button = QPushButton("Save model...")
        self.save_button.setToolTip("write the trained model, its tokenizer and its training record as a safetensors folder")
        for button in (self.train_button, self.pause_button, self.stop_button, self.save_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        grid.addLayout(buttons, 3, 0, 1, 7)
        layout.addWidget(settings_box)

        self.status_label = QLabel("Choose the settings and press Train.")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status_label)

        # ---- loss curves | samples and generation ----
        splitter = TurningSplitter()  # the side tabs go below the plots where the panel is narrow (a lesson beside it)
        plots = self.run_plots = RunPlots()
        # The names lessons, tests and exports reach the run's plots by.
        self.loss_plot, self.induction_plot = plots.loss_plot, plots.induction_plot
        self.train_curve, self.val_curve = plots.train_curve, plots.val_curve
        self.final_val_marker = plots.final_val_marker
        self.uniform_line = plots.uniform_line
        self.plot_tabs = PageTabs()  # sized by the page on show
        self.plot_tabs.addTab(plots, "This run")
        self.compare_page = ComparePage()
        self.plot_tabs.addTab(self.compare_page, "Compare pitfalls")
        # The names lessons quote and cover.
        self.compare_plot = self.compare_page.loss_plot
        self.gradient_plot = self.compare_page.gradient_plot
        self.compare_summary = self.compare_page.summary_label
        self.compare_verdict = self.compare_page.verdict_label
        self.compare_samples = self.compare_page.samples_label
        self.compare_button = self.compare_page.compare_button
        self.experiment_combo = self.compare_page.experiment_combo
        splitter.addWidget(self.plot_tabs)

        self.side_tabs = PageTabs()
        sample_page = QWidget()
        sample_layout = QVBoxLayout(sample_page)
        self.sample_caption = QLabel("Samples appear here during a run.")
        self.sample_caption.setWordWrap(True)
        self.sample_text = QPlainTextEdit()
        self.sample_text.setReadOnly(True)
        self.sample_text.setToolTip("what the model makes as it trains: a decoder, 200 characters sampled at temperature "
                                    "0.8 from the corpus's first character; an encoder, held-out text with its blanks "
                                    "and then its fill; an encoder-decoder, a held-out source and its greedy rewrite")
        sample_layout.addWidget(self.sample_caption)
        sample_layout.addWidget(self.sample_text, 1)
        self.side_tabs.addTab(sample_page, "Samples")

        generate_page = self.generate_page = GeneratePage(state)
        # The names lessons, sessions and tests reach the page's widgets by.
        self.prompt_edit, self.max_new_spin = generate_page.prompt_edit, generate_page.max_new_spin
        self.temperature_spin, self.top_k_spin = generate_page.temperature_spin, generate_page.top_k_spin
        self.generate_seed_spin, self.generate_button = generate_page.seed_spin, generate_page.generate_button
        self.trained_mask_warning, self.generated_text = generate_page.trained_mask_warning, generate_page.generated_text
        self.side_tabs.addTab(generate_page, "Generate")
        self.side_tabs.addTab(self.compare_page.numbers_page, "Comparison")
        splitter.addWidget(self.side_tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([600, 400])
        layout.addWidget(splitter, 1)

        self.corpus_combo.currentIndexChanged.connect(self._on_corpus_chosen)
        self.corpus_picker = CorpusPicker(compute, self.corpus_combo, self.corpus_label, self.seed_spin,
                                          self.vocabulary_problem, self.show_error, self.clear_error, self)
        self.corpus_picker.loaded.connect(self.corpus_loaded)
        self.corpus_picker.pending_changed.connect(self._update_buttons)
        self.corpus_button.clicked.connect(self.choose_corpus_file)
        self.train_button.clicked.connect(self.start_training)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.stop_button.clicked.connect(self.stop_training)
        self.save_button.clicked.connect(self.save_dialog)
        self.generate_button.clicked.connect(self.generate_text)
        self.prompt_edit.returnPressed.connect(self.generate_text)
        self.compare_button.clicked.connect(self.start_compare)
        self.plot_tabs.currentChanged.connect(self._follow_plot_tab)
        compute.busy_changed.connect(self._on_busy_changed)
        self.recipe_row.follow(state.config)  # a preset with a recipe starts with it filled in
        state.config_changed.connect(lambda: self.recipe_row.follow(self.state.config))  # shown or not
        self._update_buttons()
        self.apply_theme()

    # ---- corpus (gui/panels/train_corpus.py) ----------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        return self.corpus_picker.corpus

    def _on_corpus_chosen(self, index: int) -> None:
        self.track_check.setChecked(self.corpus_combo.itemData(index) == "repeated")  # the text induction heads form on

    def choose_corpus_file(self) -> None:
        self.corpus_picker.choose_file(self)

    def load_corpus_file(self, path: str | Path) -> None:
        """Use a text file as the corpus, read and checked on the worker; `corpus_loaded(ok)` follows."""
        self.corpus_picker.load_file(path)

    def vocabulary_problem(self) -> str:
        """Why the current config cannot be trained on the corpus, or ""."""
        return vocabulary_problem(self.state.config, self.corpus)

    def _describe_corpus(self) -> None:
        self.corpus_picker.describe()

    # ---- training ------------------------------------------------------------------------------
    @property
    def training(self) -> bool:
        return self.control is not None

    @property
    def train_points(self) -> tuple[list[float], list[float]]:
        return self.run_plots.train_points

    @property
    def val_points(self) -> tuple[list[float], list[float]]:
        return self.run_plots.val_points

    def refresh(self) -> None:
        """No computation: the limits, the recipe and the corpus check follow the config (the run starts on Train)."""
        self.recipe_row.follow(self.state.config)
        self._describe_corpus()
        self._update_buttons()
        self.result_shown.emit()

    def start_training(self) -> bool:
        if self.training:
            return False
        if self.corpus_picker.pending:  # Train is disabled meanwhile; a programmatic start is refused the same way
            self.show_error("The chosen corpus is still being made; train when the line beside it shows its size.")
            return False
        problem = self.vocabulary_problem()
        if problem:
            self.show_error(problem)
            return False
        if not self.state.torch_ready:
            self.show_error("torch is still loading; try again in a moment.")
            return False
        config = self.state.config
        start_from, start_text = None, "from fresh random weights (seed {seed})"
        if self.start_combo.currentData() == "fine-tune":
            model, tokenizer = self.state.model, self.state.tokenizer
            if model is None or model.config != config or tokenizer is None:
                self.show_error("Fine-tuning continues the loaded model, and there is none of the sidebar's config "
                                "yet; wait for it, or start from fresh weights.")
                return False
            start_from, start_text = (model, tokenizer), "fine-tuning a copy of the loaded model"
        seq_len = min(self.seq_spin.value(), config.context_length)
        too_short = window_problem(self.corpus, seq_len)
        if too_short:
            self.show_error(too_short)
            return False
        self.request = TrainRequest(config, self.corpus, self.steps_spin.value(), self.batch_spin.value(), seq_len,
                                    self.lr_spin.value(), self.seed_spin.value(), self.state.device, self.state.seed,
                                    self.mask_combo.currentData(), start_from, self.track_check.isChecked(),
                                    **self.recipe_row.request_extras())
        self.guard.pending, self.guard.discard = None, False
        control = self.control = TrainingControl()
        request = self.request
        self.outcome = None
        self.last_progress = None
        self.run_plots.start(request.steps, config.vocab_size, request.track_induction)
        self.sample_text.setPlainText("")
        self.sample_caption.setText("Samples appear here during the run.")
        self.side_tabs.setCurrentIndex(0)
        self.plot_tabs.setCurrentIndex(0)
        masked = "" if request.mask_mode == "causal" else f" with the {MASK_MODE_LABELS[request.mask_mode]} mask"
        start_text = start_text.format(seed=request.seed)
        self.status_label.setText(f"Training {config.name} on {self.corpus.name}{masked}, {start_text}: "
                                  f"{request.steps:,} steps of {request.batch_size} x {request.seq_len} characters. When "
                                  "it ends, the trained model replaces the one the other panels use now.")
        self.clear_error()
        self.compute.submit(self.channel, lambda token: run_training(request, control, token), self._on_trained,
                            f"training {config.name} ({request.steps:,} steps)", on_error=self._on_training_failed,
                            on_partial=self._on_progress)
        self._update_buttons()
        return True

    # ---- comparing pitfalls --------------------------------------------------------------------
    def start_compare(self) -> bool:
        """Train the chosen comparison's runs on the worker, one after the other; False if a job is running."""
        if self.training:
            return False
        if not self.state.torch_ready:
            self.show_error("torch is still loading; try again in a moment.")
            return False
        request = self.compare_page.request()
        control = self.control = TrainingControl()
        self.comparing = True
        self.clear_error()
        self.plot_tabs.setCurrentIndex(1)
        self.side_tabs.setCurrentWidget(self.compare_page.numbers_page)
        self.compare_page.start(request)
        self.status_label.setText(f"Comparing: {request.steps:,} steps per run, seed {request.seed}. The lab's model "
                                  "stays as it is.")
        self.compute.submit(self.channel, lambda token: run_pitfall_job(request, control, token), self._on_compared,
                            f"comparing pitfalls ({request.experiment})", on_error=self._on_compare_failed,
                            on_partial=self._on_compare_progress)
        self._update_buttons()
        return True

    def _follow_plot_tab(self, index: int) -> None:
        """The comparison's numbers sit beside its plots, a run's samples beside its curves."""
        numbers = self.compare_page.numbers_page
        if index == 1:
            self.side_tabs.setCurrentWidget(numbers)
        elif self.side_tabs.currentWidget() is numbers:
            self.side_tabs.setCurrentIndex(0)

    def _on_compare_progress(self, progress: ComparisonProgress) -> None:
        if self.control is not None and self.comparing:
            self.compare_page.add_progress(progress)

    def _on_compared(self, comparison) -> None:
        self._finish_run()
        self.compare_page.show_comparison(comparison)
        how = "Stopped" if comparison.stopped else "Finished"
        self.status_label.setText(f"{how} comparing: {len(comparison.runs)} runs of {comparison.setup.steps:,} steps, "
                                  f"seed {comparison.setup.seed}. The lab's model is unchanged.")
        self._update_buttons()
        self.result_shown.emit()
        self.compared.emit()

    def _on_compare_failed(self, message: str) -> None:
        self._finish_run()
        self.compare_page.stopped_without_result("The comparison ended without a result.")
        self.show_error(message)

    def toggle_pause(self) -> None:
        if not self.training:
            return
        if self.control.paused.is_set():
            self.control.paused.clear()
        else:
            self.control.paused.set()
        self._update_buttons()
        self._show_progress()

    def stop_training(self) -> None:
        if self.training:
            self.control.stop_requested.set()
            self.control.paused.clear()
            self._update_buttons()
            self._show_progress()

    def _on_progress(self, progress: TrainingProgress) -> None:
        """GUI thread: a batch of steps from the worker goes into the curves, labels and sample box."""
        if self.control is None:
            return
        self.run_plots.add(progress)
        if progress.sample is not None:
            step, text = progress.sample
            self.sample_caption.setText(f"Sample at step {step:,}")
            self.sample_text.setPlainText(text)
        self.last_progress = progress
        self._show_progress()

    def _show_progress(self) -> None:
        if self.request is None:
            return
        control = self.control
        line = progress_line(self.request, self.last_progress, self.val_points[1][-1] if self.val_points[1] else None,
                             paused=control is not None and control.paused.is_set(),
                             stopping=control is not None and control.stop_requested.is_set(),
                             discarding=self.guard.discard, last_probe=self.run_plots.last_probe())
        if line is not None:
            self.status_label.setText(line)

    def _on_trained(self, outcome: TrainOutcome) -> None:
        self._finish_run()
        self.outcome = outcome
        self.run_plots.finish(outcome)
        config = outcome.loaded.config
        window_note = ""
        if self.request is not None and self.request.seq_len < config.context_length:
            window_note = (f"The whole-split loss is scored in windows of the context length ({config.context_length}); "
                           f"positions past the training sequence length ({self.request.seq_len}) were never trained, "
                           "so it can sit above the estimates made during the run.")
        loaded = outcome.loaded
        installed = not self.guard.discard and loaded.config == self.state.config
        self.status_label.setText(outcome_headline(outcome, installed, installed and self.guard.pending is not None))
        self.status_label.setToolTip(window_note)
        self.clear_error()
        if installed:
            self.adopt(loaded)
        self.guard.settle()
        self._update_buttons()
        self.result_shown.emit()
        self.training_finished.emit()

    def adopt(self, loaded) -> None:
        """Make a trained model the lab's model, through the main window when one listens."""
        self.model_ready.emit(loaded)
        if self.state.model is not loaded.model:  # no main window (the panel on its own): set the state here
            if loaded.tokenizer is not None:
                self.state.set_tokenizer(loaded.tokenizer)
            self.state.set_model(loaded.model)

    def _on_training_failed(self, message: str) -> None:
        self._finish_run()
        self.guard.settle()
        self.status_label.setText("The run ended without a model; the previous model stays.")
        self.show_error(message)

    def _finish_run(self) -> None:
        self.control = None
        self.comparing = False
        self.guard.run_over()
        self._update_buttons()

    # ---- a config change while a run is on (gui.panels.train_config_guard) --------------------------
    def _run_config(self):
        """The config the current run trains; None when no training run is on (a comparison keeps the lab's)."""
        return self.request.config if self.training and not self.comparing and self.request is not None else None

    def _config_answered(self, discarded: bool) -> None:
        if not discarded:
            self._show_progress()
            self.status_label.setText(self.status_label.text() + " The config you asked for is applied when the run ends.")

    def _on_busy_changed(self, _busy: bool, _name: str) -> None:
        self._check_cancelled()  # the worker may stay busy with other panels' requests after a cancelled run

    def _check_cancelled(self) -> None:
        # Cancel from the status bar drops the run's result; nothing arrives, so notice the idle worker.
        if self.training and not self.compute.busy_with(self.channel):
            was_comparing = self.comparing
            self._finish_run()
            if was_comparing:
                self.compare_page.stopped_without_result("The comparison was cancelled.")
                self.status_label.setText("The comparison was cancelled.")
            else:
                self.status_label.setText("The run was cancelled; the previous model stays.")
                self.guard.settle()

    def _update_buttons(self) -> None:
        training = self.training
        paused = training and self.control.paused.is_set()
        stopping = training and self.control.stop_requested.is_set()
        self.train_button.setEnabled(not training and not self.corpus_picker.pending)
        self.pause_button.setEnabled(training and not stopping)
        self.pause_button.setText("Resume" if paused else "Pause")
        self.stop_button.setEnabled(training and not stopping)
        self.save_button.setEnabled(not training and self.outcome is not None)
        self.generate_button.setEnabled(not training)
        self.generate_button.setToolTip("generate when the run ends; its samples are in the Samples tab" if training
                                        else "sample from the current model")
        page = self.compare_page
        for box in (self.start_combo, self.corpus_combo, self.corpus_button, self.steps_spin, self.batch_spin, self.seq_spin,
                    self.lr_spin, self.seed_spin, self.mask_combo, self.track_check, page.compare_button,
                    page.experiment_combo,
                    page.steps_spin, page.seed_spin):
            box.setEnabled(not training)
        self.recipe_row.update_line()

    # ---- saving --------------------------------------------------------------------------------
    def save_dialog(self) -> None:
        from gui.save_model_dialog import choose_model_folder

        name = self.outcome.loaded.config.name if self.outcome is not None else "model"
        folder = choose_model_folder(self, "Save the trained model as", Path.home(), f"{name}-trained")
        if folder is not None:
            self.save_model(folder)

    def save_model(self, path: str | Path) -> bool:
        """Write the last trained model as a checkpoint folder on the worker; False if there is none."""
        from gui.model_loader import save_model_folder

        outcome = self.outcome
        if outcome is None:
            self.show_error("Train a model first; Save model... writes the last trained model.")
            return False
        folder = str(path)
        loaded = outcome.loaded
        self.compute.submit(SAVE_CHANNEL, lambda: save_model_folder(loaded.model, folder, loaded.tokenizer, outcome.metadata),
                            self._on_saved, "saving the trained model", on_error=self.show_error)
        return True

    def _on_saved(self, folder) -> None:
        self.status_label.setText(f"Saved the trained model to {folder}.")
        self.saved.emit(str(folder))

    # ---- generation ----------------------------------------------------------------------------
    def generation_prompt(self) -> str:
        return self.generate_page.prompt()

    def generate_text(self) -> bool:
        model, tokenizer = self.state.model, self.state.tokenizer
        if model is None:
            self.show_error("No model is loaded yet.")
            return False
        if tokenizer is None:
            self.show_error("The current model has no tokenizer to turn the prompt into tokens.")
            return False
        prompt = self.generation_prompt()
        if not prompt:
            self.show_error("Type a prompt of at least one character.")
            return False
        max_new, temperature = self.max_new_spin.value(), self.temperature_spin.value()
        top_k, seed = self.top_k_spin.value() or None, self.generate_seed_spin.value()
        self.clear_error()
        self.compute.submit(GENERATE_CHANNEL, lambda: run_generation(model, tokenizer, prompt, max_new, temperature, top_k, seed),
                            self._on_generated, f"generating {max_new} tokens", on_error=self.show_error)
        return True

    def _on_generated(self, result: GeneratedText) -> None:
        self.generated_text.setPlainText(result.prompt + result.continuation)
        self.side_tabs.setCurrentIndex(1)
        self.result_shown.emit()
        self.generated.emit(result.continuation)

    # ---- theme, export, session ----------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()  # the run's plots restyle themselves in it (train_curves.RunPlots.apply_theme)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(theme.font().pointSizeF())
        for box in (self.sample_text, self.generated_text):
            box.setFont(mono)
        self._describe_corpus()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [(self.title, self), ("Loss curves (plot)", self.loss_plot.getPlotItem()),
                ("Induction score (plot)", self.induction_plot.getPlotItem()),
                ("Pitfall comparison, losses (plot)", self.compare_plot.getPlotItem()),
                ("Pitfall comparison, block gradient norms (plot)", self.gradient_plot.getPlotItem())]

    def settings(self) -> dict[str, Any]:
        return {
            "steps": self.steps_spin.value(),
            "batch_size": self.batch_spin.value(),
            "seq_len": self.seq_spin.value(),
            "lr": self.lr_spin.value(),
            "seed": self.seed_spin.value(),
            "prompt": self.prompt_edit.text(),
            "max_new": self.max_new_spin.value(),
            "temperature": self.temperature_spin.value(),
            "top_k": self.top_k_spin.value(),
            "mask_mode": self.mask_combo.currentData(),
            "track_induction": self.track_check.isChecked(),
            "start": self.start_combo.currentData(),
            "plot_tab": "compare" if self.plot_tabs.currentIndex() == 1 else "run",
            "compare_experiment": self.compare_page.experiment_combo.currentData(),
            "compare_steps": self.compare_page.steps_spin.value(),
            "compare_seed": self.compare_page.seed_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        integers = {"steps": self.steps_spin, "batch_size": self.batch_spin, "seq_len": self.seq_spin, "seed": self.seed_spin,
                    "max_new": self.max_new_spin, "top_k": self.top_k_spin}
        for key, box in integers.items():
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
                box.setValue(value)
        for key, box in (("lr", self.lr_spin), ("temperature", self.temperature_spin)):
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
                box.setValue(float(value))
        if isinstance(data.get("prompt"), str):
            self.prompt_edit.setText(data["prompt"])
        if self.training:  # a running job's settings stay as they are
            return
        if data.get("mask_mode") in TRAIN_MASK_MODES:
            self.mask_combo.setCurrentIndex(self.mask_combo.findData(data["mask_mode"]))
        if isinstance(data.get("track_induction"), bool):
            self.track_check.setChecked(data["track_induction"])
        if data.get("start") in ("fresh", "fine-tune"):
            self.start_combo.setCurrentIndex(self.start_combo.findData(data["start"]))
        page = self.compare_page
        if data.get("compare_experiment") in EXPERIMENTS:
            page.experiment_combo.setCurrentIndex(page.experiment_combo.findData(data["compare_experiment"]))
        for key, box in (("compare_steps", page.steps_spin), ("compare_seed", page.seed_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
                box.setValue(value)
        if data.get("plot_tab") in ("run", "compare"):
            self.plot_tabs.setCurrentIndex(1 if data["plot_tab"] == "compare" else 0)
            self._follow_plot_tab(self.plot_tabs.currentIndex())


__all__ = ["TrainPanel"]
