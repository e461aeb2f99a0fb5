"""Loss against input length: how a model trained at one length does on longer inputs.

For each length L the text's token ids are cut into consecutive, non-overlapping windows of L (a shorter tail is
dropped), and the figure is the mean next-token loss over every prediction inside every window: L - 1 a window,
each made from the tokens before it in its own window. The predictions made at input positions past the trained
length (position trained_length and later, counting from 0) are also averaged on their own: what the model does
where training never put a query. A length the model's positions cannot reach is refused, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from core.going_deeper.length_row import LengthRow
from core.model import Transformer

MIN_LENGTH = 2  # a window of one token predicts nothing
BATCH_TOKENS = 32_768  # windows per forward: about this many tokens, whatever the length (fewer, larger matmuls)


class ExtrapolationError(ValueError):
    """Lengths or a text that cannot be scored; the message says why."""



def cut_windows(ids: torch.Tensor, length: int) -> torch.Tensor:
    """Consecutive, non-overlapping windows of `length` ids; a shorter tail is dropped. (N,) -> (W, L)."""
    count = len(ids) // length
    return ids[: count * length].view(count, length)  # (W, L)


@torch.no_grad()
def position_losses(model: Transformer, windows: torch.Tensor,
                    on_batch: Callable[[int], None] | None = None) -> torch.Tensor:
    """Summed next-token loss at each input position over all windows: (W, L) -> (L - 1,), float64.

    Entry p is the loss of predicting token p + 1 from tokens 0..p of its window."""
    device = next(model.parameters()).device
    length = windows.shape[1]
    totals = torch.zeros(length - 1, dtype=torch.float64)  # (L-1,)
    per_batch = max(1, BATCH_TOKENS // length)
    for first in range(0, len(windows), per_batch):
        batch = windows[first : first + per_batch].to(device)  # (b, L)
        logits = model(batch[:, :-1])  # (b, L-1, V)
        loss = F.cross_entropy(logits.transpose(1, 2).float(), batch[:, 1:], reduction="none")  # (b, L-1)
        totals += loss.double().sum(dim=0).cpu()  # (L-1,)
        if on_batch is not None:
            on_batch(len(batch))
    return totals


def score_length(model: Transformer, ids: torch.Tensor, length: int, trained_length: int,
                 on_batch: Callable[[int], None] | None = None) -> LengthRow:
    """The row of one length: refused, or the mean loss over every prediction and over those past trained_length."""
    if length < MIN_LENGTH:
        raise ExtrapolationError(f"a length of {length} predicts nothing; give lengths of at least {MIN_LENGTH}")
    windows = cut_windows(ids, length)  # (W, L)
    refusal = model.config.length_refusal(length - 1)  # the last token of a window is only a target
    if refusal:
        return LengthRow(length, None, None, len(windows), refusal)
    if len(windows) == 0:
        raise ExtrapolationError(f"the text has {len(ids):,} tokens, fewer than one window of {length}")
    was_training = model.training
    model.eval()
    try:
        totals = position_losses(model, windows, on_batch)  # (L-1,)
    finally:
        model.train(was_training)
    mean = float(totals.sum()) / (len(windows) * (length - 1))
    beyond = totals[trained_length:]  # predictions made at positions trained_length .. L-2
    beyond_mean = float(beyond.sum()) / (len(windows) * len(beyond)) if len(beyond) else None
    return LengthRow(length, mean, beyond_mean, len(windows))


def extrapolate(model: Transformer, ids: Sequence[int] | torch.Tensor, lengths: Sequence[int],
                trained_length: int | None = None,
                on_progress: Callable[[int, int], None] | None = None) -> list[LengthRow]:
    """One row per length, in the order given. on_progress(windows done, windows in all) after each batch."""
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()  # (N,)
    trained = model.config.context_length if trained_length is None else trained_length
    total = sum(len(ids) // length for length in lengths if length >= MIN_LENGTH
                and not model.config.length_refusal(length - 1))
    done = 0

    def advance(count: int) -> None:
        nonlocal done
        done += count
        if on_progress is not None:
            on_progress(done, total)

    return [score_length(model, ids, length, trained, advance) for length in lengths]


__all__ = ["ExtrapolationError", "LengthRow", "cut_windows", "extrapolate", "position_losses", "score_length"]
