"""A measured fuzz run: hostile sessions, lessons, checkpoint folders and command lines against the full app.

    python tools/fuzz_run.py [--seed N] [--minutes M | --cases N] [--kinds session,lesson,checkpoint,cli]

The window is the real MainWindow with every panel, on the offscreen platform. Sessions go through
File > Open session's code path (MainWindow.open_session), lessons through the lesson loader
(LessonController.open_lesson, then a few steps, Reveal and presentation view), checkpoint folders
through File > Open model folder (MainWindow.open_model, on the worker). Command lines run in a child
process that stays up between cases (torch is imported once) and is replaced when a case outlasts
its time. After each case the run waits until the worker has been idle for a moment, so the
results of the case are drawn inside the case.

It measures what a user would meet:
- tracebacks: uncaught exceptions (sys.excepthook, threading.excepthook), errors logged with a
  traceback (a job that failed unexpectedly, a panel that could not restore its settings), and
  command lines that print a traceback, "unexpected error", more than one line of error, or exit
  with neither 0 nor 2;
- GUI-thread stalls: a 20 ms QTimer heartbeat on the GUI thread; a stall is the longest gap between
  two ticks while a case runs, blamed on that case;
- memory growth: VmHWM (reset before each case through /proc/self/clear_refs) above VmRSS at the
  start of the run, for the window's process and for the command-line child.
The summary table lists cases per kind with their tracebacks, hangs and longest stall (and its case),
then the longest stall and the peak growth with the cases that caused them; a stall over the 100 ms the
window aims at is marked and its case named; the exit status is 1 when a bound (1 s, 1 GB) is broken or a traceback found.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.fuzz_inputs import (
    RICH_TEXT,
    damage_safetensors,
    hostile_value,
    mutate,
    odd_name,
    write_whole_file,
)

KINDS = ("session", "lesson", "checkpoint", "cli")
STALL_BOUND_S = 1.0  # a run fails past this
STALL_GOAL_S = 0.1  # what the window aims at: a stall past it is named in the report
GROWTH_BOUND_BYTES = 2**30
HEARTBEAT_MS = 20
SETTLED_S = 0.3  # the worker idle this long: the case's results are drawn
CASE_TIMEOUT_S = 60.0  # a case whose jobs outlast this is a hang
CLI_CASE_TIMEOUT_S = 40.0
CHEAP_DEFAULTS = {"train": ["--steps", "2"], "pitfalls": ["--size", "ci", "--steps", "2"]}


# ---- memory -------------------------------------------------------------------------------------


def _status_bytes(field_name: str, pid: int | str = "self") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak(pid: int | str = "self") -> None:
    """Make VmHWM start again from the current VmRSS (Linux: write 5 to clear_refs)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def rss(pid: int | str = "self") -> int:
    return _status_bytes("VmRSS", pid)


def peak_rss(pid: int | str = "self") -> int:
    return _status_bytes("VmHWM", pid)


# ---- the report ---------------------------------------------------------------------------------


@dataclass
class Finding:
    kind: str
    case: str
    what: str


@dataclass
class Report:
    seed: int
    cases: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    longest_stall_s: float = 0.0
    stall_cpu_s: float = 0.0  # the GUI thread's CPU time within that stall
    stall_process_cpu_s: float = 0.0  # the whole process's (the worker's and torch's threads too)
    stall_case: str = ""
    stall_by_kind: dict[str, tuple[float, str]] = field(default_factory=dict)  # kind -> (longest stall, its case)
    peak_growth_bytes: int = 0
    growth_case: str = ""  # the case whose own rise (over the memory it started with) was largest
    largest_rise_bytes: int = 0
    cli_peak_growth_bytes: int = 0
    cli_growth_case: str = ""
    final_growth_bytes: int = 0
    seconds: float = 0.0
    slow_cli_cases: list[str] = field(default_factory=list)

    @property
    def tracebacks(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "traceback"]

    @property
    def hangs(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "hang"]

    @property
    def passed(self) -> bool:
        return (not self.findings and self.longest_stall_s <= STALL_BOUND_S
                and max(self.peak_growth_bytes, self.cli_peak_growth_bytes) <= GROWTH_BOUND_BYTES)

    def table(self) -> str:
        mb = 2**20
        lines = [f"fuzz run, seed {self.seed}: {sum(self.cases.values())} cases in {self.seconds:.0f} s", ""]
        lines.append(f"{'kind':<12}{'cases':>7}{'tracebacks':>12}{'hangs':>7}{'stall ms':>10}  longest stall's case")
        for kind in KINDS:
            if kind in self.cases:
                tracebacks = sum(1 for f in self.tracebacks if f.case.startswith(kind))
                hangs = sum(1 for f in self.hangs if f.case.startswith(kind))
                stall, case = self.stall_by_kind.get(kind, (None, ""))
                stall_text = "-" if stall is None else f"{stall * 1000:.0f}" + ("!" if stall > STALL_GOAL_S else "")
                lines.append(f"{kind:<12}{self.cases[kind]:>7}{tracebacks:>12}{hangs:>7}{stall_text:>10}  {case}")
        lines.append("")
        lines.append(f"longest GUI-thread stall  {self.longest_stall_s * 1000:8.0f} ms  (bound {STALL_BOUND_S * 1000:.0f} ms)  "
                     f"{self.stall_case}")
        if self.longest_stall_s > STALL_GOAL_S:
            over = [case for stall, case in self.stall_by_kind.values() if stall > STALL_GOAL_S]
            lines.append(f"  over the {STALL_GOAL_S * 1000:.0f} ms goal (! above): " + "; ".join(over))
        lines.append(f"  GUI thread's CPU in it  {self.stall_cpu_s * 1000:8.0f} ms  (the process's {self.stall_process_cpu_s * 1000:.0f} ms; "
                     f"load average {_load_average()})")
        lines.append(f"peak RSS growth, window   {self.peak_growth_bytes / mb:8.0f} MB  (bound {GROWTH_BOUND_BYTES / mb:.0f} MB)  "
                     f"{self.growth_case}")
        lines.append(f"peak RSS growth, CLI      {self.cli_peak_growth_bytes / mb:8.0f} MB  (bound {GROWTH_BOUND_BYTES / mb:.0f} MB)  "
                     f"{self.cli_growth_case}")
        lines.append(f"RSS growth at the end     {self.final_growth_bytes / mb:8.0f} MB")
        for case in self.slow_cli_cases[:10]:
            lines.append(f"slow command line (over {CLI_CASE_TIMEOUT_S:.0f} s, not a GUI stall): {case}")
        for finding in self.findings[:40]:
            lines.append(f"{finding.kind}: {finding.case}: {finding.what[:300]}")
        lines.append("")
        lines.append("PASS" if self.passed else "FAIL")
        return "\n".join(lines)


# ---- tracebacks in the window's process ---------------------------------------------------------


class TracebackCatcher(logging.Handler):
    """Collects uncaught exceptions and log records that carry a traceback or report a failure."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.caught: list[str] = []
        self._hooks = (sys.excepthook, threading.excepthook)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info or record.levelno >= logging.ERROR or "Traceback" in text:
            detail = self.format(record) if record.exc_info else text
            self.caught.append(f"{record.name}: {detail.strip().splitlines()[-1][:300]} (logged: {text.splitlines()[0][:120]})")

    def install(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        logging.getLogger("transformer_explorer").addHandler(self)
        # Qt's own warnings are no traceback; the offscreen platform's notice about dock sizes is noise.
        self._qt_handler = qInstallMessageHandler(lambda mode, context, message: None)
        sys.excepthook = lambda kind, value, tb: self.caught.append(f"uncaught {kind.__name__}: {value}")
        threading.excepthook = lambda args: self.caught.append(f"uncaught in a thread {args.exc_type.__name__}: {args.exc_value}")

    def uninstall(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        logging.getLogger("transformer_explorer").removeHandler(self)
        qInstallMessageHandler(self._qt_handler)
        sys.excepthook, threading.excepthook = self._hooks

    def take(self) -> list[str]:
        caught, self.caught = self.caught, []
        return caught


# ---- the command line, in a child process -------------------------------------------------------


def cli_worker() -> int:
    """The child: one JSON argv per line on stdin, one JSON outcome per line on stdout."""
    from core.cli import main as cli_main

    replies = sys.stdout
    for line in sys.stdin:
        argv = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        reset_peak()
        before = rss()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main(argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
            except BaseException as error:  # noqa: BLE001 - the run reports it as a traceback
                import traceback

                code = -1
                err.write(traceback.format_exc() + f"\n{type(error).__name__}")
        text = err.getvalue()
        text = text if len(text) <= 6000 else f"{text[:3000]}\n[...]\n{text[-3000:]}"
        reply = {"code": code, "err": text, "seconds": time.perf_counter() - started,
                 "growth": peak_rss() - before}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


class CliChild:
    """The child process that runs command lines; replaced when one outlasts its time."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = {**os.environ, "HOME": str(self.home), "XDG_CACHE_HOME": str(self.home / "cache"), "HF_HOME": str(self.home / "hf"),
               "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--cli-worker"], cwd=str(self.home),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        env=env)

    def run(self, argv: list[str], timeout: float) -> dict[str, Any] | None:
        """The outcome of one command line, or None when it outlasted `timeout` (the child is then replaced)."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(argv) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return None
        return json.loads(line)

    def baseline(self) -> int:
        return rss(self.process.pid) if self.process else 0

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
            self.process = None


# ---- making cases -------------------------------------------------------------------------------


class CaseMaker:
    """Hostile inputs of each kind, from valid ones the app itself wrote or ships."""

    def __init__(self, rng: random.Random, root: Path, window) -> None:
        from core.lessons import bundled_lesson_paths

        self.rng = rng
        self.root = root
        self.count = 0
        self.session = window.current_session().to_json()
        self.panel_titles = [panel.title for panel in window.panels]
        self.panel_settings = {panel.title: panel.settings() for panel in window.panels}
        self.lessons = [json.loads(path.read_text(encoding="utf-8")) for path in bundled_lesson_paths()]
        self.checkpoints = self._base_checkpoints()
        self.cli_files = self._cli_files()

    def _new_folder(self) -> Path:
        self.count += 1
        folder = self.root / f"case-{self.count:05d}"
        folder.mkdir()
        return folder

    # sessions
    def session_case(self) -> tuple[str, Path]:
        from gui.session import MAX_SESSION_BYTES

        document = json.loads(json.dumps(self.session))
        document["panels"] = json.loads(json.dumps(self.panel_settings))
        label, rng = "", self.rng
        if rng.random() < 0.85:
            document, label = mutate(document, rng, ["panels", "tokens", "config", "text", "seed", "device"])
        path = self._new_folder() / odd_name(rng, "session.json")
        kind = write_whole_file(path, document, rng, MAX_SESSION_BYTES)
        return f"session [{kind}] {label}".strip(), path

    # lessons
    def lesson_case(self) -> tuple[str, Path]:
        from core.lessons import MAX_FILE_BYTES

        rng = self.rng
        document, label = mutate(rng.choice(self.lessons), rng, ["steps", "state", "panel_settings", "focus", "cover", "reveal"])
        if rng.random() < 0.2:  # every step's state and settings hostile at once
            for step in document.get("steps", []) if isinstance(document, dict) and isinstance(document.get("steps"), list) else []:
                if isinstance(step, dict):
                    step["panel"] = rng.choice(self.panel_titles)
                    step["panel_settings"] = {key: hostile_value(rng) for key in self.panel_settings.get(step["panel"], {})}
            label += "; hostile panel_settings in every step"
        path = self._new_folder() / odd_name(rng, "lesson.json")
        kind = write_whole_file(path, document, rng, MAX_FILE_BYTES)
        return f"lesson [{kind}] {label}".strip(), path

    # checkpoint folders
    def _base_checkpoints(self) -> dict[str, Path]:
        from core.checkpoints import save_checkpoint
        from core.hf_export import save_hf_folder
        from core.model import Transformer
        from core.presets import get_preset
        from core.tokenizers import CharTokenizer

        tokenizer = CharTokenizer.from_text("To be, or not to be: that is the question.\n")
        config = get_preset("tiny-gpt").replace(name=RICH_TEXT, vocab_size=tokenizer.vocab_size, d_model=32, n_heads=2,
                                                n_layers=1, d_ff=64, context_length=64)
        ours = save_checkpoint(Transformer.from_seed(config, seed=1), self.root / "base-ours", tokenizer=tokenizer,
                               metadata={"val_loss_nats_per_char": 2.5})
        hf_config = get_preset("tiny-llama").replace(vocab_size=64, d_model=32, n_heads=2, n_kv_heads=1, n_layers=1, d_ff=64,
                                                     context_length=64)
        hf = save_hf_folder(Transformer.from_seed(hf_config, seed=2), self.root / "base-hf")
        return {"ours": Path(ours), "hf": Path(hf)}

    def checkpoint_case(self) -> tuple[str, Path]:
        from core.checkpoints import MAX_JSON_FILE_BYTES

        rng = self.rng
        base = rng.choice(sorted(self.checkpoints))
        folder = self._new_folder() / "model"
        shutil.copytree(self.checkpoints[base], folder)
        damages = []
        for _ in range(rng.randint(1, 2)):
            if folder.is_symlink() or not folder.is_dir():
                break  # the folder itself was damaged: nothing inside is left to damage
            files = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink() and p.suffix == ".json")
            target = rng.choice([*files, "model.safetensors", "model.safetensors", "the folder"])
            if target == "model.safetensors" and (folder / target).is_file() and not (folder / target).is_symlink():
                damages.append(damage_safetensors(folder / target, rng))
            elif target == "the folder":
                damages.append(self._damage_folder(folder))
            elif target in files:
                try:
                    document = json.loads((folder / target).read_bytes())
                except (ValueError, OSError, RecursionError):
                    document = {}  # damaged already: a new document in its place
                document, label = mutate(document, rng, ["model_type", "format_version", "config", "pre_tokenizer"])
                if target == "tokenizer.json" and rng.random() < 0.3:
                    document = self._backtracking_tokenizer()
                    label = "a regex that backtracks"
                kind = write_whole_file(folder / target, document, rng, MAX_JSON_FILE_BYTES)
                damages.append(f"{target} [{kind}] {label}")
        return f"checkpoint {base}: {' | '.join(damages)}", folder

    def _damage_folder(self, folder: Path) -> str:
        rng = self.rng
        kind = rng.choice(("a file, not a folder", "a symlink loop", "an empty folder", "a FIFO", "nested shards index"))
        if kind == "a file, not a folder":
            shutil.rmtree(folder)
            folder.write_text("{}", encoding="utf-8")
        elif kind == "a symlink loop":
            shutil.rmtree(folder)
            folder.symlink_to(folder.name)
        elif kind == "an empty folder":
            shutil.rmtree(folder)
            folder.mkdir()
        elif kind == "a FIFO":
            shutil.rmtree(folder)
            os.mkfifo(folder)
        else:
            index = {"weight_map": {f"w{i}": rng.choice(["../../etc/passwd", "/dev/zero", "model.safetensors", "", ".", "..",
                                                           "x" * 300, f"shard-{i}.safetensors"]) for i in range(50)}}
            (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
        return kind

    @staticmethod
    def _backtracking_tokenizer() -> dict:
        vocab = {**{c: i for i, c in enumerate("ab !")}, "[UNK]": 4}
        return {"version": "1.0", "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
                "pre_tokenizer": {"type": "Split", "pattern": {"Regex": r"(\w+\s?)*$"}, "behavior": "Isolated", "invert": False}}

    # the command line
    def _cli_files(self) -> dict[str, list[str]]:
        folder = self.root / "cli"
        folder.mkdir()
        (folder / "garbage.json").write_text("{ not json", encoding="utf-8")
        (folder / "config.json").write_text(json.dumps({"d_model": 32, "n_heads": 2, "n_layers": 1, "vocab_size": 65,
                                                        "context_length": 32, "d_ff": 64, "name": RICH_TEXT}), encoding="utf-8")
        (folder / "corpus.txt").write_text("to be or not to be, that is the question\n" * 30, encoding="utf-8")
        (folder / "binary.bin").write_bytes(bytes(range(256)) * 40)
        os.mkfifo(folder / "fifo")
        (folder / "zero").symlink_to("/dev/zero")
        with (folder / "sparse").open("wb") as handle:
            handle.truncate(10 * 2**30)
        (folder / "a folder").mkdir()
        damaged = self.checkpoint_case()[1]
        files = [str(folder / name) for name in ("garbage.json", "binary.bin", "fifo", "zero", "sparse", "a folder")]
        files += [str(folder / "missing" / "file"), "", "-", "\x00", "x" * 5000]
        return {
            "config": [str(folder / "config.json"), *files],
            "checkpoint": ["tiny-gpt", str(self.checkpoints["ours"]), str(self.checkpoints["hf"]), str(damaged), *files],
            "text_file": [str(folder / "corpus.txt"), *files],
            "corpus": [str(folder / "corpus.txt"), *files],
            "out": [str(folder / "out-new"), str(self.checkpoints["ours"]), str(folder / "out-file.npy"), *files],
        }

    def cli_case(self, subcommands: dict[str, argparse.ArgumentParser]) -> tuple[str, list[str]]:
        rng = self.rng
        command = rng.choice(sorted(subcommands))
        options = [a for a in subcommands[command]._actions if a.option_strings and "--help" not in a.option_strings]
        # Valid values are drawn cheap (near each bound's low end); a run's length is the one default that is not.
        argv = [command, *CHEAP_DEFAULTS.get(command, [])]
        chosen = [a for a in options if a.required] + rng.sample(options, rng.randint(0, min(4, len(options))))
        for option in chosen:
            argv.append(rng.choice(option.option_strings))
            if option.nargs == 0:
                continue
            if rng.random() < 0.05:
                continue  # a flag without its value
            argv.append(self._cli_value(command, option))
        for action in subcommands[command]._actions:
            if not action.option_strings and action.dest not in ("help",) and action.nargs != 0:
                argv.append(rng.choice(["gpt2", "", RICH_TEXT, "../../x", "a" * 5000]))  # positionals
        if rng.random() < 0.1:
            argv.insert(rng.randint(1, len(argv)), rng.choice(["--no-such-flag", "", "--", "\x00", RICH_TEXT]))
        return "cli " + " ".join(a if len(a) < 40 else a[:37] + "..." for a in argv), argv

    def _cli_value(self, command: str, option: argparse.Action) -> str:
        rng = self.rng
        bounds = getattr(option.type, "bounds", None)
        junk = ["", "x", "-1", "0", "nan", "inf", "1e400", "9" * 5000, " 1", "0x10", "١", RICH_TEXT, "a" * 100_000]
        if option.choices:
            return rng.choice([*map(str, option.choices), *junk[:3]])
        if option.dest in self.cli_files:
            return rng.choice(self.cli_files[option.dest])
        if bounds is not None:
            low, high = bounds
            if isinstance(low, int):
                cheap = [str(low + step) for step in range(4) if low + step <= high]
                edges = [str(low - 1), str(high + 1), str(10**40), str(-(10**40))]
            else:
                cheap = [repr(low), repr(min(high, low + 1.0)), repr((low + high) / 2) if high - low < 10 else repr(low + 0.5)]
                edges = [repr(low - 1e-3), repr(high * 2 + 1), "nan", "-inf"]
            return rng.choice(cheap + cheap + edges + junk)
        if option.dest == "preset" or option.dest == "compare":
            cheap = ["tiny-gpt", "tiny-llama", "textbook-block", "tiny-moe", "nope", ""]
            big = ["gpt2-xl", "llama3-8b", "mixtral-8x7b"] if command in ("params", "shapes", "budget", "presets") else []
            return rng.choice(cheap + big + junk[:2])
        if option.dest == "device":
            return rng.choice(["cpu", "cuda", "cuda:7", "mps", "banana", "", "CPU", "auto"])
        if option.dest == "set":
            field_name = rng.choice(["d_model", "n_heads", "n_layers", "vocab_size", "context_length", "norm", "bias", "name", "x"])
            return f"{field_name}={rng.choice(['64', '0', '-1', '10' * 20, 'x', '', RICH_TEXT, '1e9', '1000000'])}"
        return rng.choice(junk + ["0,1,2", "1=a", "2=5", "To be, or not", "abc", "1,2,3", "0=\\n", "64,0,1"])


# ---- the run ------------------------------------------------------------------------------------


class FuzzRun:
    """Drive the window through cases of the chosen kinds and measure stalls, growth and tracebacks."""

    def __init__(self, seed: int, kinds: tuple[str, ...] = KINDS, workdir: Path | None = None, window=None,
                 keep: bool = False) -> None:
        self.seed = seed
        self.keep = keep  # keep the case files, their paths in the labels, to replay a finding
        self.kinds = kinds
        self.rng = random.Random(seed)
        self.report = Report(seed)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="fuzz-run-"))
        self.window = window
        self.catcher = TracebackCatcher()
        self._last_tick = self._last_tick_cpu = self._last_tick_process = 0.0
        self._measuring = False
        self._case = ""
        self.cli: CliChild | None = None

    # the heartbeat
    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        gap = now - self._last_tick
        if self._measuring:
            kind = self._case.split()[0] if self._case else ""
            if gap > self.report.stall_by_kind.get(kind, (0.0, ""))[0]:
                self.report.stall_by_kind[kind] = (gap, self._case)
        if self._measuring and gap > self.report.longest_stall_s:
            self.report.longest_stall_s, self.report.stall_case = gap, self._case
            # The GUI thread's own CPU time in the gap: far less than the gap is a machine busy with others.
            self.report.stall_cpu_s = cpu - self._last_tick_cpu
            self.report.stall_process_cpu_s = time.process_time() - self._last_tick_process
        self._last_tick, self._last_tick_cpu, self._last_tick_process = now, cpu, time.process_time()

    def _settle(self, timeout: float = CASE_TIMEOUT_S) -> bool:
        """Run the event loop until the worker and the file reader have been idle SETTLED_S; False when still busy at `timeout`."""
        from PySide6.QtCore import QEventLoop, QTimer

        loop = QEventLoop()
        started = idle_since = time.perf_counter()
        finished = {"settled": False}

        def poll() -> None:
            nonlocal idle_since
            now = time.perf_counter()
            if self.window.compute.busy or self.window.file_reader.busy():  # sessions and lessons are read off the GUI thread
                idle_since = now
            elif now - idle_since >= SETTLED_S:
                finished["settled"] = True
                loop.quit()
                return
            if now - started > timeout:
                loop.quit()

        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(poll)
        timer.start()
        loop.exec()
        timer.stop()
        return finished["settled"]

    def _start_window(self) -> None:
        from PySide6.QtCore import QSettings

        from gui.main_window import MainWindow

        settings = QSettings(str(self.workdir / "prefs.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings=settings)
        window.remember_preferences = False
        window.resize(1400, 900)
        window.show()
        loaded = []
        window.model_loaded.connect(lambda: loaded.append(True))
        window.start_loading()
        deadline = time.monotonic() + 180
        from PySide6.QtWidgets import QApplication

        while not loaded and time.monotonic() < deadline:
            QApplication.processEvents()
            time.sleep(0.01)
        if not loaded:
            raise RuntimeError("the window did not load torch and its model in 180 s")
        self.window = window

    def _close_dialogs(self) -> None:
        from PySide6.QtWidgets import QApplication, QDialog, QMessageBox

        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, (QMessageBox, QDialog)) and widget.isVisible():
                widget.done(0)

    def _gui_case(self, label: str, action: Callable[[], Any]) -> None:
        kind = label.split()[0]
        self.report.cases[kind] += 1
        self._close_dialogs()
        self.catcher.take()
        reset_peak()
        start_rss = rss()
        self._case = label
        self._last_tick, self._last_tick_cpu, self._last_tick_process = time.perf_counter(), time.thread_time(), time.process_time()
        self._measuring = True
        try:
            action()
        except Exception as error:  # noqa: BLE001 - what a user's click would have met
            self.catcher.caught.append(f"raised {type(error).__name__}: {error}")
        settled = self._settle()
        self._measuring = False
        peak = peak_rss()
        # Memory a case keeps stays in every later case's peak: the case is named by its own rise.
        self.report.peak_growth_bytes = max(self.report.peak_growth_bytes, peak - self._baseline)
        if peak - start_rss > self.report.largest_rise_bytes:
            self.report.largest_rise_bytes, self.report.growth_case = peak - start_rss, label
        if not settled:
            self.report.findings.append(Finding("hang", label, f"the worker was still busy after {CASE_TIMEOUT_S:.0f} s "
                                                f"({self.window.compute.running_name})"))
            self.window.compute.cancel_all() if hasattr(self.window.compute, "cancel_all") else None
            self._settle(timeout=300)
        for caught in self.catcher.take():
            self.report.findings.append(Finding("traceback", label, caught))

    def _session(self) -> None:
        label, path = self.maker.session_case()
        self._gui_case(f"{label} ({path})" if self.keep else label, lambda: self.window.open_session(path))

    def _lesson(self) -> None:
        label, path = self.maker.lesson_case()
        controller = self.window.lessons
        rng = self.rng

        def open_and_walk() -> None:
            controller.open_lesson(path)
            self._settle()  # read off the GUI thread, then started (or refused) here
            if controller.lesson is None or controller.lesson.source != str(Path(path)):
                return
            for _ in range(rng.randint(0, 3)):
                self._settle()
                choice = rng.choice(("next", "previous", "go", "reveal", "presentation"))
                if choice == "next":
                    controller.next_step()
                elif choice == "previous":
                    controller.previous_step()
                elif choice == "go":
                    controller.go_to(rng.randrange(len(controller.lesson.steps)))
                elif choice == "reveal":
                    controller.dock.reveal()
                else:
                    controller.set_presentation(not controller.presentation)
            controller.set_presentation(False)

        self._gui_case(f"{label} ({path})" if self.keep else label, open_and_walk)

    def _checkpoint(self) -> None:
        label, path = self.maker.checkpoint_case()
        self._gui_case(f"{label} ({path})" if self.keep else label, lambda: self.window.open_model(path))

    def _cli(self) -> None:
        label, argv = self.maker.cli_case(self._subcommands)
        self.report.cases["cli"] += 1
        outcome = self.cli.run(argv, CLI_CASE_TIMEOUT_S)
        if outcome is None:
            self.report.slow_cli_cases.append(label)
            return
        err, code = outcome["err"], outcome["code"]
        lines = [line for line in err.splitlines() if line.strip()]
        problem = ""
        if "Traceback" in err or code == -1:
            problem = "printed a traceback: " + (lines[-1] if lines else "")
        elif code not in (0, 2):
            problem = f"exit status {code}: " + " / ".join(lines[-2:])
        elif code == 2 and sum("error" in line for line in lines) != 1:
            # Notices may come first ("CUDA is not available ...; using the CPU"); the error is one line.
            problem = f"{len(lines)} lines of error: " + " / ".join(line[:100] for line in lines[:3])
        elif "unexpected error" in err:
            problem = err.strip()[:300]
        if problem:
            self.report.findings.append(Finding("traceback", label, problem))
        if outcome["growth"] > self.report.cli_peak_growth_bytes:
            self.report.cli_peak_growth_bytes, self.report.cli_growth_case = outcome["growth"], label

    def run(self, minutes: float | None = None, cases: int | None = None) -> Report:
        """Run until `minutes` have passed or `cases` cases have run, whichever is first."""
        from PySide6.QtCore import Qt, QTimer
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication(["transformer-explorer", "-platform", "offscreen"])
        started = time.perf_counter()
        self.catcher.install()
        owns_window = self.window is None
        heartbeat = QTimer()
        try:
            if owns_window:
                self._start_window()
            self._settle()
            self.maker = CaseMaker(self.rng, self.workdir, self.window)
            if "cli" in self.kinds:
                from core.cli import build_parser

                action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
                # `download` reaches the network; its refusals are tested against a local server elsewhere.
                self._subcommands = {name: parser for name, parser in action.choices.items() if name != "download"}
                self.cli = CliChild(self.workdir / "cli-home")
                self.cli.home.mkdir()
            self.catcher.take()  # what loading logged is not a case's finding
            heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
            heartbeat.setInterval(HEARTBEAT_MS)
            heartbeat.timeout.connect(self._tick)
            heartbeat.start()
            self._baseline = rss()
            deadline = started + minutes * 60 if minutes else float("inf")
            limit = cases if cases is not None else float("inf")
            steps = {"session": self._session, "lesson": self._lesson, "checkpoint": self._checkpoint, "cli": self._cli}
            while sum(self.report.cases.values()) < limit and time.perf_counter() < deadline:
                steps[self.rng.choice(self.kinds)]()
            self._close_dialogs()
            self._settle()
            self.report.final_growth_bytes = rss() - self._baseline
        finally:
            heartbeat.stop()
            self.catcher.uninstall()
            if self.cli is not None:
                self.cli.stop()
            if owns_window and self.window is not None:
                self.window.close()
                app.processEvents()
            if self._own_workdir and not self.keep:
                _remove_tree(self.workdir)
        self.report.seconds = time.perf_counter() - started
        return self.report


def _load_average() -> str:
    try:
        return ", ".join(f"{value:.1f}" for value in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


def _remove_tree(folder: Path) -> None:
    """Remove the run's files, whatever they became (FIFOs, symlinks, folders made unreadable)."""
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True) if folder.exists() else []:
        with contextlib.suppress(OSError):
            if not path.is_symlink():
                path.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from core.cli.bounds import real_number, seed, whole_number

    parser.add_argument("--seed", type=seed(), default=0, help="the run's seed (the same seed draws the same cases)")
    parser.add_argument("--minutes", type=real_number(0.01, 1440.0), default=10.0, help="how long to run (default 10)")
    parser.add_argument("--cases", type=whole_number(1, 10_000_000), default=None, help="stop after this many cases")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated kinds of case (default {','.join(KINDS)})")
    parser.add_argument("--keep", action="store_true", help="keep the case files and name them in the report, to replay findings")
    parser.add_argument("--cli-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cli_worker:
        return cli_worker()
    kinds = tuple(kind.strip() for kind in args.kinds.split(",") if kind.strip())
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        parser.error(f"--kinds takes {', '.join(KINDS)}, not {', '.join(unknown) or 'nothing'}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    report = FuzzRun(args.seed, kinds, keep=args.keep).run(minutes=args.minutes, cases=args.cases)
    print(report.table())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
