"""Widgets are freed on the GUI thread only: cycles are collected there, and the worker never drops a callback last."""

from __future__ import annotations

import gc
import threading
import weakref

from gui.gui_thread_gc import collecting_on_gui_thread


class Finalized:
    """Records the thread its last reference was dropped on."""

    def __init__(self, log: list[int]) -> None:
        self._log = log

    def deliver(self, _result) -> None:
        pass

    def __del__(self) -> None:
        self._log.append(threading.get_ident())


def test_a_worker_makes_automatic_collection_give_way_to_the_gui_thread_timer(qtbot, compute):
    assert collecting_on_gui_thread() and not gc.isenabled()
    collections: list[int] = []

    def record(phase, _info) -> None:
        if phase == "start":
            collections.append(threading.get_ident())

    def cyclic_garbage() -> int:
        for _ in range(200_000):  # automatic collection would run here, on the worker, hundreds of times
            cycle: list = []
            cycle.append(cycle)
        return 0

    gc.callbacks.append(record)
    try:
        with qtbot.waitSignal(compute.result_delivered, timeout=30_000):
            compute.submit("garbage", cyclic_garbage, lambda _: None)
        # The cycles left behind are still collected: by the timer, on this thread.
        qtbot.waitUntil(lambda: bool(collections), timeout=5_000)
    finally:
        gc.callbacks.remove(record)
    assert set(collections) == {threading.get_ident()}


def test_cyclic_garbage_is_collected_by_the_timer(qtbot, compute):
    class Node:
        pass

    node = Node()
    node.cycle = node
    gone = weakref.ref(node)
    del node
    for _ in range(1_000):  # past the first generation's threshold
        filler: list = []
        filler.append(filler)
    qtbot.waitUntil(lambda: gone() is None, timeout=5_000)


def submit_holding(compute, channel: str, finalized: list[int], after=None) -> None:
    """A request whose job and callback alone hold a Finalized: the caller keeps no reference."""
    holder = Finalized(finalized)

    def deliver(result) -> None:
        holder.deliver(result)
        if after is not None:
            after()

    compute.submit(channel, lambda: holder is not None, deliver)


def test_the_last_reference_to_a_requests_callbacks_is_dropped_on_the_gui_thread(qtbot, compute):
    finalized: list[int] = []
    with qtbot.waitSignal(compute.result_delivered, timeout=5_000):
        submit_holding(compute, "panel", finalized)
    # The next request moves the worker on: before, its loop still held the first one and freed it there.
    with qtbot.waitSignal(compute.result_delivered, timeout=5_000):
        compute.submit("panel", lambda: 2, lambda _: None)
    qtbot.waitUntil(lambda: bool(finalized), timeout=5_000)
    assert finalized == [threading.get_ident()]


def test_a_request_run_inside_a_long_job_is_also_dropped_on_the_gui_thread(qtbot, compute):
    finalized: list[int] = []
    inner_delivered = threading.Event()

    def long_job(token) -> int:
        while not inner_delivered.is_set():
            token.let_others_run(0.05)
        token.let_others_run(0.05)
        return 0

    compute.submit("long", long_job, lambda _: None)
    submit_holding(compute, "panel", finalized, after=inner_delivered.set)
    qtbot.waitUntil(lambda: not compute.busy, timeout=10_000)
    qtbot.waitUntil(lambda: bool(finalized), timeout=5_000)
    assert finalized == [threading.get_ident()]


def test_a_full_collection_waits_its_interval(compute, monkeypatch):
    import gui.gui_thread_gc as gui_gc

    collector = gui_gc._collector
    generations: list[int] = []

    def record(phase, info) -> None:
        if phase == "start":
            generations.append(info["generation"])

    def due_everywhere() -> None:
        # Every generation past its threshold: young objects, and more middle collections than the third threshold.
        for _ in range(collector.thresholds[2] + 1):
            gc.collect(1)
        keep = [[] for _ in range(collector.thresholds[0] + 100)]  # tracked, alive: the young count passes its threshold
        for _ in range(collector.thresholds[1] + 1):
            gc.collect(0)
        keep.extend([] for _ in range(collector.thresholds[0] + 100))
        return keep

    gc.callbacks.append(record)
    try:
        monkeypatch.setattr(collector, "_last_full", gui_gc.time.monotonic())  # one just ran
        held = due_everywhere()
        generations.clear()
        collector.check()
        assert generations == [1]  # the middle generation, not a full walk
        monkeypatch.setattr(collector, "_last_full", gui_gc.time.monotonic() - gui_gc.FULL_COLLECTION_INTERVAL_S)
        held += due_everywhere()
        generations.clear()
        collector.check()
        assert generations == [2]
    finally:
        gc.callbacks.remove(record)
    assert held

