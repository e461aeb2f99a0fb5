"""A script's printed lines as a table: the words, the figure beside them, and what was measured.

Rows come from core.experiments.reading.ScriptLine (caption, figure, note). Figures are set in the
system's fixed-width font like a terminal, so digits line up the way the script prints them; every
text is plain text. Labels are reused between results, so a view can list `figure_labels()` among
the texts it clears the moment its inputs change.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QWidget

from gui import theme
from gui.widgets.wrapping_label import WrappingLabel


def _label(selectable: bool = True, wrapping: bool = False) -> QLabel:
    label = WrappingLabel("") if wrapping else QLabel("")
    label.setTextFormat(Qt.TextFormat.PlainText)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class ScriptPrintout(QWidget):
    """Rows of (caption, figure, note); `set_lines` shows a printout, `figure(caption)` reads one back."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setHorizontalSpacing(16)
        self._grid.setVerticalSpacing(2)
        self._grid.setColumnStretch(2, 1)
        self._rows: list[tuple[QLabel, QLabel, QLabel]] = []
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.apply_theme()

    def set_lines(self, lines: Sequence) -> None:
        """Show these ScriptLine rows; rows beyond them are hidden, not destroyed."""
        while len(self._rows) < len(lines):
            row = len(self._rows)
            caption, figure, note = _label(), _label(), _label(wrapping=True)
            figure.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            for column, label in enumerate((caption, figure, note)):
                self._grid.addWidget(label, row, column)
            self._rows.append((caption, figure, note))
            self._style_row(caption, figure, note)
        for index, (caption, figure, note) in enumerate(self._rows):
            shown = index < len(lines)
            for label in (caption, figure, note):
                label.setVisible(shown)
            if shown:
                line = lines[index]
                caption.setText(f"{line.caption} =")
                figure.setText(line.figure)
                note.setText(line.note)

    def figure_labels(self) -> list[QLabel]:
        """The figure and note labels (the texts that belong to one result)."""
        return [label for _caption, figure, note in self._rows for label in (figure, note)]

    def shown_figures(self) -> dict[str, str]:
        """caption -> figure text, as on screen (an empty figure while the view is stale)."""
        return {caption.text().removesuffix(" ="): figure.text()
                for caption, figure, _note in self._rows if caption.isVisibleTo(self)}

    def apply_theme(self) -> None:
        for row in self._rows:
            self._style_row(*row)

    def _style_row(self, caption: QLabel, figure: QLabel, note: QLabel) -> None:
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(theme.font().pointSizeF())
        figure.setFont(mono)
        caption.setFont(theme.font())
        note.setFont(theme.font(0.95))
        note.setStyleSheet(f"color: {theme.current().muted};")
