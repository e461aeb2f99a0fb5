"""The figures a lesson step quotes with `{{name}}`: taken from the result on screen, and only from the result
its view shows for the step's own inputs.

A part inside a view (gui.panels.base.View) is quoted while that view shows, current and not stale, the result of
the inputs the step set up (recorded when the step was in place: at once if the view already showed them, else
from the view's first result after it). Before that result is on screen the quote says so; once the student
changes an input of that view, the quote says the step's result is no longer on screen instead of quoting a result
the step's prose was not written about. A part outside any view is quoted while its panel is not stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)
from shiboken6 import isValid

from core.lessons import LessonStep
from gui.answer_cover import find_panel_widget, widget_text
from gui.panels.base import Refusal, View

NOT_COMPUTED = "(not computed yet)"
REFUSED = "(not computed: the view refused this step's input; see the panel)"
CHANGED = "(the step's result is not on screen: an input was changed)"


# The panel's input widgets and the signal each sends when the student changes it.
INPUT_SIGNALS = ((QLineEdit, "textChanged"), (QSpinBox, "valueChanged"), (QDoubleSpinBox, "valueChanged"),
                 (QComboBox, "currentIndexChanged"), (QAbstractButton, "toggled"))


def owning_view(widget: QWidget | None) -> View | None:
    """The view a widget belongs to, or None for a widget of a panel outside its views."""
    while widget is not None and not isinstance(widget, View):
        widget = widget.parentWidget()
    return widget


def shows_current_result(view: View) -> bool:
    return view.result is not None and view.shown_inputs is not None and not view.is_stale and not view.showing_message


class StepQuotes:
    """The quoted parts of one step on one panel, and the inputs of the step's result in each of their views."""

    def __init__(self, panel: Any, step: LessonStep, changed: Callable[[], None]) -> None:
        """`changed()` is called whenever a quoted view shows a result or refuses (a view inside a view, such as
        a count beside a breakdown, reports to no panel)."""
        self.panel = panel
        self.widgets: dict[str, QWidget | None] = {
            name: find_panel_widget(panel, name) for name in dict.fromkeys(step.placeholders())}
        self.views = list(dict.fromkeys(view for view in map(owning_view, self.widgets.values()) if view is not None))
        self.step_inputs: dict[View, Any] = {}
        self.settled = False
        self._changed = changed
        for view in self.views:
            view.result_shown.connect(self._on_view_changed)
            view.error_shown.connect(self._on_view_changed)
        # An input of the panel changed: its views went stale at once (they listened first), and so do the quotes.
        self._inputs = [(widget, signal) for kind, signal in INPUT_SIGNALS if self.views
                        for widget in panel.findChildren(kind)]
        # A composite input of the app's own (a head picker) says so with its `changed` signal.
        self._inputs += [(widget, "changed") for widget in (panel.findChildren(QWidget) if self.views else [])
                         if isinstance(getattr(type(widget), "changed", None), Signal)]
        for widget, signal in self._inputs:
            getattr(widget, signal).connect(self._on_input_changed)

    def dispose(self) -> None:
        for view in self.views:
            if isValid(view):
                view.result_shown.disconnect(self._on_view_changed)
                view.error_shown.disconnect(self._on_view_changed)
        for widget, signal in self._inputs:
            if isValid(widget):
                getattr(widget, signal).disconnect(self._on_input_changed)
        self._inputs = []

    def _on_input_changed(self, *_args: Any) -> None:
        self._changed()

    def _on_view_changed(self, *_args: Any) -> None:
        self.result_shown()
        self._changed()

    def settle(self) -> None:
        """The step is in place (state, edit, panel settings): a view already showing its inputs' result is the
        step's; the others' next results are."""
        self.settled = True
        for view in self.views:
            if shows_current_result(view):
                self.step_inputs[view] = view.shown_inputs

    def result_shown(self) -> None:
        if not self.settled:
            return
        for view in self.views:
            if view not in self.step_inputs and isValid(view) and shows_current_result(view):
                self.step_inputs[view] = view.shown_inputs

    def text(self, name: str) -> str:
        widget = self.widgets.get(name)
        if widget is None or not isValid(widget):
            return NOT_COMPUTED
        view = owning_view(widget)
        if view is None:
            return (widget_text(widget) or NOT_COMPUTED) if not getattr(self.panel, "is_stale", False) else NOT_COMPUTED
        if view not in self.step_inputs and self.settled and shows_current_result(view):
            # A view that went back to the result it showed (inputs changed while hidden, then changed back)
            # shows it again without a new result_shown: the first current result after the step is the step's.
            self.step_inputs[view] = view.shown_inputs
        if view not in self.step_inputs:
            return REFUSED if self.settled and _is_refusal(view) else NOT_COMPUTED
        if not shows_current_result(view):
            return REFUSED if _is_refusal(view) else (NOT_COMPUTED if view.shown_inputs is None else CHANGED)
        if view.shown_inputs != self.step_inputs[view]:
            return CHANGED
        return widget_text(widget) or NOT_COMPUTED


def _is_refusal(view: View) -> bool:
    """Showing a refusal of its inputs, or a computation's failure, where the result would be."""
    from gui.panels.base import COMPUTING, WAITING_FOR_MODEL, WAITING_FOR_TORCH

    return view.showing_message and view.message.text() not in (COMPUTING, WAITING_FOR_MODEL, WAITING_FOR_TORCH)


def step_refusal(panel: Any) -> str:
    """The refusal a view of the panel on screen shows instead of its result, of its inputs as they are now ("" when
    none does): one its inputs changed since, with the update on its way, does not count."""
    for view in getattr(panel, "views", []):
        if isValid(view) and view.isVisible() and _is_refusal(view) and not view.update_scheduled and (
                view.last_error or isinstance(view.inputs(), Refusal)):
            return view.message.text()
    return ""


def settled(view: View) -> bool:
    """A view showing the result of its inputs as they are now, with nothing scheduled or computing for it."""
    return (view.result is not None and not view.is_stale and not view.update_scheduled
            and view.requested_inputs is None)


__all__ = ["CHANGED", "NOT_COMPUTED", "REFUSED", "StepQuotes", "owning_view", "settled", "shows_current_result",
           "step_refusal"]
