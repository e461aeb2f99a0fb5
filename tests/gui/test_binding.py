"""The Qt binding itself: a release that leaks references to None crashes a long session."""

import sys

from PySide6.QtGui import QPainterPath


def test_void_qt_calls_keep_the_reference_count_of_none():
    path = QPainterPath()
    before = sys.getrefcount(None)
    for i in range(200):
        path.lineTo(i, i)
    # A handful of references may come and go with the interpreter; a leak loses one per call.
    assert abs(sys.getrefcount(None) - before) < 20
