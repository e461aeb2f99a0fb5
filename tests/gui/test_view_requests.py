"""Every request a view makes ends in a callback: a cancelled or superseded computation never strands the view."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QLabel, QTabWidget

from gui.compute import CANCELLED, SUPERSEDED, ComputeController
from gui.panels import PANEL_CLASSES
from gui.panels.base import CANCELLED_MESSAGE, COMPUTING, View
from gui.state import LabState
from tests.gui.test_views import GATE, TIMEOUT_MS, SquareInputs, SquareView, show_seed


@pytest.fixture
def setup(qtbot):
    GATE.set()
    state = LabState()
    compute = ComputeController()
    tabs = QTabWidget()
    square = SquareView(state, compute)
    tabs.addTab(square, "square")
    tabs.addTab(QLabel("another tab"), "other")
    qtbot.addWidget(tabs)
    tabs.show()
    yield state, compute, tabs, square
    GATE.set()
    compute.shutdown()


def start_computing(qtbot, state, compute, view, seed: int) -> None:
    """Set the seed with the computation held in flight on the worker."""
    GATE.clear()
    state.set_seed(seed)
    qtbot.waitUntil(lambda: view.requested_inputs == SquareInputs(seed) and compute.running_name == "square",
                    timeout=TIMEOUT_MS)


def test_a_cancelled_first_computation_says_so_and_runs_again_on_an_input_change(qtbot, setup):
    state, compute, _tabs, view = setup
    start_computing(qtbot, state, compute, view, 3)
    assert view.message.text() == COMPUTING
    compute.cancel()  # the window's Cancel button and Esc
    qtbot.waitUntil(lambda: view.cancelled, timeout=TIMEOUT_MS)
    assert view.message.text() == CANCELLED_MESSAGE and view.requested_inputs is None
    GATE.set()
    show_seed(qtbot, state, view, 4)
    assert view.value_label.text() == "4^2 = 16" and not view.showing_message


def test_a_cancelled_update_takes_the_old_result_away_and_the_same_inputs_compute_when_shown_again(qtbot, setup):
    state, compute, tabs, view = setup
    show_seed(qtbot, state, view, 2)
    start_computing(qtbot, state, compute, view, 3)
    compute.cancel()
    qtbot.waitUntil(lambda: view.cancelled, timeout=TIMEOUT_MS)
    assert view.shown_inputs is None and view.value_label.text() == ""  # no number of seed 2 beside seed 3
    GATE.set()
    tabs.setCurrentIndex(1)
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        tabs.setCurrentIndex(0)  # back to the same inputs: they are computed, not taken as "on their way"
    assert view.value_label.text() == "3^2 = 9" and not view.is_stale


def test_inputs_cancelled_while_their_view_was_hidden_are_computed_when_it_is_shown(qtbot, setup):
    state, compute, tabs, view = setup
    show_seed(qtbot, state, view, 2)
    start_computing(qtbot, state, compute, view, 5)
    tabs.setCurrentIndex(1)
    compute.cancel()
    qtbot.waitUntil(lambda: view.requested_inputs is None, timeout=TIMEOUT_MS)
    GATE.set()
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        tabs.setCurrentIndex(0)
    assert view.value_label.text() == "5^2 = 25"


def test_returning_to_inputs_whose_request_was_cancelled_computes_them(qtbot, setup):
    state, compute, _tabs, view = setup
    show_seed(qtbot, state, view, 2)
    start_computing(qtbot, state, compute, view, 3)
    compute.cancel()
    state.set_seed(2)  # before the worker has stopped: back to what was shown
    state.set_seed(3)  # and to the cancelled inputs again
    GATE.set()
    qtbot.waitUntil(lambda: view.shown_inputs == SquareInputs(3) and not view.showing_message, timeout=TIMEOUT_MS)
    assert view.value_label.text() == "3^2 = 9" and not view.is_stale


def test_a_request_superseded_by_another_submitter_is_made_again(qtbot, setup):
    state, compute, _tabs, view = setup
    show_seed(qtbot, state, view, 2)
    start_computing(qtbot, state, compute, view, 7)
    computed = view.computations
    intruder: list[str] = []
    compute.submit(view.channel, lambda: "other", intruder.append, "another submitter")
    GATE.set()
    qtbot.waitUntil(lambda: view.shown_inputs == SquareInputs(7), timeout=TIMEOUT_MS)
    assert view.value_label.text() == "7^2 = 49" and view.computations == computed + 1
    assert intruder in ([], ["other"])  # delivered if it ran before the view's new request, which supersedes it


# ---- the controller's side of the contract -----------------------------------------------------

def ends_of(compute: ComputeController, channel: str, fn, ends: list[str], tag: str) -> int:
    return compute.submit(channel, fn, lambda value: ends.append(f"{tag}: result {value}"), tag,
                          on_error=lambda message: ends.append(f"{tag}: error"),
                          on_dropped=lambda reason: ends.append(f"{tag}: {reason}"))


def test_every_request_ends_in_exactly_one_callback(qtbot, compute):
    gate = threading.Event()
    ends: list[str] = []

    def held(token):
        while not gate.wait(0.01):
            token.check()
        return 1

    running = ends_of(compute, "a", held, ends, "running")
    qtbot.waitUntil(lambda: compute.running_name == "running", timeout=TIMEOUT_MS)
    pending = ends_of(compute, "b", lambda: 2, ends, "pending")
    replaced = ends_of(compute, "c", lambda: 3, ends, "replaced")
    ends_of(compute, "c", lambda: 4, ends, "newer")
    assert compute.is_live(running) and compute.is_live(pending) and not compute.is_live(replaced)
    compute.cancel("a")
    compute.cancel("b")
    qtbot.waitUntil(lambda: len(ends) == 4, timeout=TIMEOUT_MS)
    gate.set()
    qtbot.waitUntil(lambda: not compute.busy, timeout=TIMEOUT_MS)
    assert sorted(ends) == sorted([f"running: {CANCELLED}", f"pending: {CANCELLED}", f"replaced: {SUPERSEDED}",
                                   "newer: result 4"])
    assert not compute.is_live(running) and not compute.is_live(pending)


def test_a_running_request_superseded_on_its_channel_says_superseded(qtbot, compute):
    gate = threading.Event()
    ends: list[str] = []

    def held(token):
        while not gate.wait(0.01):
            token.check()
        return 1

    ends_of(compute, "a", held, ends, "first")
    qtbot.waitUntil(lambda: compute.running_name == "first", timeout=TIMEOUT_MS)
    ends_of(compute, "a", lambda: 2, ends, "second")
    qtbot.waitUntil(lambda: len(ends) == 2, timeout=TIMEOUT_MS)
    assert ends == [f"first: {SUPERSEDED}", "second: result 2"]



@pytest.mark.parametrize("panel_class", PANEL_CLASSES, ids=lambda cls: cls.title)
def test_no_registered_view_shadows_what_the_contract_calls(qtbot, panel_class):
    """A view's own attribute named like a method of the contract (an Ablation list called `_dropped`) turns the
    base class's call into a TypeError the moment a request of that view is cancelled or superseded."""
    contract = {name for name, value in vars(View).items() if callable(value) and not name.startswith("__")}
    compute = ComputeController(torch_threads=1)
    panel = panel_class(LabState(), compute)
    qtbot.addWidget(panel)
    try:
        for view in panel.views:
            shadowed = sorted(name for name in contract if not callable(getattr(view, name)))
            assert not shadowed, f"{type(view).__name__} shadows {shadowed}"
    finally:
        compute.shutdown()
