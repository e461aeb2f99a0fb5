"""A measured fuzz run: hostile sessions, lessons, checkpoint folders and command lines against the full app.

    python tools/fuzz_run.py [--seed N] [--minutes M | --cases N] [--kinds KIND,...|old|new] [--keep]

The window is the real MainWindow with every panel, on the offscreen platform. Sessions go through
File > Open session's code path (MainWindow.open_session), lessons through the lesson loader
(LessonController.open_lesson, then a few steps, Reveal and presentation view), checkpoint folders
through File > Open model folder (MainWindow.open_model, on the worker). Command lines run in a child
process that stays up between cases (torch is imported once) and is replaced when a case outlasts
its time. After each case the run waits until the worker has been idle for a moment, so the
results of the case are drawn inside the case.

The kinds `view-session`, `view-lesson` and `view-cli` aim at the Causal lab and Families views and the
commands that share their code (patch, attribute, induction, fill-mask, translate, route). A view case
opens a session or lesson whose state loads a model of some family (the one the view is made for, another
family's, or a preset that lacks what the view needs) with a hostile text and panel settings, brings the
panel to the front and turns to each sub-tab so that its view computes (only a view on screen does), then
waits for the worker and reads what the view ended with: a result for the inputs beside it, or a message;
now and then the student tries again (other settings, a button) or presses Esc while the view computes.
A view left "Computing...", stale, or with a result of other inputs once the worker is idle is a hang. A
lesson case also runs `check-lesson` on its file: a lesson it passes that the window refuses to open, or
one it refuses that the window walks through without saying why at any step (the step's problem, or its
view's refusal), is a disagreement. Unless --kinds says otherwise, half the cases are of these kinds.

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
what each of the new half's views ended with (results, refusals),
then the longest stall and the peak growth with the cases that caused them; a stall over the 100 ms the
window aims at is marked and its case named; the exit status is 1 when a bound (1 s, 1 GB) is broken or a traceback,
a hang or a disagreement found. Its last lines are a row for the figures table of docs/performance-fuzz.md (seed,
minutes, date, CPUs, load average, cases, tracebacks, hangs, longest stall).
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
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.fuzz_inputs import (
    NEW_HALF_TABS,
    RICH_TEXT,
    damage_safetensors,
    hostile_value,
    mutate,
    new_half_argv,
    new_half_settings,
    new_half_state,
    odd_name,
    within_file_bounds,
    within_lesson_bounds,
    write_whole_file,
)

OLD_KINDS = ("session", "lesson", "checkpoint", "cli")
NEW_KINDS = ("view-session", "view-lesson", "view-cli")  # aimed at the Causal lab and Families views and their commands
KINDS = OLD_KINDS + NEW_KINDS
KIND_GROUPS = {"old": OLD_KINDS, "new": NEW_KINDS, "all": KINDS}
STALL_BOUND_S = 1.0  # a run fails past this
STALL_GOAL_S = 0.1  # what the window aims at: a stall past it is named in the report
GROWTH_BOUND_BYTES = 2**30
HEARTBEAT_MS = 20
SETTLED_S = 0.3  # the worker idle this long: the case's results are drawn
CASE_TIMEOUT_S = 60.0  # a case whose jobs outlast this is a hang
CLI_CASE_TIMEOUT_S = 40.0
ESCAPE_SHARE = 0.1  # of the sub-tabs a view case turns to: Cancel computation (Esc) while the view computes
SCREENSHOT_SHARE = 0.1  # of the lesson cases check-lesson passes: also shot with --screenshot, in a process of its own
SCREENSHOT_TIMEOUT_S = 90.0  # the window's own wait for a lesson's results is 180 s; a refusal must end far sooner
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
    # kind -> (longest stall, its case, the GUI thread's own CPU in it: far less than the stall is a busy machine)
    stall_by_kind: dict[str, tuple[float, str, float]] = field(default_factory=dict)
    peak_growth_bytes: int = 0
    growth_case: str = ""  # the case whose own rise (over the memory it started with) was largest
    largest_rise_bytes: int = 0
    cli_peak_growth_bytes: int = 0
    cli_growth_case: str = ""
    final_growth_bytes: int = 0
    seconds: float = 0.0
    slow_cli_cases: list[str] = field(default_factory=list)
    # The new half's views: "panel/sub-tab" -> Counter of what each visit ended with ("result", "refusal", "error").
    view_outcomes: dict[str, Counter] = field(default_factory=dict)
    checked_then_refused: list[str] = field(default_factory=list)  # lessons check-lesson passed whose view refused
    screenshots: int = 0  # lessons also shot with --screenshot
    started_at: str = ""  # UTC, when the run began
    load_at_start: str = ""

    @property
    def tracebacks(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "traceback"]

    @property
    def hangs(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "hang"]

    @property
    def disagreements(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "disagreement"]

    @property
    def passed(self) -> bool:
        return (all(f.kind == "warning" for f in self.findings) and self.longest_stall_s <= STALL_BOUND_S
                and max(self.peak_growth_bytes, self.cli_peak_growth_bytes) <= GROWTH_BOUND_BYTES)

    def table(self) -> str:
        mb = 2**20
        lines = [f"fuzz run, seed {self.seed}: {sum(self.cases.values())} cases in {self.seconds:.0f} s", ""]
        lines.append(f"{'kind':<14}{'cases':>7}{'tracebacks':>12}{'hangs':>7}{'stall ms':>10}  longest stall's case")
        for kind in KINDS:
            if kind in self.cases:
                tracebacks = sum(1 for f in self.tracebacks if _kind_of(f.case) == kind)
                hangs = sum(1 for f in self.hangs if _kind_of(f.case) == kind)
                stall, case, _cpu = self.stall_by_kind.get(kind, (None, "", 0.0))
                stall_text = "-" if stall is None else f"{stall * 1000:.0f}" + ("!" if stall > STALL_GOAL_S else "")
                lines.append(f"{kind:<14}{self.cases[kind]:>7}{tracebacks:>12}{hangs:>7}{stall_text:>10}  {case[:200]}")
        if self.view_outcomes:
            lines.append("")
            lines.append(f"{'view':<34}{'visits':>7}{'results':>9}{'refusals':>10}{'errors':>8}")
            for name in sorted(self.view_outcomes):
                counts = self.view_outcomes[name]
                lines.append(f"{name:<34}{sum(counts.values()):>7}{counts['result']:>9}{counts['refusal']:>10}"
                             f"{counts['error']:>8}")
        if "view-lesson" in self.cases:
            lines.append(f"lessons check-lesson passed whose view then refused: {len(self.checked_then_refused)} "
                         f"(not a failure: a refusal is drawn); lessons also shot with --screenshot: "
                         f"{self.screenshots}")
            for case in self.checked_then_refused[:5]:
                lines.append(f"  {case[:300]}")
        lines.append("")
        lines.append(f"longest GUI-thread stall  {self.longest_stall_s * 1000:8.0f} ms  (bound {STALL_BOUND_S * 1000:.0f} ms)  "
                     f"{self.stall_case}")
        if self.longest_stall_s > STALL_GOAL_S:
            over = [f"{case} ({stall * 1000:.0f} ms, {cpu * 1000:.0f} ms of it the GUI thread's CPU)"
                    for stall, case, cpu in self.stall_by_kind.values() if stall > STALL_GOAL_S]
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
        lines.append("")
        lines.append("A row for the figures table of docs/performance-fuzz.md:")
        lines.append(FIGURES_HEADER)
        lines.append(self.figures_row())
        return "\n".join(lines)

    def figures_row(self) -> str:
        """The run as one Markdown row: seed, minutes, date, CPUs, load, cases, tracebacks, hangs, stalls."""
        new_half = sum(self.cases[kind] for kind in NEW_KINDS)
        # A lesson's label joins its steps with "|", which would split the Markdown row.
        over = sorted({f"{case[:100].replace('|', '/')} ({stall * 1000:.0f} ms, CPU {cpu * 1000:.0f} ms)"
                       for stall, case, cpu in self.stall_by_kind.values() if stall > STALL_GOAL_S})
        minutes = f"{self.seconds / 60:.1f}"
        return (f"| {self.seed} | {minutes} | {self.started_at} | {os.cpu_count()} | {self.load_at_start} / "
                f"{_load_average(short=True)} | {sum(self.cases.values())} ({new_half}) | {len(self.tracebacks)} | "
                f"{len(self.hangs)} | {len(self.disagreements)} | {self.longest_stall_s * 1000:.0f} ms | "
                f"{'; '.join(over) or 'none'} |")


FIGURES_HEADER = ("| seed | minutes | date (UTC) | CPUs | load average, start / end | cases (new half) | tracebacks "
                  "| hangs | disagreements | longest stall | cases over 100 ms |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|")


def _kind_of(case: str) -> str:
    return case.split()[0] if case else ""


def _differing_fields(shown: Any, current: Any) -> str:
    """" (fields that differ: tokens, answer)" for two inputs of one dataclass, else what each is."""
    import dataclasses

    if dataclasses.is_dataclass(shown) and type(shown) is type(current):
        names = [f.name for f in dataclasses.fields(shown) if getattr(shown, f.name) != getattr(current, f.name)]
        return f" (fields that differ: {', '.join(names)})"
    return f" (shown: {type(shown).__name__}, now: {type(current).__name__})"


def _brief(settings: dict[str, Any]) -> str:
    """Settings as a short label: each value's repr cut to 24 characters, with its length when cut."""
    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 24 else f"{text[:16]}...({len(text):,} chars)"

    return " ".join(f"{key}={short(value)}" for key, value in settings.items())


# ---- tracebacks in the window's process ---------------------------------------------------------


class TracebackCatcher(logging.Handler):
    """Collects uncaught exceptions and log records that carry a traceback or report a failure."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.caught: list[str] = []
        self.warned: list[str] = []  # Python warnings the app printed (to a user's terminal): listed, not failed
        self._hooks = (sys.excepthook, threading.excepthook)
        self._showwarning = warnings.showwarning

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
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: self.warned.append(
            f"{category.__name__} at {Path(filename).name}:{lineno}: {str(message)[:200]}")

    def uninstall(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        logging.getLogger("transformer_explorer").removeHandler(self)
        qInstallMessageHandler(self._qt_handler)
        sys.excepthook, threading.excepthook = self._hooks
        warnings.showwarning = self._showwarning

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

    # the Causal lab and Families views
    def view_session_case(self) -> tuple[str, Path, str, list[str]]:
        """(label, session file, panel, sub-tabs to visit): a valid session whose model, text and settings aim at a
        view."""
        from core.presets import get_preset

        rng = self.rng
        panel = rng.choice(sorted(NEW_HALF_TABS))
        tab = rng.choice(NEW_HALF_TABS[panel])
        state_label, state = new_half_state(rng, tab)
        document = json.loads(json.dumps(self.session))
        config = {**get_preset(state["preset"]).to_dict(), **state.get("config", {})}
        document.update(config=config, seed=state["seed"], text=state["text"], tokens=None)
        if "edit" in state:
            state_label = state_label.rsplit(", edit", 1)[0]  # a session has no edit: its text is what it is
        settings = new_half_settings(rng, panel, tab, len(state["text"]))
        document["panels"] = {panel: settings}
        if rng.random() < 0.2:
            document["selected_layer"], document["selected_head"] = rng.choice((0, 1, 3, 99)), rng.choice((0, 3, 4, 99))
        path = self._new_folder() / "session.json"
        path.write_text(json.dumps(document, ensure_ascii=True), encoding="utf-8")
        label = f"view-session {panel}/{tab} on {state_label}; {_brief(settings)}"
        return label, path, panel, self._tabs_to_visit(panel, tab)

    def _tabs_to_visit(self, panel: str, tab: str) -> list[str]:
        others = [other for other in NEW_HALF_TABS[panel] if other != tab]
        return [tab, *self.rng.sample(others, self.rng.randint(0, min(2, len(others))))]

    def view_lesson_case(self) -> tuple[str, Path, int]:
        """(label, lesson file, steps): steps that open the Causal lab or Families with hostile state and settings."""
        from core.lesson_parts import PANEL_PARTS, RESULT

        rng = self.rng
        panel = rng.choice(sorted(NEW_HALF_TABS))
        steps, labels = [], []
        for index in range(rng.randint(1, 4)):
            step_panel = panel if rng.random() < 0.85 else rng.choice(sorted(NEW_HALF_TABS))
            tab = rng.choice(NEW_HALF_TABS[step_panel])
            state_label, state = new_half_state(rng, tab, first=index == 0)
            settings = new_half_settings(rng, step_panel, tab, len(state.get("text", "")) or 20)
            if rng.random() < 0.8:  # what check-lesson lets through; the rest it must refuse
                settings = within_lesson_bounds(step_panel, settings)
            step: dict[str, Any] = {"title": f"Step {index + 1}", "text": f"The {tab} view on this text.",
                                    "panel": step_panel, "panel_settings": settings}
            if state:
                step["state"] = state
            results = [name for name, kind in PANEL_PARTS[step_panel].sub_tabs.get(tab, {}).items() if kind == RESULT]
            if results and rng.random() < 0.5:
                step["predict"] = "What will the view show?"
                step["reveal"] = f"It shows {{{{{rng.choice(results)}}}}}."
                if rng.random() < 0.3:
                    step["shows"] = [rng.choice(results)]
            if results and rng.random() < 0.3:
                step["focus"] = rng.choice(results)
            steps.append(step)
            labels.append(f"{step_panel}/{tab} on {state_label or 'the same state'}; {_brief(settings)}")
        document = {"title": "Hostile lesson", "description": "Aimed at the Causal lab and Families views.",
                    "steps": steps}
        path = self._new_folder() / "lesson.json"
        path.write_text(json.dumps(document, ensure_ascii=True), encoding="utf-8")
        return "view-lesson " + " | ".join(labels), path, len(steps)

    def view_cli_case(self) -> tuple[str, list[str]]:
        return new_half_argv(self.rng, (str(self.checkpoints["ours"]), str(self.checkpoints["hf"])))

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
                 keep: bool = False, replay: Path | None = None) -> None:
        self.seed = seed
        self.replaying = replay  # a file a run kept: run it alone
        # The student's own moves inside a case: other values or a button in a view, Reveal, closing the lesson (a
        # replay makes none, so that it does what the file says).
        self.tries_again = replay is None
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
            if gap > self.report.stall_by_kind.get(kind, (0.0, "", 0.0))[0]:
                self.report.stall_by_kind[kind] = (gap, self._case, cpu - self._last_tick_cpu)
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
            lessons = getattr(self.window, "lessons", None)
            # Sessions and lessons are read off the GUI thread; a lesson step waits for its model before its settings.
            if (self.window.compute.busy or self.window.file_reader.busy()
                    or getattr(lessons, "_waiting_for_model", False)):
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
        self._actions: list[str] = []  # what the case did, for a finding's replay by hand
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
        for warned in dict.fromkeys(self.catcher.warned):
            self.report.findings.append(Finding("warning", label, warned))
        self.catcher.warned.clear()

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
                    controller.dock.prediction.skip()  # a prediction is committed or skipped before the reveal
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
        self._run_cli(label, argv, "cli")

    def _run_cli(self, label: str, argv: list[str], kind: str) -> None:
        self.report.cases[kind] += 1
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

    # ---- the Causal lab and Families views -----------------------------------------------------------
    def _view_session(self) -> None:
        label, path, panel, tabs = self.maker.view_session_case()
        self._view_session_case(f"{label} ({path})" if self.keep else label, path, panel, tabs)

    def _view_session_case(self, label: str, path: Path, panel: str, tabs: list[str]) -> None:
        def open_and_drive() -> None:
            self.window.open_session(path)
            if self._settle():
                self._drive(label, panel, tabs)

        self._gui_case(label, open_and_drive)

    def _drive(self, label: str, panel_title: str, tabs: list[str]) -> None:
        """Bring the panel to the front and turn to each sub-tab in turn, so that its view computes; read each
        outcome."""
        panel = self.window.panel(panel_title)
        self.window.show_panel(panel_title)
        for tab in tabs:
            panel.tabs.setCurrentIndex(NEW_HALF_TABS[panel_title].index(tab))
            self._actions.append(f"turn to {tab}")
            if self.tries_again and self.rng.random() < ESCAPE_SHARE:
                self._escape(panel.current_view())
            if not self._settle():
                return  # the worker is still busy: the case is a hang
            view = panel.current_view()
            self._read_view(label, panel_title, view)
            # The student tries again: other values in the same view, or a button.
            if self.tries_again and self.rng.random() < 0.4:
                if hasattr(view, "run_to_end") and self.rng.random() < 0.5:
                    button = self.rng.choice((view.step, view.run_to_end, view.reset))
                    self._actions.append(f"press {button.__name__}")
                    button()
                else:
                    # What a session or lesson can hand the panel: the files' readers refuse numbers past 32 bits.
                    settings = within_file_bounds(new_half_settings(self.rng, panel_title, view.name))
                    self._actions.append(f"restore_settings({_brief(settings)})")
                    panel.restore_settings(settings)
                if not self._settle():
                    return
                self._read_view(label, panel_title, panel.current_view())

    def _escape(self, view) -> None:
        """Model > Cancel computation (Esc) once the view has asked for its result: afterwards it must still end
        in a result or a message, not wait for an answer that will not come."""
        from PySide6.QtWidgets import QApplication

        for _ in range(50):  # the view submits from a queued call
            if view.requested_inputs is not None:
                break
            QApplication.processEvents()
        self._actions.append("press Esc" + ("" if view.requested_inputs is not None else " (nothing computing)"))
        self.window.compute.cancel()

    def _read_view(self, label: str, panel_title: str, view) -> str:
        """What the view on screen ended with, the worker idle: "result", "refusal: ..." or "stuck: ..." (a hang)."""
        from gui.panels.base import COMPUTING, WAITING_FOR_MODEL

        name = f"{panel_title}/{view.name}"
        counts = self.report.view_outcomes.setdefault(name, Counter())
        problem = ""
        if not view.isVisible():
            problem = "its sub-tab is current but the view is not on screen"
        elif view.showing_message:
            text = view.message.text()
            if text == COMPUTING:
                problem = "the view still says 'Computing...' with the worker idle"
            elif text == WAITING_FOR_MODEL and self.window.state.model is not None:
                problem = "the view still waits for the model the lab holds"
            else:
                counts["error" if view.last_error else "refusal"] += 1
                return f"refusal: {text}"
        elif view.is_stale:
            problem = "the view is marked stale with the worker idle"
        elif view.shown_inputs is None or view.shown_inputs != view._current_inputs():
            problem = ("the view shows a result of other inputs than those beside it, not marked stale"
                       f"{_differing_fields(view.shown_inputs, view._current_inputs())}")
        else:
            counts["result"] += 1
            return "result"
        counts["stuck"] += 1
        problem += f"; the case's moves: {' -> '.join(getattr(self, '_actions', []))}"
        model = self.window.state.model
        problem += (f" (a request on its way: {view.requested_inputs is not None}; an update pending: "
                    f"{view._pending_update or view.update_scheduled}; the model: "
                    f"{model.config.name if model is not None else None})")
        self.report.findings.append(Finding("hang", f"{label} [{name}]", problem))
        return f"stuck: {problem}"

    def _check_lesson(self, label: str, path: Path) -> bool | None:
        """Whether `check-lesson` passes the file (None when it failed otherwise: a finding of its own)."""
        outcome = self.cli.run(["check-lesson", str(path)], CLI_CASE_TIMEOUT_S)
        if outcome is None:
            self.report.findings.append(Finding("hang", f"{label} (check-lesson)", f"over {CLI_CASE_TIMEOUT_S:.0f} s"))
            return None
        if outcome["code"] not in (0, 2) or "Traceback" in outcome["err"]:
            lines = [line for line in outcome["err"].splitlines() if line.strip()]
            self.report.findings.append(Finding("traceback", f"{label} (check-lesson)",
                                                f"exit status {outcome['code']}: " + " / ".join(lines[-2:])))
            return None
        return outcome["code"] == 0

    def _view_lesson(self) -> None:
        label, path, n_steps = self.maker.view_lesson_case()
        self._view_lesson_case(f"{label} ({path})" if self.keep else label, path, n_steps)

    def _view_lesson_case(self, label: str, path: Path, n_steps: int) -> None:
        passes = self._check_lesson(label, path)  # in the command line's child, before the case's clock starts
        controller, rng = self.window.lessons, self.rng
        refusals: list[str] = []

        # A lesson check-lesson refuses may open, as long as the window says why at a step: the step's problem in
        # the status bar, or its view's refusal.
        said: list[str] = []

        def open_and_walk() -> None:
            ended: list[str] = []
            controller.lesson_open_ended.connect(ended.append)
            try:
                controller.open_lesson(path)
                settled = self._settle()
            finally:
                controller.lesson_open_ended.disconnect(ended.append)
            # Started, even if a step then failed (a traceback of its own, not a disagreement).
            opened = (bool(ended) and ended[-1] == "") or (controller.lesson is not None
                                                           and controller.lesson.source == str(Path(path)))
            if passes and settled and not opened:
                what = f"check-lesson passes it, the window refuses it: {ended[-1] if ended else 'no answer'}"
                self.report.findings.append(Finding("disagreement", label, what))
            if not opened or controller.lesson is None:
                return
            walked = True
            try:
                for index in range(n_steps):
                    if index:
                        controller.go_to(index)
                    if not self._settle():
                        walked = False
                        return
                    panel = self.window.current_panel()
                    if panel.title in NEW_HALF_TABS:
                        outcome = self._read_view(f"{label} [step {index + 1}]", panel.title, panel.current_view())
                        if outcome.startswith("refusal"):
                            said.append(outcome)
                            if passes:
                                refusals.append(f"step {index + 1}: {outcome[:160]}")
                    if self.tries_again and rng.random() < 0.3:
                        controller.dock.prediction.skip()
                        controller.dock.reveal()
                        self._settle()
            finally:
                if passes is False and settled and walked and not said:
                    self.report.findings.append(Finding(
                        "disagreement", label, "the window opens it and walks every step without saying what "
                        "check-lesson refuses"))
            if self.tries_again and rng.random() < 0.5:
                controller.close_lesson()  # the lab from before the lesson comes back

        controller.step_problem.connect(said.append)
        try:
            self._gui_case(label, open_and_walk)
        finally:
            controller.step_problem.disconnect(said.append)
        if refusals:
            self.report.checked_then_refused.append(f"{label}: {refusals[0]}")
        if passes and not self.replaying and self.rng.random() < SCREENSHOT_SHARE:
            self._screenshot(label, path, self.rng.randint(1, n_steps))

    def _screenshot(self, label: str, path: Path, step: int) -> None:
        """`--lesson FILE --step N --screenshot OUT` in a process of its own: a PNG, or exit 2 with the reason; never
        a wait without end. Run between cases, outside the heartbeat's measure (the GUI thread waits for it)."""
        self.report.screenshots += 1
        out = path.parent / f"step-{step}.png"
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(self.workdir / "cli-home"),
               "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, str(ROOT / "main.py"), "--lesson", str(path), "--step", str(step),
                "--screenshot", str(out)]
        where = f"{label} (--step {step} --screenshot)"
        try:
            done = subprocess.run(argv, cwd=str(path.parent), env=env, capture_output=True, text=True,
                                  timeout=SCREENSHOT_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            self.report.findings.append(Finding("hang", where, f"no exit in {SCREENSHOT_TIMEOUT_S:.0f} s"))
            return
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if "Traceback" in done.stderr or done.returncode not in (0, 2):
            self.report.findings.append(Finding("traceback", where,
                                                f"exit status {done.returncode}: " + " / ".join(lines[-2:])))
        elif done.returncode == 0 and not out.is_file():
            self.report.findings.append(Finding("traceback", where, "exit status 0 without the PNG"))

    def replay(self, path: Path) -> None:
        """One case from a file a run kept: a lesson walked step by step, or a session driven through every sub-tab
        of the Causal lab or Families panel it sets (the one its settings name first)."""
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            document = None
        if isinstance(document, dict) and isinstance(document.get("steps"), list):
            self._view_lesson_case(f"view-lesson {path}", path, len(document["steps"]))
            return
        panels = document.get("panels") if isinstance(document, dict) else None
        panel = next((title for title in NEW_HALF_TABS if isinstance(panels, dict) and title in panels), "Causal lab")
        tab = panels[panel].get("tab") if isinstance(panels, dict) and isinstance(panels.get(panel), dict) else None
        tabs = NEW_HALF_TABS[panel]
        first = tab if tab in tabs else tabs[0]
        others = [other for other in tabs if other != first]
        self._view_session_case(f"view-session {path}", path, panel, [first, *others])

    def _view_cli(self) -> None:
        label, argv = self.maker.view_cli_case()
        self._run_cli(label, argv, "view-cli")

    def _draw_kind(self) -> str:
        """A kind of case: the new half's kinds and the others draw half of the cases each when both are asked for."""
        old = [kind for kind in self.kinds if kind in OLD_KINDS]
        new = [kind for kind in self.kinds if kind in NEW_KINDS]
        group = (old if self.rng.random() < 0.5 else new) if old and new else old or new
        return self.rng.choice(group)

    def run(self, minutes: float | None = None, cases: int | None = None) -> Report:
        """Run until `minutes` have passed or `cases` cases have run, whichever is first."""
        from PySide6.QtCore import Qt, QTimer
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication(["transformer-explorer", "-platform", "offscreen"])
        started = time.perf_counter()
        self.report.started_at = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        self.report.load_at_start = _load_average(short=True)
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
            if {"cli", "view-cli", "view-lesson"} & set(self.kinds):  # lessons are checked by check-lesson there
                self.cli = CliChild(self.workdir / "cli-home")
                self.cli.home.mkdir()
            self.catcher.take()  # what loading logged is not a case's finding
            self.catcher.warned.clear()
            heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
            heartbeat.setInterval(HEARTBEAT_MS)
            heartbeat.timeout.connect(self._tick)
            heartbeat.start()
            self._baseline = rss()
            deadline = started + minutes * 60 if minutes else float("inf")
            limit = cases if cases is not None else float("inf")
            steps = {"session": self._session, "lesson": self._lesson, "checkpoint": self._checkpoint, "cli": self._cli,
                     "view-session": self._view_session, "view-lesson": self._view_lesson, "view-cli": self._view_cli}
            if self.replaying is not None:
                self.replay(self.replaying)
            while self.replaying is None and sum(self.report.cases.values()) < limit and time.perf_counter() < deadline:
                steps[self._draw_kind()]()
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


def _load_average(short: bool = False) -> str:
    """The 1, 5 and 15-minute load averages ("2.1, 1.8, 1.5 on 2 CPUs"); short: the 1-minute one alone."""
    try:
        loads = os.getloadavg()
    except OSError:
        return "unknown"
    if short:
        return f"{loads[0]:.2f}"
    return ", ".join(f"{value:.1f}" for value in loads) + f" on {os.cpu_count()} CPUs"


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
    parser.add_argument("--kinds", default="all",
                        help=f"comma-separated kinds of case ({', '.join(KINDS)}) or groups: "
                             f"old ({', '.join(OLD_KINDS)}), new ({', '.join(NEW_KINDS)}), "
                             "all (the default; half the cases new)")
    parser.add_argument("--keep", action="store_true", help="keep the case files and name them in the report, to replay findings")
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="run one kept session or lesson file as a view case (same measures), no other case")
    parser.add_argument("--cli-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cli_worker:
        return cli_worker()
    named = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    kinds = tuple(dict.fromkeys(kind for name in named for kind in KIND_GROUPS.get(name, (name,))))
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        parser.error(f"--kinds takes {', '.join(KINDS)} or a group ({', '.join(KIND_GROUPS)}), "
                     f"not {', '.join(unknown) or 'nothing'}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.replay is not None:
        kinds = ("view-lesson",)  # the command line's child: a lesson is checked by check-lesson there
    report = FuzzRun(args.seed, kinds, keep=args.keep, replay=args.replay).run(minutes=args.minutes, cases=args.cases)
    print(report.table())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
