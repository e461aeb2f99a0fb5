"""Other views keep computing while a training run is paused, or between its steps while it runs.

    .venv/bin/python bench/paused_training.py [--changes 5] [--steps 2000]

Drives the full MainWindow offscreen: starts a run of the bundled tiny-gpt config in the Train panel,
pauses it, then changes the Norms panel's depth --changes times and times each change to the Norms
view's new result; then resumes the run and does the same while it trains. Prints figures; exit 1 if
any Norms result did not come while the run was paused (or within --timeout while it ran).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description="Norms recomputes while a training run is paused or running")
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000, help="steps of the run (long enough to outlast the bench)")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from gui.main_window import MainWindow
    from gui.panels.norms import NormsPanel
    from gui.panels.train import TrainPanel

    settings = QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.remember_preferences = False
    window.resize(1366, 768)
    window.show()

    def run_until(condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        loop = QEventLoop()
        check = QTimer()
        check.setInterval(10)
        check.timeout.connect(lambda: loop.quit() if condition() or time.monotonic() > deadline else None)
        check.start()
        while not condition() and time.monotonic() <= deadline:
            loop.exec()
        check.stop()
        return condition()

    loaded = []
    window.model_loaded.connect(lambda: loaded.append(1))
    window.start_loading()
    run_until(lambda: bool(loaded), 600.0)
    train, norms = window.panel(TrainPanel.title), window.panel(NormsPanel.title)
    window.show_panel(NormsPanel.title)
    first = []
    norms.view.result_shown.connect(lambda: first.append(1))
    run_until(lambda: bool(first) or norms.view.shown_inputs is not None, 600.0)

    window.show_panel(TrainPanel.title)
    train.steps_spin.setValue(args.steps)
    assert train.start_training(), train.last_error
    run_until(lambda: bool(train.train_points[0]), 600.0)  # the run has made steps
    train.toggle_pause()
    window.show_panel(NormsPanel.title)

    def norms_changes(label: str) -> tuple[list[float], bool]:
        latencies: list[float] = []
        for _ in range(args.changes):
            shown: list[float] = []
            connection = norms.view.result_shown.connect(lambda: shown.append(time.perf_counter()))
            depth = norms.depth_spin.value()
            began = time.perf_counter()
            norms.depth_spin.setValue(depth + 1 if depth < 24 else 4)
            ok = run_until(lambda: bool(shown), args.timeout)
            norms.view.result_shown.disconnect(connection)
            if not ok:
                print(f"  {label}: no Norms result within {args.timeout:.0f} s")
                return latencies, False
            latencies.append((shown[0] - began) * 1000)
        return latencies, True

    # A step already under way when Pause was pressed still reports: count from the first result on.
    paused, paused_ok = norms_changes("paused (settling)")
    step_before = train.train_points[0][-1]
    more, more_ok = norms_changes("paused")
    paused, paused_ok = paused + more, paused_ok and more_ok
    step_after = train.train_points[0][-1] if train.train_points[0] else step_before
    still_paused = train.training and train.control.paused.is_set()
    train.toggle_pause()
    running, running_ok = norms_changes("running")
    steps_while_running = (train.train_points[0][-1] if train.train_points[0] else 0) - step_after
    train.stop_training()
    run_until(lambda: not train.training, 600.0)
    window.close()

    def text(values: list[float]) -> str:
        return f"p50 {statistics.median(values):.0f} ms, max {max(values):.0f} ms" if values else "none"

    print(f"Norms depth changes in the full window during a {args.steps}-step tiny-gpt run:")
    print(f"  while paused at step {step_before:,}:  {text(paused)} ({len(paused)} changes; "
          f"run still paused: {still_paused}, steps made meanwhile: {step_after - step_before})")
    print(f"  while training:            {text(running)} ({len(running)} changes; "
          f"the run made {steps_while_running:,} steps meanwhile)")
    ok = paused_ok and running_ok and still_paused and step_after == step_before
    print("  meets: Norms recomputes while the run is paused and while it trains" if ok else "  MISSES")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
