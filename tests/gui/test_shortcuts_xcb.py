"""Shortcuts under the X11 platform's own key bindings: no key bound twice, and Redo's key redoes.

The offscreen platform used by the other tests has generic key bindings, so a key that X11's
standard bindings already hold (Ctrl+Shift+Z for Redo) looks unique there. Here the window is
built by a real xcb client on an Xvfb server, in a subprocess of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys, tempfile
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

app = QApplication(["transformer-explorer", "-style", "Fusion"])
from gui.main_window import MainWindow

settings = QSettings(tempfile.mktemp(suffix=".ini"), QSettings.Format.IniFormat)
window = MainWindow(settings=settings)  # every panel, with their own keys
window.remember_preferences = False
window.build_panels()
window.show()
window.activateWindow()
for _ in range(50):
    app.processEvents()

owners = {}
for action in window.findChildren(QAction):
    if action.shortcutContext() == Qt.ShortcutContext.WidgetShortcut:
        continue  # a widget's own key, live only while that widget has the focus
    for sequence in action.shortcuts():
        if not sequence.isEmpty():
            owners.setdefault(sequence.toString(QKeySequence.SequenceFormat.PortableText), []).append(
                action.text().replace("&", "") or action.toolTip() or "(unnamed)")

# Redo by its key: an ambiguous key runs neither action.
state = window.state
stack = state.undo_stack
state.set_seed(state.seed + 1)
stack.undo()
before = stack.index()
redo = QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)
combination = redo[0][0] if redo else None
if combination is not None:
    QTest.keyClick(window, combination.key(), combination.keyboardModifiers())
    for _ in range(20):
        app.processEvents()
print(json.dumps({
    "platform": app.platformName(),
    "owners": owners,
    "redo_keys": [s.toString(QKeySequence.SequenceFormat.PortableText) for s in redo],
    "redone": stack.index() == before + 1,
}))
window.close()
"""


def start_xvfb():
    """An Xvfb server on a display number of its own choosing; None where Xvfb is not installed."""
    binary = shutil.which("Xvfb")
    if binary is None:
        return None, None
    read_end, write_end = os.pipe()
    server = subprocess.Popen([binary, "-displayfd", str(write_end), "-screen", "0", "1366x768x24", "-nolisten", "tcp"],
                              pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()
    if not number:
        server.kill()
        server.wait()
        return None, None
    return server, f":{number}"


@pytest.fixture(scope="module")
def xcb_probe():
    server, display = start_xvfb()
    if server is None:
        pytest.skip("Xvfb is not installed: the X11 key bindings cannot be checked here")
    try:
        environment = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": str(ROOT)}
        environment.pop("WAYLAND_DISPLAY", None)
        result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True,
                                text=True, timeout=180)
    finally:
        server.terminate()
        server.wait(timeout=10)
    if result.returncode != 0 and "could not connect to display" in result.stderr.lower():
        pytest.skip("the xcb platform could not open the Xvfb display")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report, result.stderr


def test_no_key_is_bound_twice_under_x11(xcb_probe):
    report, _ = xcb_probe
    assert report["platform"] == "xcb"
    assert report["owners"], "no shortcut was found at all"
    twice = {key: names for key, names in report["owners"].items() if len(names) > 1}
    assert not twice, twice


def test_redo_runs_from_its_standard_key_under_x11(xcb_probe):
    report, stderr = xcb_probe
    assert report["redo_keys"], "the platform has no Redo key"
    assert "Ambiguous shortcut overload" not in stderr
    assert report["redone"], f"{report['redo_keys'][0]} did not redo"
