"""The one serial compute worker: all torch work of the app runs on its thread.

Hooks are not re-entrant and two threads would make two OpenMP pools, so there is exactly one
worker. Requests are posted per channel (usually a panel's name); while a job runs only the newest
pending request of each channel is kept, and a result whose request is no longer the newest of its
channel is dropped when it reaches the GUI thread. Exceptions come back as one-line messages.

A job is a callable taking no argument, or one argument: a `CancelToken` with `.cancelled`,
`.check()` (raises `JobCancelled`), `.report(fraction, text)` for a progress bar, `.partial(value)` for
partial results (delivered to the request's `on_partial` on the GUI thread, in order, while the job is
the newest of its channel) and `.let_others_run(wait_s)`: a long job (a training run) calls it between
its steps, and the worker runs the other channels' pending requests right there, on the same thread,
before the long job goes on. A paused run waits inside it, so the rest of the lab keeps computing.

Every request ends in exactly one callback on the GUI thread, so no submitter waits on a request that is gone:
`on_result`, `on_error`, or `on_dropped(reason)` when it ends with neither: `"cancelled"` (cancel(): the user's
Cancel or Esc) or `"superseded"` (a newer request of its channel took its place).
"""

from __future__ import annotations

import inspect
import itertools
import logging
import os
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from gui.gui_thread_gc import collect_on_gui_thread

log = logging.getLogger("transformer_explorer.compute")

# Workers still inside a torch call when their window closed: kept referenced until the process ends.
_UNFINISHED_WORKERS: list[QThread] = []

# PySide releases the GIL around every call into Qt, so a paint makes hundreds of GIL hand-overs;
# with Python's default 5 ms switch interval each one can wait for the worker's next switch. A
# short interval keeps the GUI thread responsive while the worker runs Python-heavy code.
GIL_SWITCH_INTERVAL_S = 0.0005
EXPECTED_ERRORS = ("ConfigError", "SequenceError", "MemoryBudgetError", "ModelTooLargeError", "DeviceError",
                   "UnknownTokenError", "UnknownPresetError", "CheckpointError", "TokenizerFileError",
                   "TrainingError", "PositionsError", "NormsError", "BudgetError", "CorpusError",
                   "PatchingError", "AttributionError", "AblationError", "InductionError")


class JobCancelled(Exception):
    """Raised inside a job by `CancelToken.check()` once the job was cancelled or superseded."""


class CancelToken:
    """Cooperative cancellation and progress for one job; safe to use from the worker thread."""

    def __init__(self, controller: ComputeController, request_id: int, name: str) -> None:
        self._event = threading.Event()
        self._controller = controller
        self._request_id = request_id
        self._name = name

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()

    def check(self) -> None:
        if self._event.is_set():
            raise JobCancelled(self._name)

    def report(self, fraction: float, text: str = "") -> None:
        """Progress in [0, 1] with a short text; also a cancellation point."""
        self._controller._progress_from_worker.emit(self._request_id, float(min(1.0, max(0.0, fraction))), text)
        self.check()

    def partial(self, value: Any) -> None:
        """A partial result (a training step's losses, a sample) for the request's on_partial; a cancellation point."""
        self._controller._partial_from_worker.emit(self._request_id, value)
        self.check()

    def let_others_run(self, wait_s: float = 0.0) -> None:
        """Run the other channels' pending requests now, waiting up to wait_s for one; a cancellation point.

        Called by a long job between its steps (never inside a hook capture or a forward pass), so
        that a training run, running or paused, does not hold the rest of the lab.
        """
        self._controller._run_others(self._request_id, wait_s)
        self.check()


@dataclass(frozen=True)
class ComputeRequest:
    request_id: int
    channel: str
    name: str
    fn: Callable[..., Any]
    on_result: Callable[[Any], None]
    on_error: Callable[[str], None] | None
    takes_token: bool
    token: CancelToken = field(compare=False)
    cancellable: bool = True
    on_partial: Callable[[Any], None] | None = None
    on_dropped: Callable[[str], None] | None = None


CANCELLED = "cancelled"  # on_dropped's reasons: cancel() ended it
SUPERSEDED = "superseded"  # a newer request of its channel took its place


def _takes_token(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 1


def describe_error(error: BaseException) -> str:
    """A one-line message for the user: the error's own text, with its type when that adds meaning."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if type(error).__name__ in EXPECTED_ERRORS and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Worker(QThread):
    """Runs requests one at a time, oldest channel first, until asked to stop."""

    def __init__(self, controller: ComputeController) -> None:
        super().__init__()
        self.setObjectName("compute-worker")
        self._controller = controller

    def run(self) -> None:
        while self._controller._run_next():
            pass


class ComputeController(QObject):
    """Owns the one worker thread. Use `submit`; results arrive on the GUI thread."""

    busy_changed = Signal(bool, str)  # busy, name of the running job ("" when idle)
    progress = Signal(float, str)  # fraction in [0, 1] (or -1 for no progress known), text
    error = Signal(str)  # a job's failure as a one-line message
    result_delivered = Signal(str)  # the channel whose newest result was just delivered

    # Signals emitted from the worker thread; Qt queues them to the GUI thread.
    _started_on_worker = Signal(int, str)
    _finished_on_worker = Signal(int, str, object)
    _progress_from_worker = Signal(int, float, str)
    _partial_from_worker = Signal(int, object)
    # A pending request dropped before it ran: its on_dropped is called later, never inside submit() or cancel().
    _dropped_before_running = Signal(object, str)

    def __init__(self, parent: QObject | None = None, torch_threads: int | None = None) -> None:
        super().__init__(parent)
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._pending: OrderedDict[str, ComputeRequest] = OrderedDict()
        self._latest: dict[str, int] = {}
        self._requests: dict[int, ComputeRequest] = {}
        self._end_reasons: dict[int, str] = {}  # why a request sent to the worker will not be delivered
        self._running: ComputeRequest | None = None
        self._suspended: list[ComputeRequest] = []  # long jobs that let others run, outermost first
        self._trash: list[Any] = []
        self._stopping = False
        self._torch_threads = torch_threads
        self._worker_configured = False  # torch's thread count set, on the worker, before its first job
        self._busy_name = ""
        self.stopped_cleanly = True  # False once shutdown() had to leave the worker inside a torch call
        self._started_on_worker.connect(self._on_started)
        self._finished_on_worker.connect(self._on_finished)
        self._progress_from_worker.connect(self._on_progress)
        self._partial_from_worker.connect(self._on_partial)
        self._dropped_before_running.connect(self._on_dropped_before_running, Qt.ConnectionType.QueuedConnection)
        collect_on_gui_thread()  # before the worker starts: a collection there would free widgets off their thread
        self._worker = _Worker(self)
        self._worker.start()

    # ---- public API ----------------------------------------------------------------------------
    def submit(
        self,
        channel: str,
        fn: Callable[..., Any],
        on_result: Callable[[Any], None],
        name: str = "",
        on_error: Callable[[str], None] | None = None,
        cancellable: bool = True,
        on_partial: Callable[[Any], None] | None = None,
        on_dropped: Callable[[str], None] | None = None,
    ) -> int:
        """Queue fn() (or fn(token)) on the worker; on_result(value) runs on the GUI thread if still newest.

        Returns the request id. A pending request of the same channel is dropped; a running one
        of the same channel is asked to cancel (it stops at its next token check). A request made
        with cancellable=False (loading torch, building the model) is left alone by cancel().
        on_partial(value) receives the job's `token.partial(value)` calls on the GUI thread. on_dropped(reason)
        runs on the GUI thread when the request ends without a result or an error (CANCELLED or SUPERSEDED).
        """
        request_id = next(self._ids)
        token = CancelToken(self, request_id, name or channel)
        request = ComputeRequest(
            request_id, channel, name or channel, fn, on_result, on_error, _takes_token(fn), token, cancellable,
            on_partial, on_dropped,
        )
        with self._lock:
            if self._stopping:
                return request_id
            self._latest[channel] = request_id
            dropped = self._pending.pop(channel, None)
            if dropped is not None:
                self._requests.pop(dropped.request_id, None)
            for earlier in self._requests.values():  # running, or finished with its outcome still on its way
                if earlier.channel == channel:
                    self._end_reasons.setdefault(earlier.request_id, SUPERSEDED)
            for running in self._active():
                if running.channel == channel:
                    running.token.cancel()
            self._pending[channel] = request
            self._requests[request_id] = request
            self._lock.notify()
        if dropped is not None:
            self._dropped_before_running.emit(dropped, SUPERSEDED)
        return request_id

    def dispose(self, *objects: Any) -> None:
        """Hand the last references to objects (an old model) to the worker, which drops them there.

        Freeing hundreds of megabytes of tensors takes tens of milliseconds; on the GUI thread that is
        a visible stall.
        """
        with self._lock:
            self._trash.extend(obj for obj in objects if obj is not None)
            self._lock.notify()

    def cancel(self, channel: str | None = None) -> None:
        """Cancel the running job and drop pending ones: of one channel, or every cancellable one."""
        with self._lock:
            if channel is not None:
                channels = [channel]
            else:
                channels = [name for name, request in self._pending.items() if request.cancellable]
                channels += [running.channel for running in self._active() if running.cancellable]
            dropped_requests = []
            for name in channels:
                dropped = self._pending.pop(name, None)
                if dropped is not None:
                    self._requests.pop(dropped.request_id, None)
                    dropped_requests.append(dropped)
                # Anything already on its way back for this channel is now stale.
                self._latest[name] = -1
            for earlier in self._requests.values():
                if earlier.channel in channels:
                    self._end_reasons.setdefault(earlier.request_id, CANCELLED)
            for running in self._active():
                if running.channel in channels:
                    running.token.cancel()
        for dropped in dropped_requests:
            self._dropped_before_running.emit(dropped, CANCELLED)

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._running is not None or bool(self._pending) or bool(self._suspended)

    def is_live(self, request_id: int | None) -> bool:
        """Whether this request may still deliver: pending, running, or finished with its outcome on its way."""
        with self._lock:
            request = self._requests.get(request_id) if request_id is not None else None
            return request is not None and self._latest.get(request.channel) == request_id

    def busy_with(self, channel: str) -> bool:
        """Whether a job of this channel is pending, running, or letting others run."""
        with self._lock:
            return channel in self._pending or any(request.channel == channel for request in self._active())

    @property
    def running_name(self) -> str:
        return self._busy_name

    def is_worker_thread(self) -> bool:
        return QThread.currentThread() is self._worker

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel everything and stop the worker thread (called when the window closes).

        Returns whether the worker stopped within timeout_ms. One torch call cannot be interrupted;
        when it outlasts the wait, the thread object is kept alive (destroying a running QThread
        aborts the process) and the caller decides how to leave.
        """
        with self._lock:
            self._stopping = True
            self._pending.clear()
            for running in self._active():
                running.token.cancel()
            self._lock.notify_all()
        stopped = self._worker.wait(timeout_ms)
        self.stopped_cleanly = bool(stopped)
        if not stopped:
            _UNFINISHED_WORKERS.append(self._worker)
            self._worker.setParent(None)
        return bool(stopped)

    # ---- worker side ---------------------------------------------------------------------------
    def _configure_worker_thread(self) -> None:
        if self._torch_threads is None:
            return
        import torch

        torch.set_num_threads(self._torch_threads)

    def _take_next(self) -> ComputeRequest | None:
        while True:
            with self._lock:
                while not self._pending and not self._trash and not self._stopping:
                    self._lock.wait()
                trash, self._trash = self._trash, []
                if not trash:
                    if self._stopping:
                        return None
                    _, request = self._pending.popitem(last=False)
                    self._running = request
                    return request
            del trash  # outside the lock: the objects are freed here, on the worker

    def _active(self) -> list[ComputeRequest]:
        """The running request and the long jobs suspended under it (call with the lock held)."""
        return self._suspended + ([self._running] if self._running is not None else [])

    def _run_next(self) -> bool:
        """Run the next request, or return False once the controller stops."""
        request = self._take_next()
        if request is None:
            return False
        if not self._worker_configured:
            # At the first job, not when the thread starts: the thread starts while the window is being built,
            # and importing torch then would hold the interpreter's lock for the seconds the window waits on.
            self._worker_configured = True
            try:
                self._configure_worker_thread()
            except Exception:
                # A torch that cannot be imported: the job meets the same error and reports it.
                log.exception("could not configure torch on the worker thread")
        finished = self._execute(request)
        # The request's callbacks belong to widgets: the GUI thread, which drops the request on delivery,
        # must drop the last reference, so this thread lets go before the result is on its way.
        del request
        self._finished_on_worker.emit(*finished)
        return True

    def _execute(self, request: ComputeRequest) -> tuple[int, str, Any]:
        """Run one request on the worker thread; its (request id, outcome, payload) for the GUI thread."""
        self._started_on_worker.emit(request.request_id, request.name)
        result = payload = None
        started = time.perf_counter()
        try:
            if request.token.cancelled:
                raise JobCancelled(request.name)
            result = request.fn(request.token) if request.takes_token else request.fn()
            outcome, payload = "ok", result
            log.debug("job %r took %.3f s", request.name, time.perf_counter() - started)
        except JobCancelled:
            outcome, payload = "cancelled", None
        except BaseException as error:  # any failure becomes a message; the worker keeps running
            if type(error).__name__ in EXPECTED_ERRORS:
                log.info("job %r refused: %s", request.name, error)
            else:
                log.error("job %r failed:\n%s", request.name, traceback.format_exc())
            outcome, payload = "error", describe_error(error)
        # Mark the worker free before the GUI thread hears of the result, so it sees the true idle state.
        self._done_on_worker(request)
        return request.request_id, outcome, payload

    def _run_others(self, request_id: int, wait_s: float) -> None:
        """Worker side of CancelToken.let_others_run: run other channels' pending requests, then return."""
        deadline = time.monotonic() + max(0.0, wait_s)
        with self._lock:
            outer = self._running
            if outer is None or outer.request_id != request_id or self._suspended:
                return  # only the outermost long job lets others run: no nesting of nestings
        while True:
            with self._lock:
                others = [name for name in self._pending if name != outer.channel]
                while not others and not self._trash and not self._stopping and not outer.token.cancelled:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._lock.wait(remaining)
                    others = [name for name in self._pending if name != outer.channel]
                if self._stopping or outer.token.cancelled:
                    return
                trash, self._trash = self._trash, []
                request = self._pending.pop(others[0]) if others and not trash else None
                if request is not None:
                    self._suspended.append(outer)
                    self._running = request
            if request is None:
                del trash  # outside the lock: freed on the worker
                continue
            try:
                finished = self._execute(request)
            finally:
                with self._lock:
                    self._suspended.pop()
                    self._running = outer
            del request  # as in _run_next: the GUI thread drops the last reference
            self._finished_on_worker.emit(*finished)

    def _done_on_worker(self, request: ComputeRequest) -> None:
        with self._lock:
            self._running = None

    # ---- GUI side ------------------------------------------------------------------------------
    @Slot(int, str)
    def _on_started(self, request_id: int, name: str) -> None:
        self._busy_name = name
        self.busy_changed.emit(True, name)

    @Slot(int, str, object)
    def _on_finished(self, request_id: int, outcome: str, payload: object) -> None:
        with self._lock:
            request = self._requests.pop(request_id, None)
            fresh = request is not None and self._latest.get(request.channel) == request_id
            reason = self._end_reasons.pop(request_id, SUPERSEDED)
            idle = self._running is None and not self._pending and not self._suspended
        if request is not None and (not fresh or outcome == "cancelled"):
            # A job that stopped itself (JobCancelled with no newer request) ends like a cancelled one.
            self._call_on_dropped(request, reason if not fresh else CANCELLED)
        elif request is not None:
            if outcome == "ok":
                try:
                    request.on_result(payload)
                except Exception as error:
                    # A panel's display bug: report it like any uncaught error (dialog + log) and keep
                    # delivering the other channels' results.
                    self._report_error(request, describe_error(error))
                    sys.excepthook(type(error), error, error.__traceback__)
                self.result_delivered.emit(request.channel)
            elif outcome == "error":
                self._report_error(request, str(payload))
        if idle:
            self._busy_name = ""
            self.busy_changed.emit(False, "")

    @Slot(object, str)
    def _on_dropped_before_running(self, request: ComputeRequest, reason: str) -> None:
        self._call_on_dropped(request, reason)

    def _call_on_dropped(self, request: ComputeRequest, reason: str) -> None:
        if request.on_dropped is None:
            return
        try:
            request.on_dropped(reason)
        except Exception as error:
            self._report_error(request, describe_error(error))
            sys.excepthook(type(error), error, error.__traceback__)

    def _report_error(self, request: ComputeRequest, message: str) -> None:
        text = f"{request.name}: {message}"
        if request.on_error is not None:
            try:
                request.on_error(message)
            except Exception:
                log.error("error callback of %r failed:\n%s", request.name, traceback.format_exc())
        self.error.emit(text)

    @Slot(int, object)
    def _on_partial(self, request_id: int, value: object) -> None:
        with self._lock:
            request = self._requests.get(request_id)
            fresh = request is not None and self._latest.get(request.channel) == request_id
        if fresh and request.on_partial is not None:
            try:
                request.on_partial(value)
            except Exception as error:
                self._report_error(request, describe_error(error))
                sys.excepthook(type(error), error, error.__traceback__)

    @Slot(int, float, str)
    def _on_progress(self, request_id: int, fraction: float, text: str) -> None:
        with self._lock:
            request = self._requests.get(request_id)
        if request is not None and self._latest.get(request.channel) == request_id:
            self.progress.emit(fraction, text)


def leave_if_worker_unfinished(controller: ComputeController, code: int) -> None:
    """End the process now if shutdown() left the worker inside a torch call.

    Python's own shutdown would destroy the running QThread, which aborts the process ("QThread:
    Destroyed while thread is still running"). By this point the window has closed and saved what
    the user had, so the process leaves with its exit code at once.
    """
    if controller.stopped_cleanly:
        return
    log.warning("the compute worker was still inside a computation at exit; leaving without waiting for it")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


__all__ = ["ComputeController", "leave_if_worker_unfinished", "CancelToken", "JobCancelled", "ComputeRequest",
           "describe_error", "CANCELLED", "SUPERSEDED"]
