"""Tokens & masks: the panel (panel.py) and one view per sub-tab (propagation, mask, attention, head split,
predictions), each with its frozen inputs and the compute function the worker runs."""

from gui.panels.common import format_change
from gui.panels.tokens.common import MASK_MODE_CHOICES
from gui.panels.tokens.panel import SUB_TABS, TokensPanel

__all__ = ["TokensPanel", "MASK_MODE_CHOICES", "SUB_TABS", "format_change"]
