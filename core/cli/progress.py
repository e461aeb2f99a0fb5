"""Progress of a long command on stderr, one way for every command.

On a terminal: a tqdm bar redrawn in place, fitted to the terminal's width (also after a resize), with
the rate and an estimate of the time left. On a file or pipe: a plain line now and then (at most one
every `LINE_INTERVAL_S` seconds, the first one interval after the start, plus the last), so that a log
gets no carriage returns and a command that ends at once, or fails on its input, prints none but its own. `--quiet` makes
none of it. The command's own result (its final line, its `--json`) goes to stdout and never changes.

The interval of plain lines is read from the environment variable TRANSFORMER_EXPLORER_PROGRESS_S
(seconds, 0 = a line at every update), so a log can be made denser or sparser.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Self, TextIO

from tqdm import tqdm

LINE_INTERVAL_S = 10.0
INTERVAL_VARIABLE = "TRANSFORMER_EXPLORER_PROGRESS_S"


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def line_interval_s() -> float:
    """Seconds between plain progress lines: the environment's choice when it is a number of 0 or more."""
    try:
        value = float(os.environ.get(INTERVAL_VARIABLE, ""))
    except ValueError:
        return LINE_INTERVAL_S
    return value if math.isfinite(value) and value >= 0 else LINE_INTERVAL_S


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """Progress towards `total` units of work (`unit`: "tok", "step", "run"), labelled `label`.

    update(done, note) moves it to `done` units; `note` (e.g. "loss 2.1") is shown beside the count.
    `rate` and `eta` may be given by the caller (training knows its own tokens per second); otherwise
    they are measured here from the wall clock since the start.
    """

    def __init__(self, label: str, total: int, unit: str, stream: TextIO | None = None, quiet: bool = False,
                 interval_s: float | None = None) -> None:
        self.label = label
        self.total = max(1, int(total))
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.interval_s = line_interval_s() if interval_s is None else interval_s
        self.started = time.monotonic()
        self.last_line = self.started
        self.done = 0
        self.bar = None
        if not quiet and _is_terminal(self.stream):
            self.bar = tqdm(total=self.total, file=self.stream, dynamic_ncols=True, unit=f" {unit}", leave=True,
                            desc=label, unit_scale=unit == "tok",
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]")

    def update(self, done: int, note: str = "", rate: float | None = None, eta_s: float | None = None) -> None:
        if self.quiet:
            return
        done = min(int(done), self.total)
        elapsed = time.monotonic() - self.started
        if rate is None:
            rate = done / elapsed if elapsed > 0 else 0.0
        if eta_s is None:
            eta_s = (self.total - done) / rate if rate > 0 else math.inf
        rate_text = "" if self.unit == "stage" else f"{rate:,.0f} {self.unit}/s"  # stages differ too much to rate
        if self.bar is not None:
            self.bar.set_postfix_str("  ".join(part for part in (note, rate_text) if part), refresh=False)
            self.bar.update(done - self.bar.n)
            self.done = done
            if done >= self.total:
                self.close()
            return
        self.done = done
        now = time.monotonic()
        if done < self.total and now - self.last_line < self.interval_s:
            return
        self.last_line = now
        eta = duration(eta_s) if math.isfinite(eta_s) else "?"
        percent = 100.0 * done / self.total
        parts = [f"{self.label}: {done:,}/{self.total:,} {self.unit} ({percent:.0f}%)", note, rate_text, f"ETA {eta}"]
        self.stream.write("  ".join(part for part in parts if part) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Leave the terminal on a fresh line (also after a stopped or failed run)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProgressBar:
    """On a terminal, a tqdm bar redrawn in place and fitted to the terminal's width (also after a resize);
    on a file or pipe, a plain line every 5%, so that a log gets no carriage returns."""

    def __init__(self, total_steps: int, stream: TextIO) -> None:
        self.total = total_steps
        self.stream = stream
        self.last_val: float | None = None
        self.every = max(1, total_steps // 20)
        self.bar = tqdm(total=total_steps, file=stream, dynamic_ncols=True, unit="step", leave=True,
                        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]") \
            if stream.isatty() else None

    def __call__(self, step: int, loss: float, tokens_per_s: float, eta_s: float, val_loss: float | None) -> None:
        if val_loss is not None:
            self.last_val = val_loss
        val = f"  val {self.last_val:.3f}" if self.last_val is not None else ""
        if self.bar is not None:
            self.bar.set_postfix_str(f"loss {loss:.3f}{val}  {tokens_per_s:,.0f} tok/s", refresh=False)
            self.bar.update(step - self.bar.n)
            if step == self.total:
                self.close()
            return
        if step % self.every and step != self.total and val_loss is None:
            return
        self.stream.write(f"step {step}/{self.total}  loss {loss:.3f}{val}  {tokens_per_s:,.0f} tok/s  "
                          f"ETA {duration(eta_s)}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


__all__ = ["INTERVAL_VARIABLE", "LINE_INTERVAL_S", "Progress", "ProgressBar", "add_quiet_argument", "duration", "line_interval_s"]
