"""Text as windows of token ids, and a model's activations at chosen hooks over them, computed once.

The corpus is split as training splits it (core.training.split_corpus): the first nine tenths train
an SAE or a lens, the last tenth is held out for their figures. An SAE's trainer reads a cache of
activations made here once, never recomputing the model on every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from core.hooks import capture
from core.model import SequenceError

MAX_WINDOW = 4096
MAX_TOKENS = 4_000_000  # activations of 4M tokens at d_model 128 are 2 GiB of float32: the most a cache holds
BATCH_TOKENS = 8192  # windows per forward pass: a few MiB of activations, far below any budget


def token_ids(tokenizer, text: str) -> torch.Tensor:
    """(N,) the ids of `text`; an unknown character is a SequenceError naming it."""
    if tokenizer is None:
        raise SequenceError("this model has no tokenizer, so it cannot read a text file")
    return torch.tensor(tokenizer.encode(text), dtype=torch.long)  # (N,)


def split_ids(ids: torch.Tensor, part: str) -> torch.Tensor:
    """'train': the first nine tenths; 'held-out': the last tenth (as core.training splits a corpus); 'all'."""
    from core.training import split_corpus

    if part == "all":
        return ids
    train, held_out = split_corpus(ids)
    return train if part == "train" else held_out


def consecutive_windows(ids: torch.Tensor, window: int, max_tokens: int | None = None) -> torch.Tensor:
    """(W, window): the ids cut into consecutive windows from the start, at most max_tokens in all, none partial."""
    if not 2 <= window <= MAX_WINDOW:
        raise SequenceError(f"a window must hold 2..{MAX_WINDOW} tokens, got {window}")
    usable = len(ids) if max_tokens is None else min(len(ids), max_tokens)
    count = usable // window
    if count < 1:
        raise SequenceError(f"the text holds {len(ids):,} tokens, fewer than one window of {window}")
    return ids[: count * window].view(count, window)  # (W, window)


def random_windows(ids: torch.Tensor, window: int, count: int, seed: int) -> torch.Tensor:
    """(count, window) windows starting at seeded random offsets."""
    if len(ids) <= window:
        raise SequenceError(f"the text holds {len(ids):,} tokens, fewer than one window of {window}")
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(ids) - window, (count,), generator=generator)  # (count,)
    return ids[starts[:, None] + torch.arange(window)]  # (count, window)


@torch.inference_mode()
def collect(model, windows: torch.Tensor, hooks: Sequence[str],
            on_progress: Callable[[int, int], None] | None = None) -> dict[str, torch.Tensor]:
    """hook -> (W * T, width) float32 activations of every token of every window, in window order."""
    device = next(model.parameters()).device
    per_batch = max(1, BATCH_TOKENS // windows.shape[1])
    parts: dict[str, list[torch.Tensor]] = {hook: [] for hook in hooks}
    for start in range(0, len(windows), per_batch):
        batch = windows[start:start + per_batch].to(device)  # (B, T)
        with capture(model, list(hooks)) as captured:
            model(batch, head=False)
        for hook in hooks:
            parts[hook].append(captured[hook].reshape(-1, captured[hook].shape[-1]).float().cpu())  # (B*T, D)
        if on_progress is not None:
            on_progress(min(start + per_batch, len(windows)), len(windows))
    return {hook: torch.cat(chunks) for hook, chunks in parts.items()}


__all__ = ["MAX_TOKENS", "MAX_WINDOW", "collect", "consecutive_windows", "random_windows", "split_ids", "token_ids"]
