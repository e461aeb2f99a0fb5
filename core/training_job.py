"""A training run as one job on the compute worker: its request, its progress batches, pause and stop, its outcome.

The run is core.training.train. The job never touches a widget: a few times a second it sends the
steps done since the last batch as a partial result (`token.partial`) and reports a fraction to the
status bar (`token.report`). Between steps it lets the other panels' pending requests run on the
same worker thread (`token.let_others_run`), and a paused run waits inside it, so the rest of the
lab keeps computing while a run trains or is paused. Pause and stop are flags the training loop
polls (its `should_stop` callback) between steps. Nothing here imports Qt.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from core.config import ModelConfig
from core.corpus import Corpus
from core.lab_model import LabModel

PARTIAL_INTERVAL_S = 0.1  # steps go to the curves in batches: ten redraws a second, however fast the steps
REPORT_INTERVAL_S = 0.25  # status-bar progress: a few updates a second are enough to read
PAUSED_WAIT_S = 0.05  # a paused run wakes this often to see Resume, Stop or Cancel (others' requests wake it at once)
SAMPLE_EVERY_RUNS = 10  # about ten samples per run


class JobToken(Protocol):
    """What a job may ask of the worker that runs it (gui.compute.CancelToken is one)."""

    def report(self, fraction: float, text: str = "") -> None: ...

    def partial(self, value: Any) -> None: ...

    def let_others_run(self, wait_s: float = 0.0) -> None: ...


@dataclass(frozen=True)
class TrainRequest:
    config: ModelConfig
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
    track_induction: bool = False  # probe the induction score during the run (core.experiments.induction.letter_probe)
    # The rest of a recipe (core.recipes) that the panel's fields do not show; None: a tenth of the run, at most 100
    warmup_steps: int | None = None
    tokenizer: str = "char"  # "bpe": a byte-level BPE of bpe_vocab tokens learned from the training split
    bpe_vocab: int = 1536
    bf16_autocast: bool = False


@dataclass(frozen=True)
class TrainOutcome:
    loaded: LabModel  # the trained model, ready to become the lab's model
    metadata: dict[str, Any]  # TrainResult.metadata(): settings, losses, timing (plain JSON types)
    loss_history: tuple[tuple[int, float], ...]
    val_history: tuple[tuple[int, float], ...]
    final_val_loss: float
    steps_done: int
    stopped: bool
    tokens_per_s: float
    probe_history: tuple[tuple[int, float], ...] = ()  # (step, induction score) when the run tracked it
    probe: Any = None  # the run's core.experiments.induction.InductionProbe, when it tracked one
    probe_note: str = ""  # why a run that asked for the induction score has none


@dataclass(frozen=True)
class TrainingProgress:
    """The steps a run made since its last partial result (worker -> GUI through `token.partial`)."""

    losses: tuple[tuple[int, float], ...]  # (step, training loss of that step's batch)
    validation: tuple[tuple[int, float], ...]  # (step, validation estimate), at the steps that made one
    tokens_per_s: float
    eta_s: float  # of the training alone: time paused or spent on other panels' requests is left out
    sample: tuple[int, str] | None = None  # (step, text) of a sample made in this batch
    # mixture of experts: (step, per layer each expert's share of the routing assignments since the last record)
    expert_load: tuple[int, list[list[float]]] | None = None
    probes: tuple[tuple[int, float], ...] = ()  # (step, induction score) of the probes made in this batch
    probe: Any = None  # the run's core.experiments.induction.InductionProbe (every batch of a run that tracks one)
    probe_note: str = ""  # why a run that asked for the induction score has none


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
        self._expert_load: tuple[int, list[list[float]]] | None = None
        self._probes: list[tuple[int, float]] = []
        self.probe: Any = None
        self.probe_note = ""
        self._speed = (0.0, math.inf)  # tokens/s, ETA of the newest step
        self._sent = time.perf_counter()

    def add(self, step: int, loss: float, tokens_per_s: float, eta_s: float, val_loss: float | None) -> None:
        self._losses.append((step, loss))
        if val_loss is not None:
            self._validation.append((step, val_loss))
        self._speed = (tokens_per_s, eta_s)

    def add_sample(self, step: int, text: str) -> None:
        self._sample = (step, text)

    def add_expert_load(self, step: int, shares: list[list[float]]) -> None:
        self._expert_load = (step, shares)
    def add_probe(self, step: int, value: float) -> None:
        self._probes.append((step, value))

    def send(self, force: bool = False) -> None:
        """Send what has gathered: at once when forced (pause, the last step), else once the interval has passed."""
        now = time.perf_counter()
        if not self._losses or (not force and now - self._sent < PARTIAL_INTERVAL_S):
            return
        record = TrainingProgress(tuple(self._losses), tuple(self._validation), *self._speed, sample=self._sample,
                                  expert_load=self._expert_load, probes=tuple(self._probes), probe=self.probe,
                                  probe_note=self.probe_note)
        self._losses, self._validation, self._sample, self._expert_load, self._probes = [], [], None, None, []
        self._sent = now
        self._token.partial(record)


def run_training(request: TrainRequest, control: TrainingControl, token: JobToken) -> TrainOutcome:
    """Worker side: core.training.train, its progress sent as partial results, others' requests run between steps."""
    from core.device import choose_device
    from core.training import train

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

    probe = induction_probe(request) if request.track_induction else None
    if isinstance(probe, str):
        batcher.probe_note, probe = f"No induction score: {probe}.", None
    batcher.probe = probe

    def on_probe(step: int, model) -> dict[str, float]:
        value = probe.score(model)
        batcher.add_probe(step, value)
        return {"induction": value}

    result = train(
        request.config, request.corpus.text, steps=request.steps, batch_size=request.batch_size,
        seq_len=request.seq_len, lr=request.lr, seed=request.seed, device=device, on_progress=on_progress,
        should_stop=should_stop, sample_every=max(1, request.steps // SAMPLE_EVERY_RUNS), on_sample=on_sample,
        warmup_steps=warmup_steps(request), eval_every=max(1, request.steps // 20),
        tokenizer=request.tokenizer, bpe_vocab=request.bpe_vocab, bf16_autocast=request.bf16_autocast,
        mask_mode=request.mask_mode, start_from=request.start_from, on_expert_load=batcher.add_expert_load,
        probe=on_probe if probe is not None else None,
        probe_every=probe.every(request.steps) if probe is not None else 0,
    )
    metadata = result.metadata()
    metadata["corpus"] = request.corpus.name
    history = tuple((step, figures["induction"]) for step, figures in result.probes)
    if probe is not None:
        metadata["induction_probe"] = probe.record(history)
    result.model.trained_mask_mode = request.mask_mode  # the model's description and Generate say so
    how = "fine-tuned" if request.start_from is not None else "trained"
    source = f"{how} here ({result.steps_done:,} steps on {request.corpus.name})"
    from core.model import count_parameters

    loaded = LabModel(result.model, result.config, device, source, count_parameters(result.model), "",
                      result.tokenizer, request.state_seed, metadata)
    return TrainOutcome(loaded, metadata, tuple(result.loss_history), tuple(result.val_history),
                        float(result.final_val_loss), result.steps_done, result.stopped, float(result.tokens_per_s),
                        history, probe, batcher.probe_note)


def warmup_steps(request: TrainRequest) -> int:
    """The request's warm-up: the recipe's when it names one, else a tenth of the run, at most 100 steps."""
    return request.warmup_steps if request.warmup_steps is not None else min(100, max(1, request.steps // 10))


def induction_probe(request: TrainRequest):
    """The run's induction probe (core.experiments.induction.InductionProbe), or a clause saying why there is none.

    Its letters are token ids of the tokenizer the run will have: the loaded model's when fine-tuning,
    else the characters of the corpus, as core.training.train makes it.
    """
    from core.experiments.induction import letter_probe
    from core.tokenizers import CharTokenizer

    start_from, text = request.start_from, request.corpus.text
    tokenizer = start_from[1] if start_from is not None else CharTokenizer.from_text(text)
    return letter_probe(tokenizer, request.config.context_length, request.config.n_layers)


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


__all__ = [
    "JobToken",
    "TrainOutcome",
    "TrainRequest",
    "TrainingControl",
    "TrainingProgress",
    "format_duration",
    "induction_probe",
    "run_training",
    "warmup_steps",
]
