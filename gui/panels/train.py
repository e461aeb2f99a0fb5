"""Train: fit the current config to a corpus, watch the losses fall, then sample from the result.

The run is one job on the one compute worker (core.training.train) and the status bar names it. The
worker never touches a widget: a few times a second it sends the steps done since the last one as a
partial result (`token.partial`), which the compute controller delivers to the panel on the GUI
thread, and it reports a fraction to the status bar's progress bar. Between steps the run lets the
other panels' pending requests run on the same worker thread (`token.let_others_run`), and a paused
run waits inside it, so the rest of the lab keeps computing while a run trains or is paused. Pause and
stop are flags the training loop polls (its `should_stop` callback) between steps; the status bar's
Cancel throws the run away instead. When a run ends, its model becomes the lab's model: `model_ready`
carries it to the main window, which installs it as it installs any built model.

A run may train with one of the reading's leaky masks (Mask); its validation loss is still scored
with the causal mask. The Compare tab trains the reading's pitfalls beside their fix (train_compare.py)
as a job of the same kind on the same channel, so a run and a comparison never overlap.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.choices import MASK_MODE_DESCRIPTIONS, MASK_MODE_LABELS, TRAIN_MASK_MODES
from core.experiments.pitfall_setups import EXPERIMENTS
from core.tokenizers import CharTokenizer
from gui import theme
from gui.panels.base import Panel
from gui.panels.generate.common import TrainedMaskWarning
from gui.panels.train_compare import ComparePage, ComparisonProgress, run_pitfall_job
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.legend import legend_below
from gui.widgets.page_tabs import PageTabs
from gui.widgets.plot_titles import wrap_title
from gui.widgets.turning_splitter import TurningSplitter
from resources import resource_path

BUNDLED_CORPUS = "tinyshakespeare.txt"
MIN_CORPUS_CHARS = 1000  # below this a validation split of a tenth holds too few windows to mean anything
MAX_CORPUS_BYTES = 200_000_000  # the corpus is held in memory twice (text and ids)
PARTIAL_INTERVAL_S = 0.1  # steps go to the curves in batches: ten redraws a second, however fast the steps
REPORT_INTERVAL_S = 0.25  # status-bar progress: a few updates a second are enough to read
PAUSED_WAIT_S = 0.05  # a paused run wakes this often to see Resume, Stop or Cancel (others' requests wake it at once)
SAMPLE_EVERY_RUNS = 10  # about ten samples per run
DEFAULT_PROMPT = "ROMEO:\n"
GENERATE_CHANNEL = "train-generate"  # not the training channel: a request there would cancel the run
SAVE_CHANNEL = "train-save"
CORPUS_CHANNEL = "train-corpus"


class CorpusError(ValueError):
    """A text file that cannot serve as a training corpus."""


@dataclass(frozen=True)
class Corpus:
    name: str
    text: str
    vocab_size: int  # distinct characters: the vocabulary a character model of it needs


def read_corpus(path: str | Path) -> Corpus:
    """A UTF-8 text file as a corpus, or CorpusError saying why it cannot be one."""
    from core.json_files import JsonFileError, read_regular_file

    path = Path(path)
    try:
        text = read_regular_file(path, MAX_CORPUS_BYTES, "a corpus").decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path.name} is not UTF-8 text (byte {error.start} cannot be decoded)") from None
    except JsonFileError as error:
        raise CorpusError(str(error)) from None
    if len(text) < MIN_CORPUS_CHARS:
        raise CorpusError(f"{path.name} has {len(text):,} characters; a corpus needs at least {MIN_CORPUS_CHARS:,}")
    return Corpus(path.name, text, CharTokenizer.from_text(text).vocab_size)


@dataclass(frozen=True)
class TrainRequest:
    config: Any  # core.config.ModelConfig
    corpus: Corpus
    steps: int
    batch_size: int
    seq_len: int
    lr: float
    seed: int  # of the run: weights and batch order
    device: str
    state_seed: int  # the lab's seed, recorded so the main window sees the model as built
    mask_mode: str = "causal"  # the training forward's mask (core.choices.TRAIN_MASK_MODES)
    start_from: Any = None  # (model, tokenizer) to fine-tune; None: fresh weights from `seed`


@dataclass(frozen=True)
class TrainOutcome:
    loaded: Any  # gui.model_loader.LoadedModel of the trained model
    metadata: dict[str, Any]  # TrainResult.metadata(): settings, losses, timing (plain JSON types)
    loss_history: tuple[tuple[int, float], ...]
    val_history: tuple[tuple[int, float], ...]
    final_val_loss: float
    steps_done: int
    stopped: bool
    tokens_per_s: float


@dataclass(frozen=True)
class GeneratedText:
    prompt: str
    continuation: str
    new_tokens: int


@dataclass(frozen=True)
class TrainingProgress:
    """The steps a run made since its last partial result (worker -> GUI through `token.partial`)."""

    losses: tuple[tuple[int, float], ...]  # (step, training loss of that step's batch)
    validation: tuple[tuple[int, float], ...]  # (step, validation estimate), at the steps that made one
    tokens_per_s: float
    eta_s: float  # of the training alone: time paused or spent on other panels' requests is left out
    sample: tuple[int, str] | None = None  # (step, text) of a sample made in this batch


class TrainingControl:
    """Flags the GUI sets and the worker reads between steps."""

    def __init__(self) -> None:
        self.paused = threading.Event()
        self.stop_requested = threading.Event()


class _ProgressBatcher:
    """Worker side: collects each step's numbers and hands them on as one TrainingProgress a few times a second."""

    def __init__(self, token) -> None:
        self._token = token
        self._losses: list[tuple[int, float]] = []
        self._validation: list[tuple[int, float]] = []
        self._sample: tuple[int, str] | None = None
        self._speed = (0.0, math.inf)  # tokens/s, ETA of the newest step
        self._sent = time.perf_counter()

    def add(self, step: int, loss: float, tokens_per_s: float, eta_s: float, val_loss: float | None) -> None:
        self._losses.append((step, loss))
        if val_loss is not None:
            self._validation.append((step, val_loss))
        self._speed = (tokens_per_s, eta_s)

    def add_sample(self, step: int, text: str) -> None:
        self._sample = (step, text)

    def send(self, force: bool = False) -> None:
        """Send what has gathered: at once when forced (pause, the last step), else once the interval has passed."""
        now = time.perf_counter()
        if not self._losses or (not force and now - self._sent < PARTIAL_INTERVAL_S):
            return
        record = TrainingProgress(tuple(self._losses), tuple(self._validation), *self._speed, sample=self._sample)
        self._losses, self._validation, self._sample = [], [], None
        self._sent = now
        self._token.partial(record)


def run_training(request: TrainRequest, control: TrainingControl, token) -> TrainOutcome:
    """Worker side: core.training.train, its progress sent as partial results, others' requests run between steps."""
    from core.device import choose_device
    from core.training import train
    from gui.model_loader import LoadedModel

    device = str(choose_device(request.device).device)
    batcher = _ProgressBatcher(token)
    started = time.perf_counter()
    lent = [0.0]  # seconds paused or running other panels' requests: not training time
    last_report = [0.0]
    steps_done = [0]

    def report(step: int, text: str) -> None:
        last_report[0] = time.perf_counter()
        token.report(step / request.steps, text)

    def should_stop() -> bool:
        before = time.perf_counter()
        if control.paused.is_set() and not control.stop_requested.is_set():
            batcher.send(force=True)  # the curves show every step made before the pause
        while control.paused.is_set() and not control.stop_requested.is_set():
            if time.perf_counter() - last_report[0] >= REPORT_INTERVAL_S:
                report(steps_done[0], f"training paused at step {steps_done[0]:,}/{request.steps:,}")
            token.let_others_run(PAUSED_WAIT_S)  # also where Cancel in the status bar ends a paused run
        token.let_others_run(0.0)  # returns at once unless another panel has a request waiting
        lent[0] += time.perf_counter() - before
        return control.stop_requested.is_set()

    def on_progress(step: int, loss: float, tokens_per_s: float, _eta_s: float, val_loss: float | None) -> None:
        steps_done[0] = step
        training_s = time.perf_counter() - started - lent[0]
        batcher.add(step, loss, tokens_per_s, training_s / step * (request.steps - step), val_loss)
        batcher.send(force=step == request.steps)
        if time.perf_counter() - last_report[0] >= REPORT_INTERVAL_S or step == request.steps:
            report(step, f"training: step {step:,}/{request.steps:,}")

    def on_sample(step: int, text: str) -> None:
        batcher.add_sample(step, text)

    result = train(
        request.config, request.corpus.text, steps=request.steps, batch_size=request.batch_size,
        seq_len=request.seq_len, lr=request.lr, seed=request.seed, device=device, on_progress=on_progress,
        should_stop=should_stop, sample_every=max(1, request.steps // SAMPLE_EVERY_RUNS), on_sample=on_sample,
        warmup_steps=min(100, max(1, request.steps // 10)), eval_every=max(1, request.steps // 20),
        mask_mode=request.mask_mode, start_from=request.start_from,
    )
    metadata = result.metadata()
    metadata["corpus"] = request.corpus.name
    result.model.trained_mask_mode = request.mask_mode  # the model's description and Generate say so
    how = "fine-tuned" if request.start_from is not None else "trained"
    source = f"{how} here ({result.steps_done:,} steps on {request.corpus.name})"
    from core.model import count_parameters

    loaded = LoadedModel(result.model, result.config, device, source, count_parameters(result.model), "",
                         result.tokenizer, request.state_seed, metadata)
    return TrainOutcome(loaded, metadata, tuple(result.loss_history), tuple(result.val_history),
                        float(result.final_val_loss), result.steps_done, result.stopped, float(result.tokens_per_s))


def run_generation(model, tokenizer, prompt: str, max_new: int, temperature: float, top_k: int | None, seed: int) -> GeneratedText:
    """Worker side: encode the prompt, sample max_new tokens, decode the continuation."""
    from core.training import generate

    ids = tokenizer.encode(prompt)
    out = generate(model, ids, max_new, temperature=temperature, top_k=top_k, seed=seed)
    return GeneratedText(prompt, tokenizer.decode(out[len(ids):]), len(out) - len(ids))


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _spin(low: int, high: int, value: int, tip: str, step: int = 1) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setSingleStep(step)
    box.setToolTip(tip)
    box.setKeyboardTracking(False)
    box.setGroupSeparatorShown(True)
    return box


class TrainPanel(Panel):
    title = "Train"
    refresh_on = frozenset({"config", "model", "tokenizer"})

    model_ready = Signal(object)  # gui.model_loader.LoadedModel of a finished run
    training_finished = Signal()  # a run ended (finished or stopped) and its model is installed
    generated = Signal(str)  # the continuation just shown
    saved = Signal(str)  # the checkpoint folder just written
    corpus_loaded = Signal(bool)  # a corpus file was read and is now used (True), or refused (False)
    compared = Signal()  # a pitfall comparison ended (finished or stopped) and is shown

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.corpus: Corpus | None = None
        self.control: TrainingControl | None = None  # set while a run or a comparison is on the worker
        self.comparing = False  # the job under `control` is a comparison
        self.request: TrainRequest | None = None
        self.outcome: TrainOutcome | None = None
        self.train_points: tuple[list[float], list[float]] = ([], [])
        self.val_points: tuple[list[float], list[float]] = ([], [])
        self.last_progress: TrainingProgress | None = None
        self.pending_config = None  # a config asked for during the run, applied when it ends
        self.discard_run = False  # the run's model is not to be installed (the user chose the new config)
        self.config_question: QMessageBox | None = None  # open while a config change during a run waits for an answer
        layout = self.layout()

        # ---- corpus and settings ----
        settings_box = QGroupBox("Training run")
        grid = QGridLayout(settings_box)
        self.corpus_combo = QComboBox()
        self.corpus_combo.addItem("Tiny Shakespeare (bundled)", "bundled")
        self.corpus_combo.setToolTip("the text to train on; the last 10% is held out for validation")
        self.corpus_button = QPushButton("Text file...")
        self.corpus_button.setToolTip("train on a UTF-8 text file of your own")
        self.corpus_label = QLabel("")
        self.corpus_label.setWordWrap(True)
        self.steps_spin = _spin(1, 1_000_000, 500, "optimizer steps", 100)
        self.batch_spin = _spin(1, 1024, 16, "sequences per step")
        self.seq_spin = _spin(2, 100_000, 128, "characters per sequence (at most the config's context length)", 16)
        self.lr_spin = QDoubleSpinBox()
        self.lr_spin.setDecimals(5)
        self.lr_spin.setRange(1e-5, 1.0)
        self.lr_spin.setSingleStep(5e-4)
        self.lr_spin.setValue(3e-3)
        self.lr_spin.setToolTip("peak learning rate (AdamW; linear warm-up, then a cosine decay to a tenth)")
        self.lr_spin.setKeyboardTracking(False)
        self.seed_spin = _spin(0, 999_999, 0, "seeds the initial weights and the batch order")
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
        # Two short rows rather than one long one: at the projector's text size one row outgrows the window.
        # A row of its own, so the wide file button does not set the width of a settings column.
        # Flows, not fixed columns: beside a lesson at projector text the settings wrap instead of scrolling.
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
        grid.addLayout(buttons, 2, 0, 1, 7)
        layout.addWidget(settings_box)

        self.status_label = QLabel("Choose the settings and press Train.")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status_label)

        # ---- loss curves | samples and generation ----
        splitter = TurningSplitter()  # the side tabs go below the plots where the panel is narrow (a lesson beside it)
        self.loss_plot = wrap_title(pg.PlotWidget())
        self.loss_plot.setMenuEnabled(False)
        self.loss_plot.setTitle("Loss (nats per character)")
        self.loss_plot.setLabel("bottom", "step")
        self.loss_plot.setLabel("left", "loss")
        self.loss_plot.showGrid(x=True, y=True, alpha=0.25)
        self.loss_plot.getAxis("left").enableAutoSIPrefix(False)
        self.loss_plot.getAxis("bottom").enableAutoSIPrefix(False)
        legend_below(self.loss_plot)
        self.train_curve = self.loss_plot.plot([], [], name="train (batch)")
        # Redrawn ten times a second with every step so far: long runs are drawn at screen resolution.
        self.train_curve.setDownsampling(auto=True, method="peak")
        self.train_curve.setClipToView(True)
        self.val_curve = self.loss_plot.plot([], [], name="validation", symbol="o", symbolSize=7)
        # The final validation loss is a different measurement (the whole split, in windows of the context
        # length), so it gets its own marker instead of extending the estimates' line.
        self.final_val_marker = self.loss_plot.plot([], [], name="validation, whole split", pen=None, symbol="star",
                                                    symbolSize=14)
        # A legend entry rather than a line label: at the projector's text size a label collides with the legend.
        self.uniform_line = self.loss_plot.plot([], [], name="uniform guess, ln V")
        self.plot_tabs = PageTabs()  # sized by the page on show
        self.plot_tabs.addTab(self.loss_plot, "This run")
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
        self.sample_text.setToolTip("200 characters sampled at temperature 0.8 from the corpus's first character")
        sample_layout.addWidget(self.sample_caption)
        sample_layout.addWidget(self.sample_text, 1)
        self.side_tabs.addTab(sample_page, "Samples")

        generate_page = QWidget()
        generate_layout = QGridLayout(generate_page)
        self.prompt_edit = QLineEdit(DEFAULT_PROMPT.replace("\n", "\\n"))
        self.prompt_edit.setToolTip("the text the current model continues; write \\n for a new line")
        self.max_new_spin = _spin(1, 5000, 200, "tokens to sample after the prompt", 50)
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setRange(0.0, 5.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setValue(0.8)
        self.temperature_spin.setToolTip("divides the logits; 0 always picks the most likely token")
        self.top_k_spin = _spin(0, 1_000_000, 0, "keep only the k most likely tokens (0: all)")
        self.top_k_spin.setSpecialValueText("all")
        self.generate_seed_spin = _spin(0, 999_999, 0, "seeds the sampling")
        self.generate_button = QPushButton("Generate")
        generate_layout.addWidget(QLabel("Prompt"), 0, 0)
        generate_layout.addWidget(self.prompt_edit, 0, 1)
        for index, (caption, box) in enumerate((("New tokens", self.max_new_spin), ("Temperature", self.temperature_spin),
                                                ("Top-k", self.top_k_spin), ("Seed", self.generate_seed_spin))):
            # One setting per row keeps this column narrow enough for the plot at the projector's text size.
            label = QLabel(caption)
            label.setBuddy(box)
            generate_layout.addWidget(label, 1 + index, 0)
            generate_layout.addWidget(box, 1 + index, 1)
        generate_layout.addWidget(self.generate_button, 5, 0, 1, 2)
        self.trained_mask_warning = TrainedMaskWarning(state)  # read before the text below it
        generate_layout.addWidget(self.trained_mask_warning, 6, 0, 1, 2)
        self.generated_text = QPlainTextEdit()
        self.generated_text.setReadOnly(True)
        self.generated_text.setPlaceholderText("Text generated by the current model appears here.")
        generate_layout.addWidget(self.generated_text, 7, 0, 1, 2)
        generate_layout.setRowStretch(7, 1)
        self.side_tabs.addTab(generate_page, "Generate")
        self.side_tabs.addTab(self.compare_page.numbers_page, "Comparison")
        splitter.addWidget(self.side_tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([600, 400])
        layout.addWidget(splitter, 1)

        self.corpus_combo.currentIndexChanged.connect(self._on_corpus_chosen)
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
        state.config_changed.connect(self._config_changed)
        self._use_bundled_corpus()
        self._update_buttons()
        self.apply_theme()

    # ---- corpus --------------------------------------------------------------------------------
    def _use_bundled_corpus(self) -> None:
        self.corpus = read_corpus(resource_path(BUNDLED_CORPUS))
        self._describe_corpus()

    def _on_corpus_chosen(self, index: int) -> None:
        data = self.corpus_combo.itemData(index)
        if data == "bundled":
            self._use_bundled_corpus()
        elif isinstance(data, str):
            self.load_corpus_file(data)

    def choose_corpus_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Train on a text file", str(Path.home()), "Text files (*.txt);;All files (*)")
        if path:
            self.load_corpus_file(path)

    def load_corpus_file(self, path: str | Path) -> None:
        """Use a text file as the corpus, read and checked on the worker (a large file must not freeze the
        window); `corpus_loaded(ok)` follows. A file that cannot be one shows why and changes nothing."""
        path = str(path)
        self.compute.submit(CORPUS_CHANNEL, lambda: read_corpus(path), lambda corpus: self._use_corpus(path, corpus),
                            f"reading {Path(path).name}", on_error=self._corpus_refused)

    def _corpus_refused(self, message: str) -> None:
        self.show_error(f"That file cannot be a corpus: {message}. The corpus is still {self.corpus.name}.")
        self.corpus_loaded.emit(False)

    def _use_corpus(self, path: str, corpus: Corpus) -> None:
        self.clear_error()
        self.corpus = corpus
        index = self.corpus_combo.findData(path)
        if index < 0:
            self.corpus_combo.addItem(Path(path).name, path)
            index = self.corpus_combo.count() - 1
        self.corpus_combo.blockSignals(True)
        self.corpus_combo.setCurrentIndex(index)
        self.corpus_combo.blockSignals(False)
        self._describe_corpus()
        self.corpus_loaded.emit(True)

    def vocabulary_problem(self) -> str:
        """Why the current config cannot be trained on the corpus, or ""."""
        config, corpus = self.state.config, self.corpus
        if config.architecture != "decoder" or not config.self_attention_causal:
            return (f"{config.name} is not a causal decoder; the trainer makes next-character models. "
                    "Pick a decoder preset (tiny-gpt, tiny-llama) in the Model sidebar.")
        if corpus is not None and config.vocab_size != corpus.vocab_size:
            return (f"The config's vocab_size is {config.vocab_size:,} but {corpus.name} has {corpus.vocab_size} distinct "
                    f"characters: set vocab_size to {corpus.vocab_size} in the Model sidebar to train on it.")
        return ""

    def _describe_corpus(self) -> None:
        corpus = self.corpus
        text = f"{len(corpus.text):,} characters, {corpus.vocab_size} distinct"
        problem = self.vocabulary_problem()
        if problem:
            text += f" <span style='color:{theme.current().warning}'>- {problem}</span>"
        self.corpus_label.setText(text)

    # ---- training ------------------------------------------------------------------------------
    @property
    def training(self) -> bool:
        return self.control is not None

    def refresh(self) -> None:
        """No computation: the limits and the corpus check follow the config (the run itself starts on Train)."""
        self.seq_spin.setMaximum(max(2, self.state.config.context_length))
        self._describe_corpus()
        self._update_buttons()
        self.result_shown.emit()

    def start_training(self) -> bool:
        if self.training:
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
        needed = int((seq_len + 2) / 0.9) + 1
        if len(self.corpus.text) < needed:
            self.show_error(f"{self.corpus.name} has {len(self.corpus.text):,} characters; windows of {seq_len} "
                            f"need at least {needed:,}. Shorten the sequence length.")
            return False
        self.request = TrainRequest(config, self.corpus, self.steps_spin.value(), self.batch_spin.value(), seq_len,
                                    self.lr_spin.value(), self.seed_spin.value(), self.state.device, self.state.seed,
                                    self.mask_combo.currentData(), start_from)
        self.pending_config, self.discard_run = None, False
        control = self.control = TrainingControl()
        request = self.request
        self.outcome = None
        self.train_points, self.val_points = ([], []), ([], [])
        self.last_progress = None
        self.train_curve.setData([], [])
        self.val_curve.setData([], [])
        self.final_val_marker.setData([], [])
        self.uniform_line.setData([0, request.steps], [math.log(config.vocab_size)] * 2)
        self.loss_plot.setXRange(0, request.steps, padding=0.02)
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
        for step, loss in progress.losses:
            self.train_points[0].append(step)
            self.train_points[1].append(loss)
        for step, loss in progress.validation:
            self.val_points[0].append(step)
            self.val_points[1].append(loss)
        if progress.sample is not None:
            step, text = progress.sample
            self.sample_caption.setText(f"Sample at step {step:,}")
            self.sample_text.setPlainText(text)
        self.last_progress = progress
        self.train_curve.setData(self.train_points[0], self.train_points[1])
        self.val_curve.setData(self.val_points[0], self.val_points[1])
        self._show_progress()

    def _show_progress(self) -> None:
        if self.request is None:
            return
        paused = self.control is not None and self.control.paused.is_set()
        progress = self.last_progress
        if self.control is not None and self.control.stop_requested.is_set():
            # What the wait is for, until the model arrives: no step count or ETA of a run that has ended.
            held_out = len(self.request.corpus.text) // 10
            at = f" at step {progress.losses[-1][0]:,} of {self.request.steps:,}" if progress is not None else ""
            then = ("then the run is discarded" if self.discard_run else
                    "then the trained model replaces the one the other panels use")
            self.status_label.setText(f"Stopping{at}: scoring the whole held-out split (about {held_out:,} characters) "
                                      f"with the causal mask; {then}. The buttons come back when it is done.")
            return
        if progress is None:
            if paused:
                self.status_label.setText("Paused before the first step; the other panels keep computing.")
            return
        step, loss = progress.losses[-1]
        val = f", validation {self.val_points[1][-1]:.3f}" if self.val_points[1] else ""
        eta = "paused; the other panels keep computing" if paused else f"ETA {format_duration(progress.eta_s)}"
        self.status_label.setText(f"Step {step:,} of {self.request.steps:,}: loss {loss:.3f}{val}. "
                                  f"{progress.tokens_per_s:,.0f} tokens/s, {eta}.")

    def _on_trained(self, outcome: TrainOutcome) -> None:
        self._finish_run()
        self.outcome = outcome
        self.train_points = ([s for s, _ in outcome.loss_history], [v for _, v in outcome.loss_history])
        estimates = outcome.val_history[:-1]  # the last entry is the whole-split score at the end
        self.val_points = ([s for s, _ in estimates], [v for _, v in estimates])
        self.train_curve.setData(*self.train_points)
        self.val_curve.setData(*self.val_points)
        self.final_val_marker.setData([outcome.steps_done], [outcome.final_val_loss])
        how = "Stopped" if outcome.stopped else "Finished"
        mode = outcome.metadata.get("settings", {}).get("mask_mode", "causal")
        if mode != "causal":
            how += f" training with the {MASK_MODE_LABELS.get(mode, mode)} mask"
        config = outcome.loaded.config
        window_note = ""
        if self.request is not None and self.request.seq_len < config.context_length:
            window_note = (f"The whole-split loss is scored in windows of the context length ({config.context_length}); "
                           f"positions past the training sequence length ({self.request.seq_len}) were never trained, "
                           "so it can sit above the estimates made during the run.")
        loaded = outcome.loaded
        pending, self.pending_config = self.pending_config, None
        if self.discard_run or loaded.config != self.state.config:
            where = "The run was discarded for the new config: the other panels keep their model"
        elif pending is not None:
            where = ("The other panels used it until the config you asked for during the run was applied; they now use "
                     "a model of that config")
        else:
            where = "The other panels now use this model"
        self.status_label.setText(
            f"<b>{how} after {outcome.steps_done:,} steps</b>: validation loss {outcome.final_val_loss:.3f} nats/char "
            f"on the whole held-out split, scored with the causal mask (uniform guess {math.log(config.vocab_size):.3f}), "
            f"{outcome.tokens_per_s:,.0f} tokens/s. {where}; Save model... writes it.")
        self.status_label.setToolTip(window_note)
        self.clear_error()
        if not self.discard_run and loaded.config == self.state.config:
            self.adopt(loaded)
        self.discard_run = False
        if pending is not None:
            self.state.set("config", pending, undoable=False)
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
        self.discard_run = False
        pending, self.pending_config = self.pending_config, None
        if pending is not None:
            self.state.set("config", pending, undoable=False)
        self.status_label.setText("The run ended without a model; the previous model stays.")
        self.show_error(message)

    def _finish_run(self) -> None:
        self.control = None
        self.comparing = False
        if self.config_question is not None:  # the run it asked about is over
            self.config_question.close()
            self.config_question = None
        self._update_buttons()

    # ---- a config change while a run is on -----------------------------------------------------------
    def _config_changed(self) -> None:
        """The sidebar (or a session, a lesson) asked for another config during a run: ask before anything goes.

        The change is held back at once, in the same event, so the main window never replaces the loaded model
        with a random one of the new config while the question is open.
        """
        if not self.training or self.comparing or self.request is None or self.discard_run:
            return
        asked = self.state.config
        if asked == self.request.config:
            return
        self.pending_config = asked
        self.state.set("config", self.request.config, undoable=False)
        if self.config_question is not None:
            return  # the open question now applies to the newest config asked for
        question = self.config_question = QMessageBox(self)
        question.setIcon(QMessageBox.Icon.Question)
        question.setWindowTitle("A run is in progress")
        question.setTextFormat(Qt.TextFormat.PlainText)
        question.setText(f"The run trains {self.request.config.name}. Change the config now and discard the run, or "
                         "keep training and apply the change when the run ends?")
        self.discard_button = question.addButton("Discard the run", QMessageBox.ButtonRole.DestructiveRole)
        self.keep_button = question.addButton("Keep training, apply after", QMessageBox.ButtonRole.AcceptRole)
        question.setDefaultButton(self.keep_button)
        question.buttonClicked.connect(self._config_answer)
        question.open()

    def _config_answer(self, button) -> None:
        self.config_question = None
        if not self.training:
            return
        if button is self.discard_button:
            self.discard_run = True
            pending, self.pending_config = self.pending_config, None
            self.stop_training()
            if pending is not None:
                self.state.set("config", pending, undoable=False)
        else:
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
                self.discard_run = False
                pending, self.pending_config = self.pending_config, None
                if pending is not None:
                    self.state.set("config", pending, undoable=False)

    def _update_buttons(self) -> None:
        training = self.training
        paused = training and self.control.paused.is_set()
        stopping = training and self.control.stop_requested.is_set()
        self.train_button.setEnabled(not training)
        self.pause_button.setEnabled(training and not stopping)
        self.pause_button.setText("Resume" if paused else "Pause")
        self.stop_button.setEnabled(training and not stopping)
        self.save_button.setEnabled(not training and self.outcome is not None)
        self.generate_button.setEnabled(not training)
        self.generate_button.setToolTip("generate when the run ends; its samples are in the Samples tab" if training
                                        else "sample from the current model")
        page = self.compare_page
        for box in (self.start_combo, self.corpus_combo, self.corpus_button, self.steps_spin, self.batch_spin, self.seq_spin,
                    self.lr_spin, self.seed_spin, self.mask_combo, page.compare_button, page.experiment_combo,
                    page.steps_spin, page.seed_spin):
            box.setEnabled(not training)

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
        return self.prompt_edit.text().replace("\\n", "\n")

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
        super().apply_theme()
        self.train_curve.setPen(theme.pen("primary"))
        self.val_curve.setPen(theme.pen("secondary"))
        self.val_curve.setSymbolBrush(theme.brush("secondary"))
        self.val_curve.setSymbolPen(theme.pen("secondary", width=1))
        self.val_curve.setSymbolSize(4 + 2 * theme.current().line_width)
        self.final_val_marker.setSymbolBrush(theme.brush("tertiary"))
        self.final_val_marker.setSymbolPen(theme.pen("tertiary", width=1))
        self.final_val_marker.setSymbolSize(10 + 2 * theme.current().line_width)
        self.uniform_line.setPen(theme.pen("muted", width=max(1.0, theme.current().line_width / 2), style=Qt.PenStyle.DashLine))
        legend = self.loss_plot.getPlotItem().legend
        fill = theme.color("base")
        fill.setAlpha(220)  # the dashed line and early losses pass behind the legend
        legend.setBrush(pg.mkBrush(fill))
        legend.setPen(theme.pen("muted", width=1))
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(theme.font().pointSizeF())
        for box in (self.sample_text, self.generated_text):
            box.setFont(mono)
        self._describe_corpus()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [(self.title, self), ("Loss curves (plot)", self.loss_plot.getPlotItem()),
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


__all__ = ["TrainPanel", "Corpus", "CorpusError", "TrainingProgress", "read_corpus", "run_training", "run_generation",
           "format_duration"]
