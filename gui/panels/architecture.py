"""Architecture: the current model as a live block diagram, and one token followed through it.

The diagram (gui.widgets.block_diagram) is laid out from `state.config` on the GUI thread (pure
Python: boxes, arrows and parameter counts from core.params), so it redraws the moment the config
changes, before any model is built. Hover a part for what it does, its parameters and its output
shape; click it to ask the main window for the panel that studies it (`navigate_requested`).

"Follow one token" runs on the worker: core.experiments.follow_token captures the chosen position's
residual vector after every sublayer of the loaded model and reads each one through the final norm
and head (a logit lens). The table and the bars show exactly those numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.config import ConfigError, ModelConfig
from core.display import display_token
from core.params import parameter_breakdown
from gui import theme
from gui.panels.base import Panel
from gui.widgets.block_diagram import BlockDiagramView, DiagramPicture, Part, describe_part, diagram_parts, format_count

TOP_K = 5
MAX_LAYERS = 1024  # core.config's limit
COLUMNS = ("stage", "‖x‖", "‖update‖", f"top-{TOP_K} next-token guesses (logit lens)")
HOVER_HINT = ("Hover any part of the diagram: what it does, its parameter count and its output shape. "
              "Click it to open the panel that studies it.")
ARCHITECTURE_NAMES = {"decoder": "decoder-only", "encoder": "encoder-only", "encoder-decoder": "encoder-decoder"}
POSITIONAL_NAMES = {"none": "no positions", "sinusoidal": "sinusoidal positions", "learned": "learned positions",
                    "rope": "RoPE", "alibi": "ALiBi"}


def _follow(model, tokens: list[int], position: int, tokenizer):
    from core.experiments.follow_token import follow_token

    return follow_token(model, tokens, position, tokenizer, k=TOP_K)


def describe_config(config: ModelConfig) -> str:
    """One line naming what the diagram shows."""
    total = parameter_breakdown(config).total
    depth = (f"{config.encoder_layers} + {config.decoder_layers} blocks" if config.architecture == "encoder-decoder"
             else f"{config.n_layers} block{'s' * (config.n_layers != 1)}")
    ffn = f"MoE top-{config.top_k} of {config.n_experts}" if config.is_moe else config.activation
    return (f"<b>{config.name}</b>: {ARCHITECTURE_NAMES[config.architecture]}, {depth}, "
            f"{config.norm_placement}-norm {config.norm}, {POSITIONAL_NAMES[config.positional]}, {ffn} FFN, "
            f"{'tied' if config.tie_embeddings else 'untied'} head; {format_count(total)} parameters")


class ArchitecturePanel(Panel):
    title = "Architecture"
    refresh_on = frozenset({"config", "model", "tokens", "tokenizer"})

    navigate_requested = Signal(str)  # the title of the panel a clicked part asks for

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.result = None
        self.result_config: ModelConfig | None = None  # the config the shown result was computed for
        self.diagram = None
        self.chosen_position: int | None = None  # None: follow the default (second to last) token
        layout = self.layout()

        controls = QHBoxLayout()
        layers_caption = QLabel("Layers")
        self.layers_spin = QSpinBox()
        self.layers_spin.setObjectName("architecture-layers")
        self.layers_spin.setRange(1, MAX_LAYERS)
        self.layers_spin.setValue(state.config.n_layers)
        self.layers_spin.setKeyboardTracking(False)
        self.layers_spin.setAccelerated(True)
        self.layers_spin.setToolTip("Blocks in the stack (each tower of an encoder-decoder): changes the model "
                                    "everywhere in the app, not just this drawing")
        layers_caption.setBuddy(self.layers_spin)
        token_caption = QLabel("Follow token")
        self.token_combo = QComboBox()
        self.token_combo.setObjectName("architecture-token")
        self.token_combo.setToolTip("The position whose vector is followed through every sublayer")
        self.token_combo.setMinimumContentsLength(12)
        token_caption.setBuddy(self.token_combo)
        self.config_label = QLabel("")
        self.config_label.setWordWrap(True)
        controls.addWidget(layers_caption)
        controls.addWidget(self.layers_spin)
        controls.addSpacing(16)
        controls.addWidget(token_caption)
        controls.addWidget(self.token_combo)
        controls.addSpacing(16)
        controls.addWidget(self.config_label, 1)
        layout.addLayout(controls)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        left = self.diagram_pane = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        self.view = BlockDiagramView()
        self.hover_label = QLabel(HOVER_HINT)
        self.hover_label.setObjectName("architecture-hover")
        self.hover_label.setWordWrap(True)
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)
        self.hover_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        left_layout.addWidget(self.view, 1)
        left_layout.addWidget(self.hover_label)
        splitter.addWidget(left)

        right = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        self.follow_caption = QLabel("Waiting for torch to load...")
        self.follow_caption.setWordWrap(True)
        self.follow_caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top_layout.addWidget(self.follow_caption)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("architecture-follow-table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        for column, tip in enumerate(("after which sublayer the vector is read", "length of the token's vector after the stage",
                                      "length of what the stage added to it", "the next tokens the vector would predict if "
                                      "the model stopped here: final norm, head, softmax")):
            self.table.horizontalHeaderItem(column).setToolTip(tip)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Every column sized to its contents; at projector sizes the table scrolls sideways rather than eliding guesses.
        self.table.horizontalHeader().setStretchLastSection(False)
        top_layout.addWidget(self.table, 1)
        right.addWidget(top)

        self.norm_plot = pg.PlotWidget()
        self.norm_plot.setMenuEnabled(False)
        self.norm_plot.setMouseEnabled(x=False, y=False)
        self.norm_plot.hideButtons()
        self.norm_plot.setLabel("bottom", "length after each stage")
        self.norm_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.norm_plot.invertY(True)
        self.norm_plot.showGrid(x=True, y=False, alpha=0.25)
        # The title is the legend (set in _style_plot_title): a legend box would sit on the longest bars.
        self.norm_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.38, width=[0])
        self.update_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.38, width=[0])
        self.norm_plot.addItem(self.norm_bars)
        self.norm_plot.addItem(self.update_bars)
        self.norm_plot.getViewBox().sigResized.connect(self._update_stage_ticks)
        self._style_plot_title()
        right.addWidget(self.norm_plot)
        right.setSizes([420, 300])
        splitter.addWidget(right)
        splitter.setSizes([700, 480])
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        layout.addWidget(splitter, 1)

        self.picture = DiagramPicture(self.view, self)
        self.picture.hide()  # never on screen: File > Export draws it

        self.layers_spin.valueChanged.connect(self._on_layers_changed)
        self.token_combo.activated.connect(self._on_token_chosen)
        self.view.part_hovered.connect(self._on_part_hovered)
        self.view.part_clicked.connect(self._on_part_clicked)
        self.table.itemSelectionChanged.connect(self._on_row_selected)
        self.redraw_diagram()
        self._fill_token_combo()
        self.apply_theme()

    # ---- diagram -------------------------------------------------------------------------------
    def redraw_diagram(self) -> None:
        config = self.state.config
        self.diagram = diagram_parts(config, len(self.state.tokens))
        self.view.set_diagram(self.diagram)
        self.picture.sync_size()
        self.config_label.setText(describe_config(config))
        if self.layers_spin.value() != config.n_layers:
            self.layers_spin.blockSignals(True)
            self.layers_spin.setValue(config.n_layers)
            self.layers_spin.blockSignals(False)
        hovered = self.view.hovered
        self.hover_label.setText(describe_part(hovered, self.diagram.seq_len) if hovered is not None else HOVER_HINT)

    def _on_layers_changed(self, layers: int) -> None:
        config = self.state.config
        if layers == config.n_layers:
            return
        try:
            self.state.set_config(config.replace(n_layers=layers))
        except ConfigError as error:
            self.show_error(f"{error.field}: {error.message}")

    def _on_part_hovered(self, part: Part | None) -> None:
        if part is not None and self.diagram is not None:
            self.hover_label.setText(describe_part(part, self.diagram.seq_len))

    def _on_part_clicked(self, part: Part) -> None:
        self.navigate_requested.emit(part.panel)

    # ---- the followed token --------------------------------------------------------------------
    def token_labels(self) -> list[str]:
        tokenizer = self.state.tokenizer
        tokens = self.state.tokens
        if tokenizer is None:
            return [str(t) for t in tokens]
        labels = []
        for token in tokens:
            try:
                labels.append(display_token(tokenizer.token_text(token)))
            except Exception:  # each tokenizer has its own unknown-id error; the id still identifies it
                labels.append(str(token))
        return labels

    def followed_position(self) -> int | None:
        count = len(self.state.tokens)
        if count == 0:
            return None
        if self.chosen_position is None:
            return max(0, count - 2)  # the second to last: its true next token is in the text
        return min(self.chosen_position, count - 1)

    def _fill_token_combo(self) -> None:
        labels = self.token_labels()
        self.token_combo.blockSignals(True)
        self.token_combo.clear()
        for index, label in enumerate(labels):
            self.token_combo.addItem(f"{index}: {label}", index)
        position = self.followed_position()
        if position is not None:
            self.token_combo.setCurrentIndex(position)
        self.token_combo.blockSignals(False)

    def _on_token_chosen(self, index: int) -> None:
        self.chosen_position = index
        self.schedule_refresh()

    def set_followed_position(self, position: int) -> None:
        """Follow the token at `position` (clamped to the sequence)."""
        self.chosen_position = max(0, int(position))
        if self.followed_position() is not None:
            self.token_combo.setCurrentIndex(self.followed_position())
        self.schedule_refresh()

    def _on_state_changed(self, field: str) -> None:
        if field in ("config", "tokens"):
            self.redraw_diagram()
        if field in ("tokens", "tokenizer"):
            self._fill_token_combo()
        super()._on_state_changed(field)

    def refresh(self) -> None:
        model, tokens, config = self.state.model, self.state.tokens, self.state.config
        position = self.followed_position()
        if self.result is not None and self.result_config != config:
            self.clear_result()
        if model is None:
            self.follow_caption.setText("Following a token needs the model's weights: waiting for the model "
                                        "(a config too large to build has none; the diagram still holds).")
            return
        if getattr(model, "config", None) != config:
            self.follow_caption.setText(f"Waiting for {config.name} to be built...")
            return  # its arrival refreshes again
        if position is None:
            self.follow_caption.setText("Type some text (the sidebar's text field) to follow one of its tokens.")
            return
        tokenizer = self.state.tokenizer
        if tokenizer is not None and getattr(tokenizer, "vocab_size", config.vocab_size) != config.vocab_size:
            tokenizer = None  # ids only: the tokenizer belongs to another vocabulary
        self.follow_caption.setText(f"Following token {position} through {config.name}...")
        self.submit(lambda: _follow(model, tokens, position, tokenizer), lambda result: self.show_result(result, config),
                    "follow one token")

    def clear_result(self) -> None:
        """Drop a result that belongs to another config (its numbers describe a model no longer shown)."""
        self.result = self.result_config = None
        self.view.set_annotations({})
        self.table.setRowCount(0)
        for bars in (self.norm_bars, self.update_bars):
            bars.setOpts(x0=[], y=[], width=[], height=0.38)
        self.norm_plot.getAxis("left").setTicks([[]])

    def show_result(self, result, config: ModelConfig | None = None) -> None:
        self.result = result
        self.result_config = config or self.state.config
        next_text = (f"the text continues with <b>'{result.next_token_label}'</b>" if result.next_token_label is not None
                     else "the last token (the text has no next one)")
        final = result.top_labels[-1][0]
        post = " Post-norm: each stage includes its norm." if result.placement == "post" else ""
        self.follow_caption.setText(
            f"Token {result.position} <b>'{result.token_label}'</b>: {next_text}; {result.model_name} predicts "
            f"<b>'{final}'</b> ({result.top_probs[-1][0]:.0%}). Each row reads the vector after a stage through the "
            f"final norm and the head (a logit lens).{post}")
        self._fill_table(result)
        self._update_bars()
        self._annotate_diagram()
        self.result_shown.emit()

    def _fill_table(self, result) -> None:
        self.table.setUpdatesEnabled(False)
        try:
            self.table.setRowCount(result.n_stages)
            plain, bold = theme.font(), theme.font(bold=True)
            for row in range(result.n_stages):
                guesses = "  │  ".join(f"{label} {prob:.0%}" if prob >= 0.01 else f"{label} <1%"
                                     for label, prob in zip(result.top_labels[row], result.top_probs[row]))
                cells = (result.stage_labels[row], f"{result.norms[row]:.2f}", f"{result.update_norms[row]:.2f}", guesses)
                for column, text in enumerate(cells):
                    item = self.table.item(row, column)
                    if item is None:
                        item = QTableWidgetItem()
                        self.table.setItem(row, column, item)
                    item.setText(text)
                    right = column in (1, 2)
                    item.setTextAlignment((Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft)
                                          | Qt.AlignmentFlag.AlignVCenter)
                    hit = result.next_token_label is not None and result.top_labels[row][0] == result.next_token_label
                    item.setFont(bold if column == 3 and hit else plain)
                    item.setToolTip(f"captured at {result.stage_hooks[row]}")
        finally:
            self.table.setUpdatesEnabled(True)
        for column in range(len(COLUMNS)):
            self.table.resizeColumnToContents(column)
        self.table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))

    def _update_bars(self) -> None:
        result = self.result
        if result is None:
            return
        ys = np.arange(result.n_stages, dtype=float)
        self.norm_bars.setOpts(x0=np.zeros(result.n_stages), y=ys - 0.2, width=result.norms, height=0.38,
                               brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        self.update_bars.setOpts(x0=np.zeros(result.n_stages), y=ys + 0.2, width=result.update_norms, height=0.38,
                                 brush=theme.brush("secondary"), pen=theme.pen("secondary", width=1))
        self._update_stage_ticks()
        self.norm_plot.setYRange(-0.6, result.n_stages - 0.4, padding=0)
        largest = float(max(result.norms.max(), result.update_norms.max(), 1e-6))
        self.norm_plot.setXRange(0, largest * 1.05, padding=0)

    def _update_stage_ticks(self) -> None:
        """A stage name on every row when there is room, on every k-th row of a cramped (or big-text) plot."""
        result = self.result
        if result is None:
            return
        line = QFontMetrics(theme.font(0.9)).height()
        room = max(1, int(self.norm_plot.getViewBox().height() // max(1, line)))
        step = max(1, -(-result.n_stages // room))
        short = [label.replace("block ", "b").replace(": + ", " +") for label in result.stage_labels]
        self.norm_plot.getAxis("left").setTicks([[(float(i), short[i]) for i in range(0, result.n_stages, step)]])

    def _style_plot_title(self) -> None:
        size = round(theme.font(0.9).pointSizeF() * 1.35 * 1.1)
        norm, update = theme.color("primary").name(), theme.color("secondary").name()
        # Short: a title wider than the plot would push the plot past its widget's right edge.
        self.norm_plot.setTitle(f"<span style='color:{norm}'>■</span> ‖x‖ &nbsp;&nbsp; "
                                f"<span style='color:{update}'>■</span> ‖update‖",
                                color=theme.current().text, size=f"{size}px")

    def stage_part_key(self, row: int) -> str:
        """The diagram part where a stage's vector is read: its ⊕ (or the embedding, or the final norm)."""
        kind, layer = self.result.stage_kinds[row], int(self.result.stage_layers[row])
        tower = "encoder" if self.state.config.architecture == "encoder" else "decoder"
        if kind == "embedding":
            positions = f"{tower}.add_positions"
            return positions if positions in self.view.items else f"{tower}.token_embedding"
        if kind == "final-norm":
            return f"{tower}.final_norm"
        sublayer = {"attention": "attention", "cross-attention": "cross_attention", "ffn": "ffn"}[kind]
        if self.result.placement == "post":  # the vector is read after the norm that follows the ⊕
            norm = {"attention": "norm1", "cross_attention": "norm_cross", "ffn": "norm2"}[sublayer]
            return f"{tower}.block{layer}.{norm}"
        return f"{tower}.block{layer}.add_{sublayer}"

    def _annotate_diagram(self) -> None:
        """‖x‖ of the followed token beside every place of the drawing where a stage is read."""
        if self.result is None:
            self.view.set_annotations({})
            return
        self.view.set_annotations({self.stage_part_key(row): f"‖x‖ {self.result.norms[row]:.2f}"
                                   for row in range(self.result.n_stages)})

    def _on_row_selected(self) -> None:
        """Selecting a stage highlights where it is read in the diagram, when that block is drawn."""
        if self.result is None or self.diagram is None:
            return
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        key = self.stage_part_key(rows[0].row())
        if key in self.view.items:
            self.view.hover_key(key)

    # ---- theme, export, session ----------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()
        self._style_plot_title()
        self.view.rebuild()
        self.picture.sync_size()
        if self.result is not None:
            self._fill_table(self.result)
            self._update_bars()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            (self.title, self),
            ("Block diagram (whole)", self.picture),
            # The container, not the QGraphicsView: a view's own render() takes other arguments than export's.
            ("Block diagram (as shown, with the hover text)", self.diagram_pane),
            ("Stage norms (plot)", self.norm_plot.getPlotItem()),
        ]

    def settings(self) -> dict[str, Any]:
        return {"follow_position": self.chosen_position}

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        position = data.get("follow_position")
        if isinstance(position, int) and not isinstance(position, bool) and position >= 0:
            self.set_followed_position(position)


__all__ = ["ArchitecturePanel", "describe_config"]
