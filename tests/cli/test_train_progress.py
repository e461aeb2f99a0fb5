"""train's progress: a tqdm bar that fits an 80-column terminal, and plain lines without carriage returns in a log."""

from __future__ import annotations

import io
import os
import re
import sys
import threading

import pytest

from core.cli.models import ProgressBar

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def drawn_lines(text: str) -> list[str]:
    return [ANSI.sub("", part) for part in re.split(r"[\r\n]", text) if ANSI.sub("", part).strip()]


def feed(bar: ProgressBar, total: int) -> None:
    for step in range(1, total + 1):
        bar(step, loss=12.3456, tokens_per_s=1_234_567.0, eta_s=98_765.0, val_loss=11.1111 if step % 7 == 0 else None)


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_on_an_80_column_terminal_every_redraw_fits():
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    received = bytearray()
    reader = threading.Thread(target=drain, args=(leader, received), daemon=True)
    reader.start()
    with os.fdopen(follower, "w", encoding="utf-8", closefd=True) as terminal:
        total = 123_456
        bar = ProgressBar(total, terminal)
        assert bar.bar is not None  # a real terminal gets the tqdm bar
        bar.bar.mininterval = 0  # draw every update, so that each one is checked
        feed(bar, 300)
        bar(total, loss=1.0, tokens_per_s=1_234_567.0, eta_s=0.0, val_loss=None)
    reader.join(timeout=30)
    os.close(leader)
    lines = drawn_lines(received.decode("utf-8", "replace"))
    assert len(lines) > 100, "the bar did not redraw on every update"
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert f"{total}/{total}" in lines[-1]


def drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal's other end was closed
            return
        if not chunk:
            return
        into.extend(chunk)


def test_in_a_log_a_plain_line_every_five_percent_and_no_carriage_return():
    log = io.StringIO()
    bar = ProgressBar(100, log)
    feed(bar, 100)
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    steps = [int(match) for match in re.findall(r"^step (\d+)/100 ", text, re.MULTILINE)]
    assert set(range(5, 101, 5)) <= set(steps)
    assert all(step % 5 == 0 or step % 7 == 0 for step in steps)  # plus one line per validation estimate
    assert "val 11.111" in text and "ETA" in text


def test_closing_early_ends_the_terminal_line():
    terminal = Terminal()
    bar = ProgressBar(1000, terminal)
    feed(bar, 10)
    bar.close()
    bar.close()
    assert terminal.getvalue().endswith("\n")
