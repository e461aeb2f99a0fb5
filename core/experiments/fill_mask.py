"""Fill in the blank: an encoder's predictions where the text holds its mask token, and the mirror image of the
causal-mask experiment.

An encoder reads both sides of a blank, so an edit *after* the blank moves its prediction there; a decoder
predicts the blank's token at the position before it, from the left only, so the same edit leaves that
prediction bitwise unchanged. Edit *before* the blank and both move. As in core.experiments.causal_edit, the
text before and after the edit run through the same model as two batches of one (same code path, same
shapes), "moved" is the max |delta logit| at the reading position and "unchanged" is `torch.equal`, never a
threshold. The decoder has no mask token: it reads the text with each blank replaced by DECODER_FILL.

Nothing here imports Qt.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.experiments.common import ReadOnlyArrays, as_token_list, model_device, token_labels
from core.model import Transformer
from core.objectives.masked_lm import MASK_CHAR

MASK_TOKENS = (MASK_CHAR, "[MASK]", "<mask>")  # the lab's character blank, BERT's and RoBERTa's mask tokens
DECODER_FILL = " "  # what the decoder reads in place of a blank: it was never trained with a mask token
REFERENCE_DECODER = "tiny-gpt"  # the bundled decoder over the same Shakespeare characters
MAX_TOP_K = 50


class FillMaskError(ValueError):
    """A fill-in-the-blank request that cannot be answered: not an encoder, no blank, texts that do not line up."""


def encoder_problem(config: ModelConfig) -> str:
    """Why a model cannot fill a blank from both sides ("" when it can): only an encoder-only stack reads both."""
    if config.architecture == "encoder":
        return ""
    kind = {"decoder": "a decoder: it reads left to right only", "encoder-decoder":
            "an encoder-decoder: its output stack is a decoder"}[config.architecture]
    return (f"the loaded model, {config.name}, is {kind}, so it cannot fill a blank from both sides; "
            "load an encoder (tiny-encoder)")


def mask_id_of(tokenizer) -> int | None:
    """The id of the tokenizer's mask token (the lab's '_', [MASK] or <mask>), or None when it has none."""
    if tokenizer is None:
        return None
    return next((token_id for token_id in (_id_or_none(tokenizer, name) for name in MASK_TOKENS)
                 if token_id is not None), None)


def _id_or_none(tokenizer, token: str) -> int | None:
    try:
        return int(tokenizer.id_of(token))
    except Exception:  # noqa: BLE001 (each tokenizer raises its own unknown-token error)
        return None


def blank_positions(ids: Sequence[int], mask_id: int) -> tuple[int, ...]:
    return tuple(position for position, token in enumerate(ids) if int(token) == mask_id)


@dataclass(frozen=True)
class FillMaskResult(ReadOnlyArrays):
    """The encoder's top predictions at every blank of one text."""

    tokens: tuple[int, ...]  # the text's ids, blanks included
    mask_id: int
    blanks: tuple[int, ...]  # positions holding the mask token
    top_ids: np.ndarray  # (N, K) int64 most probable tokens at each blank, most probable first
    top_probabilities: np.ndarray  # (N, K) float64 softmax over the whole vocabulary of the logits there
    top_labels: tuple[tuple[str, ...], ...]  # N x K labels of top_ids
    logits: np.ndarray  # (N, V) float32 the encoder's logits at each blank

    def to_dict(self) -> dict:
        return {"tokens": list(self.tokens), "mask_id": self.mask_id, "blanks": [
            {"position": position, "top": [{"id": int(i), "token": label, "probability": float(p)} for i, label, p in
                                           zip(self.top_ids[n], self.top_labels[n], self.top_probabilities[n])]}
            for n, position in enumerate(self.blanks)]}


def _check_top_k(top_k: int) -> None:
    if not 1 <= top_k <= MAX_TOP_K:
        raise FillMaskError(f"top k must be from 1 to {MAX_TOP_K}, got {top_k}")


def _logits(model: Transformer, ids: Sequence[int]) -> torch.Tensor:
    """Logits (T, V) of one sequence, as a batch of one."""
    batch = torch.tensor([list(ids)], dtype=torch.long, device=model_device(model))  # (1, T)
    model.check_tokens(batch)
    with torch.inference_mode():
        return model(batch)[0]  # (T, V)


def _top(logits: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k most probable ids of logits (..., V) and their softmax probabilities, in float64."""
    probabilities = F.softmax(logits.double(), dim=-1)  # (..., V)
    top = probabilities.topk(min(k, logits.shape[-1]), dim=-1)
    return top.indices.cpu().numpy().astype(np.int64), top.values.cpu().numpy()  # (..., k) each


def fill_mask(model: Transformer, tokens, mask_id: int, top_k: int = 5, tokenizer=None) -> FillMaskResult:
    """The encoder's top-k tokens and their probabilities at every position holding `mask_id`."""
    problem = encoder_problem(model.config)
    if problem:
        raise FillMaskError(problem)
    _check_top_k(top_k)
    ids = as_token_list(tokens)
    if not 0 <= mask_id < model.config.vocab_size:
        raise FillMaskError(f"the mask token id {mask_id} is outside the vocabulary (0..{model.config.vocab_size - 1})")
    blanks = blank_positions(ids, mask_id)
    if not blanks:
        raise FillMaskError(f"the text has no blank: put the mask token (id {mask_id}) where a token should be "
                            "filled in")
    logits = _logits(model, ids)[list(blanks)]  # (N, V)
    top_ids, top_probabilities = _top(logits, top_k)  # (N, K) each
    return FillMaskResult(
        tokens=tuple(ids), mask_id=mask_id, blanks=blanks, top_ids=top_ids, top_probabilities=top_probabilities,
        top_labels=tuple(token_labels(row.tolist(), tokenizer) for row in top_ids),
        logits=logits.float().cpu().numpy(),
    )


# ---- the edit, on both sides of the blank ---------------------------------------------------------------
@dataclass(frozen=True)
class BlankReading(ReadOnlyArrays):
    """One model's prediction for the blank in one text, read off the logits at `position`."""

    position: int  # the blank itself for an encoder; the position before it for a decoder
    top_ids: np.ndarray  # (K,) int64
    top_probabilities: np.ndarray  # (K,) float64
    top_labels: tuple[str, ...]
    probabilities: np.ndarray  # (V,) float64 softmax of the logits there: any token's probability, top-k or not


@dataclass(frozen=True)
class BlankChange:
    """The same model's reading before and after an edit, and how far its logits there moved."""

    before: BlankReading
    after: BlankReading
    max_change: float  # max |after - before| over the vocabulary of the logits at the reading position (float64)
    exactly_unchanged: bool  # torch.equal of those two logit vectors


def blank_reading(model: Transformer, tokens, position: int, top_k: int = 5, tokenizer=None) -> BlankReading:
    """The top-k of `model`'s logits at `position` of one text."""
    _check_top_k(top_k)
    ids = as_token_list(tokens)
    if not 0 <= position < len(ids):
        raise FillMaskError(f"position {position} is outside the text (0..{len(ids) - 1})")
    return _reading(_logits(model, ids)[position], position, top_k, tokenizer)


def _reading(logits: torch.Tensor, position: int, top_k: int, tokenizer) -> BlankReading:
    top_ids, top_probabilities = _top(logits, top_k)  # (K,) each
    return BlankReading(position, top_ids, top_probabilities, token_labels(top_ids.tolist(), tokenizer),
                        F.softmax(logits.double(), dim=-1).cpu().numpy())


def compare_at(model: Transformer, before, after, position: int, top_k: int = 5, tokenizer=None) -> BlankChange:
    """Both texts through `model`, each a batch of one, and the change of the logits at `position`."""
    _check_top_k(top_k)
    before_ids, after_ids = as_token_list(before), as_token_list(after)
    if len(before_ids) != len(after_ids):
        raise FillMaskError(f"the texts before and after the edit differ in length ({len(before_ids)} and "
                            f"{len(after_ids)} tokens); compare a replacement, not an insertion or deletion")
    if not 0 <= position < len(after_ids):
        raise FillMaskError(f"position {position} is outside the text (0..{len(after_ids) - 1})")
    old = _logits(model, before_ids)[position]  # (V,)
    new = _logits(model, after_ids)[position]  # (V,)
    # float64, so that a change of one float32 ulp is reported as such, never rounded to zero.
    change = float((new.double() - old.double()).abs().max())
    return BlankChange(_reading(old, position, top_k, tokenizer), _reading(new, position, top_k, tokenizer),
                       change, bool(torch.equal(old, new)))


def decoder_text(text: str) -> str:
    """What the decoder reads for a text with blanks: each blank replaced by one fixed character."""
    return text.replace(MASK_CHAR, DECODER_FILL)


def decoder_tokens(tokens, encoder_tokenizer, decoder_tokenizer, mask_id: int) -> list[int]:
    """The decoder's ids for an encoder's text, position for position (each blank read as DECODER_FILL).

    Both tokenizers must give one token per character of the text, or positions would not line up.
    """
    ids = as_token_list(tokens)
    if encoder_tokenizer is None or decoder_tokenizer is None:
        raise FillMaskError("the decoder comparison needs both models' tokenizers")
    pieces = [DECODER_FILL if token == mask_id else encoder_tokenizer.token_text(token) for token in ids]
    if any(len(piece) != 1 for piece in pieces):
        raise FillMaskError("the decoder comparison needs a character model: this tokenizer's tokens are not single "
                            "characters, so the two models' positions would not line up")
    try:
        decoded = decoder_tokenizer.encode("".join(pieces))
    except Exception as error:  # noqa: BLE001 (each tokenizer raises its own unknown-token error)
        raise FillMaskError(f"the decoder cannot read this text: {error}") from None
    if len(decoded) != len(ids):
        raise FillMaskError("the decoder's tokenizer splits the text into other positions than the encoder's")
    return decoded


@dataclass(frozen=True)
class BlankEditResult:
    """An edit of a text with a blank, measured on both sides of the mirror."""

    before: tuple[int, ...]  # the encoder's ids before the edit
    after: tuple[int, ...]  # and after it (the same length)
    blank: int  # the blank's position (a blank in both texts)
    edited: tuple[int, ...]  # positions whose token the edit changed
    side: str  # "none", "after" (every edit after the blank), "before" (every edit before it), "both"
    encoder: BlankChange  # read at the blank
    decoder: BlankChange | None  # read at blank - 1; None when there is no decoder half (see decoder_note)
    decoder_name: str
    decoder_note: str  # why there is no decoder half ("" when there is)
    verdict: str  # the diff line, in words

    def to_dict(self) -> dict:
        def change(c: BlankChange | None) -> dict | None:
            if c is None:
                return None
            return {"position": c.after.position, "max_change": c.max_change, "exactly_unchanged": c.exactly_unchanged,
                    "before_top": [int(i) for i in c.before.top_ids], "after_top": [int(i) for i in c.after.top_ids]}

        return {"before": list(self.before), "after": list(self.after), "blank": self.blank,
                "edited": list(self.edited), "side": self.side, "encoder": change(self.encoder), "decoder": change(self.decoder),
                "decoder_note": self.decoder_note, "verdict": self.verdict}


def edit_side(edited: Sequence[int], blank: int) -> str:
    if not edited:
        return "none"
    if all(position > blank for position in edited):
        return "after"
    if all(position < blank for position in edited):
        return "before"
    return "both"


def blank_edit(encoder: Transformer, before, after, blank: int, mask_id: int, top_k: int = 5,
               decoder: Transformer | None = None, decoder_before=None, decoder_after=None, decoder_name: str = "",
               encoder_tokenizer=None, decoder_tokenizer=None, decoder_note: str = "") -> BlankEditResult:
    """The encoder's logits at the blank and the decoder's at the position before it, before and after an edit.

    decoder_before / decoder_after are the decoder's ids for the same two texts (decoder_tokens); without a
    decoder, decoder_note says why.
    """
    problem = encoder_problem(encoder.config)
    if problem:
        raise FillMaskError(problem)
    before_ids, after_ids = as_token_list(before), as_token_list(after)
    if len(before_ids) != len(after_ids):
        raise FillMaskError(f"the texts before and after the edit differ in length ({len(before_ids)} and "
                            f"{len(after_ids)} tokens); compare a replacement, not an insertion or deletion")
    if not 0 <= blank < len(after_ids) or after_ids[blank] != mask_id or before_ids[blank] != mask_id:
        raise FillMaskError(f"position {blank} is not a blank in both texts: the edit must leave the blank in place")
    edited = tuple(t for t, (old, new) in enumerate(zip(before_ids, after_ids)) if old != new)
    side = edit_side(edited, blank)
    encoder_change = compare_at(encoder, before_ids, after_ids, blank, top_k, encoder_tokenizer)
    decoder_change = None
    if decoder is not None and not decoder_note:
        if blank == 0:
            decoder_note = "the blank is the first token: a decoder has no earlier position to predict it from"
        elif decoder_before is None or decoder_after is None:
            raise FillMaskError("a decoder needs its ids of both texts (decoder_tokens)")
        else:
            decoder_change = compare_at(decoder, decoder_before, decoder_after, blank - 1, top_k, decoder_tokenizer)
    elif decoder is None and not decoder_note:
        decoder_note = "no decoder to compare with"
    verdict = describe(side, edited, blank, encoder_change, decoder_change, decoder_name or "the decoder", decoder_note)
    return BlankEditResult(tuple(before_ids), tuple(after_ids), blank, edited, side, encoder_change, decoder_change,
                           decoder_name, decoder_note, verdict)


def _moved(change: BlankChange) -> str:
    if change.exactly_unchanged:
        return "are bitwise unchanged (torch.equal)"
    return f"moved: max |delta logit| {change.max_change:.4g}"


def _positions(edited: Sequence[int]) -> str:
    shown = ", ".join(str(t) for t in edited[:6]) + (", ..." if len(edited) > 6 else "")
    return f"position{'s' if len(edited) > 1 else ''} {shown}"


def describe(side: str, edited: Sequence[int], blank: int, encoder: BlankChange, decoder: BlankChange | None,
             decoder_name: str, decoder_note: str) -> str:
    """The diff line: where the edit was and what each model's prediction for the blank did, as measured."""
    if side == "none":
        return "The texts before and after are the same: edit a token to compare."
    where = {"after": "after the blank", "before": "before the blank", "both": "on both sides of the blank"}[side]
    parts = [f"Edit at {_positions(edited)}, {where} at {blank}.",
             f"The encoder's logits at the blank {_moved(encoder)}."]
    if decoder is None:
        parts.append(f"No decoder half: {decoder_note}.")
    else:
        # The blank's own position, as everywhere: the decoder reads its logits one position earlier (decoder.position).
        parts.append(f"{decoder_name}'s logits for the blank at {blank} (read at the token before it: a decoder "
                     f"predicts from the left only) {_moved(decoder)}.")
        if side == "after" and decoder.exactly_unchanged:
            parts.append("The decoder cannot see past the blank; the encoder reads both sides.")
        elif side == "after":
            parts.append("A causal decoder should not move here: its mask lets something past the blank through.")
    return " ".join(parts)


@functools.lru_cache(maxsize=1)
def reference_decoder():
    """The bundled decoder the encoder is compared with (core.checkpoints.LoadedModel), loaded once, on the CPU."""
    from core.checkpoints import load_bundled

    return load_bundled(REFERENCE_DECODER)


__all__ = [
    "DECODER_FILL", "MASK_TOKENS", "MAX_TOP_K", "REFERENCE_DECODER", "BlankChange", "BlankEditResult", "BlankReading",
    "FillMaskError", "FillMaskResult", "blank_edit", "blank_positions", "blank_reading", "compare_at", "decoder_text",
    "decoder_tokens", "describe", "edit_side", "encoder_problem", "fill_mask", "mask_id_of", "reference_decoder",
]
