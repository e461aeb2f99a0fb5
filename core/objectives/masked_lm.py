"""Masked language modelling, the BERT recipe (Devlin et al. 2019, section 3.1 and appendix C.2).

Each position is chosen with probability 15%; a chosen position is replaced by the mask token 80% of the
time, by a uniformly random token 10% of the time, and kept as it is the other 10%. The loss is the
cross-entropy at the chosen positions only: the encoder must predict the original token there from both
sides of it. This is what `transformers`' DataCollatorForLanguageModeling does with its defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.objectives.batch import IGNORED, Batch, scored_loss
from core.limits import character_vocabulary_problem
from core.tokenizers import CharTokenizer, UnknownTokenError

SELECT_P = 0.15  # share of positions the loss is taken on
MASK_P = 0.8  # of those, replaced by the mask token
RANDOM_P = 0.1  # of those, replaced by a random token (the rest, 0.1, keep their token)
MASK_CHAR = "_"  # the blank of a character model: absent from the bundled Shakespeare, and typed with one key


class MaskingError(ValueError):
    """Settings the recipe cannot follow: a share outside [0, 1], a mask id outside the vocabulary."""


@dataclass(frozen=True)
class MaskedBatch:
    inputs: torch.Tensor  # (B, T) what the encoder reads
    labels: torch.Tensor  # (B, T) the original token at chosen positions, IGNORED elsewhere
    chosen: torch.Tensor  # (B, T) bool: positions the loss is taken on
    masked: torch.Tensor  # (B, T) bool: chosen and replaced by the mask token
    randomised: torch.Tensor  # (B, T) bool: chosen and replaced by a random token (possibly the same one)


def mask_tokens(ids: torch.Tensor, mask_id: int, vocab_size: int, generator: torch.Generator,
                select_p: float = SELECT_P, mask_p: float = MASK_P, random_p: float = RANDOM_P,
                special_ids: Iterable[int] = ()) -> MaskedBatch:
    """The recipe applied to a batch of token ids (B, T); special tokens (padding, separators) are never chosen."""
    for name, value in (("select_p", select_p), ("mask_p", mask_p), ("random_p", random_p)):
        if not 0.0 <= value <= 1.0:
            raise MaskingError(f"{name} must be between 0 and 1, got {value}")
    if mask_p + random_p > 1.0:
        raise MaskingError(f"mask_p + random_p must be at most 1, got {mask_p + random_p}")
    if not 0 <= mask_id < vocab_size:
        raise MaskingError(f"the mask token id {mask_id} is outside the vocabulary (0..{vocab_size - 1})")
    ids = ids.long()
    draws = torch.rand(3, *ids.shape, generator=generator, device=ids.device)  # (3, B, T) one uniform per choice
    special = torch.zeros_like(ids, dtype=torch.bool)  # (B, T)
    for special_id in special_ids:
        special |= ids == special_id
    chosen = (draws[0] < select_p) & ~special  # (B, T)
    masked = chosen & (draws[1] < mask_p)  # (B, T)
    # Of what is left after the mask (1 - mask_p), random_p of the whole goes to a random token.
    random_share = random_p / (1.0 - mask_p) if mask_p < 1.0 else 0.0
    randomised = chosen & ~masked & (draws[2] < random_share)  # (B, T)
    random_tokens = torch.randint(vocab_size, ids.shape, generator=generator, device=ids.device)  # (B, T)
    inputs = torch.where(masked, torch.full_like(ids, mask_id), ids)  # (B, T)
    inputs = torch.where(randomised, random_tokens, inputs)  # (B, T)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORED))  # (B, T)
    return MaskedBatch(inputs, labels, chosen, masked, randomised)


def blanks_filled_text(quality: dict) -> str:
    """A masked LM's held-out accuracy in words, each share named by what it counts: the blanked positions alone
    (the input shows the blank) and every chosen position (the kept ones show their answer)."""
    every = (f"{quality['accuracy']:.1%} of all {quality['scored']:,} chosen positions (blanked, randomised and "
             "kept as they were)")
    masked_accuracy = quality.get("masked_accuracy")
    if masked_accuracy is None:  # a record made before it was counted, or a held-out split with no blank
        return f"{every} predicted right"
    return f"{masked_accuracy:.1%} of {quality['masked']:,} blanked positions filled right; {every}"


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the chosen positions only: logits (B, T, V), labels (B, T) with IGNORED elsewhere."""
    if not bool((labels != IGNORED).any()):
        return logits.sum() * 0.0  # nothing chosen in this batch: no signal, and no NaN from an empty mean
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORED)  # ()

# ---- a character masked LM's training data and held-out score -------------------------------------

HELD_OUT_SEED = 2019  # the held-out windows are masked the same way at every evaluation, for every model
HELD_OUT_FRACTION = 0.1  # the last tenth of the corpus, as the next-token trainer holds out


@dataclass(frozen=True)
class MaskedLmScore:
    """A masked LM on held-out text, against the unigram baseline that ignores both sides of the blank."""

    loss: float  # nats per scored character
    # Share of scored characters whose most likely prediction is the original: every chosen position, the 10%
    # the recipe kept as they were (the answer is in the input) and the 10% it randomised included.
    accuracy: float
    unigram_loss: float  # nats per scored character of the training split's character frequencies
    unigram_accuracy: float  # share of scored characters equal to the training split's commonest one
    scored: int  # characters scored
    masked_accuracy: float | None = None  # the same share over the blanked positions alone (None: none blanked)
    masked: int = 0  # positions blanked

    def to_dict(self) -> dict[str, float | int]:
        return {"loss": self.loss, "accuracy": self.accuracy, "unigram_loss": self.unigram_loss,
                "unigram_accuracy": self.unigram_accuracy, "scored": self.scored,
                "masked_accuracy": self.masked_accuracy, "masked": self.masked}


class MaskedLmTask:
    """A corpus cut into windows and masked by the recipe; the last tenth held out and masked from a fixed seed."""

    objective = "masked-lm"

    def __init__(self, text: str, tokenizer: CharTokenizer | None = None) -> None:
        if MASK_CHAR in text:
            raise MaskingError(f"the corpus contains {MASK_CHAR!r}, the blank a masked model reads; "
                               "remove it from the text or train a decoder")
        if tokenizer is None:
            tokenizer = CharTokenizer.from_text(text + MASK_CHAR)
            too_many = character_vocabulary_problem("the corpus", tokenizer.vocab_size - 1, blank=True)
            if too_many:
                raise MaskingError(too_many)
        try:
            self.mask_id = tokenizer.id_of(MASK_CHAR)
            ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)  # (N,)
        except UnknownTokenError as error:
            raise MaskingError(f"the corpus is not written in the model's vocabulary ({error})") from None
        self.tokenizer = tokenizer
        split = int(len(ids) * (1 - HELD_OUT_FRACTION))
        self.train_ids, self.val_ids = ids[:split], ids[split:]  # (N_train,), (N_val,)

    def check(self, seq_len: int) -> str:
        """Why windows of seq_len cannot be cut from both splits, or ""."""
        if len(self.train_ids) < seq_len or len(self.val_ids) < seq_len:
            return (f"the corpus has {len(self.train_ids) + len(self.val_ids):,} characters; windows of {seq_len} "
                    f"need at least {math.ceil(seq_len / HELD_OUT_FRACTION):,}")
        return ""

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator) -> Batch:
        starts = torch.randint(0, len(self.train_ids) - seq_len + 1, (batch_size,), generator=generator)  # (B,)
        windows = self.train_ids[starts.unsqueeze(1) + torch.arange(seq_len)]  # (B, T)
        masked = mask_tokens(windows, self.mask_id, self.tokenizer.vocab_size, generator, special_ids=(self.mask_id,))
        return Batch(masked.inputs, masked.labels)

    def held_out(self, seq_len: int, max_windows: int | None = None) -> Batch:
        """Non-overlapping windows of the held-out split, masked from HELD_OUT_SEED."""
        masked = self.held_out_masking(seq_len, max_windows)
        return Batch(masked.inputs, masked.labels)

    def held_out_masking(self, seq_len: int, max_windows: int | None = None) -> MaskedBatch:
        """The held-out windows with which positions the recipe blanked, randomised or kept."""
        count = len(self.val_ids) // seq_len
        if max_windows is not None:
            count = min(count, max_windows)
        windows = self.val_ids[: count * seq_len].view(count, seq_len)  # (W, T)
        generator = torch.Generator().manual_seed(HELD_OUT_SEED)
        return mask_tokens(windows, self.mask_id, self.tokenizer.vocab_size, generator, special_ids=(self.mask_id,))

    @torch.no_grad()
    def score(self, model: torch.nn.Module, seq_len: int, batch_size: int = 32,
              max_windows: int | None = None) -> MaskedLmScore:
        held_out = self.held_out_masking(seq_len, max_windows)
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        total, correct, correct_masked = 0.0, 0, 0
        for first in range(0, len(held_out.inputs), batch_size):
            tokens = held_out.inputs[first : first + batch_size].to(device)  # (b, T)
            labels = held_out.labels[first : first + batch_size].to(device)  # (b, T)
            blanked = held_out.masked[first : first + batch_size].to(device)  # (b, T)
            logits = model(tokens)  # (b, T, V)
            total += float(scored_loss(logits, labels, reduction="sum"))
            right = logits.argmax(-1) == labels  # (b, T)
            correct += int(right[labels != IGNORED].sum())
            correct_masked += int(right[blanked].sum())
        model.train(was_training)
        n_masked = int(held_out.masked.sum())
        labels = held_out.labels[held_out.labels != IGNORED]  # (n,)
        counts = torch.bincount(self.train_ids, minlength=self.tokenizer.vocab_size).double() + 1  # (V,) add-one
        log_unigram = (counts / counts.sum()).log()  # (V,)
        return MaskedLmScore(
            loss=total / len(labels),
            accuracy=correct / len(labels),
            unigram_loss=float(-log_unigram[labels].mean()),
            unigram_accuracy=float((labels == int(counts.argmax())).double().mean()),
            scored=len(labels),
            masked_accuracy=correct_masked / n_masked if n_masked else None,
            masked=n_masked,
        )

    @torch.no_grad()
    def sample(self, model: torch.nn.Module, length: int = 80) -> str:
        """The held-out split's first characters with every blank the recipe drew, then the model's fill."""
        held_out = self.held_out(min(length, len(self.val_ids)), max_windows=1)
        tokens, labels = held_out.tokens, held_out.labels  # (1, T) each
        blanks = labels != IGNORED  # (1, T)
        shown = torch.where(blanks, torch.full_like(tokens, self.mask_id), tokens)  # (1, T) every chosen one blank
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        guess = model(shown.to(device)).argmax(-1).cpu()  # (1, T)
        model.train(was_training)
        filled = torch.where(blanks, guess, tokens)  # (1, T)
        return f"{self.tokenizer.decode(shown[0].tolist())}\n{self.tokenizer.decode(filled[0].tolist())}"


__all__ = ["HELD_OUT_SEED", "IGNORED", "MASK_CHAR", "MASK_P", "MaskedBatch", "MaskedLmScore", "MaskedLmTask",
           "MaskingError", "RANDOM_P", "SELECT_P", "blanks_filled_text", "mask_tokens", "masked_lm_loss"]
