"""The training job without a window: progress batches, pause and stop, the outcome, and generated text."""

from __future__ import annotations

import math

import torch

from core.config import ModelConfig
from core.corpus import bundled_corpus
from core.text_generation import run_generation
from core.training import generate
from core.training_job import TrainingControl, TrainingProgress, TrainRequest, format_duration, run_training

TINY = ModelConfig(name="test-tiny", vocab_size=65, context_length=16, d_model=16, n_heads=2, n_layers=1, d_ff=32)


class RecordingToken:
    """Stands in for the compute worker's token: records what the job sends and hands the run to `act`."""

    def __init__(self, act=None) -> None:
        self.partials: list[TrainingProgress] = []
        self.reports: list[tuple[float, str]] = []
        self.waits: list[float] = []
        self._act = act or (lambda event: None)

    def report(self, fraction: float, text: str = "") -> None:
        self.reports.append((fraction, text))
        self._act("report")

    def partial(self, value) -> None:
        self.partials.append(value)

    def let_others_run(self, wait_s: float = 0.0) -> None:
        self.waits.append(wait_s)
        if wait_s > 0:
            self._act("paused wait")


def _request(steps: int) -> TrainRequest:
    corpus = bundled_corpus()
    return TrainRequest(TINY, corpus, steps, batch_size=2, seq_len=16, lr=1e-2, seed=0, device="cpu", state_seed=7)


def test_a_run_sends_every_step_once_and_ends_with_the_lab_model():
    request = _request(6)
    token = RecordingToken()
    outcome = run_training(request, TrainingControl(), token)
    sent = [step for progress in token.partials for step, _ in progress.losses]
    assert sent == list(range(1, 7))  # every step, in order, none twice
    assert [loss for progress in token.partials for _, loss in progress.losses] == [v for _, v in outcome.loss_history]
    assert outcome.steps_done == 6 and not outcome.stopped
    assert token.reports[-1] == (1.0, "training: step 6/6")
    assert token.waits.count(0.0) >= 6  # others' requests had a chance between steps
    loaded = outcome.loaded
    assert loaded.config == TINY and loaded.seed == 7 and loaded.device == "cpu"
    assert loaded.parameters == sum(p.numel() for p in loaded.model.parameters())
    assert loaded.source == "trained here (6 steps on tinyshakespeare.txt)"
    assert outcome.metadata["corpus"] == "tinyshakespeare.txt"
    assert math.isfinite(outcome.final_val_loss)


def test_a_paused_run_shows_its_steps_and_a_stop_while_paused_ends_it():
    control = TrainingControl()

    def pause_then_stop(event: str) -> None:
        if event == "report":  # step 1 is reported: pause there
            control.paused.set()
        else:  # the paused run waits inside the worker: stop it from there
            control.stop_requested.set()

    token = RecordingToken(pause_then_stop)
    outcome = run_training(_request(50), control, token)
    assert outcome.stopped and outcome.steps_done == 1  # no step after the pause
    assert [step for progress in token.partials for step, _ in progress.losses] == [1]  # sent at the pause


def test_format_duration_reads_seconds_minutes_and_hours():
    assert format_duration(math.inf) == "-"
    assert format_duration(59.4) == "59 s"
    assert format_duration(3599) == "59 min 59 s"
    assert format_duration(3600) == "1 h 00 min"


def test_generated_text_is_the_seeded_sample_decoded():
    corpus = bundled_corpus()
    from core.tokenizers import CharTokenizer

    tokenizer = CharTokenizer.from_text(corpus.text)
    from core.model import Transformer

    model = Transformer.from_seed(TINY, seed=0)
    result = run_generation(model, tokenizer, "ROMEO:\n", 12, temperature=1.0, top_k=5, seed=3)
    ids = tokenizer.encode("ROMEO:\n")
    expected = generate(model, ids, 12, temperature=1.0, top_k=5, seed=3)
    assert result.prompt == "ROMEO:\n" and result.new_tokens == 12
    assert result.continuation == tokenizer.decode(expected[len(ids):])
    assert torch.is_tensor(next(model.parameters()))
