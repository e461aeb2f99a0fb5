"""Width sweep: the embedding share of all parameters and the FFN share of a block as d_model grows.

The slider picks one width of the computed sweep; the marker and the sentence under the slider read
that width out like a hover readout (cleared while the sweep is stale, recomputed on every result).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSlider, QVBoxLayout

from core.config import ConfigError, ModelConfig
from core.experiments.budgets import sweep_widths
from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.parameters.common import ParametersControls
from gui.widgets.legend import legend_below
from gui.widgets.pie import format_count, format_share
from gui.widgets.plot_titles import wrap_title

@dataclass(frozen=True)
class SweepInputs:
    config: ModelConfig


def compute_sweep(inputs: SweepInputs, token) -> Any:
    from core.experiments.budgets import embedding_share_sweep

    return embedding_share_sweep(inputs.config, sweep_widths(inputs.config))


class SweepView(View):
    name = "Width sweep"
    reads = frozenset({"config"})
    needs_torch = False
    compute_fn = staticmethod(compute_sweep)

    def __init__(self, state, compute, controls: ParametersControls, slider: QSlider, channel_prefix: str = "",
                 parent=None) -> None:
        """slider: the width picker above the view (outside it, so that it is never dimmed or hidden)."""
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        self.width_slider = slider
        self.picked_width: int | None = None  # the width the slider picks (kept across results of the same model)
        self._width_model: str | None = None  # the model that width was picked for; None: any (a session's)
        controls.changed.connect(self.inputs_changed)
        slider.valueChanged.connect(self._on_slider_moved)
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 0, 0, 0)
        self.sweep_label = QLabel("")
        self.sweep_label.setWordWrap(True)
        self.sweep_label.setTextFormat(Qt.TextFormat.RichText)  # the app's markup around computed numbers
        column.addWidget(self.sweep_label)
        self.sweep_plot = wrap_title(pg.PlotWidget())
        self.sweep_plot.setMenuEnabled(False)
        self.sweep_plot.setMouseEnabled(x=False, y=False)
        self.sweep_plot.hideButtons()
        self.sweep_plot.setTitle("As the width grows, the d² blocks outgrow the V·d embeddings")
        self.sweep_plot.setLogMode(x=True, y=False)
        self.sweep_plot.setLabel("bottom", "width d_model")
        self.sweep_plot.setLabel("left", "share (%)")
        self.sweep_plot.showGrid(x=True, y=True, alpha=0.25)
        legend_below(self.sweep_plot)
        self.embedding_curve = self.sweep_plot.plot([], [], name="embeddings / all parameters")
        self.ffn_curve = self.sweep_plot.plot([], [], name="FFN / one block")
        self.sweep_marker = self.sweep_plot.plot([], [], symbol="o", symbolSize=14)
        self.config_width_line = pg.InfiniteLine(angle=90, movable=False, label="", labelOpts={"position": 0.08})
        self.sweep_plot.addItem(self.config_width_line, ignoreBounds=True)
        self.sweep_plot.setYRange(0, 100, padding=0.03)
        column.addWidget(self.sweep_plot, 1)
        self.readouts = [self.sweep_label]

    def inputs(self) -> SweepInputs | Refusal:
        try:
            return SweepInputs(self.controls.shown_config())
        except ConfigError as error:
            return Refusal(f"{error.field}: {error.message}")

    @property
    def sweep(self):
        """The sweep on screen (core.experiments.budgets.EmbeddingShareSweep), None while stale."""
        return self.result if not self.is_stale else None

    def pick_width(self, width: int) -> None:
        """Pick a width for whatever sweep is shown next, or now if it is one of its widths (a session's)."""
        self.picked_width, self._width_model = int(width), None
        sweep = self.sweep
        if sweep is not None and self.picked_width in [int(w) for w in sweep.widths]:
            self._set_slider([int(w) for w in sweep.widths].index(self.picked_width))
            self.refresh_hover()

    def on_stale(self) -> None:
        self.sweep_marker.setData([], [])

    def show_result(self, sweep) -> None:
        config = self.shown_inputs.config
        widths = [int(w) for w in sweep.widths]
        # A new model starts at its own width; the same model (a tying toggle, a theme) keeps the slider's.
        if self.picked_width not in widths or self._width_model not in (None, config.name):
            self.picked_width = config.d_model
        self._width_model = config.name
        self.embedding_curve.setData(sweep.widths.astype(float), 100 * sweep.embedding_share)
        self.ffn_curve.setData(sweep.widths.astype(float), 100 * sweep.ffn_share_of_block)
        for curve, role in ((self.embedding_curve, "primary"), (self.ffn_curve, "tertiary")):
            curve.setPen(theme.pen(role))
        self.config_width_line.setValue(math.log10(config.d_model))
        self.config_width_line.label.setFormat(f"{config.name}: d = {config.d_model:,}")
        self._set_width_ticks(widths)
        self.width_slider.blockSignals(True)
        self.width_slider.setRange(0, len(widths) - 1)
        self.width_slider.blockSignals(False)
        self._set_slider(widths.index(self.picked_width))

    def _set_slider(self, index: int) -> None:
        self.width_slider.blockSignals(True)
        self.width_slider.setValue(index)
        self.width_slider.blockSignals(False)

    def _set_width_ticks(self, widths: list[int]) -> None:
        ticks, width = [], 1
        while width <= widths[-1]:
            if width >= widths[0]:
                ticks.append((math.log10(width), f"{width:,}"))
            width *= 2
        major = ticks[::2] if len(ticks) > 8 else ticks
        self.sweep_plot.getAxis("bottom").setTicks([major, [t for t in ticks if t not in major]])

    def _on_slider_moved(self, index: int) -> None:
        sweep = self.sweep
        if sweep is None or not 0 <= index < len(sweep.widths):
            return
        self.picked_width = int(sweep.widths[index])
        self.refresh_hover()

    def refresh_hover(self) -> None:
        """The marker and the sentence for the slider's width, from the sweep on screen."""
        from core.experiments.budgets import BudgetError, scaled_config

        sweep = self.sweep
        if sweep is None:
            self.sweep_label.setText(" ")
            return
        index = self.width_slider.value()
        width, share, ffn = int(sweep.widths[index]), float(sweep.embedding_share[index]), float(sweep.ffn_share_of_block[index])
        self.sweep_marker.setData([float(width)], [100 * share])
        try:
            scaled = scaled_config(self.shown_inputs.config, width)
        except BudgetError as error:
            self.sweep_label.setText(str(error))
            return
        self.sweep_label.setText(
            f"<b>d = {width:,}</b> ({scaled.n_heads} heads of {scaled.d_head}, d_ff {scaled.d_ff:,}):"
            f" {format_count(int(sweep.total_params[index]))} parameters; the embeddings are <b>{format_share(share)}</b>"
            f" of them, the FFN {format_share(ffn)} of a block.")

    def apply_theme(self) -> None:
        super().apply_theme()
        self.sweep_marker.setSymbolBrush(theme.brush("highlight"))
        self.sweep_marker.setSymbolPen(theme.pen("text", width=2))
        self.sweep_marker.setSymbolSize(10 + 2 * theme.current().line_width)
        self.config_width_line.setPen(theme.pen("muted", width=max(1.0, theme.current().line_width / 2), style=Qt.PenStyle.DashLine))
        self.config_width_line.label.setColor(theme.color("text"))
        self.config_width_line.label.setFont(theme.font(0.9))
        for curve, role in ((self.embedding_curve, "primary"), (self.ffn_curve, "tertiary")):
            curve.setPen(theme.pen(role))

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Embedding share by width (plot)", self.sweep_plot.getPlotItem())]
