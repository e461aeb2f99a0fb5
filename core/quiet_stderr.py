"""Silence the process's standard error around calls into native libraries that print as they fail.

The `tokenizers` library prints Rust's panic report (several lines, a backtrace with
RUST_BACKTRACE) to file descriptor 2 before the panic reaches Python as an exception; the app
reports the failure itself, in one line. Calls may overlap on several threads: descriptor 2 points
at the null device while any of them runs and is restored when the last one ends.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_active = 0
_saved: int | None = None


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    _enter()
    try:
        yield
    finally:
        _leave()


def _enter() -> None:
    global _active, _saved
    with _lock:
        if _active == 0:
            try:
                saved = os.dup(2)
                null = os.open(os.devnull, os.O_WRONLY)
            except OSError:  # no descriptor 2 (a windowed app on Windows): nothing to silence
                _active += 1
                return
            try:
                os.dup2(null, 2)
            finally:
                os.close(null)
            _saved = saved
        _active += 1


def _leave() -> None:
    global _active, _saved
    with _lock:
        _active -= 1
        if _active == 0 and _saved is not None:
            os.dup2(_saved, 2)
            os.close(_saved)
            _saved = None


__all__ = ["quiet_native_stderr"]
