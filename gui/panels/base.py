"""Panels and views: the contract that keeps every number on screen true to the inputs beside it.

A **view** shows one result (a sub-tab, or a whole small panel). It declares three things:

    @dataclass(frozen=True)
    class AttentionInputs:                       # everything the computation needs, never mutated
        model: Any
        tokens: tuple[int, ...]
        layer: int

    def compute_attention(inputs: AttentionInputs, token) -> AttentionResult:   # module level, on the worker
        from core.experiments.attention_maps import attention_maps   # torch lives on the worker only
        return attention_maps(inputs.model, list(inputs.tokens), ...)

    class AttentionView(View):
        name = "Attention"                       # sub-tab text and compute channel
        reads = frozenset({"model", "tokens"})   # LabState fields inputs() reads
        compute_fn = staticmethod(compute_attention)

        def __init__(self, state, compute, channel_prefix=""):
            super().__init__(state, compute, channel_prefix)
            row = FlowLayout()
            labelled(row, "layer", self.layer_spin)  # a spin bounded by the model: it cannot be wrong
            self.add_controls(row)               # the inputs: above the result, never hidden
            QVBoxLayout(self.content).addWidget(self.heatmap)   # the result

        def inputs(self):                        # GUI thread, cheap: a frozen dataclass, a Refusal or None
            if self.state.model is None:
                return None                      # "waiting for the model"
            if len(self.state.tokens) > self.state.model.config.context_length:
                return Refusal("Text: 40 tokens exceed the context length of 32; delete at least 8 tokens.")
            return AttentionInputs(self.state.model, tuple(self.state.tokens), self.layer_spin.value())

        def show_result(self, result):           # GUI thread: only ever called with a result of the
            self.heatmap.set_data(result.weights)   # inputs inputs() returns right now

The base class does the rest. It keeps the inputs of what is on screen (`shown_inputs`) and its
result. The moment a read field or one of the view's own controls changes (`inputs_changed()`), it
compares inputs(): if they differ from what is shown, the view is marked stale at once (hover readouts
and `stale_labels` are cleared; after a short grace the content is dimmed under an "updating" badge,
so a fast result does not flicker), and an update is scheduled. Only a view that is on screen computes;
a hidden one stays stale and catches up when it is shown. A result is shown only if its inputs are
still the current ones. Requests go to the one compute worker on the view's own channel, where a
newer request supersedes an older one. Every request ends in a callback (result, error, or dropped), so
none is taken as "on its way" once it is gone: a computation the user cancels (Cancel, Esc) says so in
one line where the result would be, and runs again on any input change or when the view is shown again.

A view has two parts. Its inputs (spins, combos, pickers, buttons that change what is computed) go in
`controls_area` through `add_controls()`; its result goes in `content`. A `Refusal` (a text over the
context length, a model the view cannot use, a value its controls allow but the model does not) is
shown where the result would be, as one sentence in the warning colour that names the field and the
fix ("Source: character 'ä' ... is not in the model's vocabulary; remove it"); `content` is hidden under it and its
readouts and `stale_labels` are cleared, so no old number stays beside it. The controls stay visible
and enabled, so the input is corrected where it was made, and the result comes back on the next
valid inputs without leaving the view. A refusal with an `offer` shows a button that loads the model
it names. A computation too long to start on its own (training) returns `AwaitingStart` until its button is
pressed: one line says what pressing it does, and a change of any input asks for a new press. An input
that can only be wrong one way is not typed: a picker or spin bounded by the model (rebuilt when the
model changes) leaves nothing to refuse.

A **panel** is a tab of the main window: shared controls and one or more views (usually a QTabWidget
of them). Panels that have not been split into views yet implement `refresh()` and `submit()` as
before; the base class calls `refresh()` only while the panel is on screen (a hidden panel catches
up when shown) and marks the panel's content stale from a read field's change to its next result.

Rules for both:
- Read and set `self.state` (a `gui.state.LabState`); never reach into another panel.
- Torch work only inside compute functions on the worker (`token.report(fraction, text)` for
  progress, `token.check()` to stop when superseded).
- Colours, pens, fonts and colormaps come from `gui.theme`; `apply_theme()` re-styles plots and
  children that have `apply_theme()`, and runs when the theme or font scale changes.
- `export_targets()` lists what File > Export offers; `settings()` / `restore_settings(data)` round-trip
  the controls through session JSON (restore ignores unknown or malformed keys).
- `result_shown` is emitted once a result is on screen (tests and the self-test wait on it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QLayout, QPushButton, QStackedLayout, QVBoxLayout, QWidget
from shiboken6 import isValid

from gui import theme
from gui.compute import CANCELLED, ComputeController
from gui.hidden_results import drop_if_hidden, release_if_large
from gui.state import LabState
from gui.widgets.stale_mark import StaleMark

STALE_TITLE_OPACITY = 0.3  # a plot's title, faded the moment its inputs change: it names data about to go
WAITING_FOR_MODEL = "Waiting for the model..."
OWN_MINIMUM_HEIGHT = "view_own_minimum_height"  # a cleared label's minimum while it is held at its old height
WAITING_FOR_TORCH = "Waiting for torch to load..."
COMPUTING = "Computing..."
CANCELLED_MESSAGE = "The computation was cancelled: change any input, or show this view again, to run it."


@dataclass(frozen=True)
class Refusal:
    """Inputs a view cannot compute, with the sentence that says why and what to do.

    `offer` names a preset whose model the view can use (the lab holds a model of another family): a button under
    the message loads it. Such a refusal is the view working as meant, not a failure: it is not an error_shown.
    """

    message: str
    offer: str = ""


@dataclass(frozen=True)
class AwaitingStart:
    """Inputs that are valid but wait for the user to start them (a Train button): the message says what to press.
    Nothing computes and nothing is refused; the controls stay as they are."""

    message: str


def _restyle_plots(root: QWidget, skip: Sequence[QWidget] = ()) -> None:
    """Re-style the pyqtgraph plots under root and every child widget that styles itself.

    Widgets inside `skip` (a panel's views, which restyle themselves on the same signals) are left alone.
    """
    def outside(widget: QWidget) -> bool:
        return not any(view.isAncestorOf(widget) for view in skip)

    themed = [child for child in root.findChildren(QWidget) if callable(getattr(child, "apply_theme", None))
              and not isinstance(child, (View, Panel)) and outside(child)]
    inside_themed = {id(plot) for child in themed for plot in child.findChildren(pg.PlotWidget)}
    for plot in root.findChildren(pg.PlotWidget):
        if id(plot) not in inside_themed and outside(plot):
            theme.style_plot(plot)
    for child in themed:  # reusable widgets (gui.widgets.heatmap.Heatmap, ...) style themselves
        child.apply_theme()


class View(QWidget):
    """One result on screen, computed from frozen inputs on the worker; see the module docstring."""

    name: ClassVar[str] = "View"
    reads: ClassVar[frozenset[str]] = frozenset()
    needs_torch: ClassVar[bool] = True
    compute_fn: ClassVar[Callable[[Any, Any], Any] | None] = None

    result_shown = Signal()
    error_shown = Signal(str)
    _update_posted = Signal()

    def __init__(self, state: LabState, compute: ComputeController, channel_prefix: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.compute = compute
        self.channel = f"{channel_prefix}{self.name.lower().replace(' ', '-')}"
        self.setObjectName(f"view-{self.channel.replace('/', '-')}")
        self.shown_inputs: Any = None
        self.result: Any = None
        self.requested_inputs: Any = None  # the inputs of the request on its way, while it may still deliver
        self._request_id: int | None = None  # that request's id with the compute controller
        self.last_error = ""
        self.readouts: list[QLabel] = []  # hover readouts: cleared the moment the view goes stale
        self.stale_labels: list[QLabel] = []  # verdicts and captions: cleared the same way
        self.computations = 0  # requests this view submitted (tests: hidden views do no work)
        self.input_checks = 0  # times inputs_changed read and compared the inputs (tests: a restore reads them once)
        self._held_change: bool | None = None  # while held (see Panel.views_held): whether inputs changed
        self._pending_update = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        # The inputs: above the result, never hidden by a refusal, so what is refused can be corrected here.
        self.controls_area = QWidget()
        self.controls_area.setObjectName("view-controls")
        self.controls_layout = QVBoxLayout(self.controls_area)
        self.controls_layout.setContentsMargins(0, 4, 0, 4)
        self.controls_area.hide()  # until add_controls: a view without inputs of its own gives its result the room
        outer.addWidget(self.controls_area)
        self.result_area = QWidget()
        self.result_area.setObjectName("view-result")
        outer.addWidget(self.result_area, 1)
        self._stack = QStackedLayout(self.result_area)
        self._stack.setContentsMargins(0, 0, 0, 0)
        self.content = QWidget()
        self.message = QLabel(WAITING_FOR_TORCH)
        self.message.setObjectName("view-message")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)  # one sentence, wrapped only where the window is narrower than it
        self.refusal: Refusal | None = None  # the refusal on screen, if one is
        self.offer_button = QPushButton("")  # "Load tiny-encoder": under a Refusal that offers a model
        self.offer_button.setObjectName("view-offer")
        self.offer_button.hide()
        self.offer_button.clicked.connect(self._load_offer)
        self._offer = ""
        self.message_page = QWidget()
        page = QVBoxLayout(self.message_page)
        page.setContentsMargins(0, 8, 0, 0)
        page.addWidget(self.message)
        page.addWidget(self.offer_button, 0, Qt.AlignmentFlag.AlignLeft)
        page.addStretch(1)
        self._stack.addWidget(self.content)
        self._stack.addWidget(self.message_page)
        self._stack.setCurrentWidget(self.message_page)
        self._stale = StaleMark(self.content, self.result_area)
        # A queued call, not a 0 ms timer: Qt delivers posted calls before the low-priority repaint
        # of the edit that caused them (and before timers), so the worker starts while the GUI
        # paints; changes made in one burst still coalesce into one update.
        self.update_scheduled = False
        self._update_posted.connect(self._run_scheduled_update, Qt.ConnectionType.QueuedConnection)
        for field in set(self.reads) | {"torch_ready"}:
            state.signal(field).connect(self.inputs_changed)
        state.theme_changed.connect(self.apply_theme)
        state.font_scale_changed.connect(self.apply_theme)

    # ---- for subclasses ------------------------------------------------------------------------
    def add_controls(self, item: QWidget | QLayout) -> None:
        """Put a row of the view's inputs above its result: it stays visible and enabled through a refusal."""
        if isinstance(item, QLayout):
            self.controls_layout.addLayout(item)
        else:
            self.controls_layout.addWidget(item)
        self.controls_area.show()

    def inputs(self) -> Any:
        """The frozen inputs of the current state and controls; a Refusal; or None (nothing to show yet)."""
        return None

    def show_result(self, result: Any) -> None:
        """Put a result on screen (GUI thread); it belongs to `self.shown_inputs`."""

    def show_partial(self, partial: Any) -> None:
        """A long computation's partial result (the job's `token.partial`), for the inputs now current."""

    def on_stale(self) -> None:
        """Called the moment the inputs change: clear what would now be wrong (readouts are cleared already)."""

    def refresh_hover(self) -> None:
        """Recompute hover readouts for the data now under the cursor (after show_result)."""

    def apply_theme(self) -> None:
        _restyle_plots(self)
        palette = theme.current()
        self.message.setStyleSheet(f"color: {palette.warning if self.refusal or self.last_error else palette.muted};")
        # Redrawn in the new colours only while current: a stale view keeps its numbers cleared.
        if self.result is not None and self.shown_inputs is not None and not self.is_stale:
            self.show_result(self.result)

    def export_targets(self) -> list[tuple[str, Any]]:
        return [(self.name, self)]

    # ---- state ---------------------------------------------------------------------------------
    @property
    def is_stale(self) -> bool:
        return self._stale.stale

    @property
    def is_dimmed(self) -> bool:
        return self._stale.dimmed

    @property
    def showing_message(self) -> bool:
        return self._stack.currentWidget() is self.message_page

    @property
    def refused(self) -> bool:
        """Showing a Refusal of the current inputs (where the result would be, under the controls)."""
        return self.showing_message and self.refusal is not None

    @property
    def offering_model(self) -> bool:
        """Showing a refusal that offers a model of the family the view needs (see Refusal.offer)."""
        return self.showing_message and bool(self._offer)

    def is_on_screen(self) -> bool:
        return self.isVisible()

    @property
    def inputs_held(self) -> bool:
        """Within its panel's views_held(): a change of inputs is answered when the hold ends."""
        return self._held_change is not None

    def inputs_changed(self, *_args: Any) -> None:
        """A read field or a control changed: mark stale now if the inputs differ, update soon."""
        if self._held_change is not None:
            self._held_change = True
            return
        self.input_checks += 1
        inputs = self._current_inputs()
        if self.shown_inputs is not None and inputs != self.shown_inputs:
            self._mark_stale()
        self.schedule_update()

    def update_now(self) -> None:
        """Show what the current inputs call for: the shown result, a message, or a new computation."""
        inputs = self._current_inputs()
        if inputs is None:
            self._show_message(WAITING_FOR_TORCH if self.needs_torch and not self.state.torch_ready
                               else WAITING_FOR_MODEL)
            return
        if isinstance(inputs, AwaitingStart):
            self._show_message(inputs.message)
            return
        if isinstance(inputs, Refusal):
            self._show_message(inputs.message, inputs.offer)
            self.refusal = inputs
            self.message.setStyleSheet(f"color: {theme.current().warning};")
            if not inputs.offer:
                self.error_shown.emit(inputs.message)
            return
        if inputs == self.shown_inputs:
            if self._stale.stale:  # back to what is shown: put back what going stale cleared
                self._stale.set(False)
                self._set_children_stale(False)
                self.show_result(self.result)
                self.refresh_hover()
                self._release_label_heights()
            self._stack.setCurrentWidget(self.content)
            return
        if self.shown_inputs is not None:
            self._mark_stale()
        elif self.showing_message and self.message.text() != COMPUTING:
            # Nothing shown yet, or a refusal the new inputs no longer deserve: say what happens next.
            self.message.setText(COMPUTING)
            self.message.setStyleSheet(f"color: {theme.current().muted};")
            self.refusal = None
            self._offer = ""
            self.offer_button.hide()
        if not self.is_on_screen():
            self._pending_update = True
            return
        self._pending_update = False
        if inputs == self.requested_inputs and self.compute.is_live(self._request_id):
            return  # already on its way
        self.requested_inputs = inputs
        self.computations += 1
        compute_fn = type(self).compute_fn
        request: list[int] = []  # its id, known once submitted (on_dropped never runs inside submit)
        # A result can arrive after the view is gone (its window closed while the worker finished): no one reads it.
        request.append(self.compute.submit(
            self.channel, lambda token: compute_fn(inputs, token),
            lambda result: isValid(self) and self._deliver(inputs, result), f"{self.name.lower()}",
            on_error=lambda message: isValid(self) and self._failed(inputs, message),
            on_partial=lambda partial: isValid(self) and self._partial(inputs, partial),
            on_dropped=lambda reason: isValid(self) and self._request_dropped(request[0], inputs, reason)))
        self._request_id = request[0]

    def schedule_update(self) -> None:
        if not self.update_scheduled:
            self.update_scheduled = True
            self._update_posted.emit()

    # ---- plumbing ------------------------------------------------------------------------------
    def _run_scheduled_update(self) -> None:
        self.update_scheduled = False
        self.update_now()

    def _current_inputs(self) -> Any:
        if self.needs_torch and not self.state.torch_ready:
            return None
        return self.inputs()

    def _mark_stale(self) -> None:
        if self._stale.stale:
            return
        self._stale.set(True)
        self._set_children_stale(True)
        # Cleared labels keep their height until the new text comes: a relayout would resize and
        # re-render every plot below them twice per edit.
        for label in (*self.readouts, *self.stale_labels):
            if label.isVisible():
                if label.property(OWN_MINIMUM_HEIGHT) is None:
                    label.setProperty(OWN_MINIMUM_HEIGHT, label.minimumHeight())
                label.setMinimumHeight(label.height())
        for label in self.readouts:
            label.setText(" ")
        for label in self.stale_labels:
            label.setText("")
        self.on_stale()

    def set_label_minimum_height(self, label: QLabel, height: int) -> None:
        """A readout's or verdict's own minimum: kept, not lost, while a stale view holds the label's height."""
        if label.property(OWN_MINIMUM_HEIGHT) is not None:
            label.setProperty(OWN_MINIMUM_HEIGHT, height)
            label.setMinimumHeight(max(height, label.minimumHeight()))
        else:
            label.setMinimumHeight(height)

    def _release_label_heights(self) -> None:
        for label in (*self.readouts, *self.stale_labels):
            own = label.property(OWN_MINIMUM_HEIGHT)
            if own is not None:  # the minimum the view gave it (two lines for a wrapped readout), not none
                label.setMinimumHeight(int(own))
                label.setProperty(OWN_MINIMUM_HEIGHT, None)

    def _set_children_stale(self, stale: bool) -> None:
        for child in self.content.findChildren(QWidget):
            # Widgets with readouts of their own (gui.widgets.heatmap.Heatmap) stop reading out old data.
            setter = getattr(child, "set_stale", None)
            if callable(setter):
                setter(stale)
            # At once, not after the grace: a title ("T = 1", "offset 2") must not read as current beside new
            # inputs. An item's opacity re-lays out nothing, so a fast result costs no extra layout pass.
            if isinstance(child, pg.PlotWidget):
                child.getPlotItem().titleLabel.setOpacity(STALE_TITLE_OPACITY if stale else 1.0)

    def _show_message(self, text: str, offer: str = "") -> None:
        if self.shown_inputs is not None or self._stale.stale:
            # The result goes with its inputs: no number of it stays beside the message, in the controls or below.
            self._mark_stale()
        self.shown_inputs = self.result = None
        self.requested_inputs = self._request_id = None
        self.refusal = None
        self._stale.set(False)
        self._set_children_stale(False)
        self._release_label_heights()
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {theme.current().muted};")
        self._offer = offer
        self.offer_button.setText(f"Load {offer}")
        self.offer_button.setToolTip(f"Make {offer} the lab's model (its bundled weights when the app has them)")
        self.offer_button.setVisible(bool(offer))
        self._stack.setCurrentWidget(self.message_page)

    def _load_offer(self) -> None:
        from core.presets import get_preset

        if self._offer:
            self.state.set_config(get_preset(self._offer))

    def _deliver(self, inputs: Any, result: Any) -> None:
        if inputs == self.requested_inputs:
            self.requested_inputs = self._request_id = None
        if inputs != self._current_inputs():
            return  # the inputs moved on while it computed: the newer request (or a later show) follows
        if drop_if_hidden(self, result):
            return
        self.last_error = ""
        self.refusal = None
        self.shown_inputs, self.result = inputs, result
        self._stack.setCurrentWidget(self.content)
        self._stale.set(False)
        self._set_children_stale(False)
        self.show_result(result)
        self.refresh_hover()
        self._release_label_heights()
        self.result_shown.emit()

    def _partial(self, inputs: Any, partial: Any) -> None:
        if inputs == self._current_inputs():
            self.show_partial(partial)

    def _request_dropped(self, request_id: int, inputs: Any, reason: str) -> None:
        """The request ended without a result: cancelled by the user, or superseded by another submitter."""
        if request_id != self._request_id:
            return  # the view's own newer request took its place, or a message replaced what it was for
        self.requested_inputs = self._request_id = None
        if inputs != self._current_inputs():
            return  # the update the newer inputs scheduled submits them
        if reason == CANCELLED:
            # Not "Computing..." forever: say so, and run again on any input change or when shown again.
            self._show_message(CANCELLED_MESSAGE)
        else:
            self.schedule_update()

    @property
    def cancelled(self) -> bool:
        """Showing that the user cancelled the computation of the current inputs."""
        return self.showing_message and self.message.text() == CANCELLED_MESSAGE

    def _failed(self, inputs: Any, message: str) -> None:
        if inputs == self.requested_inputs:
            self.requested_inputs = self._request_id = None
        if inputs != self._current_inputs():
            return
        self.last_error = message
        self._show_message(message)
        self.message.setStyleSheet(f"color: {theme.current().warning};")
        self.error_shown.emit(message)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending_update or (self.shown_inputs is None and not self.showing_message) or self.cancelled:
            self.schedule_update()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        release_if_large(self, event)

    def on_release(self) -> None:
        """A hidden view's large result is being dropped (gui.hidden_results): let go of what widgets hold of it."""

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.ParentChange:
            self.schedule_update()

class Panel(QWidget):
    """A tab of the main window: shared controls and views (or, not yet split, refresh() + submit())."""

    title: ClassVar[str] = "Panel"
    shortcut: ClassVar[str] = ""  # e.g. "Ctrl+1"; empty: the main window numbers panels in order
    needs_torch: ClassVar[bool] = True  # refresh() waits for the background torch import
    refresh_on: ClassVar[frozenset[str]] = frozenset({"config", "model", "tokens", "seed", "device"})

    result_shown = Signal()  # a result of the panel, or of one of its views, is on screen
    error_shown = Signal(str)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each panel records its settings() once its outermost __init__ has built it: the defaults a lesson step
        puts back for the settings it does not name (default_settings())."""
        super().__init_subclass__(**kwargs)
        own_init = cls.__dict__.get("__init__")
        if own_init is None:
            return

        def recording_init(self, *args: Any, **init_kwargs: Any) -> None:
            Panel._constructing += 1
            try:
                own_init(self, *args, **init_kwargs)
            finally:
                Panel._constructing -= 1
            if not Panel._constructing:
                self._record_default_settings()

        cls.__init__ = recording_init

    _constructing: ClassVar[int] = 0  # panel __init__ calls under way (panels are built on the GUI thread)

    def __init__(self, state: LabState, compute: ComputeController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._default_settings: dict[str, Any] = {}
        self.setObjectName(f"panel-{self.channel}")
        self.state = state
        self.compute = compute
        self.last_error = ""
        self.views: list[View] = []
        self.refreshes = 0  # refresh() calls (tests: a hidden panel does no work)
        self._refresh_wanted = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        self.message_label = QLabel("")
        self.message_label.setTextFormat(Qt.TextFormat.PlainText)
        self.message_label.setWordWrap(True)
        self.message_label.hide()
        layout.addWidget(self.message_label)
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self._run_refresh)
        self._stale = StaleMark(self, self)
        self._awaiting_result = False
        for field in set(self.refresh_on) | {"torch_ready"}:
            state.signal(field).connect(self._on_read_field_changed)
        state.theme_changed.connect(self.apply_theme)
        state.font_scale_changed.connect(self.apply_theme)
        state.changed.connect(self._on_state_changed)
        self.result_shown.connect(self._on_result_shown)

    # ---- for subclasses ------------------------------------------------------------------------
    @property
    def channel(self) -> str:
        """The compute channel of this panel: its requests supersede only each other."""
        return self.title.lower().replace(" ", "-")

    @contextmanager
    def views_held(self):
        """Hold the views' reactions to changed inputs until the block ends, then react once: restoring settings
        sets many controls, and each view's inputs (a text of 10,000 tokens among them) would be read and
        compared on each."""
        held = [view for view in self.views if view._held_change is None]
        for view in held:
            view._held_change = False
        try:
            yield
        finally:
            for view in held:
                changed, view._held_change = view._held_change, None
                if changed:
                    view.inputs_changed()

    def add_view(self, view: View) -> View:
        """Register a view of this panel: its results count as the panel's for `result_shown`."""
        self.views.append(view)
        view.apply_theme()  # from here on it restyles itself on the theme and text-size signals
        view.result_shown.connect(self.result_shown)
        view.error_shown.connect(self.error_shown)
        return view

    def refresh(self) -> None:
        """Recompute from the state (submit work to the worker); panels without views override."""

    def export_targets(self) -> list[tuple[str, Any]]:
        """(label, QWidget or pg.PlotItem) pairs File > Export offers: the whole panel, then its views' plots."""
        return [(self.title, self), *(target for view in self.views for target in view.export_targets())]

    def settings(self) -> dict[str, Any]:
        return {}

    def restore_settings(self, data: dict[str, Any]) -> None:
        """Apply settings from a session; ignore keys that are unknown or of the wrong type."""

    def default_settings(self) -> dict[str, Any]:
        """settings() as the panel was built, before anyone changed them."""
        return dict(self._default_settings)

    def _record_default_settings(self) -> None:
        try:
            self._default_settings = dict(self.settings())
        except Exception:  # noqa: BLE001 (a panel whose settings need what is not built: no defaults to put back)
            self._default_settings = {}

    def submit(self, fn, on_result, name: str | None = None) -> int:
        self.clear_error()
        self._awaiting_result = True
        return self.compute.submit(self.channel, fn, on_result, name or self.title, on_error=self.show_error)

    def show_error(self, message: str) -> None:
        """Show a computation's failure above the panel's views."""
        self.last_error = message
        self._awaiting_result = False
        self._stale.set(False)
        self.message_label.setText(message)
        self.message_label.setStyleSheet(f"color: {theme.current().warning};")
        self.message_label.show()
        self.error_shown.emit(message)

    def clear_error(self) -> None:
        self.last_error = ""
        self.message_label.hide()

    def apply_theme(self) -> None:
        """Re-style plots outside the views (each view restyles itself) for the theme and font scale; extend
        for custom drawing."""
        _restyle_plots(self, skip=self.views)
        if self.last_error:
            self.message_label.setStyleSheet(f"color: {theme.current().warning};")

    def schedule_refresh(self) -> None:
        self._refresh_timer.start()

    @property
    def is_stale(self) -> bool:
        return self._stale.stale or any(view.is_stale for view in self.views)

    def _on_state_changed(self, field: str) -> None:
        """Panels not yet split into views sync their own widgets here; refreshing is the base's job."""

    # ---- plumbing ------------------------------------------------------------------------------
    def _on_read_field_changed(self, *_args: Any) -> None:
        if type(self).refresh is not Panel.refresh:
            self._stale.set(True)  # until the refresh this change calls for has shown its result
        self.schedule_refresh()

    def _on_result_shown(self) -> None:
        if not self.views or type(self).refresh is not Panel.refresh:
            self._awaiting_result = False
            self._stale.set(False)

    def _run_refresh(self) -> None:
        if self.needs_torch and not self.state.torch_ready:
            return
        if type(self).refresh is Panel.refresh:
            return
        if not self.isVisible():
            self._refresh_wanted = True  # caught up in showEvent
            return
        self._refresh_wanted = False
        self._awaiting_result = False
        self.refreshes += 1
        self.refresh()
        if not self._awaiting_result and not self.last_error:
            self._stale.set(False)  # nothing to compute: what is shown is current

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._refresh_wanted:
            self.schedule_refresh()


__all__ = ["Panel", "View", "Refusal", "StaleMark", "COMPUTING", "CANCELLED_MESSAGE", "WAITING_FOR_MODEL",
           "WAITING_FOR_TORCH"]
