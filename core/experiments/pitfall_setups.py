"""The pitfall comparisons' names and sizes: torch-free, so the Train panel may read them on the GUI thread.

core.experiments.pitfalls trains them. LECTURE sizes make a whole comparison a few minutes on a 2-core
laptop CPU; CI sizes make it seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from core.choices import MASK_MODE_LABELS

Experiment = Literal["masks", "warmup"]
EXPERIMENTS: tuple[str, ...] = get_args(Experiment)

EXPERIMENT_TITLES: dict[str, str] = {
    "masks": "causal vs a leaky mask (after the softmax, none)",
    "warmup": "deep post-norm without warm-up vs pre-norm vs post-norm with warm-up",
}

EXPERIMENT_NAMES: dict[str, str] = {"masks": "leaky masks", "warmup": "post-norm and warm-up"}  # for a combo box

MASK_RUNS: tuple[str, ...] = ("causal", "after-softmax", "none")
WARMUP_RUNS: tuple[str, ...] = ("pre", "post", "post-warmup")
RUN_LABELS: dict[str, str] = {
    **{mode: f"mask: {MASK_MODE_LABELS[mode]}" for mode in MASK_RUNS},
    "pre": "pre-norm, no warm-up",
    "post": "post-norm, no warm-up",
    "post-warmup": "post-norm, warm-up",
}

MAX_STEPS = 5000


class PitfallError(ValueError):
    """A pitfall comparison that cannot run (unknown experiment, steps out of range, corpus too short)."""


@dataclass(frozen=True)
class PitfallSetup:
    """The sizes of one comparison; every run in it shares them (and the seed)."""

    steps: int
    batch_size: int
    seq_len: int
    d_model: int
    n_heads: int
    n_layers: int
    lr: float
    warmup_steps: int  # used only by the run that warms up
    corpus_chars: int  # the first characters of the corpus the runs train and validate on
    grad_norm_every: int
    seed: int = 0

    def with_overrides(self, steps: int | None = None, seed: int | None = None) -> PitfallSetup:
        changed = self
        if steps is not None:
            changed = replace(changed, steps=steps, grad_norm_every=max(1, steps // 100))
        if seed is not None:
            changed = replace(changed, seed=seed)
        return changed


# Lecture sizes: each whole comparison took 80 CPU-seconds on one thread of a 2-core Xeon (README:
# Pitfalls you can train). CI sizes keep each comparison to a few seconds.
LECTURE: dict[str, PitfallSetup] = {
    "masks": PitfallSetup(steps=1500, batch_size=16, seq_len=64, d_model=32, n_heads=4, n_layers=2, lr=1e-2,
                          warmup_steps=40, corpus_chars=1_000_000, grad_norm_every=15),
    "warmup": PitfallSetup(steps=300, batch_size=16, seq_len=64, d_model=32, n_heads=4, n_layers=12, lr=1e-2,
                           warmup_steps=150, corpus_chars=1_000_000, grad_norm_every=3),
}
CI: dict[str, PitfallSetup] = {
    "masks": PitfallSetup(steps=250, batch_size=8, seq_len=32, d_model=32, n_heads=2, n_layers=2, lr=2e-2,
                          warmup_steps=12, corpus_chars=60_000, grad_norm_every=4),
    "warmup": PitfallSetup(steps=80, batch_size=8, seq_len=32, d_model=32, n_heads=2, n_layers=8, lr=1e-2,
                           warmup_steps=40, corpus_chars=60_000, grad_norm_every=2),
}

SIZES: dict[str, dict[str, PitfallSetup]] = {"lecture": LECTURE, "ci": CI}


def run_keys(experiment: str) -> tuple[str, ...]:
    return MASK_RUNS if experiment == "masks" else WARMUP_RUNS


__all__ = [
    "CI",
    "EXPERIMENTS",
    "EXPERIMENT_NAMES",
    "EXPERIMENT_TITLES",
    "LECTURE",
    "MASK_RUNS",
    "MAX_STEPS",
    "PitfallError",
    "PitfallSetup",
    "RUN_LABELS",
    "SIZES",
    "WARMUP_RUNS",
    "run_keys",
]
