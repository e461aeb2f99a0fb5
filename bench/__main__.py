"""One benchmark command: every figure the issue names, with its target, in one table.

    python -m bench [--quick] [--json] [--runs N]

Runs the existing bench scripts' measurements (each in a fresh process, so one figure's memory and
threads do not colour the next) several times, and prints each figure as the median with its spread
(min-max over the runs). Ratios are measured side by side in the same run: the window against a bare
`python -c "import torch"`, the edit-to-result in the full window against a bare forward of the same
model on the same worker. Every GUI figure is measured in the MainWindow with every panel built.

    time to visible window          <= 1.0 s      bench/startup.py (main.py gui --self-test)
    edit-to-view p50 / p95, T=64/128    p95 < 40 ms   bench/tokens_edit.py (bundled tiny-gpt, full window)
    edit-to-result / bare forward   <= 0.6x       bench/tokens_edit.py --preset gpt2-small --baseline (T=256,
                                                  full window; the bare forward of the two-sequence batch)
    GPT-2 small at 64 tokens        -             bench/tokens_edit.py --preset gpt2-small --tokens 64 (Propagation,
                                                  Attention: the 12 x 12 overview)
    Norms while training is paused  recomputes    bench/paused_training.py (full window)
    longest GUI stall computing     < 50 ms       bench/stall.py
    RoPE drag redraws per second    >= 30 /s      bench/positions_drag.py
    peak RSS, gpt2-small, T=1024    < 2 GB        a window with every panel open (this module's --rss-probe)
    bare forward / best fp32 GEMM   >= 0.6x       bench/gemm_peak.py: GPT-2 small, T=256, on the app's kernel path,
                                                  against the best 2048^3 GEMM rate of the paths (BLAS, oneDNN)
    resid_pre map / TransformerLens <= 0.5x       bench/patching_map.py: GPT-2 small's shape, 20 tokens, the lab's
                                                  patching map against transformer_lens.patching's
                                                  get_act_patch_resid_pre and the naive loop, same weights and inputs
    edit-to-result / transformers   <= 1.0x       the full-window edit above against `transformers`' forward of
                                                  the two sequences with hidden states (bench/gemm_peak.py);
                                                  TransformerLens run_with_cache beside it when installed
    induction recipes, full runs    within 0.15   bench/recipe_training.py: `main.py train --preset tiny-induction-attn`
                                                  and tiny-induction as they are, the best layer-1 induction score
                                                  against the documented one (--only recipes; about 2.5 min)

--quick uses fewer runs and fewer edits / moves; it is for checking that the command works, not for
figures to quote. The exit code is 0 when every figure meets its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


@dataclass
class Figure:
    """One row of the table: a measured quantity over several runs and its target."""

    name: str
    unit: str
    values: list[float] = field(default_factory=list)
    target: str = ""
    meets: Callable[[float], bool] | None = None  # applied to the median
    beside: str = ""  # what it was measured against in the same runs, e.g. "import torch 0.61 s"
    error: str = ""  # why the figure could not be measured
    skipped: str = ""  # why the figure was not measured here (a peer that is not installed): no failure

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def verdict(self) -> str:
        if self.skipped and not self.values:
            return "skipped"
        if self.error or self.median is None:
            return "error"
        if self.meets is None:
            return "-"
        return "pass" if self.meets(self.median) else "MISS"

    def to_json(self) -> dict:
        return {
            "name": self.name, "unit": self.unit, "values": self.values, "median": self.median,
            "min": min(self.values) if self.values else None, "max": max(self.values) if self.values else None,
            "target": self.target, "verdict": self.verdict, "beside": self.beside, "error": self.error,
            "skipped": self.skipped,
        }


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("ms", "/s", "x", "GFLOP/s"):
        text = f"{value:.2f}" if unit == "x" else f"{value:.1f}"
    elif unit == "GB":
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}" if unit != "x" else f"{text}x"


def format_table(figures: list[Figure]) -> str:
    """The figures as one plain-text table: median, spread (min-max, n runs), target, pass / MISS."""
    header = ("figure", "median", "spread (min-max, n)", "target", "result", "measured beside it")
    rows = []
    for figure in figures:
        if figure.values:
            spread = f"{_number(min(figure.values), figure.unit)} - {_number(max(figure.values), figure.unit)}, n={len(figure.values)}"
        else:
            spread = figure.error or figure.skipped or "-"
        rows.append((figure.name, _number(figure.median, figure.unit), spread, figure.target, figure.verdict, figure.beside))
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(header, widths)).rstrip(),
             "  ".join("-" * width for width in widths)]
    lines += ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


# ---- running the scripts --------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run(args: list[str], timeout: float) -> str:
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)
    return result.stdout + "\n" + result.stderr


def _find(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if match is None:
        tail = " | ".join(text.strip().splitlines()[-2:])
        raise RuntimeError(f"no figure in the output ({tail[:160]})")
    return float(match.group(1))


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure_startup(runs: int) -> list[Figure]:
    sys.path.insert(0, str(BENCH))
    import startup  # bench/startup.py

    window = Figure("time to visible window", "s", target="<= 1.0 s", meets=lambda v: v <= 1.0)
    torch_import = []
    ratio = Figure("window / `import torch`", "x", target="-", meets=None)
    try:
        startup.one_run()  # warm the file cache so that every measured run starts alike
        for index in range(runs):
            _log(f"  startup run {index + 1}/{runs}")
            shown = startup.one_run()["window_shown"]
            bare = startup.torch_import_seconds()  # side by side, in the same run
            window.values.append(shown)
            torch_import.append(bare)
            ratio.values.append(shown / bare)
    except (SystemExit, Exception) as error:  # startup.one_run raises SystemExit when the app fails
        window.error = str(error).splitlines()[0][:120]
    if torch_import:
        window.beside = f"import torch {statistics.median(torch_import):.3f} s"
    return [window, ratio]


def measure_tokens_edit(runs: int, edits: int) -> list[Figure]:
    """The bundled model in the full window (every panel built), the Tokens & masks view in front."""
    figures = []
    for tokens in (64, 128):
        p50 = Figure(f"edit-to-view p50, T={tokens}", "ms", target="-",
                     beside="bundled tiny-gpt, full window, Tokens & masks")
        p95 = Figure(f"edit-to-view p95, T={tokens}", "ms", target="< 40 ms", meets=lambda v: v < 40.0)
        try:
            for index in range(runs):
                _log(f"  tokens_edit T={tokens} run {index + 1}/{runs}")
                out = _run([str(BENCH / "tokens_edit.py"), "--tokens", str(tokens), "--edits", str(edits)], timeout=900)
                line = re.search(r"edit -> result_shown:\s+p50 ([\d.]+) ms, p95 ([\d.]+) ms", out)
                if line is None:
                    _find(r"(?!)", out)  # raises with the output's tail
                p50.values.append(float(line.group(1)))
                p95.values.append(float(line.group(2)))
        except Exception as error:
            p95.error = str(error)[:120]
        figures += [p50, p95]
    return figures


def measure_overhead(runs: int, edits: int) -> list[Figure]:
    """GPT-2 small's shape at T=256 in the full window: edit to result against the bare forward of the
    two-sequence batch, both on the app's compute worker, alternating in the same run."""
    ratio = Figure("edit-to-result / bare forward (batch of two), gpt2-small T=256", "x", target="<= 0.6x",
                   meets=lambda v: v <= 0.6)
    diff = Figure("edit-to-result, gpt2-small T=256, full window", "ms", target="-")
    bare = []
    try:
        for index in range(runs):
            _log(f"  gpt2-small edit run {index + 1}/{runs}")
            out = _run([str(BENCH / "tokens_edit.py"), "--preset", "gpt2-small", "--tokens", "256", "--edits",
                        str(edits), "--baseline"], timeout=1800)
            edit = re.search(r"edit -> result_shown:\s+p50 ([\d.]+) ms", out)
            forward = re.search(r"bare forward of the two-sequence batch:\s+p50 ([\d.]+) ms", out)
            if edit is None or forward is None:
                _find(r"(?!)", out)
            diff.values.append(float(edit.group(1)))
            bare.append(float(forward.group(1)))
            ratio.values.append(float(edit.group(1)) / float(forward.group(1)))
    except Exception as error:
        ratio.error = str(error)[:120]
    if bare:
        ratio.beside = f"bare forward (batch 2) {statistics.median(bare):.0f} ms"
    return [diff, ratio]


def measure_peak_and_peers(runs: int, repeats: int) -> list[Figure]:
    """bench/gemm_peak.py in a fresh process per run: the best fp32 GEMM rate of the kernel paths, the lab's
    bare forward against it, and the peers' forwards of the two sequences, all at the app's worker's threads."""
    peak = Figure("best fp32 GEMM rate (2048^3, BLAS or oneDNN)", "GFLOP/s", target="-")
    forward = Figure("bare forward, gpt2-small T=256, the app's kernels", "GFLOP/s", target="-")
    share = Figure("bare forward / best fp32 GEMM rate", "x", target=">= 0.6x", meets=lambda v: v >= 0.6)
    hf = Figure("transformers GPT-2 forward, B=2, hidden states, T=256", "ms", target="-",
                beside="random weights, SDPA, the same threads")
    lens = Figure("TransformerLens run_with_cache, B=2, T=256", "ms", target="-", beside="random weights")
    paths: list[dict] = []
    try:
        for index in range(runs):
            _log(f"  GEMM peak and peers run {index + 1}/{runs}")
            out = _run([str(BENCH / "gemm_peak.py"), "--json", "--repeats", str(repeats)], timeout=1800)
            match = re.search(r"^GEMM_PEAK (.*)$", out, re.MULTILINE)
            if match is None:
                _find(r"(?!)", out)
            data = json.loads(match.group(1))
            peak.values.append(data["peak_gflops"])
            forward.values.append(data["forward_gflops"])
            share.values.append(data["forward_gflops"] / data["peak_gflops"])
            if data["transformers_two_hidden_ms"] is not None:
                hf.values.append(data["transformers_two_hidden_ms"])
            if data["transformer_lens_two_cache_ms"] is not None:
                lens.values.append(data["transformer_lens_two_cache_ms"])
            paths.append(data)
    except Exception as error:
        share.error = str(error)[:120]
    if paths:
        last = paths[-1]
        rates = ", ".join(f"{name} {statistics.median(p['gemm_gflops'][name] for p in paths):.1f}" for name in last["gemm_gflops"])
        peak.beside = f"{rates} GFLOP/s; {last['threads']} thread(s)"
        times = ", ".join(f"{name} {statistics.median(p['forward_ms'][name] for p in paths):.0f} ms" for name in last["forward_ms"])
        forward.beside = f"path {last['chosen_path']}; forward {times}"
    if not hf.values:
        hf.skipped = "transformers is not installed"
    if not lens.values:
        lens.skipped = "TransformerLens is not installed"
    return [peak, forward, share, hf, lens]


def measure_patching_map(runs: int) -> list[Figure]:
    """bench/patching_map.py in a fresh process: the lab's resid_pre map, the naive loop and TransformerLens."""
    lab = Figure("resid_pre patching map, gpt2-small T=20 (lab)", "ms", target="-")
    naive = Figure("the same map, one full forward per cell", "ms", target="-")
    lens = Figure("the same map, TransformerLens get_act_patch_resid_pre", "ms", target="-")
    ratio = Figure("patching map: lab / TransformerLens", "x", target="<= 0.5x", meets=lambda v: v <= 0.5)
    try:
        out = _run([str(BENCH / "patching_map.py"), "--runs", str(runs), "--json"], timeout=3600)
        match = re.search(r"^PATCH_MAP (.*)$", out, re.MULTILINE)
        if match is None:
            _find(r"(?!)", out)
        data = json.loads(match.group(1))
        medians, differences = data["median_ms"], data["max_abs_difference_from_naive"]
        lab.values.append(medians["lab_map"])
        lab.beside = (f"with the bitwise checks {medians['lab_with_checks']:.0f} ms; max |difference| from the "
                      f"naive loop {differences['lab_map']:.1e}")
        naive.values.append(medians["naive"])
        if data["transformer_lens"]:
            lens.values.append(medians["transformer_lens"])
            lens.beside = f"max |difference| from the naive loop {differences['transformer_lens']:.1e}"
            ratio.values.append(medians["lab_map"] / medians["transformer_lens"])
        else:
            lens.skipped = ratio.skipped = "TransformerLens is not installed"
    except Exception as error:
        lab.error = str(error)[:120]
    return [lab, naive, lens, ratio]


def edit_against_peer(edit: Figure, peer: Figure) -> Figure:
    """The full-window edit against the peer's two-sequence forward, run by run in the same bench run."""
    ratio = Figure("edit-to-result / transformers' two-sequence forward, gpt2-small T=256", "x", target="<= 1.0x",
                   meets=lambda v: v <= 1.0)
    ratio.values = [a / b for a, b in zip(edit.values, peer.values)]
    if not ratio.values:
        if peer.skipped:
            ratio.skipped = peer.skipped
        else:
            ratio.error = "no edit or no peer figure"
    elif edit.median is not None and peer.median is not None:
        ratio.beside = f"edit {edit.median:.0f} ms, transformers {peer.median:.0f} ms"
    return ratio


def measure_real_model(runs: int, edits: int) -> list[Figure]:
    """GPT-2 small's shape at 64 tokens in the full window: an edit in Propagation, and in Attention
    (all 12 x 12 heads' maps and the selected head)."""
    figures = []
    for tab, label in (("Propagation", "edit-to-result"), ("Attention", "edit-to-attention overview (12 x 12 heads)")):
        figure = Figure(f"{label}, gpt2-small T=64", "ms", target="-", beside="full window, random weights")
        try:
            for index in range(runs):
                _log(f"  gpt2-small T=64 {tab} run {index + 1}/{runs}")
                out = _run([str(BENCH / "tokens_edit.py"), "--preset", "gpt2-small", "--tokens", "64", "--edits",
                            str(edits), "--tab", tab], timeout=1800)
                line = re.search(r"edit -> result_shown:\s+p50 ([\d.]+) ms", out)
                if line is None:
                    _find(r"(?!)", out)
                figure.values.append(float(line.group(1)))
        except Exception as error:
            figure.error = str(error)[:120]
        figures.append(figure)
    return figures


def measure_paused_training(runs: int, changes: int) -> list[Figure]:
    """Norms in the full window while a training run is paused: it must recompute, the run must stay paused."""
    paused = Figure("Norms recompute, training run paused", "ms", target="recomputes",
                    meets=lambda v: v >= 0, beside="full window, tiny-gpt run")
    try:
        for index in range(runs):
            _log(f"  paused training run {index + 1}/{runs}")
            out = _run([str(BENCH / "paused_training.py"), "--changes", str(changes)], timeout=1800)
            match = re.search(r"while paused at step [\d,]+:\s+p50 ([\d.]+) ms", out)
            if match is None or "meets:" not in out:
                _find(r"(?!)", out)
            paused.values.append(float(match.group(1)))
    except Exception as error:
        paused.error = str(error)[:120]
    return [paused]


def measure_stall(runs: int) -> list[Figure]:
    stall = Figure("longest GUI-thread stall while computing", "ms", target="< 50 ms", meets=lambda v: v < 50.0,
                   beside="bench/stall.py: torch import, gpt2-small build, mixtral trace, T=256 forwards")
    cpu: list[float] = []
    try:
        for index in range(runs):
            _log(f"  stall run {index + 1}/{runs}")
            out = _run([str(BENCH / "stall.py")], timeout=600)
            stall.values.append(_find(r"longest stall while computing: ([\d.]+) ms", out))
            cpu.append(_find(r"the GUI thread's own CPU in it: ([\d.]+) ms", out))
    except Exception as error:
        stall.error = str(error)[:120]
    if cpu:
        stall.beside += f"; the GUI thread's own CPU in the longest: {', '.join(f'{value:.1f}' for value in cpu)} ms"
    return [stall]


def measure_drag(runs: int, moves: int) -> list[Figure]:
    slider = Figure("RoPE drag redraws, slider", "/s", target=">= 30/s", meets=lambda v: v >= 30.0)
    line = Figure("RoPE drag redraws, dashed line", "/s", target=">= 30/s", meets=lambda v: v >= 30.0)
    try:
        for index in range(runs):
            _log(f"  positions drag run {index + 1}/{runs}")
            out = _run([str(BENCH / "positions_drag.py"), "--moves", str(moves)], timeout=600)
            slider.values.append(_find(r"slider m\s+\d+ moves:\s+([\d.]+) redraws/s", out))
            line.values.append(_find(r"dashed line m \(plot\)\s+\d+ moves:\s+([\d.]+) redraws/s", out))
    except Exception as error:
        slider.error = str(error)[:120]
    return [slider, line]


def measure_rss(runs: int) -> list[Figure]:
    rss = Figure("peak RSS, gpt2-small, T=1024, every panel", "GB", target="< 2 GB", meets=lambda v: v < 2.0)
    try:
        for index in range(runs):
            _log(f"  peak memory run {index + 1}/{runs}")
            out = _run(["-m", "bench", "--rss-probe"], timeout=900)
            rss.values.append(_find(r"RSS_BYTES (\d+)", out) / 1e9)
    except Exception as error:
        rss.error = str(error)[:120]
    return [rss]


def _memory_mb() -> str:
    """The peak and the resident memory of this process so far, from /proc (Linux); "" elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if line.startswith(("VmHWM", "VmRSS")))
    except OSError:
        return ""
    peak, resident = (int(fields[key].split()[0]) * 1024 / 1e6 for key in ("VmHWM", "VmRSS"))
    return f"peak {peak:,.0f} MB, resident {resident:,.0f} MB"


def rss_probe(timeout_s: float = 600.0) -> int:
    """In this process: the window with every panel, gpt2-small, a 1,024-token text; print the peak RSS.

    As each job's result arrives the peak and resident memory so far are printed, so the job that
    raised the peak, and what each result keeps, can be read off."""
    import resource

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("TRANSFORMER_EXPLORER_DEVICE", "cpu")
    from PySide6.QtCore import QSettings, QStandardPaths
    from PySide6.QtWidgets import QApplication

    from core.presets import get_preset
    from gui.main_window import MainWindow
    from gui.panels.base import AwaitingStart
    from resources import resource_path

    app = QApplication.instance() or QApplication([sys.argv[0], "-style", "Fusion"])
    QStandardPaths.setTestModeEnabled(True)
    settings = QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "transformer-explorer-rss.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.remember_preferences = False
    window.resize(1400, 900)
    window.show()
    deadline = time.monotonic() + timeout_s

    def wait_until(condition) -> bool:
        while not condition():
            if time.monotonic() > deadline:
                return False
            app.processEvents()
            time.sleep(0.005)
        return True

    loaded = []
    window.model_loaded.connect(lambda: loaded.append(window.loaded))
    window.start_loading()
    if not wait_until(lambda: loaded):
        print("rss probe: the default model did not load", file=sys.stderr)
        return 1
    shown: set[str] = set()
    refused: dict[str, str] = {}
    for panel in window.panels:
        panel.result_shown.connect(lambda p=panel: shown.add(p.title))
        panel.error_shown.connect(lambda message, p=panel: (shown.add(p.title), refused.__setitem__(p.title, message)))
    corpus = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    loaded.clear()
    window.state.set_config(get_preset("gpt2-small"))
    window.state.set_text(corpus[:1024])
    if not wait_until(lambda: loaded and window.loaded is not None and window.loaded.config.name == "gpt2-small"):
        print("rss probe: gpt2-small did not load", file=sys.stderr)
        return 1
    shown.clear()
    refused.clear()

    def print_memory(channel: str) -> None:  # a result arrives after its job ended: the peak includes the job's
        memory = _memory_mb()
        if memory:
            print(f"rss probe: after {channel}: {memory}", flush=True)

    window.compute.result_delivered.connect(print_memory)
    for panel in window.panels:  # every panel and every sub-tab open once, computing on the big model
        window.tabs.setCurrentWidget(panel)
        app.processEvents()
        wait_until(lambda p=panel: p.title in shown or not window.compute.busy)
        sub_tabs = getattr(panel, "tabs", None)
        for view in panel.views:
            if sub_tabs is not None and sub_tabs.indexOf(view) >= 0:
                sub_tabs.setCurrentWidget(view)
            app.processEvents()
            wait_until(lambda v=view: (v.shown_inputs is not None and not v.is_stale) or v.showing_message)
            if isinstance(view.inputs(), AwaitingStart):  # a training view: pressed, as a user would, and measured
                view.start()
                app.processEvents()
                wait_until(lambda v=view: (v.shown_inputs is not None and not v.is_stale) or v.refused)
    wait_until(lambda: not window.compute.busy)
    app.processEvents()  # the last result
    from core.kernels import describe

    print(f"rss probe: {describe()}")
    tokens = len(window.state.tokens)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    window.close()
    print(f"rss probe: {tokens} tokens, {len(shown)} of {len(window.panels)} panels showed a result or message")
    for title, message in refused.items():
        print(f"rss probe: {title}: {message[:100]}")
    print(f"RSS_BYTES {peak}")
    return 0


def measure_recipes(runs: int) -> list[Figure]:
    """The induction presets' full recipes: each run's headline against the documented figure."""
    figures = {preset: Figure(f"{preset} recipe: best layer-1 induction score", "", beside="bench/recipe_training.py")
               for preset in ("tiny-induction-attn", "tiny-induction")}
    try:
        for index in range(runs):
            _log(f"  recipe run {index + 1}/{runs}")
            out = _run([str(BENCH / "recipe_training.py"), "--no-defaults"], timeout=1800)
            for preset, figure in figures.items():
                figure.values.append(_find(rf"{preset} recipe .*?induction score ([\d.]+)", out))
                target = _find(rf"{preset} recipe .*?documented ([\d.]+)", out)
                figure.target = f"{target:.3f} +- 0.15"
                figure.meets = lambda value, target=target: abs(value - target) <= 0.15
    except Exception as error:
        for figure in figures.values():
            figure.error = str(error)[:120]
    return list(figures.values())


def _machine() -> str:
    """The CPU's model name (Linux) or the platform's processor, for the table's heading (bench/table.py)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


GROUPS = ("startup", "tokens", "edit", "real", "peak", "paused", "stall", "drag", "rss", "patch", "recipes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, edits and moves: checks that it works")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of the table")
    parser.add_argument("--runs", type=int, default=None, help="runs per figure (default 5, or 2 with --quick)")
    parser.add_argument("--only", metavar="GROUP,...", default=None,
                        help=f"measure only these groups: {', '.join(GROUPS)} (default: all); the edit against the "
                        "peer needs both edit and peak")
    parser.add_argument("--rss-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe:
        return rss_probe()
    chosen = GROUPS if args.only is None else tuple(name.strip() for name in args.only.split(",") if name.strip())
    unknown = [name for name in chosen if name not in GROUPS]
    if unknown or not chosen:
        parser.error(f"--only takes {', '.join(GROUPS)} (got {', '.join(unknown) or 'nothing'})")
    runs = args.runs or (2 if args.quick else 5)
    heavy_runs = 1 if args.quick else max(1, min(runs, 3))  # the stall and memory runs take minutes each
    started = time.monotonic()
    figures: list[Figure] = []
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    _log(f"python -m bench: {runs} run(s) per figure{' (quick)' if args.quick else ''}; progress on stderr")
    if "startup" in chosen:
        figures += measure_startup(runs)
    if "tokens" in chosen:
        figures += measure_tokens_edit(runs, edits=20 if args.quick else 100)
    overhead = measure_overhead(runs, edits=3 if args.quick else 7) if "edit" in chosen else []
    figures += overhead
    if "real" in chosen:
        figures += measure_real_model(heavy_runs, edits=3 if args.quick else 10)
    peers = measure_peak_and_peers(runs, repeats=2 if args.quick else 5) if "peak" in chosen else []
    figures += peers
    if overhead and peers:
        figures.append(edit_against_peer(overhead[0], peers[3]))
    if "paused" in chosen:
        figures += measure_paused_training(heavy_runs, changes=2 if args.quick else 5)
    if "stall" in chosen:
        figures += measure_stall(heavy_runs)
    if "drag" in chosen:
        figures += measure_drag(runs, moves=60 if args.quick else 200)
    if "rss" in chosen:
        figures += measure_rss(heavy_runs)
    if "patch" in chosen:
        figures += measure_patching_map(heavy_runs)
    if "recipes" in chosen:
        figures += measure_recipes(1 if args.quick else heavy_runs)
    elapsed = time.monotonic() - started
    if args.json:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        print(json.dumps({"quick": args.quick, "runs": runs, "seconds": elapsed, "load_average": [load_before, load],
                          "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(time.time() - elapsed)),
                          "cpus": os.cpu_count(), "machine": _machine(), "only": args.only,
                          "figures": [f.to_json() for f in figures]}, indent=2))
    else:
        print(format_table(figures))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"\n{runs} run(s) per figure ({heavy_runs} for stall and memory), {elapsed:.0f} s, "
              f"{os.cpu_count()} CPUs, load average {load_before:.1f} at the start and {load:.1f} at the end"
              f"{'; --quick: not figures to quote' if args.quick else ''}")
    return 0 if all(f.verdict in ("pass", "-", "skipped") for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
