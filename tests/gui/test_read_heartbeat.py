"""Opening a file padded to its size limit keeps the GUI thread's heartbeat ticking: the gaps between a 10 ms
timer's ticks, measured while the read runs, stay within 100 ms."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from PySide6.QtCore import Qt, QTimer

from core.checkpoints import MAX_JSON_FILE_BYTES, CheckpointError, read_json_file
from core.config import ModelConfig
from gui.file_reader import FileReader
from gui.session import MAX_SESSION_BYTES, Session, read_session, write_session

HEARTBEAT_MS = 10
GAP_BOUND_S = 0.100


def longest_gap_while(qtbot, work) -> tuple[float, list]:
    """Run `work` through a FileReader; the longest gap between heartbeat ticks from start to delivery."""
    reader = FileReader()
    ticks: list[float] = []
    outcome: list = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(HEARTBEAT_MS)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    qtbot.waitUntil(lambda: len(ticks) >= 3, timeout=5_000)  # the timer runs before the read starts
    started = time.perf_counter()
    reader.read("file", work, outcome.append, outcome.append)
    qtbot.waitUntil(lambda: bool(outcome), timeout=60_000)
    ended = time.perf_counter()
    timer.stop()
    reader.shutdown()
    times = [started] + [t for t in ticks if started < t < ended] + [ended]
    return max(b - a for a, b in itertools.pairwise(times)), outcome


def padded(path, document: bytes, size: int):
    path.write_bytes(document + b" " * (size - len(document)))
    return path


def test_a_model_config_padded_to_the_size_limit_keeps_the_heartbeat(qtbot, tmp_path):
    path = padded(tmp_path / "config.json", b'{"model_type": "gpt2", "n_layer": 2}', MAX_JSON_FILE_BYTES)
    gap, outcome = longest_gap_while(qtbot, lambda: read_json_file(path, "the model config"))
    assert outcome == [{"model_type": "gpt2", "n_layer": 2}]
    assert gap <= GAP_BOUND_S, f"the GUI thread's heartbeat stopped for {gap * 1000:.0f} ms"


def test_a_session_padded_to_the_size_limit_keeps_the_heartbeat(qtbot, tmp_path):
    config = ModelConfig(vocab_size=65, context_length=32, d_model=16, n_layers=1, n_heads=2)
    written = write_session(tmp_path / "s.json", Session(config, seed=5, text="padded"))
    padded(written, written.read_bytes(), MAX_SESSION_BYTES)
    gap, outcome = longest_gap_while(qtbot, lambda: read_session(written))
    assert isinstance(outcome[0], Session) and outcome[0].seed == 5 and outcome[0].text == "padded"
    assert gap <= GAP_BOUND_S, f"the GUI thread's heartbeat stopped for {gap * 1000:.0f} ms"


def read_on_a_thread(path):
    """What read_json_file gives or raises off the main thread, where a large file is parsed in a child process."""
    found: list = []

    def work():
        try:
            found.append(read_json_file(path, "the model config"))
        except Exception as error:  # noqa: BLE001 - compared with the main thread's
            found.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    return found[0]


def test_off_the_main_thread_a_large_file_reads_as_on_it(tmp_path):
    path = padded(tmp_path / "config.json", b'{"a": [1, 2.5, "\\ud800x", "\xc3\xa9"]}', 2 * 2**20)
    assert read_on_a_thread(path) == read_json_file(path, "the model config") == {"a": [1, 2.5, "\ud800x", "\u00e9"]}
    bad = padded(tmp_path / "bad.json", b'{"a": ', 2 * 2**20)
    with pytest.raises(CheckpointError) as on_main:
        read_json_file(bad, "the model config")
    assert str(read_on_a_thread(bad)) == str(on_main.value) and "not valid JSON" in str(on_main.value)


@pytest.mark.parametrize(("document", "empty"), [(b'"' + b"x" * (3 * 2**20) + b'"', ""), (b"[" + b"1," * 2**20 + b"1]", [])])
def test_a_large_document_that_is_not_an_object_comes_back_empty_of_its_kind(tmp_path, document, empty):
    path = tmp_path / "config.json"
    path.write_bytes(document)
    assert read_on_a_thread(path) == empty  # every reader refuses a document that is not an object
