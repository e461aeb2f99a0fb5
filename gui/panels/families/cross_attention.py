"""Cross-attention: an encoder-decoder decodes a source greedily, one step per click, and the map of where each
decoder position read in the source grows by one row per generated token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QComboBox, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import as_sentence, fit_table, labelled, note_label, plain_label, set_cell, table
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.heatmap import Heatmap
from gui.widgets.table_rows import fit_number_columns, keep_rows_in_view
from gui.widgets.turning_splitter import TurningSplitter

MAX_SOURCE_CHARS = 64  # a date in words is under 30; the map keeps a readable column per character
MAX_STEPS = 64  # Run to END stops here if no END comes; a date's ISO form takes 11 steps
TOP_SHOWN = 3
MEAN = -1  # the head combo's "mean of heads"
DEFAULT_SOURCE = "5 March 2021"


@dataclass(frozen=True)
class CrossInputs:
    model: Any
    tokenizer: Any
    source: tuple[int, ...]
    start_id: int
    end_id: int
    steps: int  # decoding steps asked for (fewer when END comes first)


def compute_cross(inputs: CrossInputs, token):
    from core.experiments.cross_attention import greedy_decode

    def step(n: int) -> None:
        token.check()
        token.report(n / max(1, inputs.steps), f"decoding step {n + 1}")

    return greedy_decode(inputs.model, inputs.source, inputs.start_id, inputs.end_id, inputs.steps, TOP_SHOWN,
                         inputs.tokenizer, on_step=step)


def special_label(label: str, token_id: int, result) -> str:
    """START and END by name: a tab and a newline would be an arrow glyph nobody reads as 'begin' or 'end'."""
    return "START" if token_id == result.start_id else "END" if token_id == result.end_id else label


class CrossAttentionView(View):
    name = "Cross-attention"
    reads = frozenset({"model", "tokenizer"})
    compute_fn = staticmethod(compute_cross)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.steps = 0
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.source_edit = QLineEdit(DEFAULT_SOURCE)
        self.source_edit.setObjectName("cross-source")
        self.source_edit.setMaxLength(MAX_SOURCE_CHARS)
        self.source_edit.setToolTip(f"What the encoder reads (at most {MAX_SOURCE_CHARS} characters), e.g. a date in "
                                    "words: 5 March 2021, March 5, 2021")
        self.source_edit.setMinimumWidth(self.source_edit.fontMetrics().horizontalAdvance("September 30, 2021") + 24)
        self.source_edit.textChanged.connect(self.inputs_changed)
        labelled(row, "source", self.source_edit)
        self.step_button = QPushButton("Step")
        self.step_button.setObjectName("cross-step")
        self.step_button.setToolTip("Run the decoder one more position: it appends its most probable token")
        self.run_button = QPushButton("Run to END")
        self.run_button.setObjectName("cross-run")
        self.run_button.setToolTip(f"Decode until the model produces END (at most {MAX_STEPS} steps)")
        self.reset_button = QPushButton("Reset")
        self.reset_button.setObjectName("cross-reset")
        self.reset_button.setToolTip("Back to no generated token")
        self.step_button.clicked.connect(self.step)
        self.run_button.clicked.connect(self.run_to_end)
        self.reset_button.clicked.connect(self.reset)
        row.addWidget(control_group(self.step_button, self.run_button, self.reset_button))
        self.layer_spin = QSpinBox()
        self.layer_spin.setObjectName("cross-layer")
        self.layer_spin.setToolTip("The decoder layer whose cross-attention is drawn")
        self.head_combo = QComboBox()
        self.head_combo.setObjectName("cross-head")
        self.head_combo.setToolTip("One head's weights, or their mean over the layer's heads")
        # Which slice of the result is drawn: the result holds every layer and head, so nothing recomputes.
        self.layer_spin.valueChanged.connect(self._redraw)
        self.head_combo.currentIndexChanged.connect(self._redraw)
        labelled(row, "layer", self.layer_spin)
        labelled(row, "head", self.head_combo)
        self.note_label = note_label("cross-note")
        row.addWidget(self.note_label)
        self.add_controls(row)
        self.output_label = plain_label(name="cross-output")
        self.output_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stale_labels += [self.output_label, self.note_label]
        column.addWidget(self.output_label)
        splitter = self.splitter = TurningSplitter()  # the table goes below the map where both do not fit
        self._split_once = False
        self.map = Heatmap("source position (what the encoder read)", "decoder position: reads → produces",
                           "Cross-attention",
                           value_format="{:.3f}")
        self.map.setObjectName("cross-map")
        splitter.addWidget(self.map)
        self.steps_table = table(("step", "reads", "produces", "top predictions"))
        self.steps_table.setObjectName("cross-steps")
        splitter.addWidget(self.steps_table)
        # The map is the lesson's subject: it keeps most of the width at any scale, the table's predictions elide.
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([720, 280])
        column.addWidget(splitter, 1)
        state.model_changed.connect(self._follow_model)
        self._follow_model()

    # ---- controls ------------------------------------------------------------------------------
    def _follow_model(self) -> None:
        """The layer and head pickers offer what the new model has; a choice it lacks is reset and the note says so."""
        model = self.state.model
        layers = model.config.n_layers if model is not None else 1
        heads = model.config.n_heads if model is not None else 0
        parts = []
        if model is not None and self.layer_spin.value() > layers - 1:
            parts.append(f"layer reset to {layers - 1}: {model.config.name} has {layers} decoder "
                         f"layer{'s' if layers != 1 else ''}")
        self.layer_spin.setRange(0, max(0, layers - 1))
        if self.head_combo.count() != heads + 1:
            current = self.head_combo.currentData()
            self.head_combo.blockSignals(True)
            self.head_combo.clear()
            self.head_combo.addItem("mean of heads", MEAN)
            for head in range(heads):
                self.head_combo.addItem(f"H{head}", head)
            index = self.head_combo.findData(current)
            self.head_combo.setCurrentIndex(max(0, index))
            self.head_combo.blockSignals(False)
            if model is not None and index < 0 and current is not None:
                parts.append(f"head reset to the mean of heads: {model.config.name} has {heads} head"
                             f"{'s' if heads != 1 else ''} per layer")
        steps = self.max_steps()
        if model is not None and self.steps > steps:
            parts.append(f"steps reset from {self.steps} to {steps}: {model.config.name}'s context")
            self.steps = steps
        if model is not None:
            self.note_label.setText("; ".join(parts))

    def max_steps(self) -> int:
        model = self.state.model
        return min(MAX_STEPS, model.config.context_length) if model is not None else MAX_STEPS

    def set_steps(self, steps: int) -> None:
        steps = max(0, min(int(steps), self.max_steps()))
        if steps != self.steps:
            self.steps = steps
            self.inputs_changed()

    def step(self) -> None:
        shown = self.result if not self.is_stale else None
        if shown is not None and shown.finished:
            return
        self.set_steps((shown.steps if shown is not None else self.steps) + 1)

    def run_to_end(self) -> None:
        self.set_steps(self.max_steps())

    def reset(self) -> None:
        self.set_steps(0)

    # ---- inputs --------------------------------------------------------------------------------
    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        from core.experiments.cross_attention import DecodeError, seq2seq_problem, special_ids

        problem = seq2seq_problem(model.config)
        if problem:
            return Refusal(as_sentence(problem), offer="tiny-encoder-decoder")
        tokenizer = self.state.tokenizer
        if tokenizer is None:
            return Refusal("This model has no tokenizer beside it: the source cannot be read.")
        try:
            start_id, end_id = special_ids(tokenizer)
        except DecodeError as error:
            return Refusal(as_sentence(str(error)))
        text = self.source_edit.text()
        if not text:
            return Refusal(f"Source: empty; type one for the encoder, e.g. {DEFAULT_SOURCE!r}.")
        try:
            source = tuple(tokenizer.encode(text))
        except Exception as error:  # noqa: BLE001 (each tokenizer raises its own unknown-token error)
            return Refusal(f"Source: {error}; remove it, or retype the source in the characters of "
                           f"{DEFAULT_SOURCE!r}.")
        if not source:
            return Refusal(f"Source: empty; type one for the encoder, e.g. {DEFAULT_SOURCE!r}.")
        if len(source) > model.config.context_length:
            return Refusal(f"Source: {len(source)} tokens, more than {model.config.name}'s context of "
                           f"{model.config.context_length}; shorten it to at most {model.config.context_length}.")
        if max(source) >= model.config.vocab_size or max(start_id, end_id) >= model.config.vocab_size:
            return Refusal(f"The tokenizer's ids reach beyond {model.config.name}'s vocabulary of "
                           f"{model.config.vocab_size}: they do not belong together.")
        return CrossInputs(model, tokenizer, source, start_id, end_id, min(self.steps, self.max_steps()))

    # ---- showing -------------------------------------------------------------------------------
    def show_result(self, result) -> None:
        tokenizer = self.shown_inputs.tokenizer
        source_text = tokenizer.decode(list(result.source))
        output = tokenizer.decode(list(result.output)).replace("\n", "⏎").replace("\t", "⇥")
        if result.steps == 0:
            state = "No step yet: Step runs the decoder on START and appends the token it finds most probable."
        elif result.finished:
            state = f"Output after {result.steps} steps, ended with END: {output}"
        elif result.steps >= self.max_steps():
            state = f"Output after {result.steps} steps, with no END within {self.max_steps()}: {output}"
        else:
            steps = f"{result.steps} step{'s' if result.steps != 1 else ''}"
            state = f"Output after {steps}: {output}  (Step on, or Run to END)"
        from core.date_corpus import learned_spellings_text, reads_dates, spelling_problem

        problem = spelling_problem(source_text) if reads_dates(tokenizer) else ""
        warning = (f"\n⚠ Outside the spellings it learned: {problem}. The output may be wrong, however probable."
                   if problem else "")
        self.output_label.setToolTip(f"The dates translator learned only {learned_spellings_text()}" if problem else "")
        self.output_label.setText(f"Source: {source_text}  ({len(result.source)} tokens)\n{state}{warning}")
        self.step_button.setEnabled(not result.finished and result.steps < self.max_steps())
        self._draw_map(result)
        self._show_steps(result)

    def _redraw(self) -> None:
        if self.result is not None and not self.is_stale and not self.showing_message:
            self._draw_map(self.result)

    def _draw_map(self, result) -> None:
        layers = result.cross_attention.shape[0]
        layer = min(self.layer_spin.value(), layers - 1)
        head = self.head_combo.currentData()
        head = MEAN if head is None or head >= result.cross_attention.shape[1] else head
        rows = result.head_mean(layer) if head == MEAN else result.cross_attention[layer, head]  # (N, S)
        # No spaces: the map's ticks show a space as a visible glyph.
        labels = [f"{special_label(result.input_labels[n], read, result)}→"
                  f"{special_label(result.top_labels[n][0], made, result)}"
                  for n, (read, made) in enumerate(zip(result.decoder_input, result.generated))]
        if not result.steps:
            rows, labels = np.full((1, len(result.source)), np.nan), ["START→?"]
        who = "mean of heads" if head == MEAN else f"head {head}"
        self.map.plot.setTitle(f"Cross-attention of layer {layer}, {who}")
        self.map.set_data(rows, labels, list(result.source_labels), levels=(0.0, 1.0))

    def _show_steps(self, result) -> None:
        self.steps_table.setRowCount(result.steps)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        fixed.setPointSizeF(theme.font().pointSizeF())
        for n, (read, made) in enumerate(zip(result.decoder_input, result.generated)):
            set_cell(self.steps_table, n, 0, str(n), right=True)
            set_cell(self.steps_table, n, 1, special_label(result.input_labels[n], read, result))
            set_cell(self.steps_table, n, 2, special_label(result.top_labels[n][0], made, result), bold=True)
            top = "  ".join(f"{special_label(label, int(i), result)} {p:.3f}" for i, label, p in
                            zip(result.top_ids[n], result.top_labels[n], result.top_probabilities[n]))
            set_cell(self.steps_table, n, 3, top).setFont(fixed)
        fit_table(self.steps_table, scrolls=True)  # the map keeps the width; the table scrolls
        fit_number_columns(self.steps_table, elided_column=3)  # the predictions give way to the map, not the step
        keep_rows_in_view(self.steps_table)
        if not self._split_once:  # the first result sets the split; the user's dragging of it is kept after
            self._split_once = True
            width = self.splitter.width()
            self.splitter.setSizes([round(width * 0.6), width - round(width * 0.6)])
        if result.steps:
            self.steps_table.scrollToBottom()

    def on_stale(self) -> None:
        self.steps_table.setRowCount(0)
        self.step_button.setEnabled(True)  # a finished decode's limit belonged to the old source

    def export_targets(self):
        return [("Cross-attention (view)", self), ("Cross-attention map (heatmap)", self.map.plot.getPlotItem())]
