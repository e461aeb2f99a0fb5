"""The file reader: work on a thread of its own, outcomes on the GUI thread, the newest read per channel wins."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QCoreApplication
from shiboken6 import delete

from gui.file_reader import FileReader


def held_work(gate: threading.Event, value, threads: list[threading.Thread]):
    def work():
        threads.append(threading.current_thread())
        assert gate.wait(30)
        return value
    return work


def finish(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    QCoreApplication.processEvents()  # what the work posted before it ended is delivered (or dropped) here


def test_the_work_runs_off_the_gui_thread_and_its_outcome_arrives_on_it(qtbot):
    reader = FileReader()
    ran_on, delivered_on, errors = [], [], []

    def work():
        ran_on.append(threading.current_thread())
        return 42

    reader.read("session", work, lambda value: delivered_on.append((value, threading.current_thread())), errors.append)
    qtbot.waitUntil(lambda: bool(delivered_on), timeout=10_000)
    assert delivered_on == [(42, threading.main_thread())] and ran_on[0] is not threading.main_thread()
    assert errors == [] and not reader.busy()
    reader.read("session", lambda: 1 / 0, delivered_on.append, errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
    assert isinstance(errors[0], ZeroDivisionError) and len(delivered_on) == 1


def test_a_newer_read_supersedes_an_older_one_on_its_channel_only(qtbot):
    reader = FileReader()
    gate, threads, results = threading.Event(), [], []
    reader.read("session", held_work(gate, "older session", threads), results.append, results.append)
    reader.read("lesson", held_work(gate, "lesson", threads), results.append, results.append)
    reader.read("session", lambda: "newer session", results.append, results.append)
    qtbot.waitUntil(lambda: "newer session" in results, timeout=10_000)
    assert reader.busy("lesson") and not reader.busy("session")
    gate.set()
    finish(threads)
    assert results == ["newer session", "lesson"]


def test_a_cancelled_read_delivers_nothing(qtbot):
    reader = FileReader()
    gate, threads, results = threading.Event(), [], []
    reader.read("session", held_work(gate, "cancelled", threads), results.append, results.append)
    reader.cancel("session")
    assert not reader.busy()
    gate.set()
    finish(threads)
    assert results == []


def test_shutdown_waits_a_bounded_time_and_then_delivers_nothing(qtbot):
    reader = FileReader()
    gate, threads, results = threading.Event(), [], []
    reader.read("session", held_work(gate, "late", threads), results.append, results.append)
    started = time.monotonic()
    assert reader.shutdown(timeout_s=0.2) is False  # the read is still held
    assert 0.2 <= time.monotonic() - started < 5.0
    assert reader.read("session", lambda: "after", results.append, results.append) == 0
    gate.set()
    finish(threads)
    assert results == [] and reader.shutdown(timeout_s=0.2) is True


def test_a_reader_deleted_during_a_read_is_left_alone(qtbot, monkeypatch):
    raised = []
    monkeypatch.setattr(threading, "excepthook", raised.append)  # an emit on the deleted object would raise there
    reader = FileReader()
    gate, threads, results = threading.Event(), [], []
    reader.read("session", held_work(gate, "orphan", threads), results.append, results.append)
    qtbot.waitUntil(lambda: bool(threads), timeout=10_000)
    delete(reader)  # as a window deleted without being closed deletes its children
    gate.set()
    finish(threads)
    assert results == [] and raised == []
