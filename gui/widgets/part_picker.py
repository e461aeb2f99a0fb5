"""Pick parts of a model (heads, FFN layers) by ticking them: only the parts the model has can be chosen.

A button that names the choice ("L1H0, L1H2") opens a grid of check boxes, one row per layer and one
column per head (or a single column of layers). The grid is rebuilt for each model's shape; ticks of
parts the new model still has are kept, the others go. Nothing is typed, so nothing can be misspelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QFrame, QGridLayout, QMenu, QScrollArea, QToolButton, QWidget, QWidgetAction

Part = tuple[int, int]  # (layer, head); (layer, 0) for a picker of whole layers
SHOWN_IN_BUTTON = 4  # parts named on the button before "+N more"


class PartPicker(QToolButton):
    """A check-box grid of a model's parts behind a button that names the ticked ones; `changed` on any tick."""

    changed = Signal()

    def __init__(self, label: Callable[[int, int], str], none_text: str = "none",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._label = label
        self._none_text = none_text
        self._boxes: dict[Part, QCheckBox] = {}
        self._shape = (0, 0)
        self._has_shape = False  # no model has shaped the grid yet
        self._pending: set[Part] | None = None  # chosen before any model gave the grid a shape
        self._tip = ""
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        # The arrow is part of the text: the style's own indicator overlaps short names at any text scale.
        self.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")
        menu = QMenu(self)
        self.grid_widget = QWidget()
        self.grid = QGridLayout(self.grid_widget)
        self.grid.setContentsMargins(8, 6, 8, 6)
        self.grid.setSpacing(4)
        # A model of many layers and heads (24 x 16) scrolls inside the popup instead of running off the screen.
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.grid_widget)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        action = QWidgetAction(menu)
        action.setDefaultWidget(self.scroll)
        menu.addAction(action)
        menu.aboutToShow.connect(self._fit_popup)
        self.setMenu(menu)
        self._update_text()

    # ---- the grid -------------------------------------------------------------------------------
    def set_shape(self, n_layers: int, n_columns: int) -> None:
        """Rebuild the grid for n_layers x n_columns parts, keeping the ticks that still fit."""
        shape = (max(0, int(n_layers)), max(0, int(n_columns)))
        if shape == self._shape and self._has_shape:
            return
        kept = self._pending if self._pending is not None else set(self.selected())
        before = set(self.selected())
        for box in self._boxes.values():
            self.grid.removeWidget(box)
            box.deleteLater()
        self._boxes = {}
        self._shape = shape
        for layer in range(shape[0]):
            for column in range(shape[1]):
                box = QCheckBox(self._label(layer, column))
                box.setObjectName(f"part-{layer}-{column}")
                box.setChecked((layer, column) in kept)
                box.toggled.connect(self._toggled)
                self.grid.addWidget(box, layer, column)
                self._boxes[(layer, column)] = box
        self._has_shape, self._pending = True, None
        self._update_text()
        if set(self.selected()) != before:
            self.changed.emit()

    def _fit_popup(self) -> None:
        """The grid's own size, up to most of the screen the button is on (the rest scrolls)."""
        screen = self.screen().availableGeometry()
        wanted = self.grid_widget.sizeHint()
        bar = self.scroll.verticalScrollBar().sizeHint().width()
        width = min(wanted.width(), int(screen.width() * 0.9))
        height = min(wanted.height(), int(screen.height() * 0.6))
        self.scroll.setFixedSize(width + (bar if height < wanted.height() else 0),
                                 height + (bar if width < wanted.width() else 0))

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    def box(self, layer: int, column: int = 0) -> QCheckBox | None:
        return self._boxes.get((layer, column))

    # ---- the choice ------------------------------------------------------------------------------
    def selected(self) -> tuple[Part, ...]:
        """The ticked parts, in layer then column order."""
        return tuple(part for part, box in sorted(self._boxes.items()) if box.isChecked())

    def set_selected(self, parts: Iterable[Part]) -> tuple[Part, ...]:
        """Tick exactly these parts; returns those the grid lacks (not ticked). Before the grid has a shape the
        choice waits for it."""
        wanted = {(int(layer), int(column)) for layer, column in parts}
        if not self._has_shape:
            self._pending = wanted
            self._update_text()
            return ()
        before = self.selected()
        for part, box in self._boxes.items():
            box.blockSignals(True)
            box.setChecked(part in wanted)
            box.blockSignals(False)
        self._update_text()
        if self.selected() != before:
            self.changed.emit()
        return tuple(sorted(wanted - set(self._boxes)))

    def _toggled(self, _checked: bool) -> None:
        self._update_text()
        self.changed.emit()

    def _update_text(self) -> None:
        parts = self.selected() if self._pending is None else tuple(sorted(self._pending))
        names = [self._label(layer, column) for layer, column in parts]
        text = ", ".join(names[:SHOWN_IN_BUTTON]) or self._none_text
        if len(names) > SHOWN_IN_BUTTON:
            text += f" +{len(names) - SHOWN_IN_BUTTON} more"
        self.setText(f"{text} ▾")
        chosen = f"Chosen: {', '.join(names) or self._none_text}"
        self.setToolTip(f"{self._tip}\n\n{chosen}" if self._tip else chosen)

    def set_tip(self, tip: str) -> None:
        """The button's tooltip: what the choice is for (the chosen parts are appended)."""
        self._tip = tip
        self._update_text()

    def set_none_text(self, text: str) -> None:
        """What the button says when nothing is ticked ("none", "none: attention-only")."""
        self._none_text = text
        self._update_text()
