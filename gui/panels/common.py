"""What several panels show alike: captions, plot titles, tables, the sequence check, a change in words,
and the warning that a model was trained with a leaky mask. Not a panel: any panel may import it."""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QSizePolicy, QTableWidget, QTableWidgetItem,
                               QWidget)

from core.choices import MASK_MODE_LABELS
from core.display import format_change
from gui import theme
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.plot_titles import MIN_PLOT_LINES, wrap_title
from gui.widgets.table_rows import fit_number_columns, never_cut_cells


def set_title(plot: pg.PlotWidget, text: str) -> None:
    """A plot title at the size theme.style_plot gives titles (a bare setTitle would reset it)."""
    label_px = max(8, round(theme.font(0.9).pointSizeF() * 1.35))
    style = (text, theme.current().text, label_px)
    if getattr(plot, "_tokens_title_style", None) == style:
        return  # re-setting a title re-lays out the whole plot
    plot._tokens_title_style = style
    plot.setTitle(text, color=theme.current().text, size=f"{round(label_px * 1.1)}px")


def sequence_refusal(model, tokens: list[int]) -> str:
    """Why a model cannot take these tokens, in words, or "" when it can."""
    config = model.config
    if not tokens:
        return "Type some text above: there are no tokens to edit."
    if len(tokens) > config.accepted_length:  # past the trained length where the positions allow (accepted_length)
        where = (f"context length of {config.context_length} (its learned position table's rows)"
                 if config.positional == "learned" else
                 f"{config.accepted_length:,} tokens the app accepts for {config.positional} positions")
        return (f"Text: {len(tokens)} tokens exceed {config.name}'s {where}; "
                f"delete at least {len(tokens) - config.accepted_length} tokens or shorten the text.")
    if max(tokens) >= config.vocab_size:
        return f"Token id {max(tokens)} is outside {config.name}'s vocabulary of {config.vocab_size}."
    return ""


def plain_label(text: str = "", name: str = "", wrap: bool = True) -> QLabel:
    from gui.widgets.wrapping_label import WrappingLabel

    # Wrapped, as high as its lines: a QLabel asks for one line's height, and the plot above it is drawn under it.
    label = WrappingLabel(text) if wrap else QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # token text is the user's: never rich text
    label.setWordWrap(wrap)
    if name:
        label.setObjectName(name)
    return label


class NoteLabel(QLabel):
    """A view's one-line note of inputs that were reset ("head reset to L0H0: the new model has 1 layer"), shown only
    while it has something to say. In a view's `stale_labels`, the next change of the view's inputs clears it."""

    def __init__(self, name: str) -> None:
        super().__init__("")
        self.setObjectName(name)
        self.setTextFormat(Qt.TextFormat.PlainText)  # it quotes the user's tokens
        self.setWordWrap(True)  # one sentence, on as many lines as a narrow window needs: never a sideways scroll
        # In a row of controls it takes what the row leaves over, so it wraps only where the window is narrow.
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setToolTip("Inputs that were reset because they no longer applied; cleared at the next change")
        self.hide()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        if self.parentWidget() is not None:  # a label without a parent would open as a window of its own
            self.setHidden(not text)


def note_label(name: str) -> NoteLabel:
    return NoteLabel(name)


def reset_note(parts: Sequence[str]) -> str:
    """One line for a note_label from clauses such as "head reset to L0H0: the new model has 1 layer"."""
    return "; ".join(parts)


def layers_and_heads(config) -> str:
    """ "2 layers of 4 heads": what a reset note names when a layer or head is not in the new model."""
    layers, heads = config.n_layers, config.n_heads
    return f"{layers} layer{'s' if layers != 1 else ''} of {heads} head{'s' if heads != 1 else ''}"


def labelled(row: FlowLayout, text: str, widget: QWidget) -> QLabel:
    caption = QLabel(text)
    caption.setBuddy(widget)
    caption.setToolTip(widget.toolTip())
    row.addWidget(control_group(caption, widget))
    return caption


def make_plot(title: str, bottom: str, left: str, min_lines: int = MIN_PLOT_LINES) -> pg.PlotWidget:
    plot = pg.PlotWidget()
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setTitle(title)
    plot.setLabel("bottom", bottom)
    plot.setLabel("left", left)
    plot.showGrid(x=True, y=True, alpha=0.25)
    return wrap_title(plot, min_lines)


def as_sentence(problem: str) -> str:
    """A core refusal (a clause, as the command line prints it) as a sentence for the view."""
    return problem[:1].upper() + problem[1:] + ("" if problem.endswith(".") else ".")


def token_label(tokenizer, token_id: int) -> str:
    from core.display import display_token

    if tokenizer is not None and 0 <= token_id < tokenizer.vocab_size:
        return display_token(tokenizer.token_text(token_id))
    return f"#{token_id}"


def token_labels(tokenizer, ids: Sequence[int]) -> list[str]:
    return [token_label(tokenizer, int(i)) for i in ids]


def caption(text: str = "", rich: bool = False) -> QLabel:
    from gui.widgets.wrapping_label import WrappingLabel

    label = WrappingLabel(text)  # as high as its lines: a caption beside a map is never cut off
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def table(columns: tuple[str, ...]) -> QTableWidget:
    widget = QTableWidget(0, len(columns))
    widget.setHorizontalHeaderLabels(list(columns))
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    widget.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    widget.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    widget.verticalHeader().hide()
    widget.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    widget.setAlternatingRowColors(True)
    widget.horizontalHeader().setStretchLastSection(True)
    never_cut_cells(widget)
    return widget


def set_cell(widget: QTableWidget, row: int, column: int, text: str, right: bool = False, bold: bool = False,
             swatch: QColor | None = None, color: QColor | None = None) -> QTableWidgetItem:
    item = widget.item(row, column)
    if item is None:
        item = QTableWidgetItem()
        widget.setItem(row, column, item)
    item.setText(text)
    item.setFont(theme.font(bold=bold))
    item.setTextAlignment((Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft) | Qt.AlignmentFlag.AlignVCenter)
    item.setData(Qt.ItemDataRole.DecorationRole, swatch)
    item.setForeground(QBrush(color) if color is not None else QBrush())
    return item


def fit_table(widget: QTableWidget, whole_width: bool = False, scrolls: bool = False) -> None:
    """Rows sized to the theme's font; the number columns as wide as their numbers, the first (the parts'
    names) elided with "…" when squeezed; with whole_width, the names are never elided either."""
    widget.verticalHeader().setDefaultSectionSize(round(QFontMetrics(theme.font()).height() * 1.5))
    header = widget.horizontalHeader()
    header.setFont(theme.font(bold=True))
    fit_number_columns(widget, elided_column=0, scrolls=scrolls)
    if whole_width:
        columns = sum(max(widget.sizeHintForColumn(column), header.sectionSizeHint(column)) for column in range(widget.columnCount()))
        widget.setMinimumWidth(columns + 2 * widget.frameWidth() + widget.verticalScrollBar().sizeHint().width())


def trained_mask_warning(model) -> str:
    """One line for a model trained with a leaky mask (its training.json says so), or "" for a causal one."""
    mode = getattr(model, "trained_mask_mode", "causal")
    if mode == "causal":
        return ""
    return (f"Leaky training mask: {MASK_MODE_LABELS.get(mode, mode)}, recorded in its training.json; expect worse text "
            "than its training loss suggests.")


LEAKY_MASK_WHY = ("It learned with the next token in view; generation runs with the causal mask and hides it, so the "
                  "model meets a task it never trained on (Train > Compare pitfalls measures how much worse).")


class TrainedMaskWarning(QLabel):
    """The leaky-training warning of the lab's current model, above generated text; hidden for a causal model."""

    def __init__(self, state, parent=None) -> None:
        super().__init__("", parent)
        self._state = state
        self.setObjectName("trained-mask-warning")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        state.model_changed.connect(self.follow_model)
        self.apply_theme()
        self.follow_model()

    def follow_model(self) -> None:
        text = trained_mask_warning(self._state.model)
        self.setText(text)
        self.setToolTip(LEAKY_MASK_WHY if text else "")
        self.setVisible(bool(text))

    def apply_theme(self) -> None:
        self.setStyleSheet(f"color: {theme.current().warning};")
        self.setFont(theme.font(1.0, bold=True))


__all__ = [
    "LEAKY_MASK_WHY",
    "NoteLabel",
    "TrainedMaskWarning",
    "as_sentence",
    "caption",
    "fit_table",
    "format_change",
    "labelled",
    "layers_and_heads",
    "make_plot",
    "note_label",
    "plain_label",
    "reset_note",
    "sequence_refusal",
    "set_cell",
    "set_title",
    "table",
    "token_label",
    "token_labels",
    "trained_mask_warning",
]
