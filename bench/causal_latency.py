"""Edit-to-result latency of causal_edit_diff, and its overhead over a bare forward pass.

    .venv/bin/python bench/causal_latency.py [--edits 50] [--repeats 7] [--threads N] [--skip-gpt2]

1. tiny-gpt at 64 and 128 tokens: p50 / p95 over random single-token edits (what the panel waits
   for after each edit).
2. gpt2-small's shape (random weights) at 256 tokens: causal_edit_diff against a bare forward of
   the same model on the same batch of two sequences (original + edited), timed alternately in the
   same run. The diff runs both sequences as one batch, so a batch-2 forward is the fair baseline;
   a batch-1 forward is printed for scale. Prints figures only; no asserts.

On a machine shared with other jobs, --threads 1 avoids OpenMP threads spinning against each other
(on a loaded 2-core box a tiny-gpt forward went from ~300 ms to ~3 ms); the app's single compute
worker can make the same choice.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.experiments.causal_edit import causal_edit_diff  # noqa: E402
from core.model import Transformer  # noqa: E402
from core.presets import get_preset  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def random_tokens(vocab_size: int, n_tokens: int, generator: torch.Generator) -> list[int]:
    return torch.randint(0, vocab_size, (n_tokens,), generator=generator).tolist()


def edit_latency(preset: str, n_tokens: int, n_edits: int, seed: int = 0) -> tuple[float, float]:
    model = Transformer.from_seed(get_preset(preset), seed)
    generator = torch.Generator().manual_seed(seed)
    tokens = random_tokens(model.config.vocab_size, n_tokens, generator)
    for _ in range(3):  # warm-up: first calls allocate and pick kernels
        causal_edit_diff(model, tokens, n_tokens // 2, (tokens[n_tokens // 2] + 1) % model.config.vocab_size)
    timings = []
    for _ in range(n_edits):
        position = int(torch.randint(0, n_tokens, (1,), generator=generator))
        new_token = (tokens[position] + 1 + int(torch.randint(0, model.config.vocab_size - 1, (1,), generator=generator))) % model.config.vocab_size
        start = time.perf_counter()
        causal_edit_diff(model, tokens, position, new_token)
        timings.append(time.perf_counter() - start)
    return percentile(timings, 50), percentile(timings, 95)


def overhead(preset: str, n_tokens: int, repeats: int, seed: int = 0) -> dict[str, float]:
    started = time.perf_counter()
    model = Transformer.from_seed(get_preset(preset), seed)
    build_s = time.perf_counter() - started
    generator = torch.Generator().manual_seed(seed)
    tokens = random_tokens(model.config.vocab_size, n_tokens, generator)
    position = n_tokens // 2
    edited = list(tokens)
    edited[position] = (tokens[position] + 1) % model.config.vocab_size
    pair = torch.tensor([tokens, edited])  # (2, T): the same batch the diff runs
    single = torch.tensor([tokens])  # (1, T)

    def bare(batch: torch.Tensor) -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            model(batch)
        return time.perf_counter() - start

    def diff() -> float:
        start = time.perf_counter()
        causal_edit_diff(model, tokens, position, edited[position])
        return time.perf_counter() - start

    bare(pair), diff()  # warm-up
    bare2, diffs, bare1 = [], [], []
    for _ in range(repeats):  # alternate so that load from other jobs hits both alike
        bare2.append(bare(pair))
        diffs.append(diff())
        bare1.append(bare(single))
    return {
        "build_s": build_s,
        "bare_batch2": statistics.median(bare2),
        "diff": statistics.median(diffs),
        "bare_batch1": statistics.median(bare1),
        "min_bare_batch2": min(bare2),
        "min_diff": min(diffs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--skip-gpt2", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device cpu")
    print(f"causal_edit_diff edit-to-result latency, tiny-gpt, {args.edits} random edits")
    for n_tokens in (64, 128):
        p50, p95 = edit_latency("tiny-gpt", n_tokens, args.edits)
        print(f"  T={n_tokens:<4} p50 {p50 * 1e3:7.1f} ms   p95 {p95 * 1e3:7.1f} ms")
    if args.skip_gpt2:
        return 0
    n_tokens = 256
    figures = overhead("gpt2-small", n_tokens, args.repeats)
    print(f"gpt2-small shape (random weights, built in {figures['build_s']:.1f} s), T={n_tokens}, median of {args.repeats}")
    print(f"  bare forward, batch 2 (original + edited) {figures['bare_batch2'] * 1e3:8.1f} ms")
    print(f"  causal_edit_diff (one batch of 2)         {figures['diff'] * 1e3:8.1f} ms")
    print(f"  bare forward, batch 1 (for scale)         {figures['bare_batch1'] * 1e3:8.1f} ms")
    print(
        f"  ratio diff / bare batch-2 forward: {figures['diff'] / figures['bare_batch2']:.2f}x median, "
        f"{figures['min_diff'] / figures['min_bare_batch2']:.2f}x best-of  (target <= 1.3x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
