"""The feature lab's figures: SAE training, `sae stats`, a feature's dashboard and a steering change, and SAELens's
own trainer beside the app's on the same cached activations.

    .venv/bin/python bench/features.py [--steps 800] [--cache-tokens 262144] [--threads 1] [--no-sae-lens]

Caches blocks.2.hook_resid_post of the bundled tiny-gpt over the first nine tenths of the Shakespeare corpus once
(as `sae train` does), then trains a TopK SAE of 512 features, k = 16, batch 4,096 for --steps steps with the
app's trainer and, when SAELens is installed (the `test` extra), with SAELens's SAETrainer (TopKTrainingSAE, the
same width, k, batch, learning rate and token count, fed the same cached rows) in the same run. Then times, on the
bundled SAE: `sae stats` on 4,096 held-out tokens, the Features view's dashboard and a steering change (the
worker's compute of each, as the view submits it). Prints figures only; no asserts. Targets: training (cache
included) < 600 s, stats and dashboard < 5 s each, the app's trainer at least as fast as SAELens's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.checkpoints import load_bundled  # noqa: E402
from core.corpus import bundled_corpus  # noqa: E402
from core.features.activations import collect, consecutive_windows, random_windows, split_ids, token_ids  # noqa: E402
from core.features.library import open_sae, sae_path  # noqa: E402
from core.features.sae import SAEConfig  # noqa: E402
from core.features.sae_stats import sae_stats  # noqa: E402
from core.features.sae_training import SAETrainSettings, train_sae  # noqa: E402

HOOK = "blocks.2.hook_resid_post"
BUNDLED_SAE = "tiny-gpt-resid-post-2"


class _Token:
    """The compute worker's token, for calling a view's compute function outside the window."""

    def check(self) -> None:
        pass

    def report(self, _fraction: float, _text: str = "") -> None:
        pass


def sae_lens_tokens_per_s(rows: torch.Tensor, steps: int, batch: int, lr: float) -> float | None:
    """SAELens's SAETrainer on the same rows: tokens per second of its fit(), or None when it is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sae_lens import TopKTrainingSAE, TopKTrainingSAEConfig
            from sae_lens.config import LoggingConfig, SAETrainerConfig
            from sae_lens.training.sae_trainer import SAETrainer
    except ImportError:
        return None

    def provider():
        generator = torch.Generator().manual_seed(1)
        while True:
            order = torch.randperm(len(rows), generator=generator)
            for start in range(0, len(rows) - batch + 1, batch):
                yield rows[order[start:start + batch]]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sae = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=rows.shape[1], d_sae=512, k=16))
        trainer_cfg = SAETrainerConfig(total_training_samples=steps * batch, train_batch_size_samples=batch, lr=lr,
                                       lr_end=lr,
                                       logger=LoggingConfig(log_to_wandb=False))
        trainer = SAETrainer(cfg=trainer_cfg, sae=sae, data_provider=provider())
        start = time.perf_counter()
        trainer.fit()
        return steps * batch / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800, help="training steps of 4,096 tokens (default 800)")
    parser.add_argument("--cache-tokens", type=int, default=262_144, help="activations cached (default 262,144)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of each trainer (default 3)")
    parser.add_argument("--compare-steps", type=int, default=150, help="steps of each round (default 150)")
    parser.add_argument("--no-sae-lens", action="store_true", help="skip SAELens's trainer")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f}")
    loaded = load_bundled("tiny-gpt")
    model, tokenizer = loaded.model, loaded.tokenizer
    ids = token_ids(tokenizer, bundled_corpus().text)

    start = time.perf_counter()
    windows = random_windows(split_ids(ids, "train"), 128, args.cache_tokens // 128, seed=0)
    rows = collect(model, windows, [HOOK])[HOOK]
    cache_s = time.perf_counter() - start
    config = SAEConfig("topk", 128, 512, HOOK, "tiny-gpt", k=16)
    settings = SAETrainSettings(steps=args.steps, batch_tokens=4096)
    result = train_sae(config, rows, settings=settings)
    print(f"sae train: cache {rows.shape[0]:,} tokens {cache_s:.1f} s + {args.steps} steps {result.wall_time_s:.1f} s "
          f"= {cache_s + result.wall_time_s:.1f} s (target < 600 s); the app's trainer {result.tokens_per_s:,.0f} "
          "tokens/s")
    if not args.no_sae_lens:
        # Side by side: short runs of each, alternated, so that a change in the machine's load falls on both.
        ours, theirs = [], []
        for _round in range(args.rounds):
            short = SAETrainSettings(steps=args.compare_steps, batch_tokens=4096)
            ours.append(train_sae(config, rows, settings=short).tokens_per_s)
            rate = sae_lens_tokens_per_s(rows, args.compare_steps, 4096, settings.lr)
            if rate is None:
                break
            theirs.append(rate)
        if not theirs:
            print("SAELens's trainer: not installed (pip install sae-lens, or the test extra)")
        else:
            mine, other = statistics.median(ours), statistics.median(theirs)
            print(f"side by side, {args.rounds} alternated rounds of {args.compare_steps} steps on the same rows "
                  f"(width 512, k 16, batch 4,096): the app's trainer {mine:,.0f} tokens/s, SAELens's SAETrainer "
                  f"{other:,.0f} tokens/s (medians); the app's / SAELens's = {mine / other:.2f} (target >= 1)")

    sae = open_sae(BUNDLED_SAE)
    held_out = consecutive_windows(split_ids(ids, "held-out"), 128, 4096)
    sae_stats(model, sae, held_out[:2])  # warm-up: first calls allocate
    start = time.perf_counter()
    stats = sae_stats(model, sae, held_out)
    print(f"sae stats on {stats.tokens:,} held-out tokens: {time.perf_counter() - start:.2f} s (target < 5 s)")

    from core.features.views import FeatureInputs, SteerInputs, compute_dashboard, compute_steering

    text = tuple(tokenizer.encode("ROMEO: I will go to the"))
    path = str(sae_path(BUNDLED_SAE))
    compute_dashboard(FeatureInputs(model, tokenizer, path, text, 0, (0, len(text) - 1)), _Token())  # warm-up
    start = time.perf_counter()
    compute_dashboard(FeatureInputs(model, tokenizer, path, text, 100, (0, len(text) - 1)), _Token())
    print(f"a feature's dashboard (4,096 held-out tokens and the text): {time.perf_counter() - start:.2f} s "
          "(target < 5 s)")
    start = time.perf_counter()
    compute_steering(SteerInputs(model, path, text, 100, 8.0, False), _Token())
    print(f"a steering change (next token and 40 greedy tokens, with and without): {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
