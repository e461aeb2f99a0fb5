"""Train's Compare page: the reading's pitfalls trained beside their fix, same seed and steps, curves on one plot.

The comparison is one job on the Train panel's channel (core.comparison_job.run_pitfall_job, which runs
core.experiments.pitfalls.run_comparison), run like a training run: partial results a few times a second (`token.partial`), the other panels'
requests between its steps (`token.let_others_run`), Pause and Stop polled between steps. Its models
are never installed as the lab's model: a leaky model would mislead every other panel.

The numbers under the plots describe exactly the comparison drawn: change the experiment, the steps
or the seed and they are cleared and the curves dimmed until Compare runs again; a comparison that
ended after they changed would draw its curves, dimmed, and show no number.

The page keeps the view contract's promises (gui/panels/base.py: stale at once, no number beside
other inputs, no old number back on a theme change) but is no View: a View computes by itself
whenever its inputs change, and a comparison is minutes of training that runs only on Compare, sends
partial curves, pauses and stops with the Train panel's runs on their channel, keeps its old curves in
view for comparison, and shows its plots and its numbers in two of the panel's tabs.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.display import plural
from core.comparison_job import CompareRequest, ComparisonProgress
from core.experiments.pitfall_setups import (
    EXPERIMENT_NAMES,
    EXPERIMENT_TITLES,
    EXPERIMENTS,
    MAX_STEPS,
    RUN_LABELS,
    SIZES,
    run_keys,
)
from gui import theme
from gui.widgets.legend import legend_below
from gui.widgets.log_axis import log_ready_axes
from gui.widgets.plot_titles import wrap_title

STALE_OPACITY = 0.3
GRADIENT_RUN_DEFAULT = {"masks": "causal", "warmup": "post"}


class ComparePage(QWidget):
    """The controls, the two plots and the summary of one comparison."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        controls = QGridLayout()
        self.experiment_combo = QComboBox()
        for name in EXPERIMENTS:
            self.experiment_combo.addItem(EXPERIMENT_NAMES[name], name)
            self.experiment_combo.setItemData(self.experiment_combo.count() - 1, EXPERIMENT_TITLES[name],
                                              Qt.ItemDataRole.ToolTipRole)
        self.experiment_combo.setToolTip("which of the reading's pitfalls to train beside its fix")
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, MAX_STEPS)
        self.steps_spin.setSingleStep(50)
        self.steps_spin.setKeyboardTracking(False)
        self.steps_spin.setToolTip("optimizer steps of every run in the comparison")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 999_999)
        self.seed_spin.setKeyboardTracking(False)
        self.seed_spin.setToolTip("one seed for every run: the same initial weights and the same batches")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("train every run of the comparison, one after the other, on the bundled corpus")
        # Two short rows: at the projector's text size one row would cut the experiment's name.
        # The combo may shrink below its longest name (the tooltip holds the full title), so the page stays narrow.
        self.experiment_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.experiment_combo.setMinimumContentsLength(12)
        placed = ((0, 0, "Experiment", self.experiment_combo), (1, 0, "Steps", self.steps_spin), (1, 2, "Seed", self.seed_spin))
        for row, column, caption, widget in placed:
            label = QLabel(caption)
            label.setBuddy(widget)
            controls.addWidget(label, row, column)
            controls.addWidget(widget, row, column + 1, 1, 3 if row == 0 else 1)
        controls.addWidget(self.compare_button, 1, 4)
        controls.setColumnStretch(1, 1)
        layout.addLayout(controls)
        # The numbers live in their own page (the panel puts it beside the plots), so the plots keep the height.
        self.numbers_page = QScrollArea()
        self.numbers_page.setWidgetResizable(True)
        self.numbers_page.setFrameShape(QFrame.Shape.NoFrame)
        self.numbers_page.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        numbers = QWidget()
        numbers_layout = QVBoxLayout(numbers)
        self.numbers_page.setWidget(numbers)
        self.setup_label = QLabel("")
        self.setup_label.setWordWrap(True)
        self.setup_label.setTextFormat(Qt.TextFormat.PlainText)
        numbers_layout.addWidget(self.setup_label)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.loss_plot = wrap_title(pg.PlotWidget())
        self.loss_plot.setMenuEnabled(False)
        self.loss_plot.setTitle("Training loss, same seed and steps")
        self.loss_plot.setLabel("bottom", "step")
        self.loss_plot.setLabel("left", "loss (nats/char)")
        self.loss_plot.showGrid(x=True, y=True, alpha=0.25)
        legend_below(self.loss_plot)
        self.loss_curves: dict[str, pg.PlotDataItem] = {}
        splitter.addWidget(self.loss_plot)

        gradient_box = QWidget()
        gradient_layout = QVBoxLayout(gradient_box)
        gradient_layout.setContentsMargins(0, 0, 0, 0)
        row = QGridLayout()
        self.gradient_run_combo = QComboBox()
        self.gradient_run_combo.setToolTip("the run whose per-block gradient norms are drawn")
        row.addWidget(QLabel("Gradient norms of"), 0, 0)
        row.addWidget(self.gradient_run_combo, 0, 1)
        row.setColumnStretch(1, 1)
        gradient_layout.addLayout(row)
        self.gradient_plot = wrap_title(pg.PlotWidget(axisItems=log_ready_axes()))
        self.gradient_plot.setMenuEnabled(False)
        self.gradient_plot.setTitle("Each block's gradient norm, before clipping")
        self.gradient_plot.setLabel("bottom", "step")
        self.gradient_plot.setLabel("left", "||dL/dθ|| of the block")
        self.gradient_plot.setLogMode(y=True)
        self.gradient_plot.showGrid(x=True, y=True, alpha=0.25)
        legend_below(self.gradient_plot)
        gradient_layout.addWidget(self.gradient_plot, 1)
        splitter.addWidget(gradient_box)
        layout.addWidget(splitter, 1)

        self.summary_label = QLabel("")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        numbers_layout.addWidget(self.summary_label)
        self.verdict_label = QLabel("")
        self.verdict_label.setWordWrap(True)
        self.verdict_label.setTextFormat(Qt.TextFormat.PlainText)
        self.verdict_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        numbers_layout.addWidget(self.verdict_label)
        self.samples_label = QLabel("")  # generated text: plain, whatever characters the models produced
        self.samples_label.setWordWrap(True)
        self.samples_label.setTextFormat(Qt.TextFormat.PlainText)
        self.samples_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.samples_label.setToolTip("each model continues the held-out text's first character (temperature 0.8, "
                                      "the comparison's seed), as Generate would")
        numbers_layout.addWidget(self.samples_label)
        numbers_layout.addStretch(1)

        self.size = "lecture"  # the sizes every comparison from this page trains at (tests choose "ci")
        self.request_shown: CompareRequest | None = None  # what the curves and numbers describe
        self.comparison = None  # core.experiments.pitfalls.PitfallComparison of request_shown, once finished
        self.partial_losses: dict[str, tuple[list[float], list[float]]] = {}
        self.partial_norms: dict[str, list[tuple[int, tuple[float, ...]]]] = {}
        self.experiment_combo.currentIndexChanged.connect(self._on_experiment_changed)
        self.steps_spin.valueChanged.connect(self.mark_if_stale)
        self.seed_spin.valueChanged.connect(self.mark_if_stale)
        self.gradient_run_combo.currentIndexChanged.connect(self._draw_gradients)
        self._on_experiment_changed()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        # No wider than it must be: the panel is laid out from its pages' hints, and the plots stretch anyway.
        hint = super().sizeHint()
        return QSize(self.minimumSizeHint().width(), hint.height())

    # ---- inputs --------------------------------------------------------------------------------
    def request(self) -> CompareRequest:
        return CompareRequest(self.experiment_combo.currentData(), self.steps_spin.value(), self.seed_spin.value(),
                              self.size)

    @property
    def is_stale(self) -> bool:
        return self.request_shown is not None and self.request_shown != self.request()

    def _on_experiment_changed(self) -> None:
        experiment = self.experiment_combo.currentData()
        self.steps_spin.blockSignals(True)
        self.steps_spin.setValue(SIZES[self.size][experiment].steps)
        self.steps_spin.blockSignals(False)
        self._describe_setup()
        self.mark_if_stale()

    def _describe_setup(self) -> None:
        request = self.request()
        setup = request.setup()
        warm = f"; the warm-up run warms up over {setup.warmup_steps} steps" if request.experiment == "warmup" else ""
        self.setup_label.setText(
            f"{EXPERIMENT_TITLES[request.experiment]}: {plural(setup.n_layers, 'block')}, d_model {setup.d_model}, "
            f"{setup.n_heads} heads; {setup.steps:,} steps of {setup.batch_size} x {setup.seq_len} characters at "
            f"learning rate {setup.lr:g}{warm}; the first {setup.corpus_chars:,} characters of the bundled "
            "Shakespeare, the last tenth held out. These models are not installed as the lab's model.")

    def mark_if_stale(self) -> None:
        """Numbers of another request are cleared at once; its curves stay, dimmed, for comparison."""
        self._describe_setup()
        stale = self.is_stale
        for plot in (self.loss_plot, self.gradient_plot):
            plot.setOpacity(STALE_OPACITY if stale else 1.0)
        if stale:
            shown = self.request_shown
            self.summary_label.setText("")
            self.samples_label.setText("")
            self.verdict_label.setText(f"The curves are of {EXPERIMENT_TITLES[shown.experiment]}, {shown.steps:,} "
                                       f"steps, seed {shown.seed}; press Compare to measure the settings above.")
        elif self.comparison is not None:
            self._show_numbers()

    # ---- a run ---------------------------------------------------------------------------------
    def start(self, request: CompareRequest) -> None:
        self.request_shown = request
        self.comparison = None
        self.partial_losses = {key: ([], []) for key in run_keys(request.experiment)}
        self.partial_norms = {key: [] for key in run_keys(request.experiment)}
        self._build_curves(request.experiment)
        self.loss_plot.setXRange(0, request.steps, padding=0.02)
        self.summary_label.setText("")
        self.samples_label.setText("")
        self.verdict_label.setText("Training the runs one after the other...")
        self.mark_if_stale()

    def add_progress(self, progress: ComparisonProgress) -> None:
        for key, points in progress.losses.items():
            xs, ys = self.partial_losses.setdefault(key, ([], []))
            for step, loss in points:
                xs.append(step)
                ys.append(loss)
            if key in self.loss_curves:
                self.loss_curves[key].setData(xs, ys)
        for key, records in progress.grad_norms.items():
            self.partial_norms.setdefault(key, []).extend(records)
        if progress.running:
            self.verdict_label.setText(f"Training {RUN_LABELS[progress.running]}...")
        self._draw_gradients()

    def show_comparison(self, comparison) -> None:
        """The finished comparison: every curve from its full record, then the measured numbers."""
        self.comparison = comparison
        for run in comparison.runs:
            self.partial_losses[run.key] = ([s for s, _ in run.loss_history], [v for _, v in run.loss_history])
            self.partial_norms[run.key] = list(zip(run.grad_norm_steps, run.grad_norms))
            if run.key in self.loss_curves:
                self.loss_curves[run.key].setData(*self.partial_losses[run.key])
        self._draw_gradients()
        self.mark_if_stale()  # its numbers only while the settings above are still the ones it ran

    def stopped_without_result(self, message: str) -> None:
        self.comparison = None
        self.summary_label.setText("")
        self.samples_label.setText("")
        self.verdict_label.setText(message)

    def _show_numbers(self) -> None:
        from core.experiments.pitfalls import summary_rows, verdict

        comparison = self.comparison
        rows = summary_rows(comparison)
        lines = []
        for row in rows:
            lines.append(
                f"<b>{row['label']}</b><br>training loss, last tenth <b>{_number(row['final_train_loss'], False)}</b>; "
                f"held-out under its own mask {_number(row['held_out_own_mask'], False)}, under the causal mask "
                f"<b>{_number(row['held_out_causal'], False)}</b>; last / first block gradient "
                f"{_number(row['gradient_ratio_first_tenth'], True)} over the first tenth, "
                f"{_number(row['gradient_ratio_last_tenth'], True)} over the last")
        self.summary_label.setText("<br><br>".join(lines))
        self.verdict_label.setText(verdict(comparison))
        self.samples_label.setText("\n".join(f"{run.label} generates: {_breakable(' '.join(run.sample.split())[:100])}"
                                             for run in comparison.runs))

    # ---- drawing -------------------------------------------------------------------------------
    def _build_curves(self, experiment: str) -> None:
        self.loss_plot.clear()
        self.loss_curves = {}
        for index, key in enumerate(run_keys(experiment)):
            curve = self.loss_plot.plot([], [], name=RUN_LABELS[key], pen=pg.mkPen(theme.series_color(index),
                                                                                   width=theme.current().line_width))
            curve.setDownsampling(auto=True, method="peak")
            self.loss_curves[key] = curve
        self.gradient_run_combo.blockSignals(True)
        self.gradient_run_combo.clear()
        for key in run_keys(experiment):
            self.gradient_run_combo.addItem(RUN_LABELS[key], key)
        self.gradient_run_combo.setCurrentIndex(max(0, self.gradient_run_combo.findData(GRADIENT_RUN_DEFAULT[experiment])))
        self.gradient_run_combo.blockSignals(False)

    def _draw_gradients(self) -> None:
        self.gradient_plot.clear()
        records = self.partial_norms.get(self.gradient_run_combo.currentData(), [])
        if not records:
            return
        steps = [step for step, _ in records]
        blocks = len(records[0][1])
        colors = theme.colormap().getLookupTable(0.0, 0.85, max(blocks, 2))  # (blocks, 3): dark = first block
        for block in range(blocks):
            values = [max(norms[block], 1e-12) for _, norms in records]
            name = f"block {block}" if block in (0, blocks - 1) else None
            color = tuple(int(c) for c in colors[block][:3])
            self.gradient_plot.plot(steps, values, name=name, pen=pg.mkPen(color, width=theme.current().line_width))

    def apply_theme(self) -> None:
        """Called by the panel's restyle (this page styles its own plots, as reusable widgets do)."""
        for plot in (self.loss_plot, self.gradient_plot):
            theme.style_plot(plot)
        for index, curve in enumerate(self.loss_curves.values()):
            curve.setPen(pg.mkPen(theme.series_color(index), width=theme.current().line_width))
        self._draw_gradients()
        for plot in (self.loss_plot, self.gradient_plot):
            legend = plot.getPlotItem().legend
            fill = theme.color("base")
            fill.setAlpha(220)
            legend.setBrush(pg.mkBrush(fill))
            legend.setPen(theme.pen("muted", width=1))


def _breakable(text: str, every: int = 16) -> str:
    """A zero-width space inside long runs of letters, so a sample like 'gggg...' wraps instead of widening the pane."""
    words = []
    for word in text.split(" "):
        words.append("\u200b".join(word[i : i + every] for i in range(0, len(word), every)))
    return " ".join(words)


def _number(value: float, ratio: bool) -> str:
    if not math.isfinite(value):
        return "-"
    return f"x{value:.3g}" if ratio else f"{value:.3f}"


__all__ = ["ComparePage"]
