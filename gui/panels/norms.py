"""Norms: the reading's exercise 3. How big do the residual stream and its gradient get with depth?

One stack of random blocks (weights and tokens from the state's seed) is run twice with the same
weights, pre-norm and post-norm. The first plot is the mean per-token L2 norm of the residual stream
at every block boundary, the second the norm of d loss / d stream there from one backward pass of a
next-token loss, the third each block's weight gradient d loss / d W from the same pass (the quantity
the pre-norm / post-norm analysis follows from layer to layer). The captions state what the numbers
say: the stream gradient's change split into its steps (post-norm's is one step, into the
embeddings), the weight gradients' last block against the first.

The panel holds the controls; `NormsView` is the one view (gui.panels.base.View): its frozen
`NormsInputs` are the depth, norm, seed and residual scaling, `compute_norms` runs both stacks on the
worker, and the hover readout on the plots is recomputed from each new result. Log scale is a way of
drawing the same numbers, not an input: toggling it redraws without recomputing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.experiments.norms_captions import (
    describe_forward,
    describe_gradients,
    describe_parameter_gradients,
    describe_regime,
    fitted_change,
)
from gui import theme
from gui.panels.base import Panel, Refusal, View
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.legend import legend_below
from gui.widgets.log_axis import log_ready_axes
from gui.widgets.plot_titles import wrap_title

# core.experiments.norms imports torch, which the GUI thread must not; these copy its bounds (a test checks).
MAX_DEPTH = 96
MAX_WIDTH = 1024
MAX_STACK_WEIGHTS = 60_000_000
INIT_CHOICES = (("GPT-2 N(0, 0.02)", "gpt2"), ("Xavier (Xiong et al.)", "xavier"))
PAPER_WIDTH, PAPER_HEADS, PAPER_DEPTH = 512, 8, 12
D_MODEL = 64  # the reading's block width; post-norm pins every token to norm sqrt(d) = 8
DEFAULT_HEADS = 4
SEQ, BATCH = 32, 4  # the loss is averaged over SEQ * BATCH next-token predictions
NORM_CHOICES = (("LayerNorm", "layernorm"), ("RMSNorm", "rmsnorm"))
NORM_NAMES = dict((value, text) for text, value in NORM_CHOICES)
PLACEMENTS = ("pre", "post")
DEFAULT_DEPTH = 12
PLOT_MIN_CHARS = 32  # a plot narrower than this many characters of the UI font loses its tick labels


@dataclass(frozen=True)
class NormsInputs:
    depth: int
    norm: str  # "layernorm" or "rmsnorm"
    seed: int
    residual_scaling: bool
    init: str = "gpt2"  # "gpt2" or "xavier"
    d_model: int = D_MODEL
    n_heads: int = DEFAULT_HEADS


def stack_weights(depth: int, d_model: int) -> int:
    """Weight-matrix entries of the stack: 4 d^2 in attention, 8 d^2 in the FFN, per block."""
    return 12 * depth * d_model * d_model


def compute_norms(inputs: NormsInputs, token) -> Any:
    """Worker: the same random stack pre-norm and post-norm (a core.experiments.norms.PlacementComparison)."""
    from core.experiments.norms import PlacementComparison, norm_curves

    curves = {}
    for index, placement in enumerate(PLACEMENTS):
        token.report(index / len(PLACEMENTS), f"{inputs.depth}-block {placement}-norm stack")
        curves[placement] = norm_curves(inputs.depth, placement, inputs.norm, inputs.seed, d_model=inputs.d_model,
                                        n_heads=inputs.n_heads, seq=SEQ, batch=BATCH,
                                        residual_scaling=inputs.residual_scaling, init=inputs.init)
    return PlacementComparison(pre=curves["pre"], post=curves["post"])


class WrappingPlots(QWidget):
    """The plots side by side while each gets a readable width; otherwise the last one under the others."""

    def __init__(self, plots: tuple[pg.PlotWidget, ...], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plots = plots
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.columns = 0
        self.arrange(len(plots))

    def readable_width(self) -> int:
        return PLOT_MIN_CHARS * QFontMetrics(theme.font()).averageCharWidth()

    def arrange(self, columns: int) -> None:
        """One row of all the plots, or (fewer columns) the others on top and the last spanning a row below."""
        columns = max(1, min(columns, len(self.plots)))
        if columns == self.columns:
            return
        self.columns = columns
        for plot in self.plots:
            self.grid.removeWidget(plot)
        wrapped = columns < len(self.plots)
        top = self.plots[:-1] if wrapped else self.plots
        for column, plot in enumerate(top):
            self.grid.addWidget(plot, 0, column)
        if wrapped:
            self.grid.addWidget(self.plots[-1], 1, 0, 1, len(top))
        for column in range(len(self.plots)):
            self.grid.setColumnStretch(column, 1 if column < len(top) else 0)
        self.grid.setRowStretch(0, 1)
        self.grid.setRowStretch(1, 1 if wrapped else 0)

    def fit(self) -> None:
        """Arrange for the present width and text size."""
        fits = self.width() >= len(self.plots) * self.readable_width()
        self.arrange(len(self.plots) if fits else len(self.plots) - 1)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()


class NormsControls(QObject):
    """Depth, norm, residual scaling and log scale; `changed` fires for an input, `log_changed` for the drawing."""

    changed = Signal()
    log_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.depth_caption = QLabel("Blocks")
        self.depth_spin = QSpinBox()
        self.depth_spin.setRange(1, MAX_DEPTH)
        self.depth_spin.setValue(DEFAULT_DEPTH)
        self.depth_spin.setToolTip(f"blocks in the random stack (1 to {MAX_DEPTH})")
        self.depth_spin.setKeyboardTracking(False)
        self.depth_caption.setBuddy(self.depth_spin)
        self.depth_slider = QSlider(Qt.Orientation.Horizontal)
        self.depth_slider.setRange(1, MAX_DEPTH)
        self.depth_slider.setValue(DEFAULT_DEPTH)
        self.depth_slider.setToolTip("drag to change the depth; the newest depth replaces any pending one")
        self.depth_slider.setMinimumWidth(240)
        self.norm_caption = QLabel("Norm")
        self.norm_combo = QComboBox()
        for text, value in NORM_CHOICES:
            self.norm_combo.addItem(text, value)
        self.norm_combo.setToolTip("LayerNorm centres and scales each token; RMSNorm only scales")
        self.norm_caption.setBuddy(self.norm_combo)
        self.init_caption = QLabel("Init")
        self.init_combo = QComboBox()
        for text, value in INIT_CHOICES:
            self.init_combo.addItem(text, value)
        self.init_combo.setToolTip("GPT-2: every weight N(0, 0.02). Xavier: Xiong et al.'s set-up (Xavier-uniform "
                                   "linears, N(0, 1) embeddings, sinusoidal positions, ReLU, no final norm after post-norm)")
        self.init_caption.setBuddy(self.init_combo)
        self.width_caption = QLabel("Width d")
        self.width_spin = QSpinBox()
        self.width_spin.setRange(8, MAX_WIDTH)
        self.width_spin.setSingleStep(8)
        self.width_spin.setValue(D_MODEL)
        self.width_spin.setKeyboardTracking(False)
        self.width_spin.setToolTip(f"d_model of the random stack (8 to {MAX_WIDTH}; a multiple of the heads)")
        self.width_caption.setBuddy(self.width_spin)
        self.heads_caption = QLabel("Heads")
        self.heads_spin = QSpinBox()
        self.heads_spin.setRange(1, 64)
        self.heads_spin.setValue(DEFAULT_HEADS)
        self.heads_spin.setKeyboardTracking(False)
        self.heads_spin.setToolTip("attention heads per block (the width must divide by them)")
        self.heads_caption.setBuddy(self.heads_spin)
        self.paper_button = QPushButton("Paper's set-up")
        self.paper_button.setToolTip(f"Xavier, d = {PAPER_WIDTH}, {PAPER_HEADS} heads, {PAPER_DEPTH} blocks "
                                     "(the base Transformer's sizes)")
        self.model_button = QPushButton("Loaded model's sizes")
        self.model_button.setToolTip("depth, width and heads of the model loaded in the lab (capped at the bounds)")
        self.scaling_check = QCheckBox("Residual scaling 1/√(2N)")
        self.scaling_check.setToolTip("scale the output projections' initial weights by 1/sqrt(2 x blocks), as GPT-2 does")
        self.log_check = QCheckBox("Log scale")
        self.log_check.setToolTip("logarithmic y axes")
        self.depth_spin.valueChanged.connect(self._on_depth_spin)
        self.depth_slider.valueChanged.connect(self._on_depth_slider)
        self.norm_combo.currentIndexChanged.connect(self.changed)
        self.init_combo.currentIndexChanged.connect(self._on_init)
        self.width_spin.valueChanged.connect(self.changed)
        self.heads_spin.valueChanged.connect(self.changed)
        self.paper_button.clicked.connect(self.use_paper_setup)
        self.scaling_check.toggled.connect(self.changed)
        self.log_check.toggled.connect(self.log_changed)

    def _on_init(self) -> None:
        # GPT-2's residual scaling is no part of the Xavier set-up.
        xavier = self.init_combo.currentData() == "xavier"
        if xavier:
            self.scaling_check.blockSignals(True)
            self.scaling_check.setChecked(False)
            self.scaling_check.blockSignals(False)
        self.scaling_check.setEnabled(not xavier)
        self.changed.emit()

    def set_sizes(self, depth: int, width: int, heads: int, init: str | None = None) -> None:
        """Set several inputs with one `changed` at the end (one computation, not four)."""
        widgets = (self.depth_spin, self.depth_slider, self.width_spin, self.heads_spin, self.init_combo, self.scaling_check)
        for widget in widgets:
            widget.blockSignals(True)
        self.depth_spin.setValue(depth)
        self.depth_slider.setValue(self.depth_spin.value())
        self.width_spin.setValue(width)
        self.heads_spin.setValue(heads)
        if init is not None:
            self.init_combo.setCurrentIndex(self.init_combo.findData(init))
        if self.init_combo.currentData() == "xavier":
            self.scaling_check.setChecked(False)
        self.scaling_check.setEnabled(self.init_combo.currentData() != "xavier")
        for widget in widgets:
            widget.blockSignals(False)
        self.changed.emit()

    def use_paper_setup(self) -> None:
        self.set_sizes(PAPER_DEPTH, PAPER_WIDTH, PAPER_HEADS, "xavier")

    def use_model_sizes(self, config) -> None:
        self.set_sizes(min(max(1, config.n_layers), MAX_DEPTH), min(max(8, config.d_model), MAX_WIDTH),
                       min(max(1, config.n_heads), 64))

    def _on_depth_spin(self, depth: int) -> None:
        self.depth_slider.blockSignals(True)
        self.depth_slider.setValue(depth)
        self.depth_slider.blockSignals(False)
        self.changed.emit()

    def _on_depth_slider(self, depth: int) -> None:
        self.depth_spin.blockSignals(True)
        self.depth_spin.setValue(depth)
        self.depth_spin.blockSignals(False)
        self.changed.emit()

    @property
    def log_scale(self) -> bool:
        return self.log_check.isChecked()


class NormsView(View):
    """The three plots and their captions for one (depth, norm, seed, scaling); hover shows one layer's values."""

    name = "Norms"
    reads = frozenset({"seed"})
    compute_fn = staticmethod(compute_norms)

    def __init__(self, state, compute, controls: NormsControls, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent=parent)
        self.controls = controls
        self.hover_layer: int | None = None  # the layer under the cursor, kept while stale to read out again
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        self.caption = QLabel("")
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.parameter_caption = QLabel("")
        self.parameter_caption.setWordWrap(True)
        self.parameter_caption.setTextFormat(Qt.TextFormat.PlainText)
        self.parameter_caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # At a large text scale the captions outgrow the view: they scroll, and the plots keep their share.
        captions = QWidget()
        caption_layout = QVBoxLayout(captions)
        caption_layout.setContentsMargins(0, 0, 0, 0)
        caption_layout.addWidget(self.caption)
        caption_layout.addWidget(self.parameter_caption)
        self.caption_scroll = QScrollArea()
        self.caption_scroll.setWidget(captions)
        self.caption_scroll.setWidgetResizable(True)
        self.caption_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.caption_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout.addWidget(self.caption_scroll)

        self.forward_plot = self._make_plot("Residual stream: mean per-token ‖x‖", "‖x‖")
        self.gradient_plot = self._make_plot("Stream gradient: ‖∂L/∂x‖", "‖∂L/∂x‖")
        self.parameter_plot = self._make_plot("FFN output weight gradient per block: ‖∂L/∂W^FFN,2‖",
                                              "‖∂L/∂W^FFN,2‖", "block l (the matrix Xiong et al. plot)")
        self.plots = (self.forward_plot, self.gradient_plot, self.parameter_plot)
        self.forward_curves = self._make_curves(self.forward_plot)
        self.gradient_curves = self._make_curves(self.gradient_plot)
        self.parameter_curves = self._make_curves(self.parameter_plot)
        self.root_d_line = pg.InfiniteLine(angle=0, movable=False, label=f"√d = {math.sqrt(D_MODEL):g}",
                                           labelOpts={"position": 0.5, "anchors": [(0.5, 0), (0.5, 0)]})
        self.forward_plot.addItem(self.root_d_line, ignoreBounds=True)
        self.crosshairs: list[pg.InfiniteLine] = []
        self.hover_labels: list[pg.TextItem] = []
        for plot in self.plots:
            line = pg.InfiniteLine(angle=90, movable=False)
            line.hide()
            plot.addItem(line, ignoreBounds=True)
            label = pg.TextItem("", anchor=(0, 0))
            label.setZValue(20)
            label.hide()
            plot.addItem(label, ignoreBounds=True)
            self.crosshairs.append(line)
            self.hover_labels.append(label)
            plot.scene().sigMouseMoved.connect(lambda pos, plot=plot: self._on_mouse_moved(plot, pos))
        self.plot_area = WrappingPlots(self.plots)
        layout.addWidget(self.plot_area, 1)
        self.stale_labels = [self.caption, self.parameter_caption]

        controls.changed.connect(self.inputs_changed)
        controls.log_changed.connect(self._apply_log_scale)
        self.apply_theme()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_caption_height()

    def _fit_caption_height(self) -> None:
        """The captions' full height, up to 45 % of the view; beyond that they scroll."""
        inner = self.caption_scroll.widget()
        width = max(1, self.caption_scroll.viewport().width())
        wanted = inner.layout().heightForWidth(width) if inner.layout().hasHeightForWidth() else inner.sizeHint().height()
        self.caption_scroll.setFixedHeight(max(1, min(wanted, int(0.45 * max(1, self.height())))))

    def _make_plot(self, title: str, y_label: str,
                   x_label: str = "layer (0 = embeddings, l = after block l)") -> pg.PlotWidget:
        plot = wrap_title(pg.PlotWidget(axisItems=log_ready_axes()))
        plot.setMenuEnabled(False)
        plot.setTitle(title)
        plot.setLabel("bottom", x_label)
        plot.setLabel("left", y_label)
        plot.showGrid(x=True, y=True, alpha=0.25)
        legend_below(plot)
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        plot.getAxis("left").enableAutoSIPrefix(False)  # "(x0.001)" beside a norm reads as part of its name
        plot.getViewBox().sigResized.connect(self._fit_y_ranges)
        return plot

    def _make_curves(self, plot: pg.PlotWidget) -> dict[str, pg.PlotDataItem]:
        return {
            placement: plot.plot([], [], name=f"{placement}-norm", symbol="o" if placement == "pre" else "s", symbolSize=6)
            for placement in PLACEMENTS
        }

    # ---- the contract --------------------------------------------------------------------------
    def inputs(self) -> NormsInputs | Refusal:
        controls = self.controls
        depth, width, heads = controls.depth_spin.value(), controls.width_spin.value(), controls.heads_spin.value()
        if width % heads:
            return Refusal(f"The width d = {width} does not divide into {heads} heads: choose a width that is a "
                           f"multiple of {heads}, or other heads.")
        if stack_weights(depth, width) > MAX_STACK_WEIGHTS:
            return Refusal(f"{depth} blocks of width {width} hold {stack_weights(depth, width):,} weights, more than "
                           f"the {MAX_STACK_WEIGHTS:,} this panel runs: choose fewer blocks or a smaller width.")
        init = controls.init_combo.currentData()
        return NormsInputs(depth, controls.norm_combo.currentData(), self.state.seed,
                           controls.scaling_check.isChecked() and init == "gpt2", init, width, heads)

    def show_result(self, comparison) -> None:
        pre, post = comparison.pre, comparison.post
        self.caption.setText(f"<b>{describe_forward(pre, post)}</b><br>{describe_gradients(pre, post)}"
                             f" <span style='color:{theme.current().muted}'>(d = {pre.d_model}, loss {pre.loss:.3f},"
                             f" {pre.norm}{', residual scaling' if pre.residual_scaling else ''}, seed {pre.seed})</span>")
        self.parameter_caption.setText(f"{describe_parameter_gradients(pre, post)}\n{describe_regime(pre, post)}")
        self._fit_caption_height()
        root_d = math.sqrt(pre.d_model)
        self.root_d_line.label.setFormat(f"√d = {root_d:.4g}")
        self._update_curves()

    def on_stale(self) -> None:
        self._hide_hover()  # keeps hover_layer: refresh_hover reads the new result out at the same layer

    def refresh_hover(self) -> None:
        if self.hover_layer is not None:
            self.show_layer_values(self.hover_layer)

    # ---- drawing -------------------------------------------------------------------------------
    def _update_curves(self) -> None:
        comparison = self.result
        if comparison is None:
            return
        colors = {"pre": "primary", "post": "secondary"}
        for curves, values in ((self.forward_curves, "forward_norms"), (self.gradient_curves, "gradient_norms"),
                               (self.parameter_curves, "ffn_out_gradient_norms")):
            for placement, curve in curves.items():
                measured = getattr(comparison, placement)
                y = getattr(measured, values)
                # Block l's weights sit at x = l, under "after block l" in the other two plots.
                x = measured.layers[1:] if values == "ffn_out_gradient_norms" else measured.layers
                curve.setData(x.astype(float), y)
                role = colors[placement]
                curve.setPen(theme.pen(role))
                curve.setSymbolBrush(theme.brush(role))
                curve.setSymbolPen(theme.pen(role, width=1))
                curve.setSymbolSize(4 + 2 * theme.current().line_width)
        depth = comparison.pre.depth
        for plot in self.plots:
            plot.setXRange(-0.5, depth + 0.5, padding=0.02)
        self._fit_y_ranges()
        self._place_root_d_line()

    def _fit_y_ranges(self) -> None:
        """Fit the data with room above it for the hover readout (it sits at the top; the legend is below the plot)."""
        comparison = self.result
        if comparison is None:
            return
        log = self.controls.log_scale
        headroom_px = 2.0 * QFontMetrics(theme.font()).height()
        for plot, values in ((self.forward_plot, "forward_norms"), (self.gradient_plot, "gradient_norms"),
                             (self.parameter_plot, "ffn_out_gradient_norms")):
            data = np.concatenate([getattr(getattr(comparison, p), values) for p in PLACEMENTS])
            if plot is self.forward_plot:
                data = np.append(data, math.sqrt(comparison.pre.d_model))
            if log:
                data = np.log10(data[data > 0])
                low, high = float(data.min()), float(data.max())
            else:
                low, high = min(0.0, float(data.min())), float(data.max())
            span = high - low if high > low else max(abs(high), 1.0)
            height_px = max(1.0, plot.getViewBox().height())
            fraction = min(0.6, headroom_px / max(1.0, height_px - headroom_px))
            bottom = low - (0.04 * span if log else 0.0)
            plot.setYRange(bottom, high + span * (0.04 + fraction), padding=0)
        if self.hover_layer is not None and not self.is_stale:
            self.show_layer_values(self.hover_layer)

    def _place_root_d_line(self) -> None:
        root_d = math.sqrt(self.result.pre.d_model if self.result is not None else D_MODEL)
        self.root_d_line.setValue(math.log10(root_d) if self.controls.log_scale else root_d)

    def _apply_log_scale(self, on: bool) -> None:
        for plot in self.plots:
            plot.setLogMode(x=False, y=on)
        self._place_root_d_line()
        self._fit_y_ranges()

    # ---- hover ---------------------------------------------------------------------------------
    def _on_mouse_moved(self, plot: pg.PlotWidget, scene_pos: QPointF) -> None:
        view = plot.getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            self.show_layer_values(None)
            return
        self.show_layer_values(int(round(view.mapSceneToView(scene_pos).x())))

    def _hide_hover(self) -> None:
        for line, label in zip(self.crosshairs, self.hover_labels):
            line.hide()
            label.setText("")
            label.hide()

    def show_layer_values(self, layer: int | None) -> str:
        """Crosshair and readout at one layer on the three plots (None hides them); returns the readout.

        The weight-gradient plot reads out block l at layer l; at layer 0 (the embeddings) it has no block.

        While the view is stale nothing is read out (the curves describe other inputs than the
        controls'); the layer is remembered and read out from the next result.
        """
        self.hover_layer = layer
        comparison = self.result
        if layer is None or comparison is None or self.is_stale or self.showing_message:
            self._hide_hover()
            return ""
        pre, post = comparison.pre, comparison.post
        layer = max(0, min(pre.depth, layer))
        texts = []
        for plot, line, label, values in (
            (self.forward_plot, self.crosshairs[0], self.hover_labels[0], "forward_norms"),
            (self.gradient_plot, self.crosshairs[1], self.hover_labels[1], "gradient_norms"),
            (self.parameter_plot, self.crosshairs[2], self.hover_labels[2], "ffn_out_gradient_norms"),
        ):
            if values == "ffn_out_gradient_norms":
                if layer == 0:
                    line.hide()
                    label.setText("")
                    label.hide()
                    continue
                pre_value, post_value = getattr(pre, values)[layer - 1], getattr(post, values)[layer - 1]
                text = f"block {layer}:  pre-norm {pre_value:.4g},  post-norm {post_value:.4g}"
            else:
                pre_value, post_value = getattr(pre, values)[layer], getattr(post, values)[layer]
                text = f"layer {layer}:  pre-norm {pre_value:.4g},  post-norm {post_value:.4g}"
            texts.append(text)
            line.setValue(layer)
            line.show()
            label.setText(text)
            # In the headroom at the top, centred on the crosshair but kept inside the view.
            view = plot.getViewBox()
            (x0, x1), (y0, y1) = view.viewRange()
            pixel_x, pixel_y = view.viewPixelSize()
            width = label.textItem.boundingRect().width() * pixel_x
            left = min(max(x0, layer - width / 2), x1 - width)
            label.setAnchor((0, 0))
            label.setPos(left, y1 - 4 * pixel_y)
            label.show()
        return "\n".join(texts)

    @property
    def hover_text(self) -> str:
        """What the hover readout shows now ("" when nothing is read out)."""
        return "\n".join(label.toPlainText() for label in self.hover_labels if label.isVisible())

    # ---- theme, export -------------------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()  # re-styles the plots and redraws the result (show_result)
        self.plot_area.fit()  # a larger text needs wider plots: one row may no longer fit
        muted = theme.color("muted")
        self.root_d_line.setPen(theme.pen("muted", width=max(1.0, theme.current().line_width / 2), style=Qt.PenStyle.DashLine))
        self.root_d_line.label.setColor(muted)
        self.root_d_line.label.setFont(theme.font(0.9))
        for line, label in zip(self.crosshairs, self.hover_labels):
            line.setPen(theme.pen("text", width=1, style=Qt.PenStyle.DotLine))
            label.setColor(theme.color("text"))
            label.setFont(theme.font(0.9))
            fill = theme.color("base")
            fill.setAlpha(225)
            label.fill = pg.mkBrush(fill)
            label.border = pg.mkPen(theme.color("muted"))
        self._fit_y_ranges()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Residual stream norm (plot)", self.forward_plot.getPlotItem()),
                ("Gradient norm (plot)", self.gradient_plot.getPlotItem()),
                ("Weight gradient norm (plot)", self.parameter_plot.getPlotItem())]


class NormsPanel(Panel):
    title = "Norms"
    refresh_on = frozenset()  # the view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        layout = self.layout()
        self.controls = NormsControls(self)
        controls = self.controls
        # Lessons and sessions find these by name on the panel.
        self.depth_spin, self.depth_slider = controls.depth_spin, controls.depth_slider
        self.norm_combo, self.scaling_check, self.log_check = controls.norm_combo, controls.scaling_check, controls.log_check
        row = FlowLayout()  # wraps on a narrow window or at a large text scale
        row.addWidget(control_group(controls.depth_caption, self.depth_spin, self.depth_slider))
        row.addWidget(control_group(controls.norm_caption, self.norm_combo))
        self.init_combo, self.width_spin, self.heads_spin = controls.init_combo, controls.width_spin, controls.heads_spin
        self.paper_button, self.model_button = controls.paper_button, controls.model_button
        row.addWidget(control_group(controls.init_caption, self.init_combo))
        row.addWidget(control_group(controls.width_caption, self.width_spin, controls.heads_caption, self.heads_spin))
        row.addWidget(self.paper_button)
        row.addWidget(self.model_button)
        self.model_button.clicked.connect(lambda: controls.use_model_sizes(self.state.config))
        row.addWidget(self.scaling_check)
        row.addWidget(self.log_check)
        layout.addLayout(row)

        self.view = self.add_view(NormsView(state, compute, controls))
        layout.addWidget(self.view, 1)
        self.caption, self.forward_plot, self.gradient_plot = self.view.caption, self.view.forward_plot, self.view.gradient_plot
        self.parameter_caption, self.parameter_plot = self.view.parameter_caption, self.view.parameter_plot

    def settings(self) -> dict[str, Any]:
        return {
            "depth": self.depth_spin.value(),
            "norm": self.norm_combo.currentData(),
            "residual_scaling": self.scaling_check.isChecked(),
            "log_scale": self.log_check.isChecked(),
            "init": self.init_combo.currentData(),
            "d_model": self.width_spin.value(),
            "n_heads": self.heads_spin.value(),
        }

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        depth = data.get("depth")
        if isinstance(depth, int) and not isinstance(depth, bool) and 1 <= depth <= MAX_DEPTH:
            self.depth_spin.setValue(depth)
        norm = data.get("norm")
        index = self.norm_combo.findData(norm) if isinstance(norm, str) else -1
        if index >= 0:
            self.norm_combo.setCurrentIndex(index)
        index = self.init_combo.findData(data.get("init")) if isinstance(data.get("init"), str) else -1
        if index >= 0:
            self.init_combo.setCurrentIndex(index)
        for key, spin in (("d_model", self.width_spin), ("n_heads", self.heads_spin)):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and spin.minimum() <= value <= spin.maximum():
                spin.setValue(value)
        for key, box in (("residual_scaling", self.scaling_check), ("log_scale", self.log_check)):
            if isinstance(data.get(key), bool):
                box.setChecked(data[key])


__all__ = [
    "MAX_DEPTH",
    "NormsInputs",
    "NormsPanel",
    "NormsView",
    "compute_norms",
    "describe_forward",
    "describe_gradients",
    "describe_parameter_gradients",
    "describe_regime",
    "fitted_change",
]
