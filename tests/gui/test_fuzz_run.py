"""The measured fuzz run (tools/fuzz_run.py), CI-sized: hostile sessions, lessons, checkpoint folders and
command lines against the full window, and the issue's three bounds as measured properties of the run.

No traceback (uncaught, logged, or printed by a command line), no gap over 1 s between the ticks of a
20 ms heartbeat on the GUI thread while a case runs, and no peak RSS over 1 GiB above the start. The
same driver runs for minutes from the command line: python tools/fuzz_run.py --minutes 10.
"""

from __future__ import annotations

import os
import sys

import pytest

from tools.fuzz_run import GROWTH_BOUND_BYTES, NEW_KINDS, OLD_KINDS, STALL_BOUND_S, FuzzRun, Report

SEED = int(os.environ.get("FUZZ_SEED", "20261201"))  # another seed: FUZZ_SEED=N pytest ...
CASES = 36
# The blocking case blocks at least this long, and twice as long as the allocating case took before it: on a loaded
# machine touching 300 MiB took 3.7 s (1 s of CPU, load 6 on 2 CPUs).
BLOCK_S = 1.2

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS and its peak are read from /proc")


@pytest.fixture
def full_window(qtbot, settings):
    from gui.main_window import MainWindow

    window = MainWindow(settings=settings)
    window.remember_preferences = False
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    with qtbot.waitSignal(window.model_loaded, timeout=120_000):
        window.start_loading()
    yield window
    window.close()


def test_hostile_inputs_meet_no_traceback_no_freeze_and_no_growth(full_window, tmp_path):
    report = FuzzRun(SEED, OLD_KINDS, workdir=tmp_path, window=full_window).run(cases=CASES)
    summary = report.table()
    assert sum(report.cases.values()) == CASES, summary
    assert set(report.cases) == set(OLD_KINDS), summary  # every kind of input was tried
    assert not report.findings, summary
    # The GUI thread's own work in its longest stall is the app's, whatever else the machine runs.
    assert report.stall_cpu_s <= STALL_BOUND_S, summary
    if not _oversubscribed():  # with more runnable threads than CPUs, a gap also holds other programs' turns
        assert report.longest_stall_s <= STALL_BOUND_S, summary
    assert report.peak_growth_bytes <= GROWTH_BOUND_BYTES, summary
    assert report.cli_peak_growth_bytes <= GROWTH_BOUND_BYTES, summary


def _oversubscribed() -> bool:
    return os.getloadavg()[0] > (os.cpu_count() or 1)


def test_the_measures_see_what_they_bound(full_window, tmp_path):
    """A case that blocks the GUI thread, one that allocates and one that raises are each measured as such."""
    import time

    import numpy as np

    run = FuzzRun(SEED, ("session",), workdir=tmp_path, window=full_window)
    held = []
    took = [0.0]
    blocked = [0.0]

    def allocate():
        started = time.perf_counter()
        held.append(np.ones(300 * 2**20 // 8))  # 300 MiB, touched
        took[0] = time.perf_counter() - started

    def block():
        blocked[0] = max(BLOCK_S, 2 * took[0] + 0.5)
        time.sleep(blocked[0])

    cases = iter([
        ("session allocates", allocate),
        ("session blocks", block),
        ("session raises", lambda: full_window.compute.submit("fuzz-probe", lambda: 1 / 0, lambda _: None, "probe")),
    ])
    run._session = lambda: run._gui_case(*next(cases))
    report: Report = run.run(cases=3)
    assert report.longest_stall_s >= blocked[0] and report.stall_case == "session blocks", report.table()
    assert report.peak_growth_bytes >= 250 * 2**20 and report.growth_case == "session allocates", report.table()
    assert [f.case for f in report.tracebacks] == ["session raises"], report.table()
    assert "ZeroDivisionError" in report.tracebacks[0].what
    assert not report.passed


def _view_session(window, tmp_path, name: str, preset: str, text: str, panel: str, settings: dict) -> Path:
    import json

    from core.presets import get_preset

    document = window.current_session().to_json()
    document.update(config=get_preset(preset).to_dict(), text=text, tokens=None, panels={panel: settings})
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_view_case_turns_to_its_sub_tab_and_reads_a_refusal_a_result_and_a_stuck_view(full_window, tmp_path):
    """The view cases drive the view: its sub-tab is brought on screen so that it computes, and what it ends with is
    read once the worker is idle: a refusal (an encoder, which has no causal copying to score; a period past the
    context cannot be given, the spin stops at it), a result (tiny-induction), and a view left saying "Computing..." with
    nothing on its way, which is a hang."""
    from gui.panels.base import COMPUTING

    text = "JmXqzRbTwKcLpVnYhDgAJmXqzRbTwKcLpVnYhDg"
    cases = iter([
        ("view-session on an encoder", _view_session(full_window, tmp_path, "refused", "tiny-encoder", text,
                                                     "Causal lab", {"tab": "Attribution", "period": 20})),
        ("view-session within the context", _view_session(full_window, tmp_path, "shown", "tiny-induction", text,
                                                          "Causal lab", {"tab": "Attribution", "period": 20})),
    ])
    run = FuzzRun(SEED, ("view-session",), workdir=tmp_path, window=full_window)
    run.tries_again = False  # the two cases as written
    run._view_session = lambda: run._view_session_case(*next(cases), "Causal lab", ["Induction"])
    report = run.run(cases=2)
    panel = full_window.panel("Causal lab")
    assert panel.current_view() is panel.induction_view and panel.induction_view.isVisible(), report.table()
    assert report.view_outcomes["Causal lab/Induction"] == {"refusal": 1, "result": 1}, report.table()
    assert panel.induction_view.period_spin.value() == 20 and not report.findings, report.table()

    panel.induction_view._show_message(COMPUTING)  # as if a request were lost: the worker is idle, nothing on its way
    assert run._read_view("view-session probe", "Causal lab", panel.induction_view).startswith("stuck")
    assert [f.kind for f in report.findings] == ["hang"] and "Computing" in report.findings[0].what


NEW_HALF_CASES = 6


def test_hostile_view_cases_meet_no_traceback_no_hang_and_no_freeze(full_window, tmp_path):
    """A few cases of each kind aimed at the Causal lab and Families views and their commands, within the run's bounds
    (the longer runs of docs/performance-fuzz.md use the same driver)."""
    report = FuzzRun(SEED, NEW_KINDS, workdir=tmp_path, window=full_window).run(cases=NEW_HALF_CASES)
    summary = report.table()
    assert set(report.cases) == set(NEW_KINDS), summary
    assert sum(sum(counts.values()) for counts in report.view_outcomes.values()) >= 2, summary  # views were driven
    assert not [f for f in report.findings if f.kind != "warning"], summary
    assert report.stall_cpu_s <= STALL_BOUND_S, summary
    if not _oversubscribed():
        assert report.longest_stall_s <= STALL_BOUND_S, summary
    assert report.peak_growth_bytes <= GROWTH_BOUND_BYTES, summary
