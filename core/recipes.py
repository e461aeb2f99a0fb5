"""The recipes that trained the bundled models: what a preset needs to be trained again into its bundled model.

One table, read by everything that trains: `main.py train --preset NAME` runs a preset's recipe unless a flag
says otherwise, the Train view fills it in when the preset is chosen, and a test checks that every bundled
model's training.json records these settings and this corpus. A recipe names only what differs from
core.training.TrainSettings' defaults (AdamW with betas 0.9/0.99 and weight decay 0.1, a linear warm-up of 100
steps, then a cosine decay to a tenth of the peak, gradient clipping at 1.0). Imports neither Qt nor torch: the
Train view reads it before torch has loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from core.config import ModelConfig

# How the bundled models were trained: about 9.8M characters each for the Shakespeare models (about ten passes
# over the training split). bfloat16 autocast made a step about 1.5x faster on the 2-core Xeon (AMX) they were
# trained on; the weights, the optimizer state and every evaluation stay float32. Other presets get DEFAULT_RECIPE.
BUNDLED_RECIPES: dict[str, dict[str, float | int | bool | str]] = {
    "tiny-gpt": {"steps": 2400, "batch_size": 16, "seq_len": 256, "lr": 3e-3, "seed": 1337, "bf16_autocast": True},
    "tiny-llama": {"steps": 2400, "batch_size": 16, "seq_len": 256, "lr": 3e-3, "seed": 1337, "bf16_autocast": True},
    # 1,000 steps of 16 x 256 BPE tokens cover about 10M characters (2.4 characters a token), the
    # characters the character models see in their 2,400 steps.
    "tiny-gpt-bpe": {"steps": 1000, "batch_size": 16, "seq_len": 256, "lr": 3e-3, "seed": 1337, "bf16_autocast": True,
                     "tokenizer": "bpe", "bpe_vocab": 1536},
    # On core.repeated_corpus's text: its induction heads form within these steps (about 90 s on one thread).
    "tiny-induction": {"steps": 4000, "batch_size": 32, "seq_len": 64, "lr": 3e-3, "seed": 0, "warmup_steps": 50},
    # A masked LM on the Shakespeare (core.objectives.masked_lm): only 15% of positions are scored, so it sees
    # more windows than a next-token model of its size needs.
    "tiny-encoder": {"steps": 3000, "batch_size": 32, "seq_len": 128, "lr": 3e-3, "seed": 0},
    # On core.date_corpus's pairs; the pairs set their own lengths (seq_len only sizes the throughput figure).
    "tiny-encoder-decoder": {"steps": 2000, "batch_size": 64, "seq_len": 24, "lr": 3e-3, "seed": 0},
    # Top-2 of 4 experts, and the dense model of the same active size trained alike (its yardstick).
    "tiny-moe": {"steps": 3000, "batch_size": 32, "seq_len": 128, "lr": 3e-3, "seed": 0},
    "tiny-moe-dense": {"steps": 3000, "batch_size": 32, "seq_len": 128, "lr": 3e-3, "seed": 0},
    # Without FFNs, 3e-3 settles in a positional look-back instead (no induction head after 8,000 steps); at 1e-3
    # the heads form between steps 700 and 900 (about 50 s on one thread). Not shipped trained: docs/models.md
    # gives its run's figures.
    "tiny-induction-attn": {"steps": 3000, "batch_size": 32, "seq_len": 64, "lr": 1e-3, "seed": 0, "warmup_steps": 50},
}
SHAKESPEARE = "tinyshakespeare.txt"  # the bundled corpus, under resources/
REPEATED_LETTERS = "repeated-letters"  # core.repeated_corpus's text, made from the run's seed
DATES = "dates"  # core.date_corpus's pairs, made from the run's seed
# The corpus a recipe trains on: the bundled Shakespeare unless named here.
BUNDLED_CORPORA: dict[str, str] = {"tiny-induction": REPEATED_LETTERS, "tiny-induction-attn": REPEATED_LETTERS,
                                   "tiny-encoder-decoder": DATES}
CORPUS_TITLES = {SHAKESPEARE: "Tiny Shakespeare", REPEATED_LETTERS: "repeated random letters",
                 DATES: "dates in words to ISO"}
# The schedule's defaults (core.training.TrainSettings takes them from here).
WARMUP_STEPS = 100
MIN_LR_RATIO = 0.1  # the cosine decays to this fraction of the peak
BPE_VOCAB = 1536  # tokens of a byte-level BPE (256 bytes + merges)
DEFAULT_RECIPE: dict[str, float | int | bool | str] = {"steps": 1000, "batch_size": 16, "seq_len": 128, "lr": 1e-3,
                                                       "seed": 0}


@dataclass(frozen=True)
class Recipe:
    """A preset's recipe: the settings core.training.train takes, the corpus, and the run it reproduces."""

    preset: str
    settings: dict[str, Any]  # TrainSettings fields that differ from their defaults
    corpus: str  # SHAKESPEARE, REPEATED_LETTERS or DATES

    @property
    def warmup_steps(self) -> int:
        return int(self.settings.get("warmup_steps", WARMUP_STEPS))

    @property
    def tokenizer(self) -> str:
        return str(self.settings.get("tokenizer", "char"))

    def record(self) -> dict[str, Any] | None:
        """The bundled model's training.json, or None when the preset is not shipped trained."""
        return bundled_record(self.preset)

    def summary(self) -> str:
        """One line: steps, batch, learning rate and schedule, seed, what else differs, and the corpus."""
        s = self.settings
        warmup = self.warmup_steps
        min_ratio = float(s.get("min_lr_ratio", MIN_LR_RATIO))
        parts = [f"{s['steps']:,} steps", f"batch {s['batch_size']} x {s['seq_len']}", f"lr {s['lr']:g}",
                 f"{warmup} warm-up steps, then cosine to {min_ratio:g} of it", f"seed {s['seed']}"]
        if self.tokenizer == "bpe":
            parts.append(f"a byte-level BPE of {int(s.get('bpe_vocab', BPE_VOCAB)):,} tokens")
        if s.get("bf16_autocast"):
            parts.append("bfloat16 matmuls")
        return ", ".join(parts) + f"; corpus: {CORPUS_TITLES[self.corpus]}"


@lru_cache(maxsize=None)
def bundled_record(preset: str) -> dict[str, Any] | None:
    """resources/models/PRESET/training.json (read once: the bundled files do not change), or None."""
    from resources import resource_path

    path = resource_path("models", preset, "training.json")
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def recipe_of(preset: str) -> Recipe | None:
    """The recipe of the preset named `preset`, or None when it has none."""
    settings = BUNDLED_RECIPES.get(preset)
    if settings is None:
        return None
    return Recipe(preset, dict(settings), BUNDLED_CORPORA.get(preset, SHAKESPEARE))


def recipe_for(config: ModelConfig) -> Recipe | None:
    """The recipe of `config` when it is a preset with one, exactly as the preset has it; else None (an edited
    config is another model, which the recipe does not reproduce)."""
    from core.presets import PRESETS

    if PRESETS.get(config.name) != config:
        return None
    return recipe_of(config.name)


__all__ = ["BPE_VOCAB", "BUNDLED_CORPORA", "BUNDLED_RECIPES", "CORPUS_TITLES", "DATES", "DEFAULT_RECIPE",
           "MIN_LR_RATIO", "REPEATED_LETTERS", "Recipe", "SHAKESPEARE", "WARMUP_STEPS", "bundled_record", "recipe_for",
           "recipe_of"]
