"""Train's "This run" page: a run's loss curves and, when the run tracks it, its induction score below them.

The induction score is measured by the training job (core.experiments.induction.InductionProbe: the best
weight a head of the second layer on puts on the token after the earlier occurrence of its own, over a
seeded sequence of letters written twice) at step 1 and every hundredth of the run. Its plot shares the
loss plot's steps, so the fall of the loss and the rise of the score are read at the same step: the phase
change of Olsson et al. (2022). The dashed line, uniform attention, is the score of a head that reads every
key alike.

The curves follow the run, as the loss curves always did: a new run clears them, each batch of steps
extends them, and the finished run's record redraws them. The page computes nothing.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from core.training_job import TrainingProgress, TrainOutcome
from gui import theme
from gui.widgets.legend import legend_below
from gui.widgets.plot_titles import wrap_title

WAITING_TITLE = "Induction score: measured from step 1 of the run"


def _plot(title: str, left: str) -> pg.PlotWidget:
    plot = wrap_title(pg.PlotWidget())
    plot.setMenuEnabled(False)
    plot.setTitle(title)
    plot.setLabel("bottom", "step")
    plot.setLabel("left", left)
    plot.showGrid(x=True, y=True, alpha=0.25)
    plot.getAxis("left").enableAutoSIPrefix(False)
    plot.getAxis("bottom").enableAutoSIPrefix(False)
    legend_below(plot)
    return plot


class RunPlots(QWidget):
    """The loss plot of a run and the induction-score plot below it (shown for runs that track the score)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.loss_plot = _plot("Loss (nats per character)", "loss")
        self.train_curve = self.loss_plot.plot([], [], name="train (batch)")
        # Redrawn ten times a second with every step so far: long runs are drawn at screen resolution.
        self.train_curve.setDownsampling(auto=True, method="peak")
        self.train_curve.setClipToView(True)
        self.val_curve = self.loss_plot.plot([], [], name="validation", symbol="o", symbolSize=7)
        # The final validation loss is a different measurement (the whole split, in windows of the context
        # length), so it gets its own marker instead of extending the estimates' line.
        self.final_val_marker = self.loss_plot.plot([], [], name="validation, whole split", pen=None, symbol="star",
                                                    symbolSize=14)
        # A legend entry rather than a line label: at the projector's text size a label collides with the legend.
        self.uniform_line = self.loss_plot.plot([], [], name="uniform guess, ln V")
        splitter.addWidget(self.loss_plot)

        self.induction_plot = _plot(WAITING_TITLE, "score")
        self.induction_plot.setObjectName("induction-plot")
        self.induction_plot.setXLink(self.loss_plot)
        self.induction_plot.setYRange(0.0, 1.0, padding=0.05)  # a mean attention weight: 0 to 1
        self.induction_plot.getPlotItem().vb.setMouseEnabled(y=False)
        # 0 and 1 always, even where half a label sticks out of a low plot (pyqtgraph allows that only to an axis
        # without grid lines); 0.5 a minor tick, labelled where the plot is tall enough.
        self.induction_plot.showGrid(x=True, y=False)
        score_axis = self.induction_plot.getAxis("left")
        score_axis.setTicks([[(0.0, "0"), (1.0, "1")], [(0.5, "0.5")]])
        score_axis.setStyle(hideOverlappingLabels=False)
        self.induction_curve = self.induction_plot.plot([], [], name="best head", symbol="o", symbolSize=5)
        self.uniform_attention_line = self.induction_plot.plot([], [], name="uniform attention")
        splitter.addWidget(self.induction_plot)
        splitter.setSizes([5, 4])  # proportions: the loss's legend takes a row more
        self.induction_plot.hide()
        layout.addWidget(splitter)

        self.train_points: tuple[list[float], list[float]] = ([], [])
        self.val_points: tuple[list[float], list[float]] = ([], [])
        self.probe_points: tuple[list[float], list[float]] = ([], [])
        self._steps = 0

    # ---- a run ---------------------------------------------------------------------------------
    def start(self, steps: int, vocab_size: int, track_induction: bool) -> None:
        """A new run: every curve cleared, the steps axis set, the induction plot shown if the run tracks it."""
        self._steps = steps
        self.train_points, self.val_points, self.probe_points = ([], []), ([], []), ([], [])
        for curve in (self.train_curve, self.val_curve, self.final_val_marker, self.induction_curve,
                      self.uniform_attention_line):
            curve.setData([], [])
        self.uniform_line.setData([0, steps], [math.log(vocab_size)] * 2)
        self.loss_plot.setXRange(0, steps, padding=0.02)
        self.induction_plot.setTitle(WAITING_TITLE)
        self.induction_plot.setVisible(track_induction)

    def add(self, progress: TrainingProgress) -> None:
        """A batch of steps from the worker."""
        for points, entries in ((self.train_points, progress.losses), (self.val_points, progress.validation),
                                (self.probe_points, progress.probes)):
            for step, value in entries:
                points[0].append(step)
                points[1].append(value)
        self.train_curve.setData(*self.train_points)
        self.val_curve.setData(*self.val_points)
        self._show_probe(progress.probe, progress.probe_note)

    def finish(self, outcome: TrainOutcome) -> None:
        """The finished run, drawn from its own record."""
        self.train_points = ([s for s, _ in outcome.loss_history], [v for _, v in outcome.loss_history])
        estimates = outcome.val_history[:-1]  # the last entry is the whole-split score at the end
        self.val_points = ([s for s, _ in estimates], [v for _, v in estimates])
        self.probe_points = ([s for s, _ in outcome.probe_history], [v for _, v in outcome.probe_history])
        self.train_curve.setData(*self.train_points)
        self.val_curve.setData(*self.val_points)
        self.final_val_marker.setData([outcome.steps_done], [outcome.final_val_loss])
        self._show_probe(outcome.probe, outcome.probe_note)

    def _show_probe(self, probe, note: str) -> None:
        if probe is None and not note:
            return
        self.induction_curve.setData(*self.probe_points)
        if probe is None:
            self.induction_plot.setTitle(note)
            return
        title = probe.description()
        self.induction_plot.setTitle(title[:1].upper() + title[1:])
        self.uniform_attention_line.setData([0, self._steps], [probe.uniform_score] * 2)

    def last_probe(self) -> float | None:
        """The newest induction score of this run, if it tracks one."""
        return self.probe_points[1][-1] if self.probe_points[1] else None

    # ---- theme ---------------------------------------------------------------------------------
    def apply_theme(self) -> None:
        """The theme and text size (the panel's restyle calls this instead of styling these plots itself)."""
        for plot in (self.loss_plot, self.induction_plot):
            theme.style_plot(plot)
        self.train_curve.setPen(theme.pen("primary"))
        self.val_curve.setPen(theme.pen("secondary"))
        self.val_curve.setSymbolBrush(theme.brush("secondary"))
        self.val_curve.setSymbolPen(theme.pen("secondary", width=1))
        self.val_curve.setSymbolSize(4 + 2 * theme.current().line_width)
        self.final_val_marker.setSymbolBrush(theme.brush("tertiary"))
        self.final_val_marker.setSymbolPen(theme.pen("tertiary", width=1))
        self.final_val_marker.setSymbolSize(10 + 2 * theme.current().line_width)
        self.induction_curve.setPen(theme.pen("highlight"))
        self.induction_curve.setSymbolBrush(theme.brush("highlight"))
        self.induction_curve.setSymbolPen(theme.pen("highlight", width=1))
        self.induction_curve.setSymbolSize(2 + 2 * theme.current().line_width)
        dashed = theme.pen("muted", width=max(1.0, theme.current().line_width / 2), style=Qt.PenStyle.DashLine)
        self.uniform_line.setPen(dashed)
        self.uniform_attention_line.setPen(dashed)
        for plot in (self.loss_plot, self.induction_plot):
            legend = plot.getPlotItem().legend
            fill = theme.color("base")
            fill.setAlpha(220)  # the dashed line and early losses pass behind the legend
            legend.setBrush(pg.mkBrush(fill))
            legend.setPen(theme.pen("muted", width=1))


__all__ = ["WAITING_TITLE", "RunPlots"]
