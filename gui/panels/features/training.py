"""Train a TopK SAE on the lab's model in the window: the loss drawn as it trains, the four figures on held-out text
when it ends, and a folder in SAELens's layout saved on request (as `sae train` writes it).

Training starts on the Train button, never on its own: it takes seconds to minutes and, on a model with a large
vocabulary, memory that showing the tab must not cost. Any change of the settings or the model asks for a new press.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QComboBox, QFileDialog, QPushButton, QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import AwaitingStart, Refusal, View
from gui.panels.common import labelled, make_plot, plain_label
from gui.widgets.flow_layout import FlowLayout

CACHE_TOKENS = 32_768  # activations cached once from the training split; every step reads a batch of them
BATCH_TOKENS = 1024
HELD_OUT_TOKENS = 4096
HOOK_SUFFIXES = ("hook_resid_post", "hook_resid_pre", "hook_mlp_out")


@dataclass(frozen=True)
class TrainInputs:
    model: Any
    tokenizer: Any
    hook: str
    d_sae: int
    k: int
    steps: int


@dataclass(frozen=True)
class TrainResult:
    sae: Any
    losses: tuple[tuple[int, float], ...]
    stats: Any  # core.features.sae_stats.SAEStats on held-out Shakespeare
    wall_time_s: float


def compute_training(inputs: TrainInputs, token) -> TrainResult:
    from core.corpus import bundled_corpus
    from core.features.activations import collect, consecutive_windows, random_windows, split_ids, token_ids
    from core.features.fingerprint import weights_fingerprint
    from core.features.hook_names import app_hook, hook_width
    from core.features.sae import SAEConfig
    from core.features.sae_stats import sae_stats
    from core.features.sae_training import SAETrainSettings, train_sae

    model = inputs.model
    ids = token_ids(inputs.tokenizer, bundled_corpus().text)
    hook = app_hook(model, inputs.hook)
    token.report(0.0, "caching the activations")
    window = min(128, model.config.context_length)
    windows = random_windows(split_ids(ids, "train"), window, CACHE_TOKENS // window, seed=0)
    rows = collect(model, windows, [hook])[hook]  # (N, D)
    config = SAEConfig("topk", hook_width(model, inputs.hook), inputs.d_sae, inputs.hook, model.config.name,
                       k=inputs.k, model_fingerprint=weights_fingerprint(model))
    losses: list[tuple[int, float]] = []

    def progress(step: int, loss: float, _dead: float) -> None:
        losses.append((step, loss))
        token.report(step / inputs.steps, f"SAE step {step}/{inputs.steps}: loss {loss:.4f} of the variance")
        token.partial(tuple(losses))  # the curve drawn as it trains; a cancellation point

    result = train_sae(config, rows, settings=SAETrainSettings(steps=inputs.steps, batch_tokens=BATCH_TOKENS),
                       on_progress=progress, progress_every=10)
    token.report(1.0, "measuring on held-out text")
    held_out = consecutive_windows(split_ids(ids, "held-out"), window, HELD_OUT_TOKENS)
    return TrainResult(result.sae, tuple(result.losses), sae_stats(model, result.sae, held_out), result.wall_time_s)


class TrainView(View):
    name = "Train"
    reads = frozenset({"model", "tokenizer"})
    compute_fn = staticmethod(compute_training)

    def __init__(self, state, compute, on_saved, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.on_saved = on_saved  # called with the folder written, so the panel can offer it
        row = FlowLayout()
        self.hook_combo = QComboBox()
        self.hook_combo.setObjectName("features-train-hook")
        self.hook_combo.setToolTip("The activation the SAE reads, named as TransformerLens names it")
        self.d_sae_spin, self.k_spin, self.steps_spin = QSpinBox(), QSpinBox(), QSpinBox()
        for spin, name, low, high, value, tip in (
                (self.d_sae_spin, "features-train-width", 16, 4096, 512, "Features of the SAE"),
                (self.k_spin, "features-train-k", 1, 256, 16, "TopK: features active at each token"),
                (self.steps_spin, "features-train-steps", 10, 5000, 300, f"Steps of {BATCH_TOKENS:,} tokens")):
            spin.setObjectName(name)
            spin.setRange(low, high)
            spin.setValue(value)
            spin.setToolTip(tip)
            spin.setKeyboardTracking(False)
            spin.valueChanged.connect(self.inputs_changed)
        self.d_sae_spin.valueChanged.connect(lambda width: self.k_spin.setMaximum(min(256, width)))
        self.hook_combo.currentIndexChanged.connect(self.inputs_changed)
        labelled(row, "hook", self.hook_combo)
        labelled(row, "features", self.d_sae_spin)
        labelled(row, "k", self.k_spin)
        labelled(row, "steps", self.steps_spin)
        self.train_button = QPushButton("Train")
        self.train_button.setObjectName("features-train-start")
        self.train_button.setToolTip("Train an SAE with these settings on the lab's model")
        self.train_button.clicked.connect(self.start)
        row.addWidget(self.train_button)
        self._started: TrainInputs | None = None  # the settings the last press started: only they compute
        self.add_controls(row)
        state.model_changed.connect(self._fill_hooks)
        self._fill_hooks()
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        self.summary_label = plain_label(name="features-train-summary")
        column.addWidget(self.summary_label)
        self.plot = make_plot("Reconstruction loss while training", "step", "loss / variance")
        self.curve = self.plot.plot([], [])
        column.addWidget(self.plot, 1)
        self.save_button = QPushButton("Save the SAE…")
        self.save_button.setObjectName("features-train-save")
        self.save_button.setToolTip("Write it as a folder in SAELens's layout (cfg.json, sae_weights.safetensors)")
        self.save_button.clicked.connect(self._save)
        column.addWidget(self.save_button)
        self.saved_label = plain_label(name="features-train-saved")
        column.addWidget(self.saved_label)
        self.stale_labels += [self.summary_label, self.saved_label]

    def _fill_hooks(self) -> None:
        model = self.state.model
        if model is None:
            return
        current = self.hook_combo.currentText()
        names = [f"blocks.{i}.{suffix}" for suffix in HOOK_SUFFIXES for i in range(model.config.n_layers)]
        self.hook_combo.blockSignals(True)
        self.hook_combo.clear()
        self.hook_combo.addItems(names)
        default = f"blocks.{min(2, model.config.n_layers - 1)}.hook_resid_post"
        self.hook_combo.setCurrentIndex(max(0, names.index(current) if current in names else names.index(default)))
        self.hook_combo.blockSignals(False)

    def start(self) -> None:
        """Train the settings shown now (the button); pressing again while they train changes nothing."""
        settings = self._settings()
        if isinstance(settings, TrainInputs):
            self._started = settings
            self.inputs_changed()

    def inputs(self):
        settings = self._settings()
        if not isinstance(settings, TrainInputs):
            self._started = None
            return settings
        if settings != self._started:
            self._started = None
            return AwaitingStart(f"Press Train to train a {settings.d_sae}-feature SAE (k = {settings.k}) at "
                                 f"{settings.hook} for {settings.steps:,} steps of {BATCH_TOKENS:,} tokens.")
        return settings

    def _settings(self):
        model = self.state.model
        if model is None:
            return None
        config = model.config
        if config.architecture != "decoder":
            return Refusal(f"Model: {config.name} is an {config.architecture} model; an SAE here reads a decoder's "
                           "stream.")
        tokenizer = self.state.tokenizer
        if tokenizer is None or tokenizer.vocab_size > config.vocab_size:
            return Refusal(f"Model: {config.name} has no tokenizer of its own to read the training text.")
        from core.features.hook_names import HookNameError, app_hook

        try:
            app_hook(model, self.hook_combo.currentText())
        except HookNameError as error:
            return Refusal(f"Hook: {error}")
        return TrainInputs(model, tokenizer, self.hook_combo.currentText(), self.d_sae_spin.value(),
                           min(self.k_spin.value(), self.d_sae_spin.value()), self.steps_spin.value())

    def show_partial(self, partial) -> None:
        self.curve.setData([s for s, _ in partial], [v for _, v in partial], pen=theme.pen("primary"))

    def show_result(self, result) -> None:
        self.show_partial(result.losses)
        stats = result.stats
        inputs = self.shown_inputs
        self.summary_label.setText(
            f"{inputs.d_sae} features, k = {inputs.k}, at {inputs.hook}: {len(result.losses) and result.losses[-1][0]} "
            f"steps in {result.wall_time_s:.1f} s. On {stats.tokens:,} held-out tokens: variance explained "
            f"{stats.variance_explained:.3f}, L0 {stats.l0:.1f}, dead {stats.dead_fraction:.1%}, CE recovered "
            f"{stats.ce_recovered:.3f}.")
        self.saved_label.setText("")

    def on_stale(self) -> None:
        self.curve.setData([], [])

    def _save(self) -> None:
        if self.result is None or self.is_stale:
            return
        folder, _filter = QFileDialog.getSaveFileName(self, "Save the SAE as a folder", "my-sae")
        if folder:
            self.save_to(folder)

    def save_to(self, folder: str) -> None:
        """Write the SAE on screen to `folder` (a new folder, or one this app wrote); a line says how it went."""
        from core.checkpoint_files import CheckpointError
        from core.features.sae import save_sae

        try:
            written = save_sae(self.result.sae, folder)
        except CheckpointError as error:
            self.saved_label.setText(f"Not saved: {error}")
            return
        self.saved_label.setText(f"Saved to {written}: the SAE list above offers it.")
        self.on_saved(str(written))

    def export_targets(self):
        return [("SAE training loss (plot)", self.plot.getPlotItem())]
