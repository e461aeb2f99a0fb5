"""The panel contract. Adding a panel = one file in gui/panels/ + one line in PANEL_CLASSES.

A panel is a QWidget built from the shared `LabState` and the one `ComputeController`:

    class AttentionPanel(Panel):
        title = "Attention"                     # tab text, menu entry, session key
        shortcut = ""                           # "" -> the window assigns Ctrl+<position>
        refresh_on = frozenset({"model", "tokens", "selected_layer"})   # LabState fields

        def __init__(self, state, compute, parent=None):
            super().__init__(state, compute, parent)
            self.plot = pg.PlotWidget()         # create plot items once ...
            self.image = pg.ImageItem()
            self.plot.addItem(self.image)
            self.layout().addWidget(self.plot)
            self.apply_theme()

        def refresh(self):                      # called when a refresh_on field changed
            model, tokens = self.state.model, self.state.tokens
            if model is None:                   # (and once torch is ready)
                return
            self.submit(lambda: run_attention(model, tokens), self.show_result, "attention maps")

        def show_result(self, result):          # GUI thread, only if still the newest request
            self.image.setImage(result.pattern, autoLevels=False)   # ... and update them
            self.result_shown.emit()

Rules:
- Read and set `self.state` (a `gui.state.LabState`); never reach into another panel.
- All torch work goes through `self.submit(fn, on_result, name)`: fn runs on the one worker thread
  (import torch inside fn or at module level of a core module, never on the GUI thread), it may take
  a `CancelToken` argument for progress (`token.report(fraction, text)`) and cancellation. Only the
  newest request of the panel's channel is delivered; an exception arrives in `show_error(message)`.
- `refresh()` is debounced: several state changes in one event-loop turn give one call. It is not
  called before `state.torch_ready` when `needs_torch` is True.
- Colours, pens, fonts and colormaps come from `gui.theme`; `apply_theme()` re-styles every
  pyqtgraph PlotWidget inside the panel, calls `apply_theme()` on child widgets that have one (the
  reusable `gui.widgets.heatmap.Heatmap` does), and runs when the theme or font scale changes
  (extend it for anything else you draw, e.g. token chips, and call super()).
- `export_targets()` lists what File > Export offers: (label, QWidget or pg.PlotItem) pairs.
- `settings()` / `restore_settings(data)` round-trip the panel's own controls through session JSON
  (plain JSON types only); restore_settings must ignore unknown or malformed keys.
- Emit `result_shown` after a result is displayed (tests and the self-test wait on it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyqtgraph as pg
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gui import theme
from gui.compute import ComputeController
from gui.state import LabState


class Panel(QWidget):
    title: ClassVar[str] = "Panel"
    shortcut: ClassVar[str] = ""  # e.g. "Ctrl+1"; empty: the main window numbers panels in order
    needs_torch: ClassVar[bool] = True  # refresh() waits for the background torch import
    refresh_on: ClassVar[frozenset[str]] = frozenset({"config", "model", "tokens", "seed", "device"})

    result_shown = Signal()  # emitted by subclasses once a result is on screen
    error_shown = Signal(str)

    def __init__(self, state: LabState, compute: ComputeController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"panel-{self.channel}")
        self.state = state
        self.compute = compute
        self.last_error = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        self.message_label = QLabel("")
        self.message_label.setWordWrap(True)
        self.message_label.hide()
        layout.addWidget(self.message_label)
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self._run_refresh)
        state.changed.connect(self._on_state_changed)

    # ---- for subclasses ------------------------------------------------------------------------
    @property
    def channel(self) -> str:
        """The compute channel of this panel: its requests supersede only each other."""
        return self.title.lower().replace(" ", "-")

    def refresh(self) -> None:
        """Recompute from the state (submit work to the worker); override."""

    def export_targets(self) -> list[tuple[str, Any]]:
        """(label, QWidget or pg.PlotItem) pairs File > Export offers; the whole panel by default."""
        return [(self.title, self)]

    def settings(self) -> dict[str, Any]:
        return {}

    def restore_settings(self, data: dict[str, Any]) -> None:
        """Apply settings from a session; ignore keys that are unknown or of the wrong type."""

    def submit(self, fn, on_result, name: str | None = None) -> int:
        self.clear_error()
        return self.compute.submit(self.channel, fn, on_result, name or self.title, on_error=self.show_error)

    def show_error(self, message: str) -> None:
        """Show a computation's failure above the panel's views (the last good result stays)."""
        self.last_error = message
        self.message_label.setText(message)
        self.message_label.setStyleSheet(f"color: {theme.current().warning};")
        self.message_label.show()
        self.error_shown.emit(message)

    def clear_error(self) -> None:
        self.last_error = ""
        self.message_label.hide()

    def apply_theme(self) -> None:
        """Re-style plots for the current theme and font scale; extend for custom drawing."""
        themed = [child for child in self.findChildren(QWidget) if callable(getattr(child, "apply_theme", None))]
        inside_themed = {id(plot) for child in themed for plot in child.findChildren(pg.PlotWidget)}
        for plot in self.findChildren(pg.PlotWidget):
            if id(plot) not in inside_themed:
                theme.style_plot(plot)
        for child in themed:  # reusable widgets (gui.widgets.heatmap.Heatmap, ...) style themselves
            child.apply_theme()
        if self.last_error:
            self.message_label.setStyleSheet(f"color: {theme.current().warning};")

    def schedule_refresh(self) -> None:
        self._refresh_timer.start()

    # ---- plumbing ------------------------------------------------------------------------------
    def _on_state_changed(self, field: str) -> None:
        if field in ("theme", "font_scale"):
            self.apply_theme()
        elif field in self.refresh_on or field == "torch_ready":
            self.schedule_refresh()

    def _run_refresh(self) -> None:
        if self.needs_torch and not self.state.torch_ready:
            return
        self.refresh()


__all__ = ["Panel"]
