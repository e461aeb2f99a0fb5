"""Time from launch to window on screen, to torch ready and to the first model, over several runs.

    python bench/startup.py [--runs 5] [--executable dist/transformer-explorer/transformer-explorer]

Each run starts `main.py gui --self-test` (or the packaged executable's `--self-test`) in a fresh
process (offscreen unless a display is set),
which prints wall-clock stamps when the window has been shown, torch has loaded on the worker and
the first model is built. The target is a window within 1.0 s of launch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0


def one_run(executable: Path | None = None) -> dict[str, float]:
    env = dict(os.environ, TRANSFORMER_EXPLORER_TIMING="1")
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    command = [str(executable), "--self-test"] if executable else [sys.executable, str(ROOT / "main.py"), "gui", "--self-test"]
    launched = time.time()
    result = subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    stamps = {}
    for line in result.stderr.splitlines():
        if line.startswith("timing "):
            _, event, stamp = line.split()
            stamps[event] = float(stamp) - launched
    if not {"window_shown", "torch_ready", "model_ready"} <= set(stamps):
        raise SystemExit(f"the app did not start (exit code {result.returncode}):\n{result.stderr[-2000:]}")
    if result.returncode != 0:
        print(f"  note: the self-test reported a problem: {result.stderr.strip().splitlines()[-1]}", file=sys.stderr)
    return stamps


def torch_import_seconds() -> float:
    started = time.time()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--executable", type=Path, help="time a packaged app (bundle/build.py) instead of main.py")
    args = parser.parse_args()
    if args.executable and not args.executable.is_file():
        raise SystemExit(f"no executable at {args.executable} (build it with: python bundle/build.py)")
    one_run(args.executable)  # warm the file cache so that every measured run starts alike
    runs = [one_run(args.executable) for _ in range(args.runs)]
    print(f"{args.executable or 'python main.py'}: {args.runs} runs, seconds after launch (median / worst):")
    for event in ("qt_imported", "app_imported", "window_built", "window_shown", "torch_ready", "model_ready"):
        values = [run[event] for run in runs]
        print(f"  {event:<13} {statistics.median(values):6.3f} / {max(values):6.3f}")
    baseline = statistics.median(torch_import_seconds() for _ in range(3))
    print(f"  (a bare `python -c 'import torch'` takes {baseline:.3f} s here)")
    worst = max(run["window_shown"] for run in runs)
    verdict = "meets" if worst <= TARGET_S else "MISSES"
    print(f"time to window: {worst:.3f} s worst of {args.runs}, {verdict} the {TARGET_S:.1f} s target")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
