"""What the Tokens & masks views share: the panel's mask and depth controls, formats, and plot helpers."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox, QLabel, QSpinBox

from core.choices import MASK_MODE_LABELS, MASK_MODES
from gui import theme

MASK_MODE_CHOICES: tuple[tuple[str, str], ...] = tuple((mode, MASK_MODE_LABELS[mode]) for mode in MASK_MODES)
HATCH_CELL_PX = 8  # resolution of the exact-zero / NaN overlay per heatmap cell


class TokensControls(QObject):
    """The mask mode and depth that every view of the panel reads; `changed` fires when either does."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("tokens-mask-mode")
        for mode, label in MASK_MODE_CHOICES:
            self.mode_combo.addItem(label, mode)
        self.mode_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode_combo.setMinimumContentsLength(20)
        self.mode_combo.setToolTip("The self-attention mask both runs use; each pitfall shows what it leaks")
        self.depth_spin = QSpinBox()
        self.depth_spin.setObjectName("tokens-depth")
        self.depth_spin.setRange(1, 1)
        self.depth_spin.setToolTip("Run only the first N blocks "
                                   "(the reading's exercise 1: does the property survive depth?)")
        self.depth_spin.setKeyboardTracking(False)
        self.mode_caption, self.depth_caption = QLabel("Mask"), QLabel("Blocks")
        self.mode_caption.setBuddy(self.mode_combo)
        self.depth_caption.setBuddy(self.depth_spin)
        self.mode_combo.currentIndexChanged.connect(self.changed)
        self.depth_spin.valueChanged.connect(self.changed)

    @property
    def mask_mode(self) -> str:
        return self.mode_combo.currentData()

    def n_blocks(self, model) -> int:
        return min(self.depth_spin.value(), len(model.blocks))


def log_ticks(low: int, high: int, room: int = 8) -> list[tuple[float, str]]:
    """Decade ticks 1e-8 .. 1, at most `room` of them so that labels never overlap."""
    step = max(1, math.ceil((high - low + 1) / max(1, room)))
    return [(float(k), f"1e{k}" if k not in (0, 1) else ("1" if k == 0 else "10")) for k in range(low, high + 1, step)]


def hatch_overlay(exact: np.ndarray, nan: np.ndarray,
                  cell_px: tuple[int, int] = (HATCH_CELL_PX, HATCH_CELL_PX)) -> np.ndarray:
    """RGBA (rows*Sy, cols*Sx, 4): exact zeros hatched, NaN cross-hatched; transparent elsewhere.

    A pattern rather than a colour, so "exactly unchanged" cannot be mistaken for a small value of the
    colormap (and survives greyscale printing). cell_px is about a cell's size on screen, so that the
    stripes stay thin, evenly spaced and at 45 degrees however few and wide the cells are.
    """
    width, height = cell_px
    rows, cols = exact.shape
    yy, xx = np.mgrid[0:height, 0:width]
    # A period that divides the cell size, so stripes run on unbroken from cell to cell; bolder on a projector.
    period, stroke = (8, 2) if theme.current().line_width > 2 else (4, 1)
    diagonal = ((xx + yy) % period) < stroke  # (Sy, Sx) one set of diagonal stripes
    crossed = diagonal | (((xx - yy) % period) < stroke)
    palette = theme.current()
    base, muted, warning = QColor(palette.base), QColor(palette.muted), QColor(palette.warning)
    tiles = np.zeros((3, height, width, 4), dtype=np.uint8)  # per category: transparent, exact, NaN
    tiles[1] = (base.red(), base.green(), base.blue(), 255)
    tiles[1][diagonal] = (muted.red(), muted.green(), muted.blue(), 255)
    tiles[2] = (255, 255, 255, 255)
    tiles[2][crossed] = (warning.red(), warning.green(), warning.blue(), 255)
    category = np.where(exact, 1, np.where(nan, 2, 0))  # (rows, cols)
    # One gather and a transpose instead of per-pixel masks: (rows, cols, S, S, 4) -> (rows*S, cols*S, 4).
    return np.ascontiguousarray(tiles[category].transpose(0, 2, 1, 3, 4).reshape(rows * height, cols * width, 4))


def overlay_cell_px(view_width: float, view_height: float, rows: int, cols: int) -> tuple[int, int]:
    """About one overlay pixel per screen pixel, in multiples of 8 (both stripe periods), within a bounded image."""
    def fit(extent: float, count: int, limit: int) -> int:
        pixels = extent / max(1, count) if extent > 0 else HATCH_CELL_PX
        return int(min(max(8, round(pixels / 8) * 8), max(8, limit // max(1, count) // 8 * 8)))
    return fit(view_width, cols, 4096), fit(view_height, rows, 2048)


def sync_layer_head_spins(state, layer_spin: QSpinBox, head_spin: QSpinBox, n_layers: int | None = None) -> None:
    """The block and head spin boxes take the model's ranges and the lab's selection, without signalling a change.

    n_layers: the blocks of the stack the spin box picks in (an encoder-decoder's encoder), else the model's n_layers.
    """
    config = state.model.config if state.model is not None else state.config
    for spin, limit, value in ((layer_spin, n_layers or config.n_layers, state.selected_layer),
                               (head_spin, config.n_heads, state.selected_head)):
        spin.blockSignals(True)
        spin.setRange(0, max(0, limit - 1))
        spin.setValue(value)
        spin.blockSignals(False)


