"""Fill in the blank: an encoder's top predictions where the lab's text holds its mask token, and the mirror of the
causal-mask experiment: an edit after the blank moves the encoder's prediction there, while the bundled decoder's
prediction for the blank (made at the position before it) stays bitwise the same; an edit before it moves both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import (
    as_sentence,
    fit_table,
    labelled,
    make_plot,
    plain_label,
    sequence_refusal,
    set_cell,
    table,
)
from gui.panels.families.common import EditHistory
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.table_rows import fit_number_columns, keep_rows_in_view
from gui.widgets.turning_splitter import TurningSplitter

MAX_TOP = 20  # predictions listed per model
EXAMPLE = "To be, or n_t to be, that is the question:"


@dataclass(frozen=True)
class FillInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]  # the text now ("after")
    before: tuple[int, ...] | None  # the text before its last edit, when that kept its length
    mask_id: int
    blank: int  # the chosen blank's position
    top_k: int


@dataclass(frozen=True)
class FillOutcome:
    fill: Any  # core FillMaskResult: the encoder at every blank of the text now
    blank: int
    decoder_now: Any  # core BlankReading of the decoder for the text now, or None (decoder_note says why)
    comparison: Any  # core BlankEditResult of before and after, or None (comparison_note says why)
    decoder_name: str
    decoder_note: str
    comparison_note: str


def compute_fill(inputs: FillInputs, token) -> FillOutcome:
    from core.experiments import fill_mask as fm
    from core.model import SequenceError

    token.check()
    fill = fm.fill_mask(inputs.model, inputs.tokens, inputs.mask_id, inputs.top_k, inputs.tokenizer)
    decoder = decoder_tokenizer = decoder_now = None
    decoder_ids: list[int] | None = None
    decoder_note = ""
    if inputs.blank == 0:
        decoder_note = "the blank is the first token: a decoder has no earlier position to predict it from"
    else:
        try:
            reference = fm.reference_decoder()
            decoder, decoder_tokenizer = reference.model, reference.tokenizer
            decoder_ids = fm.decoder_tokens(inputs.tokens, inputs.tokenizer, decoder_tokenizer, inputs.mask_id)
            decoder_now = fm.blank_reading(decoder, decoder_ids, inputs.blank - 1, inputs.top_k, decoder_tokenizer)
        except (fm.FillMaskError, SequenceError) as error:
            decoder, decoder_note = None, str(error)
        except Exception as error:  # noqa: BLE001 (a missing or damaged bundle: the encoder's half still shows)
            decoder, decoder_note = None, f"the bundled {fm.REFERENCE_DECODER} could not be loaded ({error})"
    token.check()
    comparison, comparison_note = None, ""
    if inputs.before is not None:
        try:
            decoder_before = (fm.decoder_tokens(inputs.before, inputs.tokenizer, decoder_tokenizer, inputs.mask_id)
                              if decoder is not None else None)
            comparison = fm.blank_edit(inputs.model, inputs.before, inputs.tokens, inputs.blank, inputs.mask_id,
                                       inputs.top_k, decoder, decoder_before, decoder_ids, fm.REFERENCE_DECODER,
                                       inputs.tokenizer, decoder_tokenizer, decoder_note)
        except (fm.FillMaskError, SequenceError) as error:
            comparison_note = str(error)
    return FillOutcome(fill, inputs.blank, decoder_now, comparison, fm.REFERENCE_DECODER, decoder_note, comparison_note)


def marked_text(tokenizer, ids, blank: int, edited=()) -> str:
    """The text with the blank in double brackets and edited tokens in angle brackets (plain text, one line)."""
    from core.display import display_token

    char = getattr(tokenizer, "kind", "") == "char"
    pieces = []
    for position, token_id in enumerate(ids):
        text = tokenizer.token_text(int(token_id)) if tokenizer is not None else f"#{token_id}"
        text = text.replace("\n", "⏎").replace("\t", "⇥") if char else display_token(text)
        if position == blank:
            text = f"⟦{text}⟧"
        elif position in edited:
            text = f"⟨{text}⟩"
        pieces.append(text)
    return ("" if char else " ").join(pieces)


class FillBlankView(View):
    name = "Fill in the blank"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_fill)

    def __init__(self, state, compute, history: EditHistory, channel_prefix: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.history = history
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.blank_spin = QSpinBox()
        self.blank_spin.setObjectName("fill-blank")
        self.blank_spin.setRange(1, 1)
        self.blank_spin.setToolTip("Which blank of the text (counted from the left) the predictions are for")
        self.top_spin = QSpinBox()
        self.top_spin.setObjectName("fill-top")
        self.top_spin.setRange(1, MAX_TOP)
        self.top_spin.setValue(5)
        self.top_spin.setToolTip("Predictions listed per model")
        for spin in (self.blank_spin, self.top_spin):
            spin.valueChanged.connect(self.inputs_changed)
        labelled(row, "blank", self.blank_spin)
        labelled(row, "predictions", self.top_spin)
        self.add_controls(row)
        self.texts_label = plain_label(name="fill-texts")
        self.texts_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict_label = plain_label(name="fill-verdict")
        self.stale_labels += [self.texts_label, self.verdict_label]
        column.addWidget(self.texts_label)
        column.addWidget(self.verdict_label)
        splitter = TurningSplitter()  # the table goes below the bars where both do not fit
        self.plot = make_plot("The encoder at the blank", "probability", "")
        self.plot.invertY(True)  # the most probable on top
        self.after_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.5)
        self.before_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.5)
        self.plot.addItem(self.before_bars)
        self.plot.addItem(self.after_bars)
        splitter.addWidget(self.plot)
        self.table = table(("rank", "encoder"))
        self.table.setObjectName("fill-table")
        splitter.addWidget(self.table)
        splitter.setSizes([400, 500])
        column.addWidget(splitter, 1)
        state.tokens_changed.connect(self._update_blank_range)
        state.tokenizer_changed.connect(self._update_blank_range)
        state.torch_ready_changed.connect(self._update_blank_range)

    # ---- inputs --------------------------------------------------------------------------------
    def _blanks(self) -> tuple[int | None, tuple[int, ...]]:
        from core.experiments.fill_mask import blank_positions, mask_id_of  # torch is loaded: a model is

        mask_id = mask_id_of(self.state.tokenizer)
        return mask_id, (blank_positions(self.state.tokens, mask_id) if mask_id is not None else ())

    def _update_blank_range(self) -> None:
        if not self.state.torch_ready:
            return
        _mask_id, blanks = self._blanks()
        self.blank_spin.setMaximum(max(1, len(blanks)))
        self.blank_spin.setSuffix(f" of {len(blanks)}" if blanks else "")

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        from core.experiments.fill_mask import MASK_TOKENS, encoder_problem

        problem = encoder_problem(model.config)
        if problem:
            return Refusal(as_sentence(problem), offer="tiny-encoder")
        tokens = self.state.tokens
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        mask_id, blanks = self._blanks()
        if mask_id is None:
            return Refusal(f"This tokenizer has no mask token ({', '.join(MASK_TOKENS)}): {model.config.name} was not "
                           "trained to fill blanks here. The bundled tiny-encoder reads '_' as its blank.")
        if mask_id >= model.config.vocab_size:
            return Refusal(f"The mask token's id {mask_id} is outside {model.config.name}'s vocabulary.")
        if not blanks:
            mask = self.state.tokenizer.token_text(mask_id)
            return Refusal(f"The text has no blank: put {mask!r} where the encoder should fill in a token, "
                           f"e.g. {EXAMPLE!r}.")
        blank = blanks[min(self.blank_spin.value(), len(blanks)) - 1]
        before = self.history.before
        if before is not None and before[blank] != mask_id:
            before = None  # the edit made this blank: there is no "before" of it to compare
        return FillInputs(model, self.state.tokenizer, tuple(tokens), before, mask_id, blank, self.top_spin.value())

    # ---- showing -------------------------------------------------------------------------------
    def show_result(self, outcome: FillOutcome) -> None:
        inputs: FillInputs = self.shown_inputs
        tokenizer = inputs.tokenizer
        comparison = outcome.comparison
        edited = comparison.edited if comparison is not None else ()
        after = marked_text(tokenizer, inputs.tokens, outcome.blank, edited)
        if inputs.before is None:
            before = "(no edit around the blank yet: the text before your next edit of one token stays here)"
        else:
            before = marked_text(tokenizer, inputs.before, outcome.blank, edited)
        self.texts_label.setText(f"Before: {before}\nAfter:  {after}")
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        fixed.setPointSizeF(theme.font().pointSizeF())  # the two texts line up character by character
        self.texts_label.setFont(fixed)
        self.verdict_label.setText(self._verdict(outcome, inputs))
        self.verdict_label.setFont(theme.font(1.0, bold=True))
        self._show_bars(outcome, inputs)
        self._show_table(outcome)

    def _verdict(self, outcome: FillOutcome, inputs: FillInputs) -> str:
        decoder = outcome.decoder_name
        if outcome.comparison is not None:
            return outcome.comparison.verdict
        if outcome.comparison_note:
            return f"No comparison of before and after: {outcome.comparison_note}."
        if outcome.decoder_now is not None:
            reading = (f"{decoder} reads each blank as a space and predicts the blank at position {outcome.blank} from "
                       "the left only (its logits at the token before the blank).")
        else:
            reading = f"No decoder half: {outcome.decoder_note}."
        return (f"No edit around this blank yet. Replace one token after it (click its chip, pick another above): the "
                f"encoder's prediction here moves, {decoder}'s stays bitwise the same. Then replace one before it: both "
                f"move. {reading}")

    def _show_bars(self, outcome: FillOutcome, inputs: FillInputs) -> None:
        fill = outcome.fill
        index = fill.blanks.index(outcome.blank)
        ids, probabilities = fill.top_ids[index], fill.top_probabilities[index]  # (K,) each
        rows = np.arange(len(ids))
        self.after_bars.setOpts(x0=np.zeros(len(ids)), y=rows, width=probabilities, height=0.5,
                                brush=theme.brush("primary"), pen=theme.pen("primary", width=1))
        comparison = outcome.comparison
        if comparison is not None:
            before = comparison.encoder.before.probabilities[ids]  # (K,) the same tokens before the edit
            self.before_bars.setOpts(x0=np.zeros(len(ids)), y=rows, width=before, height=0.8, brush=None,
                                     pen=theme.pen("secondary", width=2))
        else:
            self.before_bars.setOpts(x0=[], y=[], width=[])
        self.plot.getAxis("left").setTicks([list(zip(rows.tolist(), fill.top_labels[index]))])
        title = f"The encoder at the blank (position {outcome.blank})"
        if comparison is not None:
            title += ": after the edit (filled), before it (outlined)"
        self.plot.setTitle(title)
        self.plot.setXRange(0, max(float(probabilities.max()), 1e-9) * 1.05, padding=0)

    def _show_table(self, outcome: FillOutcome) -> None:
        comparison = outcome.comparison
        decoder = outcome.decoder_name
        if comparison is not None:
            # Two-line headers: four columns of a token and its probability fit beside the bars at projector scale.
            columns = [("encoder\nbefore", comparison.encoder.before), ("encoder\nafter", comparison.encoder.after)]
            if comparison.decoder is not None:
                columns += [(f"{decoder}\nbefore", comparison.decoder.before),
                            (f"{decoder}\nafter", comparison.decoder.after)]
        else:
            index = outcome.fill.blanks.index(outcome.blank)
            columns = [("encoder", (outcome.fill.top_labels[index], outcome.fill.top_probabilities[index]))]
            if outcome.decoder_now is not None:
                columns.append((f"{decoder}\nleft only", outcome.decoder_now))
        self.table.setColumnCount(1 + len(columns))
        self.table.setHorizontalHeaderLabels(["rank", *(title for title, _ in columns)])
        readings = [(r.top_labels, r.top_probabilities) if not isinstance(r, tuple) else r for _, r in columns]
        rows = max(len(labels) for labels, _ in readings)
        self.table.setRowCount(rows)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        fixed.setPointSizeF(theme.font().pointSizeF())
        for rank in range(rows):
            set_cell(self.table, rank, 0, str(rank + 1), right=True)
            for column, (labels, probabilities) in enumerate(readings, start=1):
                text = f"{labels[rank]:<4} {probabilities[rank]:.4f}" if rank < len(labels) else ""
                set_cell(self.table, rank, column, text).setFont(fixed)
        fit_table(self.table)
        fit_number_columns(self.table, elided_column=self.table.columnCount() - 1)  # not the narrow rank column
        keep_rows_in_view(self.table)  # below the bars (a lesson beside the panel), not squeezed to its header

    def on_stale(self) -> None:
        self.after_bars.setOpts(x0=[], y=[], width=[])
        self.before_bars.setOpts(x0=[], y=[], width=[])
        self.table.setRowCount(0)

    def export_targets(self):
        return [("Fill in the blank (view)", self), ("Fill in the blank: the encoder at the blank (bars)",
                                                     self.plot.getPlotItem())]
