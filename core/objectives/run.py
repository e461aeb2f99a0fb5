"""A masked-LM or sequence-to-sequence task as the training loop drives it: batches, estimates during the run,
samples, and the held-out score at its end (core.training runs next-token models itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from core.objectives.batch import Batch
from core.objectives.masked_lm import MaskedLmTask, MaskingError
from core.objectives.seq2seq import PairsError, Seq2SeqTask
from core.tokenizers import CharTokenizer

CHECK_WINDOWS = 16  # masked LM: the held-out windows whose loss is recorded for a quick re-scoring by the tests
CHECK_PAIRS = 256  # seq2seq: the held-out pairs likewise
ESTIMATE_PAIRS = 64  # held-out pairs of a seq2seq estimate during the run


class ObjectiveError(ValueError):
    """A corpus or a vocabulary the objective cannot train on."""


@dataclass(frozen=True)
class FinalScore:
    loss: float  # nats per scored character over the whole held-out split
    loss_per_token: float
    check_loss: float  # the same over the split's first part, recorded for re-scoring
    characters_per_token: float = 1.0
    quality: dict[str, Any] = field(default_factory=dict)  # the objective's own figures (accuracy, exact match)


class ObjectiveRun:
    def __init__(self, task: MaskedLmTask | Seq2SeqTask) -> None:
        self.task = task
        self.tokenizer = task.tokenizer

    @classmethod
    def for_text(cls, objective: str, text: str, tokenizer: Any = None) -> ObjectiveRun:
        """The task of `objective` ("masked-lm" or "seq2seq") on text, in a fine-tuned model's vocabulary if given."""
        if tokenizer is not None and not isinstance(tokenizer, CharTokenizer):
            raise ObjectiveError(f"a {objective} run fine-tunes character models only")
        try:
            return cls((MaskedLmTask if objective == "masked-lm" else Seq2SeqTask)(text, tokenizer))
        except (MaskingError, PairsError) as error:
            raise ObjectiveError(str(error)) from None

    def check(self, length: int) -> str:
        return self.task.check(length)

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator) -> Batch:
        return self.task.batch(batch_size, seq_len, generator)

    def estimate(self, model: torch.nn.Module, settings: Any) -> float:
        if isinstance(self.task, MaskedLmTask):
            return self.task.score(model, settings.seq_len, max_windows=settings.eval_windows).loss
        return self.task.score(model, max_pairs=ESTIMATE_PAIRS, examples=0).loss

    def sample(self, model: torch.nn.Module, settings: Any) -> str:
        return self.task.sample(model)

    def finish(self, model: torch.nn.Module, settings: Any) -> FinalScore:
        if isinstance(self.task, MaskedLmTask):
            score = self.task.score(model, settings.seq_len)
            check = self.task.score(model, settings.seq_len, max_windows=CHECK_WINDOWS).loss
        else:
            score = self.task.score(model)
            check = self.task.score(model, max_pairs=CHECK_PAIRS, examples=0).loss
        return FinalScore(score.loss, score.loss, check, 1.0, score.to_dict())


__all__ = ["CHECK_PAIRS", "CHECK_WINDOWS", "FinalScore", "ObjectiveError", "ObjectiveRun"]
