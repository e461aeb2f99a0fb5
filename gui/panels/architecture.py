"""Architecture: the current model as a live block diagram, and one token followed through it.

The diagram (gui.widgets.block_diagram) is laid out from `state.config` and the text's length on
the GUI thread (pure Python: boxes, arrows and parameter counts from core.params), so it redraws
the moment either changes, before any model is built; a hidden panel only notes that its drawing
is out of date and lays it out when it is shown again. Hover a part for what it does, its
parameters and its output shape; click it to ask the main window for the panel that studies it
(`navigate_requested`).

"Follow one token" is a view (`FollowTokenView`) computed on the worker, and only while it is on
screen: core.experiments.follow_token captures the chosen position's residual vector after every
sublayer of the loaded model and reads each one through the final norm and head (a logit lens).
The table, the bars and the lengths written on the diagram show exactly those numbers, and go the
moment the model, the text or the followed position changes.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
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

from core.config import ConfigError
from core.config_description import describe_config
from core.diagram_layout import Part, describe_part, diagram_parts
from core.display import display_token
from core.experiments.follow_token_text import (LENS_HEADERS, TOP_K, TUNED_HEADER, describe_reads, follow_caption,
                                              tuned_cell)
from core.params import parameter_breakdown
from gui import theme
from gui.model_loader import MAX_INTERACTIVE_PARAMETERS
from gui.panels.base import Panel, Refusal, View
from gui.panels.common import sequence_refusal, set_cell
from gui.widgets.block_diagram import BlockDiagramView, DiagramPicture
from gui.widgets.plot_titles import wrap_title
from gui.widgets.table_rows import keep_rows_in_view, never_cut_cells
from gui.widgets.wrapping_label import WrappingLabel

MAX_LAYERS = 1024  # core.config's limit
# The lens before what a stage read: at a laptop's width the table scrolls sideways past the last column.
COLUMNS = ("stage", "‖x‖", "‖update‖", LENS_HEADERS["next"], "reads / routes to")
LENS_COLUMN, READS_COLUMN = 3, 4
TOWER_CHOICES = (("decoder", "decoder (target) token"), ("encoder", "encoder (source) token"))
HOVER_HINT = ("Hover any part of the diagram: what it does, its parameter count and its output shape. "
              "Click it to open the panel that studies it.")
def default_position(count: int, chosen: int | None) -> int | None:
    """The followed position: the chosen one clamped to the text, else the second to last token."""
    if count == 0:
        return None
    if chosen is None:
        return max(0, count - 2)  # the second to last: its true next token is in the text
    return min(chosen, count - 1)


def model_tokenizer(state):
    """The text's tokenizer if it is the model's vocabulary; None (ids only) when it belongs to another."""
    tokenizer = state.tokenizer
    vocab = state.config.vocab_size
    if tokenizer is not None and getattr(tokenizer, "vocab_size", vocab) != vocab:
        return None
    return tokenizer


@dataclass(frozen=True)
class FollowInputs:
    model: Any
    tokenizer: Any  # None: the labels are ids (the tokenizer belongs to another vocabulary)
    tokens: tuple[int, ...]
    position: int
    tower: str = "decoder"  # an encoder-decoder's "encoder": the position is a source token followed through the encoder
    tuned: bool = False  # the bundled tuned lens beside the logit lens, with both KLs from the output


def compute_follow(inputs: FollowInputs, token) -> Any:
    from core.experiments.follow_token import follow_token

    result = follow_token(inputs.model, list(inputs.tokens), inputs.position, inputs.tokenizer, k=TOP_K,
                          tower=inputs.tower)
    if not inputs.tuned:
        return result
    from core.features.library import with_tuned_lens

    return with_tuned_lens(result, inputs.model, list(inputs.tokens), inputs.tokenizer, TOP_K)


TUNED_TIP = ("The bundled tuned lens: an affine translator per block, trained so that the stream entering block i "
             "predicts the model's output; beside its guesses, KL(output || lens) in nats of the logit lens and of it")


READS_TIP = ("Attention: the keys this token's query weighted most (the mean over heads), as position:token weight; "
             "cross-attention reads the encoder's output of the source. A mixture of experts: the experts the router "
             "chose and their mixing weights.")


class FollowTokenView(View):
    """The followed token's stages: caption, table, length bars, and ‖x‖ written on the diagram."""

    name = "Follow one token"
    reads = frozenset({"config", "model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_follow)

    def __init__(self, state, compute, diagram: BlockDiagramView, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.diagram = diagram
        self.chosen_position: int | None = None  # None: follow the default (second to last) token
        self.tower = "decoder"  # an encoder-decoder's tower to follow in (the only stack otherwise)
        self.tuned = False  # the tuned lens's column beside the logit lens
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        right = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        self.caption = WrappingLabel("")  # its lines at projector scale push the table down, not off the end
        self.caption.setTextFormat(Qt.TextFormat.RichText)  # the app's markup; token labels are escaped
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top_layout.addWidget(self.caption)
        self.table = QTableWidget(0, len(COLUMNS))
        never_cut_cells(self.table)
        self.table.setObjectName("architecture-follow-table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        for column, tip in enumerate(("after which sublayer the vector is read", "length of the token's vector after the stage",
                                      "length of what the stage added to it",
                                      "the tokens the vector would predict if the model stopped here: final norm, "
                                      "head, softmax (a decoder predicts the next token, an encoder this position's own)",
                                      READS_TIP)):
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

        self.norm_plot = wrap_title(pg.PlotWidget())  # its two-entry legend title wraps beside the stage names
        self.norm_plot.setMenuEnabled(False)
        self.norm_plot.setMouseEnabled(x=False, y=False)
        self.norm_plot.hideButtons()
        self.norm_plot.setLabel("bottom", "length")  # the stages are the rows; a longer label is cut in a narrow plot
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
        layout.addWidget(right, 1)
        self.stale_labels = [self.caption]
        self.table.itemSelectionChanged.connect(self._on_row_selected)

    # ---- inputs --------------------------------------------------------------------------------
    def followed_position(self) -> int | None:
        return default_position(len(self.state.tokens), self.chosen_position)

    def choose(self, position: int | None) -> None:
        self.chosen_position = None if position is None else max(0, int(position))
        self.inputs_changed()

    def show_tuned(self, on: bool) -> None:
        self.tuned = bool(on)
        self.inputs_changed()

    def choose_tower(self, tower: str) -> None:
        self.tower = tower if tower in dict(TOWER_CHOICES) else "decoder"
        self.inputs_changed()

    def inputs(self) -> FollowInputs | Refusal | None:
        model, tokens, config = self.state.model, self.state.tokens, self.state.config
        if model is None or getattr(model, "config", None) != config:
            if parameter_breakdown(config).total > MAX_INTERACTIVE_PARAMETERS:
                return Refusal(f"Following a token needs {config.name}'s weights, and the lab builds real weights up to "
                               f"{MAX_INTERACTIVE_PARAMETERS:,} parameters; the diagram still holds.")
            return None  # the model for this config is on its way
        if not tokens:
            return Refusal("Type some text (the sidebar's text field) to follow one of its tokens.")
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        tower = self.tower if config.architecture == "encoder-decoder" else "decoder"
        return FollowInputs(model, model_tokenizer(self.state), tuple(tokens), self.followed_position(), tower,
                            self.tuned)

    # ---- showing -------------------------------------------------------------------------------
    def on_stale(self) -> None:
        self.diagram.set_annotations({})  # the lengths written on the drawing belong to the old inputs

    def show_result(self, result) -> None:
        ids_only = self.shown_inputs.tokenizer is None

        def named(label: str) -> str:  # a label is the token's text, or its id where the model has no tokenizer
            return f"id {html.escape(label)}" if ids_only else f"'{html.escape(label)}'"

        ids_note = (" Token ids only: the text's tokenizer has another vocabulary than this model's "
                    f"{self.shown_inputs.model.config.vocab_size:,} tokens." if ids_only else "")
        caption = follow_caption(result, lambda label: f"<b>{named(label)}</b>", html.escape(result.model_name))
        self.caption.setText(caption + ids_note)
        self.table.horizontalHeaderItem(LENS_COLUMN).setText(LENS_HEADERS[result.predicts])
        self._fill_table(result)
        self._update_bars(result)
        self.annotate_diagram()

    def _fill_table(self, result) -> None:
        self.table.setUpdatesEnabled(False)
        try:
            self.table.setColumnCount(len(COLUMNS) + (1 if self.shown_inputs.tuned else 0))
            if self.shown_inputs.tuned:
                self.table.setHorizontalHeaderItem(len(COLUMNS), QTableWidgetItem(TUNED_HEADER))
                self.table.horizontalHeaderItem(len(COLUMNS)).setToolTip(TUNED_TIP)
                header = self.table.horizontalHeader()  # shown beside the logit lens, whatever its place in the model
                header.moveSection(header.visualIndex(len(COLUMNS)), LENS_COLUMN + 1)
            self.table.setRowCount(result.n_stages)
            plain, bold = theme.font(), theme.font(bold=True)
            ids_only = self.shown_inputs.tokenizer is None
            for row in range(result.n_stages):
                prefix = "id " if ids_only else ""
                guesses = "  │  ".join(f"{prefix}{label} {prob:.0%}" if prob >= 0.01 else f"{prefix}{label} <1%"
                                     for label, prob in zip(result.top_labels[row], result.top_probs[row]))
                cells = (result.stage_labels[row], f"{result.norms[row]:.2f}", f"{result.update_norms[row]:.2f}",
                         guesses if result.has_lens else "—", describe_reads(result, row, ids_only))
                for column, text in enumerate(cells):
                    item = self.table.item(row, column)
                    if item is None:
                        item = QTableWidgetItem()
                        self.table.setItem(row, column, item)
                    item.setText(text)
                    right = column in (1, 2)
                    item.setTextAlignment((Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft)
                                          | Qt.AlignmentFlag.AlignVCenter)
                    hit = (result.target_label is not None and result.has_lens
                           and result.top_labels[row][0] == result.target_label)
                    item.setFont(bold if column == LENS_COLUMN and hit else plain)
                    item.setToolTip(READS_TIP if column == READS_COLUMN else f"captured at {result.stage_hooks[row]}")
                if self.shown_inputs.tuned:
                    set_cell(self.table, row, len(COLUMNS), tuned_cell(result, row))
        finally:
            self.table.setUpdatesEnabled(True)
        for column in range(self.table.columnCount()):
            self.table.resizeColumnToContents(column)
        self.table.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
        keep_rows_in_view(self.table)  # the logit lens reads down the stages: a few always in view

    def _update_bars(self, result) -> None:
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
        if result is None or self.is_stale:
            return
        line = QFontMetrics(theme.font(0.9)).height()
        room = max(1, int(self.norm_plot.getViewBox().height() // max(1, line)))
        step = max(1, -(-result.n_stages // room))
        short = [label.replace("block ", "b").replace(": + ", " +") for label in result.stage_labels]
        axis = self.norm_plot.getAxis("left")
        axis.setTicks([[(float(i), short[i]) for i in range(0, result.n_stages, step)]])
        # Wide enough for the longest name now: left to grow on its own, the axis widens a paint later, and a
        # window grabbed before that shows no names at all.
        axis.setWidth(max(QFontMetrics(theme.font(0.9)).horizontalAdvance(name) for name in short) + line)

    def _style_plot_title(self) -> None:
        size = round(theme.font(0.9).pointSizeF() * 1.35 * 1.1)
        norm, update = theme.color("primary").name(), theme.color("secondary").name()
        # Short: a title wider than the plot would push the plot past its widget's right edge.
        self.norm_plot.setTitle(f"<span style='color:{norm}'>■</span>&nbsp;‖x‖ &nbsp; "  # an entry never splits from its mark
                                f"<span style='color:{update}'>■</span>&nbsp;‖update‖",
                                color=theme.current().text, size=f"{size}px")

    def stage_part_key(self, row: int) -> str:
        """The diagram part where a stage's vector is read: its ⊕ (or the embedding, or the final norm)."""
        result = self.result
        kind, layer = result.stage_kinds[row], int(result.stage_layers[row])
        tower = "encoder" if self.shown_inputs.model.config.architecture == "encoder" else result.tower
        if kind == "embedding":
            for key in (f"{tower}.embed_norm", f"{tower}.add_positions"):
                if key in self.diagram.items:
                    return key
            return f"{tower}.token_embedding"
        if kind == "final-norm":
            return f"{tower}.final_norm"
        if kind == "head-transform":
            return f"{tower}.head_transform"
        sublayer = {"attention": "attention", "cross-attention": "cross_attention", "ffn": "ffn"}[kind]
        if result.placement == "post":  # the vector is read after the norm that follows the ⊕
            norm = {"attention": "norm1", "cross_attention": "norm_cross", "ffn": "norm2"}[sublayer]
            return f"{tower}.block{layer}.{norm}"
        return f"{tower}.block{layer}.add_{sublayer}"

    def annotate_diagram(self) -> None:
        """‖x‖ of the followed token beside every place of the drawing where a stage is read."""
        if self.result is None or self.is_stale:
            self.diagram.set_annotations({})
            return
        result = self.result
        notes = {self.stage_part_key(row): f"‖x‖ {result.norms[row]:.2f}" for row in range(result.n_stages)}
        tower = "encoder" if self.shown_inputs.model.config.architecture == "encoder" else result.tower
        ids_only = self.shown_inputs.tokenizer is None
        for row in range(result.n_stages):
            block = f"{tower}.block{int(result.stage_layers[row])}"
            experts = result.experts(row)
            if experts:  # the router's choice for this token, above the router it was made by
                notes[f"{block}.router"] = "→ " + ", ".join(f"e{expert} {weight:.0%}" for expert, weight in experts)
            if result.stage_kinds[row] == "cross-attention":  # the source tokens it read most, above the box
                notes[f"{block}.cross_attention"] = "reads " + ", ".join(
                    f"{position}:{'id ' if ids_only else ''}{label} {weight:.0%}"
                    for position, label, weight in result.reads(row)[:2])
        self.diagram.set_annotations(notes)

    def _on_row_selected(self) -> None:
        """Selecting a stage highlights where it is read in the diagram, when that block is drawn."""
        if self.result is None or self.is_stale or self.diagram.diagram is None:
            return
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        key = self.stage_part_key(rows[0].row())
        if key in self.diagram.items:
            self.diagram.hover_key(key)

    def apply_theme(self) -> None:
        super().apply_theme()
        self._style_plot_title()  # after the re-style, which would give the title the default look

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Stage norms (plot)", self.norm_plot.getPlotItem())]


class ArchitecturePanel(Panel):
    title = "Architecture"
    refresh_on = frozenset()  # the diagram follows its fields below; the view subscribes to what it reads

    navigate_requested = Signal(str)  # the title of the panel a clicked part asks for

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.diagram_rebuilds = 0  # layouts of the drawing (tests: a hidden panel lays out nothing)
        self._diagram_out_of_date = True
        self._tokens_out_of_date = True
        layout = self.layout()

        controls = QHBoxLayout()
        layers_caption = QLabel("Layers")
        self.layers_spin = QSpinBox()
        self.layers_spin.setObjectName("architecture-layers")
        self.layers_spin.setRange(1, MAX_LAYERS)
        self.layers_spin.setValue(state.config.n_layers)
        self.layers_spin.setKeyboardTracking(False)
        self.layers_spin.setAccelerated(True)
        self.layers_spin.setToolTip("Blocks in the stack (of an encoder-decoder: the decoder's, and the encoder's too "
                                    "unless its depth is set apart): changes the model everywhere in the app, not "
                                    "just this drawing")
        layers_caption.setBuddy(self.layers_spin)
        token_caption = QLabel("Follow token")
        self.token_combo = QComboBox()
        self.token_combo.setObjectName("architecture-token")
        self.token_combo.setToolTip("The position whose vector is followed through every sublayer")
        self.token_combo.setMinimumContentsLength(12)
        token_caption.setBuddy(self.token_combo)
        self.tower_combo = QComboBox()
        self.tower_combo.setObjectName("architecture-tower")
        for tower, text in TOWER_CHOICES:
            self.tower_combo.addItem(text, tower)
        self.tower_combo.setToolTip("An encoder-decoder's encoder reads the text as its source and its decoder reads it "
                                    "as the target: follow the token through either tower")
        self.config_label = QLabel("")
        self.config_label.setWordWrap(True)
        self.config_label.setTextFormat(Qt.TextFormat.RichText)  # describe_config escapes the name
        controls.addWidget(layers_caption)
        controls.addWidget(self.layers_spin)
        controls.addSpacing(16)
        controls.addWidget(token_caption)
        controls.addWidget(self.token_combo)
        controls.addWidget(self.tower_combo)
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
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)  # describe_part: the app's own markup
        self.hover_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        left_layout.addWidget(self.view, 1)
        left_layout.addWidget(self.hover_label)
        self.tuned_box = QCheckBox("tuned lens")
        self.tuned_box.setObjectName("architecture-tuned-lens")
        self.tuned_box.setToolTip(TUNED_TIP)
        left_layout.addWidget(self.tuned_box)
        splitter.addWidget(left)

        self.follow = self.add_view(FollowTokenView(state, compute, self.view, f"{self.channel}/"))
        splitter.addWidget(self.follow)
        splitter.setSizes([700, 480])
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        layout.addWidget(splitter, 1)
        # Names lessons and tests point at.
        follow = self.follow
        self.table, self.norm_plot, self.follow_caption = follow.table, follow.norm_plot, follow.caption
        self.norm_bars, self.update_bars = follow.norm_bars, follow.update_bars

        self.picture = DiagramPicture(self.view, self)
        self.picture.hide()  # never on screen: File > Export draws it

        self.layers_spin.valueChanged.connect(self._on_layers_changed)
        self.token_combo.activated.connect(self._on_token_chosen)
        self.tower_combo.activated.connect(lambda index: self.follow.choose_tower(self.tower_combo.itemData(index)))
        self.tuned_box.toggled.connect(self.follow.show_tuned)
        self.view.part_hovered.connect(self._on_part_hovered)
        self.view.part_clicked.connect(self._on_part_clicked)
        state.config_changed.connect(self._on_config_changed)
        state.tokens_changed.connect(self._on_tokens_changed)
        state.tokenizer_changed.connect(self._on_tokens_changed)
        self.redraw_diagram()
        self._fill_token_combo()
        self.apply_theme()

    @property
    def diagram(self):
        """The laid-out Diagram on screen (gui.widgets.block_diagram.Diagram)."""
        return self.view.diagram

    @property
    def result(self):
        """The followed token's result on screen (None while there is none, or while stale)."""
        return None if self.follow.is_stale else self.follow.result

    # ---- diagram -------------------------------------------------------------------------------
    def _on_config_changed(self) -> None:
        config = self.state.config
        if self.layers_spin.value() != config.n_layers:
            self.layers_spin.blockSignals(True)
            self.layers_spin.setValue(config.n_layers)
            self.layers_spin.blockSignals(False)
        self._sync_diagram()

    def _sync_diagram(self) -> None:
        """Lay the drawing out again if the config or T changed: now on screen, when shown if hidden."""
        drawn = self.view.diagram
        if drawn is not None and (drawn.config, drawn.seq_len) == (self.state.config, len(self.state.tokens)):
            return
        self.hover_label.setText(HOVER_HINT)  # the hovered part's numbers were the old drawing's
        if not self.isVisible():
            self._diagram_out_of_date = True
            return
        self.redraw_diagram()

    def redraw_diagram(self) -> None:
        config = self.state.config
        self._diagram_out_of_date = False
        self.diagram_rebuilds += 1
        self.view.set_diagram(diagram_parts(config, len(self.state.tokens)))
        self.picture.sync_size()
        self.config_label.setText(describe_config(config, lambda name: f"<b>{html.escape(name)}</b>"))
        self.tower_combo.setVisible(config.architecture == "encoder-decoder")
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
            return
        self.clear_error()

    def _on_part_hovered(self, part: Part | None) -> None:
        if part is not None and self.diagram is not None:
            self.hover_label.setText(describe_part(part, self.diagram.seq_len))

    def _on_part_clicked(self, part: Part) -> None:
        self.navigate_requested.emit(part.panel)

    # ---- the followed token --------------------------------------------------------------------
    def token_labels(self) -> list[str]:
        tokenizer = model_tokenizer(self.state)
        tokens = self.state.tokens
        if tokenizer is None:
            return [f"id {t}" for t in tokens]
        names = {}
        for token in dict.fromkeys(tokens):  # a long text repeats a few dozen tokens: each is named once
            try:
                names[token] = display_token(tokenizer.token_text(token))
            except Exception:  # each tokenizer has its own unknown-id error; the id still identifies it
                names[token] = str(token)
        return [names[token] for token in tokens]

    @property
    def chosen_position(self) -> int | None:
        return self.follow.chosen_position

    def followed_position(self) -> int | None:
        return self.follow.followed_position()

    def _on_tokens_changed(self) -> None:
        self._sync_diagram()
        if self.isVisible():
            self._fill_token_combo()
        else:
            self._tokens_out_of_date = True

    def _fill_token_combo(self) -> None:
        self._tokens_out_of_date = False
        labels = self.token_labels()
        self.token_combo.blockSignals(True)
        self.token_combo.clear()
        self.token_combo.addItems([f"{index}: {label}" for index, label in enumerate(labels)])  # one call for 10,000
        position = self.followed_position()
        if position is not None:
            self.token_combo.setCurrentIndex(position)
        self.token_combo.blockSignals(False)

    def _on_token_chosen(self, index: int) -> None:
        self.follow.choose(index)

    def set_followed_position(self, position: int) -> None:
        """Follow the token at `position` (clamped to the sequence)."""
        self.follow.choose(position)
        position = self.followed_position()
        if position is not None and position < self.token_combo.count():
            self.token_combo.setCurrentIndex(position)

    def showEvent(self, event) -> None:
        # Before the view's own catch-up: its result is written onto the drawing laid out here.
        if self._diagram_out_of_date:
            self.redraw_diagram()
        if self._tokens_out_of_date:
            self._fill_token_combo()
        super().showEvent(event)

    # ---- theme, export, session ----------------------------------------------------------------
    def apply_theme(self) -> None:
        super().apply_theme()
        self.follow._style_plot_title()
        self.view.rebuild()
        self.picture.sync_size()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [
            (self.title, self),
            ("Block diagram (whole)", self.picture),
            # The container, not the QGraphicsView: a view's own render() takes other arguments than export's.
            ("Block diagram (as shown, with the hover text)", self.diagram_pane),
            *self.follow.export_targets(),
        ]

    def set_followed_tower(self, tower: str) -> None:
        """Follow the token through an encoder-decoder's `tower` ("decoder" or "encoder")."""
        index = self.tower_combo.findData(tower)
        if index >= 0:
            self.tower_combo.setCurrentIndex(index)
            self.follow.choose_tower(tower)

    def settings(self) -> dict[str, Any]:
        return {"follow_position": self.chosen_position, "follow_tower": self.follow.tower,
                "tuned_lens": self.tuned_box.isChecked()}

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        position = data.get("follow_position")
        if isinstance(position, int) and not isinstance(position, bool) and position >= 0:
            self.set_followed_position(position)
        tower = data.get("follow_tower")
        if tower in dict(TOWER_CHOICES):
            self.set_followed_tower(tower)
        if isinstance(data.get("tuned_lens"), bool):
            self.tuned_box.setChecked(data["tuned_lens"])


__all__ = ["ArchitecturePanel", "FollowTokenView", "FollowInputs", "compute_follow", "describe_config"]
