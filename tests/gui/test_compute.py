"""The serial compute worker: newest request wins, stale results are dropped, errors become messages."""

from __future__ import annotations

import threading
import time

import pytest

from gui.compute import CancelToken, JobCancelled


def wait_idle(qtbot, compute):
    qtbot.waitUntil(lambda: not compute.busy, timeout=10_000)
    qtbot.wait(20)


def test_result_arrives_on_the_gui_thread(qtbot, compute):
    seen = []
    main_thread = threading.current_thread()
    with qtbot.waitSignal(compute.result_delivered, timeout=5000):
        compute.submit("a", lambda: threading.current_thread(), lambda worker: seen.append((worker, threading.current_thread())), "job")
    worker, receiver = seen[0]
    assert worker is not main_thread
    assert receiver is main_thread


def test_only_the_newest_pending_request_of_a_channel_runs(qtbot, compute):
    gate = threading.Event()
    ran, delivered = [], []
    compute.submit("blocker", lambda: gate.wait(5), lambda _: None, "blocker")
    for n in range(5):
        compute.submit("panel", lambda n=n: ran.append(n) or n, delivered.append, f"job {n}")
    gate.set()
    wait_idle(qtbot, compute)
    assert ran == [4]
    assert delivered == [4]


def test_a_stale_result_is_dropped(qtbot, compute):
    started = threading.Event()
    release = threading.Event()
    delivered = []

    def slow() -> str:
        started.set()
        release.wait(5)
        return "old"

    compute.submit("panel", slow, delivered.append, "slow")
    assert started.wait(5)
    compute.submit("panel", lambda: "new", delivered.append, "fast")
    release.set()
    wait_idle(qtbot, compute)
    assert delivered == ["new"]


def test_channels_do_not_supersede_each_other(qtbot, compute):
    delivered = []
    compute.submit("one", lambda: 1, delivered.append)
    compute.submit("two", lambda: 2, delivered.append)
    wait_idle(qtbot, compute)
    assert sorted(delivered) == [1, 2]


def test_an_exception_comes_back_as_a_message(qtbot, compute):
    errors = []

    def broken() -> None:
        raise ValueError("d_model must be even")

    with qtbot.waitSignal(compute.error, timeout=5000) as blocker:
        compute.submit("panel", broken, lambda _: None, "broken job", on_error=errors.append)
    assert errors == ["ValueError: d_model must be even"]
    assert blocker.args[0] == "broken job: ValueError: d_model must be even"
    # The worker survives the failure.
    with qtbot.waitSignal(compute.result_delivered, timeout=5000):
        compute.submit("panel", lambda: 1, lambda _: None)


def test_progress_and_cancellation(qtbot, compute):
    reports, delivered = [], []
    compute.progress.connect(lambda fraction, text: reports.append((fraction, text)))

    def long_job(token: CancelToken) -> str:
        for step in range(1000):
            token.report(step / 1000, f"step {step}")
            time.sleep(0.002)
        return "finished"

    compute.submit("panel", long_job, delivered.append, "long job")
    qtbot.waitUntil(lambda: len(reports) >= 3, timeout=5000)
    compute.cancel()
    wait_idle(qtbot, compute)
    assert delivered == []
    assert 0.0 <= reports[-1][0] < 1.0


def test_busy_changed_names_the_running_job(qtbot, compute):
    events = []
    compute.busy_changed.connect(lambda busy, name: events.append((busy, name)))
    compute.submit("panel", lambda: time.sleep(0.05), lambda _: None, "tracing shapes")
    wait_idle(qtbot, compute)
    assert events[0] == (True, "tracing shapes")
    assert events[-1] == (False, "")


def test_a_token_raises_once_cancelled(compute):
    token = CancelToken(compute, 1, "job")
    token.check()
    token.cancel()
    assert token.cancelled
    with pytest.raises(JobCancelled):
        token.check()


def test_cancel_all_leaves_uncancellable_jobs_alone(qtbot, compute):
    gate = threading.Event()
    delivered = []
    compute.submit("startup", lambda: gate.wait(5) and "torch", delivered.append, "loading torch", cancellable=False)
    compute.submit("panel", lambda: "panel", delivered.append, "panel job")
    compute.cancel()
    gate.set()
    wait_idle(qtbot, compute)
    assert delivered == ["torch"]


def test_dispose_frees_objects_on_the_worker(qtbot, compute):
    freed_on = []

    class Big:
        def __del__(self) -> None:
            freed_on.append(threading.current_thread())

    compute.dispose(Big())
    qtbot.waitUntil(lambda: bool(freed_on), timeout=5000)
    assert freed_on[0] is not threading.main_thread()


def test_a_torch_that_cannot_be_imported_still_reaches_the_user_as_a_message(qtbot, monkeypatch):
    """A broken installation (a packaged copy missing one of torch's files) fails inside the first job,
    which reports it; the worker thread must not die silently before running it."""
    from gui.compute import ComputeController

    def torch_import_fails(self) -> None:
        raise RuntimeError("Unable to find torch_shm_manager")

    monkeypatch.setattr(ComputeController, "_configure_worker_thread", torch_import_fails)
    controller = ComputeController(torch_threads=1)
    try:
        errors = []

        def load_torch() -> None:
            raise RuntimeError("Unable to find torch_shm_manager")

        with qtbot.waitSignal(controller.error, timeout=5000):
            controller.submit("startup", load_torch, lambda _: None, "loading torch", on_error=errors.append)
        assert errors == ["RuntimeError: Unable to find torch_shm_manager"]
    finally:
        controller.shutdown()


def test_partial_results_reach_the_gui_thread_in_order(qtbot, compute):
    partials: list[int] = []

    def job(token):
        for step in range(5):
            token.partial(step)
        return "done"

    with qtbot.waitSignal(compute.result_delivered, timeout=10_000):
        compute.submit("long", job, lambda _result: None, "long", on_partial=partials.append)
    assert partials == [0, 1, 2, 3, 4]


def test_a_long_job_that_lets_others_run_does_not_hold_the_worker(qtbot, compute):
    import threading

    release = threading.Event()
    finished: list[str] = []

    def long_job(token):
        while not release.is_set():
            token.let_others_run(0.02)  # a paused training run waits here
        return "long"

    compute.submit("train", long_job, finished.append, "training")
    qtbot.waitUntil(lambda: compute.busy_with("train"), timeout=10_000)
    with qtbot.waitSignal(compute.result_delivered, timeout=10_000) as blocker:
        compute.submit("norms", lambda: "norms", finished.append, "norms")
    assert blocker.args == ["norms"] and finished == ["norms"]
    assert compute.busy_with("train")  # still running: the other job ran between its steps
    with qtbot.waitSignal(compute.result_delivered, timeout=10_000):
        release.set()
    assert finished == ["norms", "long"]


def test_cancel_reaches_a_long_job_while_another_runs_inside_it(qtbot, compute):
    import threading

    inside = threading.Event()
    errors: list[str] = []

    def long_job(token):
        while True:
            token.let_others_run(0.02)

    def nested():
        inside.set()
        return "nested"

    compute.submit("train", long_job, lambda _r: None, "training", on_error=errors.append)
    qtbot.waitUntil(lambda: compute.busy_with("train"), timeout=10_000)
    with qtbot.waitSignal(compute.result_delivered, timeout=10_000):
        compute.submit("other", nested, lambda _r: None, "other")
    compute.cancel()
    qtbot.waitUntil(lambda: not compute.busy, timeout=10_000)
    assert inside.is_set() and errors == []


def test_quitting_during_a_long_computation_exits_cleanly(tmp_path):
    """A job that outlasts the shutdown wait must not abort the process when Python shuts down."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "quit_during_job.py"
    script.write_text(textwrap.dedent("""
        import sys, threading, time
        from PySide6.QtCore import QCoreApplication
        from gui.compute import ComputeController, leave_if_worker_unfinished

        app = QCoreApplication([])
        compute = ComputeController()
        started = threading.Event()

        def one_long_torch_call():  # cannot be interrupted, like a single large matmul
            started.set()
            time.sleep(3)

        compute.submit("panel", one_long_torch_call, lambda _r: None, "long")
        started.wait(10)
        print("stopped" if compute.shutdown(timeout_ms=100) else "still running")
        leave_if_worker_unfinished(compute, 0)
    """))
    import os
    from pathlib import Path

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert "still running" in done.stdout
    assert "Destroyed while thread" not in done.stderr


def test_the_worker_imports_torch_at_its_first_job_not_while_the_window_is_built(qtbot, monkeypatch):
    """The worker thread starts with the window; configuring torch there would import it while the window is being
    built, and the import holds the interpreter's lock for the seconds the window waits."""
    from gui.compute import ComputeController

    events: list[str] = []
    waiting = threading.Event()
    take_next = ComputeController._take_next

    def recording_take_next(self):
        waiting.set()  # the worker reached its queue: whatever it does at start has been done
        return take_next(self)

    monkeypatch.setattr(ComputeController, "_take_next", recording_take_next)
    monkeypatch.setattr(ComputeController, "_configure_worker_thread", lambda self: events.append("configure"))
    controller = ComputeController(torch_threads=1)
    try:
        assert waiting.wait(timeout=10)
        assert events == []
        with qtbot.waitSignal(controller.result_delivered, timeout=5000):
            controller.submit("first", lambda: events.append("job"), lambda _: None, "first job")
        assert events == ["configure", "job"]
    finally:
        controller.shutdown()
