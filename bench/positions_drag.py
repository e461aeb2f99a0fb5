"""Redraws per second of the Positions panel while a handle is dragged, measured offscreen.

    .venv/bin/python bench/positions_drag.py [--moves 200] [--positions 128] [--d 8] [--lock] [--tab 0]

Builds the panel on a LabState and the one ComputeController, waits for its first result, then
moves the query slider `--moves` times. Each move is one redraw: slider value -> panel update ->
processEvents until every plot on the shown sub-tab has received and handled its paint event (an
event filter counts them; painting goes into the offscreen backing store, what a screen would
show). Prints redraws/s (mean and p95 frame time) for the slider and for dragging the dashed line
on the plot; the target is 30 or more.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QEvent, QObject  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=200, help="handle moves to time")
    parser.add_argument("--positions", type=int, default=128, help="positions P the scrubber covers")
    parser.add_argument("--d", type=int, default=8, help="width of the random q, k")
    parser.add_argument("--lock", action="store_true", help="lock the offset (both handles move)")
    parser.add_argument("--tab", type=int, default=0, help="sub-tab shown while dragging (0 scrubber, 1 grids)")
    parser.add_argument("--size", type=int, nargs=2, default=(1400, 900), help="panel size in pixels")
    args = parser.parse_args()

    app = QApplication.instance() or QApplication([])
    from gui import theme

    theme.apply_theme(app, "light", 1.0)
    from gui.compute import ComputeController
    from gui.panels.positions import PositionsPanel
    from gui.state import LabState

    state = LabState()
    compute = ComputeController()
    panel = PositionsPanel(state, compute)
    panel.resize(*args.size)
    panel.show()
    panel.positions_spin.setValue(args.positions)
    panel.d_spin.setValue(args.d)
    state.set_torch_ready(True)
    started = time.perf_counter()
    while panel.scrubber is None or panel.scrubber.positions.shape[0] != args.positions:
        app.processEvents()
        if panel.last_error:
            print(f"error: {panel.last_error}")
            return 1
        if time.perf_counter() - started > 120:
            print("no result from the worker within 120 s")
            return 1
        time.sleep(0.002)
    print(f"first result after {time.perf_counter() - started:.2f} s (worker computes the grids)")
    panel.tabs.setCurrentIndex(args.tab)
    panel.lock_check.setChecked(args.lock)
    page = panel.tabs.currentWidget()
    app.processEvents()
    page.grab()  # the first paint lays everything out; not a drag frame
    plots = [plot for plot in page.findChildren(pg.PlotWidget) if plot.isVisible()]
    painted: set[int] = set()
    missed: list[int] = []

    class PaintCounter(QObject):
        def eventFilter(self, watched, event):  # noqa: N802 - Qt's name
            if event.type() == QEvent.Type.Paint:
                painted.add(id(watched))
            return False

    counter = PaintCounter()
    for plot in plots:
        plot.viewport().installEventFilter(counter)

    last = args.positions - 1
    # A back-and-forth sweep that changes m on every move (an unchanged value would redraw nothing).
    span = max(2, last - 2)
    sweep = [1 + (i % (2 * span) if i % (2 * span) < span else 2 * span - i % (2 * span)) for i in range(args.moves)]

    def run(label: str, move) -> None:
        frames = []
        for value in sweep:
            start = time.perf_counter()
            painted.clear()
            move(value)
            # Run the event loop until every plot of the sub-tab has painted this frame (the scene's
            # change notice, then the viewport's paint, take a turn each), as the screen would show it.
            for _ in range(50):
                app.processEvents()
                if len(painted) >= len(plots):
                    break
            else:
                missed.append(value)
            frames.append(time.perf_counter() - start)
        mean = statistics.fmean(frames)
        if missed:
            print(f"  ({len(missed)} moves ended before every plot had painted)")
            missed.clear()
        print(f"{label:<26} {len(frames)} moves: {1 / mean:6.1f} redraws/s (mean frame {mean * 1e3:.1f} ms, "
              f"p95 {percentile(frames, 95) * 1e3:.1f} ms, worst {max(frames) * 1e3:.1f} ms)")

    tab = panel.tabs.tabText(args.tab)
    print(f"panel {args.size[0]}x{args.size[1]}, sub-tab {tab!r}, P = {args.positions}, d = {args.d}, "
          f"lock {'on' if args.lock else 'off'}")
    run("slider m", panel.m_slider.setValue)
    run("dashed line m (plot)", panel.m_line.setValue)
    compute.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
