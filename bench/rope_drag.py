"""Per-drag cost of the RoPE scrubber: what the Positions panel recomputes on each mouse move.

    .venv/bin/python bench/rope_drag.py [--moves 2000] [--d 8 64 128] [--keys 64] [--threads 1]

One drag update = rope_score(q, k, m, n) + rope_score_row(q, k, m, keys) + rotation_arrows for q
at m and for k at n. A base / scale slider move also redraws the full grid (rope_score_grid).
Prints p50 / p95 per update and the updates per second the computation alone allows (the panel's
redraw comes on top). Prints figures only; no asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.experiments.positions import (  # noqa: E402
    rope_score,
    rope_score_grid,
    rope_score_row,
    rotation_arrows,
    seeded_qk,
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def time_calls(call, n: int) -> list[float]:
    for _ in range(20):  # warm-up: first calls allocate
        call(0)
    timings = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        timings.append(time.perf_counter() - start)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=2000, help="drag updates to time")
    parser.add_argument("--d", type=int, nargs="+", default=[8, 64, 128], help="head widths to try")
    parser.add_argument("--keys", type=int, default=64, help="key positions in the row and the grid")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} thread(s); {args.moves} drag updates; {args.keys} keys")
    keys = np.arange(args.keys)
    for d in args.d:
        pair = seeded_qk(0, d)

        def drag(i: int) -> None:
            m = float(i % 500)  # the dragged query position
            n = float((i * 7) % 500)
            rope_score(pair.q, pair.k, m, n)
            rope_score_row(pair.q, pair.k, m, keys)
            rotation_arrows(pair.q, m)
            rotation_arrows(pair.k, n)

        def slider(i: int) -> None:
            rope_score_grid(pair.q, pair.k, keys, base=1000.0 + i)

        for label, call, n in (("drag update", drag, args.moves), ("grid redraw", slider, max(args.moves // 4, 50))):
            timings = time_calls(call, n)
            p50, p95 = percentile(timings, 50), percentile(timings, 95)
            print(
                f"d {d:>4}  {label:<12} p50 {p50 * 1e3:7.3f} ms  p95 {p95 * 1e3:7.3f} ms  "
                f"mean {statistics.fmean(timings) * 1e3:7.3f} ms  -> "
                f"{1 / p50:8.0f} updates/s (p50), {1 / p95:8.0f} (p95)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
