"""Opening a session or a lesson as the menus do (read off the GUI thread) and waiting for how it ended."""

from __future__ import annotations

from pathlib import Path

OPEN_TIMEOUT_MS = 30_000  # a file at the size limits reads in well under a second; a lesson's first step may build a model


def open_session(qtbot, window, path: str | Path, timeout: int = OPEN_TIMEOUT_MS) -> str:
    """File > Open session on `path`: "" once the session is applied, else the message shown."""
    with qtbot.waitSignal(window.session_open_ended, timeout=timeout) as ended:
        window.open_session(path)
    return ended.args[0]


def open_lesson(qtbot, window, path: str | Path, timeout: int = OPEN_TIMEOUT_MS) -> str:
    """Lessons > Open lesson on `path`: "" once the lesson has started, else the message shown."""
    with qtbot.waitSignal(window.lessons.lesson_open_ended, timeout=timeout) as ended:
        window.lessons.open_lesson(path)
    return ended.args[0]


class Ticks(list):
    """The times at which a 10 ms timer on the GUI thread fired: it fires only while the event loop runs."""

    def __init__(self) -> None:
        import time

        from PySide6.QtCore import QTimer

        super().__init__()
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.append(time.monotonic()))
        self.timer.start()


class HeldReads:
    """Sessions and lessons whose reading waits, on the reader's thread, until the test lets it go on.

    `hold(name)` holds the next reads of the file called `name`; every read (held or not) is recorded with
    the thread it ran on, and then reads, parses and checks the file as usual.
    """

    def __init__(self, monkeypatch) -> None:
        import threading

        import core.lessons
        import gui.session

        self._threading = threading
        self._gates: dict[str, threading.Event] = {}
        self.threads: dict[str, list[threading.Thread]] = {}
        for module in (gui.session, core.lessons):
            monkeypatch.setattr(module, "read_json_document", self._held(module.read_json_document))

    def _held(self, read):
        def held_read(path, *args, **kwargs):
            name = Path(path).name
            self.threads.setdefault(name, []).append(self._threading.current_thread())
            gate = self._gates.get(name)
            if gate is not None and not gate.wait(60):
                raise TimeoutError(f"the test never let the read of {name} go on")
            return read(path, *args, **kwargs)
        return held_read

    def hold(self, name: str) -> None:
        self._gates[name] = self._threading.Event()

    def release(self, name: str) -> None:
        self._gates.pop(name).set()

    def finish(self, name: str, timeout_s: float = 30.0) -> None:
        """Wait until every read of `name` has returned and anything it posted to the GUI thread is handled."""
        from PySide6.QtCore import QCoreApplication

        for thread in self.threads.get(name, []):
            thread.join(timeout_s)
            assert not thread.is_alive(), f"the read of {name} did not end"
        QCoreApplication.processEvents()  # a result the read posted before it ended is delivered (or dropped) here
