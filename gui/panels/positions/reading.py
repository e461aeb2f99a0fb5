"""The reading's scripts: RoPE's offset-only scores and the permutation test, with the reading's seeds.

Shown in place of the panel's sub-tabs while "Reading's script" is checked. It reads none of the
panel's controls (q, k source, base, scale, positions): each script draws its own random inputs
from the seed, in the reading's order, so the window shows what the reading prints, computed here.
Its one input is the seed of both scripts (the reading's by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from gui import theme
from gui.panels.base import View
from gui.panels.positions.common import plain_label
from gui.widgets.script_printout import ScriptPrintout

READINGS_SEED = 0  # np.random.seed(0) and torch.manual_seed(0) in the reading's two scripts
MAX_SEED = 2**31 - 1  # the spin box's bound; core accepts up to 2**32 - 1


@dataclass(frozen=True)
class ReadingPositionsInputs:
    seed: int


@dataclass(frozen=True)
class ReadingPositionsResult:
    rope: Any  # core.experiments.reading.ScriptPrintout
    permutation: Any


def compute_reading_positions(inputs: ReadingPositionsInputs, token) -> ReadingPositionsResult:
    from core.experiments import reading

    rope = reading.rope_printout(inputs.seed)
    token.check()
    return ReadingPositionsResult(rope=rope, permutation=reading.permutation_printout(inputs.seed))


def _caption(name: str) -> QLabel:
    label = plain_label(name=name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class _ScriptSection:
    """One script's title, setup line, printed lines and contrast line."""

    def __init__(self, column: QVBoxLayout, name: str) -> None:
        self.title = plain_label(name=f"positions-reading-{name}-title")
        self.setup = _caption(f"positions-reading-{name}-setup")
        self.printout = ScriptPrintout()
        self.printout.setObjectName(f"positions-reading-{name}-printout")
        self.contrast = _caption(f"positions-reading-{name}-contrast")
        for widget in (self.title, self.setup, self.printout, self.contrast):
            column.addWidget(widget)

    def show(self, printout) -> None:
        self.title.setText(printout.title)
        self.setup.setText(printout.setup)
        self.printout.set_lines(printout.lines)
        self.contrast.setText(printout.contrast)

    def stale_labels(self) -> list[QLabel]:
        return [self.setup, self.contrast, *self.printout.figure_labels()]

    def apply_theme(self) -> None:
        self.title.setFont(theme.font(1.1))
        self.title.setStyleSheet("font-weight: bold;")  # a stylesheet weight survives the app-wide sheet
        self.contrast.setStyleSheet(f"color: {theme.current().muted};")
        self.printout.apply_theme()


class ReadingPositionsView(View):
    name = "Reading's script"
    compute_fn = staticmethod(compute_reading_positions)

    def __init__(self, state, compute, channel_prefix: str = "", parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        outer = QVBoxLayout(self.content)
        outer.setContentsMargins(0, 4, 0, 0)
        self.reading_seed_spin = QSpinBox()
        self.reading_seed_spin.setObjectName("positions-reading-seed")
        self.reading_seed_spin.setRange(0, MAX_SEED)
        self.reading_seed_spin.setValue(READINGS_SEED)
        self.reading_seed_spin.setKeyboardTracking(False)
        self.reading_seed_spin.setToolTip("The scripts' seed (np.random.seed for RoPE, torch.manual_seed for the "
                                          "permutation): 0 is the reading's")
        self.seed_caption = QLabel("seed")
        self.seed_caption.setBuddy(self.reading_seed_spin)
        self.reading_seed_spin.valueChanged.connect(self.inputs_changed)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        self.permutation_section = _ScriptSection(column, "permutation")
        column.addSpacing(12)
        self.rope_section = _ScriptSection(column, "rope")
        column.addStretch(1)
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setFrameShape(QScrollArea.Shape.NoFrame)
        area.setWidget(body)
        outer.addWidget(area, 1)
        self.apply_theme()

    def header_widgets(self) -> tuple[QWidget, ...]:
        """The controls the panel shows above this view, beside its Reading's script check box."""
        return self.seed_caption, self.reading_seed_spin

    def inputs(self) -> ReadingPositionsInputs:
        return ReadingPositionsInputs(self.reading_seed_spin.value())

    def show_result(self, result: ReadingPositionsResult) -> None:
        self.rope_section.show(result.rope)
        self.permutation_section.show(result.permutation)
        self.stale_labels = [*self.rope_section.stale_labels(), *self.permutation_section.stale_labels()]

    def shown_figures(self) -> dict[str, str]:
        """caption -> figure, as on screen, of both scripts."""
        return {**self.permutation_section.printout.shown_figures(), **self.rope_section.printout.shown_figures()}

    def apply_theme(self) -> None:
        self.rope_section.apply_theme()
        self.permutation_section.apply_theme()
        super().apply_theme()
