"""Training the reading's pitfalls beside their fix as one job on the compute worker, like a training run.

Partial results a few times a second (`token.partial`), the other panels' requests between its steps
(`token.let_others_run`), Pause and Stop polled between steps (core.training_job.TrainingControl).
Nothing here imports Qt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from core.experiments.pitfall_setups import SIZES, run_keys
from core.training_job import PARTIAL_INTERVAL_S, PAUSED_WAIT_S, JobToken, TrainingControl


@dataclass(frozen=True)
class CompareRequest:
    experiment: str
    steps: int
    seed: int
    size: str = "lecture"  # a pitfall_setups.SIZES key: the model and batch sizes

    def setup(self):
        return SIZES[self.size][self.experiment].with_overrides(steps=self.steps, seed=self.seed)


@dataclass(frozen=True)
class ComparisonProgress:
    """Steps made since the last partial result: per run key, (step, loss) and (step, per-block norms)."""

    losses: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    grad_norms: dict[str, tuple[tuple[int, tuple[float, ...]], ...]] = field(default_factory=dict)
    running: str = ""  # the run key training now


class _CompareBatcher:
    def __init__(self, token: JobToken) -> None:
        self._token = token
        self._losses: dict[str, list] = {}
        self._norms: dict[str, list] = {}
        self._running = ""
        self._sent = time.perf_counter()

    def add_loss(self, key: str, step: int, loss: float) -> None:
        self._running = key
        self._losses.setdefault(key, []).append((step, loss))

    def add_norms(self, key: str, step: int, norms: tuple[float, ...]) -> None:
        self._norms.setdefault(key, []).append((step, norms))

    def send(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not self._losses or (not force and now - self._sent < PARTIAL_INTERVAL_S):
            return
        record = ComparisonProgress({k: tuple(v) for k, v in self._losses.items()},
                                    {k: tuple(v) for k, v in self._norms.items()}, self._running)
        self._losses, self._norms = {}, {}
        self._sent = now
        self._token.partial(record)


def run_pitfall_job(request: CompareRequest, control: TrainingControl, token: JobToken):
    """Worker side: the comparison, its steps sent as partial results, others' requests run between steps."""
    from core.experiments.pitfalls import run_comparison
    from resources import resource_path

    setup = request.setup()
    keys = run_keys(request.experiment)
    total = setup.steps * len(keys)
    text = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    batcher = _CompareBatcher(token)
    last_report = [0.0]
    done = {key: 0 for key in keys}

    def report() -> None:
        last_report[0] = time.perf_counter()
        made = sum(done.values())
        token.report(made / total, f"comparing pitfalls: step {made:,}/{total:,}")

    def should_stop() -> bool:
        if control.paused.is_set() and not control.stop_requested.is_set():
            batcher.send(force=True)
        while control.paused.is_set() and not control.stop_requested.is_set():
            token.let_others_run(PAUSED_WAIT_S)
        token.let_others_run(0.0)
        return control.stop_requested.is_set()

    def on_step(key: str, step: int, loss: float) -> None:
        done[key] = step
        batcher.add_loss(key, step, loss)
        batcher.send(force=step == setup.steps)
        if time.perf_counter() - last_report[0] >= 0.25:
            report()

    return run_comparison(request.experiment, text, setup, on_step=on_step, should_stop=should_stop,
                          on_grad_norms=batcher.add_norms)



__all__ = ["CompareRequest", "ComparisonProgress", "run_pitfall_job"]
