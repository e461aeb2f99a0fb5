"""Causal lab: the panel (panel.py) and one view per sub-tab (attribution, patching, ablation, induction),
each with its frozen inputs and the compute function the worker runs."""

from gui.panels.causal_lab.panel import SUB_TABS, CausalLabPanel

__all__ = ["CausalLabPanel", "SUB_TABS"]
