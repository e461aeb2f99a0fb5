"""Python's cycle collector runs on the GUI thread only, from a timer.

An automatic collection runs on whichever thread crosses the allocation threshold, and the compute
worker allocates the most (building a model makes tens of thousands of objects). A collection there
destroys any widget, plot item or QThread caught in a reference cycle from the wrong thread, which
can abort the process. So automatic collection is off, and a GUI-thread timer applies the same
thresholds every COLLECT_INTERVAL_S. Objects freed by their reference count alone are untouched.
A collection's cost is the objects it walks: the second generation holds what survived the last ten
collections of the first, so with the worker making objects fast (a model build) the interval sets
that size. At 0.1 s a second-generation collection walked a second of the worker's objects, 75-128 ms
of the GUI thread on a 2-core machine; at 0.01 s it walks a tenth of that (5-35 ms in the same runs).

A full collection walks every object the process holds: about 300 ms once torch and every panel are
loaded, a visible stall on the GUI thread. Python itself runs one only when the objects that
survived since the last one are a quarter of those it found then; the timer cannot see that count,
so it runs one at most every FULL_COLLECTION_INTERVAL_S, and `freeze_long_lived()` moves what was
made at start-up (torch's modules and classes, the window's widgets) out of the collector's walk
once torch has loaded, which brings a full collection down to the objects made since.
"""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QCoreApplication, QObject, QTimer

COLLECT_INTERVAL_S = 0.01  # a check reads three counters; a short interval keeps each collection small
FULL_COLLECTION_INTERVAL_S = 30.0

_collector: GuiThreadCollector | None = None


class GuiThreadCollector(QObject):
    """Collects the generations whose counts passed their thresholds, on the thread it lives on."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self._last_full = time.monotonic()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(round(COLLECT_INTERVAL_S * 1000))
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> None:
        young, middle, old = gc.get_count()
        first, second, third = self.thresholds
        if young <= first:
            return
        generation = 0
        if middle > second:
            generation = 1
            if old > third and time.monotonic() - self._last_full >= FULL_COLLECTION_INTERVAL_S:
                generation = 2
                self._last_full = time.monotonic()
        gc.collect(generation)


def collect_on_gui_thread() -> None:
    """Turn automatic collection off and collect from a GUI-thread timer; once per process, from the GUI thread."""
    global _collector
    if _collector is None:
        _collector = GuiThreadCollector(QCoreApplication.instance())


def collecting_on_gui_thread() -> bool:
    return _collector is not None


def freeze_long_lived() -> None:
    """Leave what exists now (start-up's modules and widgets, made to last) out of every later collection.

    Called before the first model is built: a model is replaced later, and one frozen in a cycle
    would never be freed.
    """
    gc.freeze()


__all__ = ["COLLECT_INTERVAL_S", "FULL_COLLECTION_INTERVAL_S", "GuiThreadCollector", "collect_on_gui_thread",
           "collecting_on_gui_thread", "freeze_long_lived"]
