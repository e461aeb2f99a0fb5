"""The desktop app: PySide6 + pyqtgraph views over the Qt-free lab in core/."""

import ctypes
import sys

APP_NAME = "Transformer Explorer"
APP_ORGANIZATION = "transformer-explorer"
APP_VERSION = "0.1.0"


def _make_singletons_immortal() -> None:
    """Guard against PySide6 6.12 dropping one reference to None/True/False per call.

    On CPython 3.11 every void Qt method called through PySide6 6.12.0 (setText, setPen, emit, ...)
    returns None without taking a reference, so None's count falls by one per call and a busy window
    aborts with "Fatal Python error: none_dealloc" within minutes. CPython 3.12 made these
    singletons immortal, which hides the bug; here they get the same treatment: a reference count no
    run can exhaust.
    """
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return
    for singleton in (None, True, False):
        count = ctypes.c_ssize_t.from_address(id(singleton))
        if count.value < 1 << 40:
            count.value += 1 << 50


_make_singletons_immortal()
