"""Ctrl-C at any moment of a command, from the interpreter's first imports to the command's own work: one line on
stderr and exit 130, never a KeyboardInterrupt traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A command that runs for minutes: every signal below reaches it while it is still running.
LONG_COMMAND = ["generate", "--checkpoint", "tiny-gpt", "--text", "a", "--max-new", "10000", "--quiet"]
INTERRUPTED = "transformer-explorer: interrupted"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is sent to a console group on Windows")


def _interpreter_start() -> float:
    """Seconds this interpreter needs to reach a program's first line (its own start-up and site-packages): a
    Ctrl-C before then is the interpreter's, before any line of the app has run."""
    times = []
    for _ in range(3):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.monotonic() - start)
    return max(times)


def _torch_is_loading(pid: int) -> bool:
    """Whether the process has mapped torch's shared library: it is importing torch (or has)."""
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _interrupt(when) -> subprocess.CompletedProcess:
    process = subprocess.Popen([sys.executable, str(ROOT / "main.py"), *LONG_COMMAND], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        when(process)
        assert process.poll() is None, "the command ended before the signal"
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, "", err)


def _after(seconds: float):
    return lambda process: time.sleep(seconds)


def _during_torch_import(process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not _torch_is_loading(process.pid):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.001)


@pytest.fixture(scope="module")
def earliest() -> float:
    # About 0.05 s after the start; later where the interpreter alone takes longer (a loaded machine).
    return max(0.05, _interpreter_start() + 0.02)


@pytest.mark.slow
@pytest.mark.parametrize("delay", ["earliest", 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 6.0])
def test_ctrl_c_at_any_moment_prints_one_line_and_exits_130(earliest, delay):
    result = _interrupt(_after(earliest if delay == "earliest" else delay))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines() == [INTERRUPTED], result.stderr
    assert result.returncode == 130


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads which libraries a process has mapped")
def test_ctrl_c_while_torch_is_imported_prints_one_line_and_exits_130():
    result = _interrupt(_during_torch_import)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines() == [INTERRUPTED], result.stderr
    assert result.returncode == 130
