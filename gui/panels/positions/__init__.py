"""Positions: the panel (panel.py) and one view per sub-tab (scrubber, grids, encodings, permutation),
each with its frozen inputs and the compute function the worker runs."""

from gui.panels.positions.common import format_difference
from gui.panels.positions.panel import SUB_TABS, PositionsPanel
from gui.panels.positions.permutation import parse_permutation

__all__ = ["PositionsPanel", "SUB_TABS", "format_difference", "parse_permutation"]
