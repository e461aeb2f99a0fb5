"""The view contract (gui/panels/base.py): stale at once, only visible views compute, results match inputs."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout

from gui.compute import ComputeController
from gui.panels.base import Refusal, View
from gui.state import LabState

TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class SquareInputs:
    seed: int


GATE = threading.Event()  # held closed by a test to keep a computation in flight


def compute_square(inputs: SquareInputs, token) -> int:
    while not GATE.wait(0.01):
        token.check()
    return inputs.seed * inputs.seed


class SquareView(View):
    """Shows seed**2; refuses negative seeds."""

    name = "Square"
    reads = frozenset({"seed"})
    needs_torch = False
    compute_fn = staticmethod(compute_square)

    def __init__(self, state, compute) -> None:
        super().__init__(state, compute)
        layout = QVBoxLayout(self.content)
        self.value_label = QLabel("")
        self.readout = QLabel("")
        layout.addWidget(self.value_label)
        layout.addWidget(self.readout)
        self.readouts = [self.readout]
        self.stale_labels = [self.value_label]
        self.hover_refreshes = 0

    def inputs(self):
        if self.state.seed < 0:
            return Refusal("The seed must not be negative.")
        return SquareInputs(self.state.seed)

    def show_result(self, result: int) -> None:
        self.value_label.setText(f"{self.shown_inputs.seed}^2 = {result}")

    def refresh_hover(self) -> None:
        self.hover_refreshes += 1
        self.readout.setText(f"hovering {self.result}")


@pytest.fixture
def setup(qtbot):
    GATE.set()
    state = LabState()
    compute = ComputeController()
    tabs = QTabWidget()
    square, other = SquareView(state, compute), QLabel("another tab")
    tabs.addTab(square, "square")
    tabs.addTab(other, "other")
    qtbot.addWidget(tabs)
    tabs.show()
    yield state, compute, tabs, square
    GATE.set()
    compute.shutdown()


def show_seed(qtbot, state, view, seed: int) -> None:
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        state.set_seed(seed)


def test_a_visible_view_computes_and_shows_the_result_of_its_inputs(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 3)
    assert view.value_label.text() == "3^2 = 9"
    assert view.shown_inputs == SquareInputs(3) and not view.is_stale
    assert view.hover_refreshes >= 1 and view.readout.text() == "hovering 9"


def test_a_changed_input_marks_the_view_stale_before_the_event_loop_runs(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 3)
    GATE.clear()
    state.set_seed(4)  # synchronously: nothing of seed 3 may stay readable
    assert view.is_stale
    assert view.value_label.text() == "" and view.readout.text().strip() == ""
    qtbot.waitUntil(lambda: view.is_dimmed, timeout=TIMEOUT_MS)  # a slow result: the old content is dimmed
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        GATE.set()
    assert view.value_label.text() == "4^2 = 16" and not view.is_stale and not view.is_dimmed


def test_a_result_for_superseded_inputs_is_never_shown(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 2)
    GATE.clear()
    state.set_seed(5)
    qtbot.waitUntil(lambda: view.requested_inputs == SquareInputs(5), timeout=TIMEOUT_MS)
    shown: list[str] = []
    view.result_shown.connect(lambda: shown.append(view.value_label.text()))
    state.set_seed(6)
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        GATE.set()
    assert shown == ["6^2 = 36"]


def test_a_refusal_replaces_the_content_with_its_message(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 3)
    state.set_seed(-1)
    qtbot.waitUntil(lambda: view.showing_message, timeout=TIMEOUT_MS)
    assert view.message.text() == "The seed must not be negative."
    assert view.shown_inputs is None and view.result is None
    show_seed(qtbot, state, view, 2)
    assert not view.showing_message and view.value_label.text() == "2^2 = 4"


def test_a_hidden_view_does_no_work_and_catches_up_when_shown(qtbot, setup):
    state, _compute, tabs, view = setup
    show_seed(qtbot, state, view, 3)
    computed = view.computations
    tabs.setCurrentIndex(1)
    for seed in (4, 5, 6):
        state.set_seed(seed)
    qtbot.waitUntil(lambda: not view.update_scheduled, timeout=TIMEOUT_MS)
    assert view.computations == computed and view.is_stale
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        tabs.setCurrentIndex(0)
    assert view.computations == computed + 1
    assert view.value_label.text() == "6^2 = 36"


def test_returning_to_the_shown_inputs_needs_no_computation(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 3)
    computed = view.computations
    GATE.clear()
    state.set_seed(4)
    assert view.is_stale
    state.set_seed(3)
    qtbot.waitUntil(lambda: not view.is_stale, timeout=TIMEOUT_MS)
    GATE.set()
    qtbot.waitUntil(lambda: not view.compute.busy, timeout=TIMEOUT_MS)
    assert view.value_label.text() == "3^2 = 9"
    assert view.computations <= computed + 1


def test_a_theme_change_while_stale_brings_no_old_number_back(qtbot, setup):
    state, _compute, _tabs, view = setup
    show_seed(qtbot, state, view, 3)
    GATE.clear()
    state.set_seed(4)
    state.set_theme("dark")
    assert view.value_label.text() == ""
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        GATE.set()
    assert view.value_label.text() == "4^2 = 16"


def test_a_view_says_computing_once_its_inputs_are_valid_and_a_refusal_goes_with_its_cause(qtbot, setup):
    state, _compute, _tabs, view = setup
    GATE.clear()
    state.set_seed(-2)
    qtbot.waitUntil(lambda: view.message.text() == "The seed must not be negative.", timeout=TIMEOUT_MS)
    state.set_seed(5)
    qtbot.waitUntil(lambda: view.message.text() == "Computing...", timeout=TIMEOUT_MS)
    assert view.showing_message
    with qtbot.waitSignal(view.result_shown, timeout=TIMEOUT_MS):
        GATE.set()
    assert view.value_label.text() == "5^2 = 25"


def test_a_result_that_arrives_after_its_view_is_deleted_is_dropped(qtbot, setup):
    from shiboken6 import isValid

    state, compute, tabs, view = setup
    show_seed(qtbot, state, view, 3)
    errors = []
    compute.error.connect(errors.append)
    GATE.clear()
    state.set_seed(5)  # in flight
    qtbot.waitUntil(lambda: compute.busy, timeout=TIMEOUT_MS)
    tabs.removeTab(0)
    view.deleteLater()
    qtbot.waitUntil(lambda: not isValid(view), timeout=TIMEOUT_MS)
    GATE.set()
    qtbot.waitUntil(lambda: not compute.busy, timeout=TIMEOUT_MS)  # the result came back to a deleted view
    assert errors == []  # and was dropped: no "already deleted" from reading its widgets
