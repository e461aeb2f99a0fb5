"""Python's cycle collector runs on the GUI thread only, from a timer.

An automatic collection runs on whichever thread crosses the allocation threshold, and the compute
worker allocates the most (building a model makes tens of thousands of objects). A collection there
destroys any widget, plot item or QThread caught in a reference cycle from the wrong thread, which
can abort the process. With automatic collection off, pyqtgraph's collector checks the same
thresholds every COLLECT_INTERVAL_S on the GUI thread and collects there; objects freed by their
reference count alone are untouched.
"""

from __future__ import annotations

COLLECT_INTERVAL_S = 0.25  # a check is a few counters; cyclic garbage waits at most this long

_collector = None


def collect_on_gui_thread() -> None:
    """Turn automatic collection off and collect from a GUI-thread timer; once per process, from the GUI thread."""
    global _collector
    if _collector is not None:
        return
    from pyqtgraph.util.garbage_collector import GarbageCollector

    _collector = GarbageCollector(interval=COLLECT_INTERVAL_S)


def collecting_on_gui_thread() -> bool:
    return _collector is not None


__all__ = ["COLLECT_INTERVAL_S", "collect_on_gui_thread", "collecting_on_gui_thread"]
