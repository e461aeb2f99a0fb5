"""The reading's script: the minimal block's causal-mask check, run with the reading's seed and random inputs.

Shown in place of the panel's sub-tabs while "Reading's script" is checked. It reads nothing of the
lab's state (no model, tokens or mask): the script builds its own block from the seed, so the
window shows what the reading prints, computed here. Its one input is the seed (the reading's by
default); another seed shows which figures are the block's chance and which (the exact zeros) are
the mask's guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import View
from gui.panels.common import caption, set_title
from gui.widgets.legend import legend_below
from gui.widgets.plot_titles import wrap_title
from gui.widgets.script_printout import ScriptPrintout
from gui.widgets.turning_splitter import TurningSplitter

PLOT_MIN_LINES_WIDE = 12  # the change plot's least width, in text lines: its axis and a title's longest words

READINGS_SEED = 0  # torch.manual_seed(0) in the reading's script
MAX_SEED = 2**31 - 1  # the spin box's bound; core accepts up to 2**32 - 1


@dataclass(frozen=True)
class ReadingCausalInputs:
    seed: int


def compute_reading_causal(inputs: ReadingCausalInputs, token) -> Any:
    from core.experiments import reading

    return reading.causal_printout(inputs.seed)


def scrolled(content: QWidget) -> QScrollArea:
    """Content that does not fit a small screen scrolls inside the view instead of growing the window."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(content)
    return area


class ReadingCausalView(View):
    name = "Reading's script"
    compute_fn = staticmethod(compute_reading_causal)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        outer = QVBoxLayout(self.content)
        outer.setContentsMargins(0, 4, 0, 0)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel("")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setObjectName("tokens-reading-title")
        column.addWidget(self.title)
        self.setup_label = caption("")
        self.setup_label.setObjectName("tokens-reading-setup")
        column.addWidget(self.setup_label)
        self.reading_seed_spin = QSpinBox()
        self.reading_seed_spin.setObjectName("tokens-reading-seed")
        self.reading_seed_spin.setRange(0, MAX_SEED)
        self.reading_seed_spin.setValue(READINGS_SEED)
        self.reading_seed_spin.setKeyboardTracking(False)
        self.reading_seed_spin.setToolTip("torch.manual_seed of the script: 0 is the reading's; another seed "
                                          "draws another block and other inputs")
        self.seed_caption = QLabel("seed")
        self.seed_caption.setBuddy(self.reading_seed_spin)
        self.reading_seed_spin.valueChanged.connect(self.inputs_changed)
        # The printout beside the plot where both fit, the plot below it where not (a lesson beside the
        # panel at projector scale left the plot 70-170 px, its title's words broken).
        row = TurningSplitter()
        row.setChildrenCollapsible(False)
        self.printout = ScriptPrintout()
        self.printout.setObjectName("tokens-reading-printout")
        row.addWidget(self.printout)
        self.change_plot = wrap_title(pg.PlotWidget())
        self.change_plot.setObjectName("tokens-reading-plot")
        self.change_plot.setMenuEnabled(False)
        self.change_plot.hideButtons()
        self.change_plot.setMouseEnabled(x=False, y=False)
        self.change_plot.setLabel("bottom", "position")
        self.change_plot.setLabel("left", "max |change|")
        self.change_plot.setMinimumHeight(220)
        self.legend = legend_below(self.change_plot)
        self.masked_bars = pg.BarGraphItem(x=[], height=[], width=0.4, name="causal mask")
        self.open_bars = pg.BarGraphItem(x=[], height=[], width=0.4, name="no mask")
        self.change_plot.addItem(self.masked_bars)
        self.change_plot.addItem(self.open_bars)
        row.addWidget(self.change_plot)
        row.setStretchFactor(0, 3)
        row.setStretchFactor(1, 2)
        column.addWidget(row)
        self.contrast_label = caption("")
        self.contrast_label.setObjectName("tokens-reading-contrast")
        column.addWidget(self.contrast_label)
        column.addStretch(1)
        outer.addWidget(scrolled(body))
        self.stale_labels = [self.setup_label, self.contrast_label]
        self.apply_theme()

    def header_widgets(self) -> tuple[QWidget, ...]:
        """The controls the panel shows above this view, beside its Reading's script check box."""
        return self.seed_caption, self.reading_seed_spin

    def inputs(self) -> ReadingCausalInputs:
        return ReadingCausalInputs(self.reading_seed_spin.value())

    def show_result(self, printout) -> None:
        self.title.setText(printout.title)
        self.setup_label.setText(printout.setup)
        self.contrast_label.setText(printout.contrast)
        self.printout.set_lines(printout.lines)
        self.stale_labels = [self.setup_label, self.contrast_label, *self.printout.figure_labels()]
        positions = np.arange(len(printout.masked_change))
        self.masked_bars.setOpts(x=positions - 0.2, height=printout.masked_change, brush=theme.series_color(0),
                                 pen=pg.mkPen(None))
        self.open_bars.setOpts(x=positions + 0.2, height=printout.unmasked_change, brush=theme.series_color(1),
                               pen=pg.mkPen(None))
        self.masked_bars.show()
        self.open_bars.show()
        set_title(self.change_plot, f"edit at position {printout.edit_position}: max |change| per position")

    def on_stale(self) -> None:
        # The bars belong to the old seed: none stay up beside the cleared figures.
        self.masked_bars.hide()
        self.open_bars.hide()

    def shown_figures(self) -> dict[str, str]:
        """caption -> figure, as on screen."""
        return self.printout.shown_figures()

    def apply_theme(self) -> None:
        self.change_plot.setMinimumWidth(PLOT_MIN_LINES_WIDE * QFontMetrics(theme.font()).lineSpacing())
        self.title.setFont(theme.font(1.1))
        self.title.setStyleSheet("font-weight: bold;")  # a stylesheet weight survives the app-wide sheet
        self.contrast_label.setStyleSheet(f"color: {theme.current().muted};")
        self.printout.apply_theme()
        super().apply_theme()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Reading's script", self), ("Reading's script: max |change| per position",
                                             self.change_plot.getPlotItem())]
