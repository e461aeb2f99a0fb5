"""Reading a file the user chose (a session, a lesson) on a thread of its own, so a slow disk never freezes
the window.

Each read belongs to a channel ("session", "lesson"): a newer read on a channel supersedes an older one
still running there, whose result is dropped, never delivered. The result, or the exception the read
raised, reaches its handler on the GUI thread through a queued signal. The torch compute worker is not
used: opening a file must not wait behind a long computation. A large JSON file is parsed in a child
process (core.json_files), so that its parse, which holds the interpreter, does not hold the GUI thread.

A read blocked in the operating system (a network folder that hangs) cannot be interrupted, so each read
runs on a daemon thread: quitting waits for the reads a bounded time, then leaves without them.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal
from shiboken6 import isValid

log = logging.getLogger("transformer_explorer.file_reader")

QUIT_WAIT_S = 1.0  # a file at the size limits reads in a fraction of a second; longer means a hung disk


class FileReader(QObject):
    """Runs one read per call on a daemon thread and hands its outcome to the GUI thread."""

    # (ticket, whether the read returned, its result or the exception it raised); emitted on the read's thread.
    _finished = Signal(int, bool, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._tickets = itertools.count(1)
        self._current: dict[str, int] = {}  # channel -> the ticket whose outcome will be delivered
        self._handlers: dict[int, tuple[str, Callable[[Any], None], Callable[[Exception], None]]] = {}
        self._threads: dict[int, threading.Thread] = {}
        self._closed = threading.Event()  # set once nothing more is to be delivered
        self._finished.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        # A window deleted without being closed: no read may emit on the object once its destructor runs.
        self.destroyed.connect(functools.partial(_close, self._lock, self._closed))
        app = QCoreApplication.instance()
        if app is not None:  # however the event loop ends, no read delivers into a window being torn down
            app.aboutToQuit.connect(self.shutdown)

    def read(self, channel: str, work: Callable[[], Any], on_result: Callable[[Any], None],
             on_error: Callable[[Exception], None]) -> int:
        """Run `work()` off the GUI thread; then `on_result(value)` or `on_error(exception)` on the GUI thread.

        Supersedes the read still running on `channel`. Returns the read's ticket (0 once shut down: nothing runs).
        """
        with self._lock:
            if self._closed.is_set():
                return 0
            ticket = next(self._tickets)
            superseded = self._current.get(channel)
            if superseded is not None:
                self._handlers.pop(superseded, None)
            self._current[channel] = ticket
            self._handlers[ticket] = (channel, on_result, on_error)
            thread = threading.Thread(target=self._run, args=(ticket, work), name=f"read-{channel}", daemon=True)
            self._threads[ticket] = thread
        thread.start()
        return ticket

    def cancel(self, channel: str) -> None:
        """Drop the outcome of the read running on `channel`, if any (a synchronous open took its place)."""
        with self._lock:
            ticket = self._current.pop(channel, None)
            if ticket is not None:
                self._handlers.pop(ticket, None)

    def busy(self, channel: str | None = None) -> bool:
        """Whether a read whose outcome is still to be delivered runs on `channel` (on any channel: None)."""
        with self._lock:
            return bool(self._current) if channel is None else channel in self._current

    def shutdown(self, timeout_s: float = QUIT_WAIT_S) -> bool:
        """Deliver nothing more and wait up to `timeout_s` for the running reads; whether they all ended."""
        with self._lock:
            self._closed.set()
            self._current.clear()
            self._handlers.clear()
            threads = list(self._threads.values())
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        running = [thread.name for thread in threads if thread.is_alive()]
        if running:
            log.warning("leaving with %d file read(s) still blocked: %s", len(running), ", ".join(running))
        return not running

    # ---- the read's thread -----------------------------------------------------------------------
    def _run(self, ticket: int, work: Callable[[], Any]) -> None:
        try:
            outcome: tuple[bool, Any] = (True, work())
        except Exception as error:  # noqa: BLE001 - handed to the GUI thread, which knows which ones it expects
            outcome = (False, error)
        with self._lock:
            self._threads.pop(ticket, None)
            # Under the lock: shutdown() (on the GUI thread) cannot slip in between the check and the emit.
            if self._closed.is_set() or ticket not in self._handlers or not isValid(self):
                return
            self._finished.emit(ticket, *outcome)

    # ---- the GUI thread --------------------------------------------------------------------------
    def _deliver(self, ticket: int, returned: bool, value: Any) -> None:
        with self._lock:
            handlers = self._handlers.pop(ticket, None)
            if handlers is None:  # superseded, cancelled or shut down after the read ended
                return
            channel, on_result, on_error = handlers
            if self._current.get(channel) == ticket:
                del self._current[channel]
        if returned:
            on_result(value)
        else:
            on_error(value)


def _close(lock: threading.Lock, closed: threading.Event) -> None:
    with lock:  # waits for a read that is emitting right now; Qt drops what it posted with the object
        closed.set()


__all__ = ["QUIT_WAIT_S", "FileReader"]
