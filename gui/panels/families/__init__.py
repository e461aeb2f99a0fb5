"""Families: the panel (panel.py) and one view per sub-tab (fill in the blank, cross-attention, router), each with
its frozen inputs and the compute function the worker runs."""

from gui.panels.families.panel import SUB_TABS, FamiliesPanel

__all__ = ["SUB_TABS", "FamiliesPanel"]
