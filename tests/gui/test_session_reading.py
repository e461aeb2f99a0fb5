"""File > Open session reads, parses and checks the file off the GUI thread: the window stays live, a newer
open supersedes an older one, a bad file changes nothing, and quitting during a read leaves at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from gui.file_reader import QUIT_WAIT_S
from gui.session import Session, write_session
from tests.gui.file_opening import HeldReads, Ticks, open_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def held(monkeypatch):
    return HeldReads(monkeypatch)


def session_file(window, folder: Path, name: str, seed: int, text: str = "a session's text") -> Path:
    return write_session(folder / name, Session(window.state.config, seed=seed, text=text))


def test_a_slow_read_leaves_the_window_live_and_is_applied_when_it_ends(qtbot, window, tmp_path, held):
    path = session_file(window, tmp_path, "slow.json", seed=7)
    held.hold(path.name)
    seed, text = window.state.seed, window.state.text
    ticks = Ticks()
    window.open_session(path)
    assert window.statusBar().currentMessage() == f"opening {path}..."
    # The event loop keeps running while the read is held on its own thread.
    qtbot.waitUntil(lambda: len(ticks) >= 5, timeout=10_000)
    assert (window.state.seed, window.state.text, window.session_path) == (seed, text, None)
    (reader,) = held.threads[path.name]
    assert reader is not threading.main_thread() and reader.name == "read-session"
    with qtbot.waitSignal(window.session_open_ended, timeout=10_000) as ended:
        held.release(path.name)
    assert ended.args == [""]
    assert (window.state.seed, window.state.text, window.session_path) == (7, "a session's text", path)
    assert window.statusBar().currentMessage() == f"opened {path}"


def test_a_read_does_not_wait_behind_a_long_computation(qtbot, window, tmp_path):
    path = session_file(window, tmp_path, "quick.json", seed=4)
    computing, finish = threading.Event(), threading.Event()

    def long_computation():
        computing.set()
        finish.wait(60)

    window.compute.submit("probe", long_computation, lambda _result: None, "a long computation")
    qtbot.waitUntil(computing.is_set, timeout=10_000)
    try:
        assert open_session(qtbot, window, path) == ""
        assert window.state.seed == 4 and window.compute.busy
    finally:
        finish.set()


def test_a_newer_open_supersedes_an_older_one_still_being_read(qtbot, window, tmp_path, held):
    older = session_file(window, tmp_path, "older.json", seed=1, text="the older session")
    newer = session_file(window, tmp_path, "newer.json", seed=2, text="the newer session")
    held.hold(older.name)
    ended: list[str] = []
    window.session_open_ended.connect(ended.append)
    window.open_session(older)
    qtbot.waitUntil(lambda: older.name in held.threads, timeout=10_000)
    assert open_session(qtbot, window, newer) == ""
    held.release(older.name)
    held.finish(older.name)
    assert (window.state.seed, window.state.text, window.session_path) == (2, "the newer session", newer)
    assert ended == [""]  # the older read ended too, and was dropped


def test_a_bad_file_shows_one_message_and_leaves_the_lab_as_it_was(qtbot, window, tmp_path, held):
    window.state.set_seed(5)
    window.state.set_text("what the user typed")
    good = session_file(window, tmp_path, "good.json", seed=3)
    assert open_session(qtbot, window, good) == ""
    window.state.set_text("typed after opening")
    bad = tmp_path / "bad.json"
    data = Session(window.state.config, seed=9).to_json()
    bad.write_text(json.dumps({**data, "selected_head": 10_000}), encoding="utf-8")
    held.hold(bad.name)
    before = (window.state.config, window.state.seed, window.state.text, window.state.tokens, window.state.undo_stack.count())
    boxes = len(window.message_boxes)
    window.open_session(bad)
    with qtbot.waitSignal(window.session_open_ended, timeout=10_000) as ended:
        held.release(bad.name)
    message = ended.args[0]
    assert message.startswith("selected head 10000 does not exist")
    assert (window.state.config, window.state.seed, window.state.text, window.state.tokens,
            window.state.undo_stack.count()) == before
    assert window.session_path == good  # Save session still writes to the session the user opened
    assert len(window.message_boxes) == boxes + 1 and window.message_boxes[-1].text() == message
    assert not window.statusBar().currentMessage().startswith("opening")
    window.message_boxes[-1].done(0)


def test_a_synchronous_open_returns_the_outcome_and_drops_a_read_in_flight(qtbot, window, tmp_path, held):
    older = session_file(window, tmp_path, "older.json", seed=1)
    now = session_file(window, tmp_path, "now.json", seed=2)
    held.hold(older.name)
    window.open_session(older)
    qtbot.waitUntil(lambda: older.name in held.threads, timeout=10_000)
    assert window.open_session(now, wait=True) is None
    assert window.state.seed == 2 and not window.file_reader.busy("session")
    held.release(older.name)
    held.finish(older.name)
    assert window.state.seed == 2 and window.session_path == now
    missing = tmp_path / "missing.json"
    assert "does not exist" in window.open_session(missing, wait=True)
    window.message_boxes[-1].done(0)


def test_closing_during_a_read_leaves_after_a_bounded_wait_and_applies_nothing(qtbot, tmp_path, held):
    from gui.main_window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "prefs.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.remember_preferences = False
    window.show()
    path = tmp_path / "held.json"
    write_session(path, Session(window.state.config, seed=8))
    held.hold(path.name)
    ended: list[str] = []
    window.session_open_ended.connect(ended.append)
    window.open_session(path)
    qtbot.waitUntil(lambda: path.name in held.threads, timeout=10_000)
    started = time.monotonic()
    window.close()
    closing_s = time.monotonic() - started
    # The wait for the read is QUIT_WAIT_S; the rest of closing (the compute worker, preferences) is quick.
    assert QUIT_WAIT_S <= closing_s < QUIT_WAIT_S + 5.0
    held.release(path.name)
    held.finish(path.name)
    assert ended == [] and window.session_path is None and window.state.seed != 8


QUIT_SCRIPT = textwrap.dedent("""
    import sys, threading
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication(["quit-during-read"])
    import gui.session
    from gui.main_window import MainWindow

    reading = threading.Event()
    def never_returns(*_args, **_kwargs):  # a network folder that hangs
        reading.set()
        threading.Event().wait()
    gui.session.read_json_document = never_returns
    window = MainWindow(settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
    window.show()
    window.open_session(sys.argv[1])
    reading.wait(30)
    QTimer.singleShot(0, window.close)  # the last window closed: the application quits
    code = app.exec()
    print("left the event loop", flush=True)
    sys.exit(code)
""")


def test_quitting_while_a_read_hangs_exits_cleanly(tmp_path):
    session = tmp_path / "hangs.json"
    session.write_text("{}", encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    # A process that waited for the blocked read thread would never end: the timeout fails the test.
    result = subprocess.run([sys.executable, "-c", QUIT_SCRIPT, str(session), str(tmp_path / "prefs.ini")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "left the event loop" in result.stdout
    assert "Traceback" not in result.stderr and "QThread" not in result.stderr, result.stderr[-2000:]
