"""Going deeper: the panel (panel.py) and its two views, Stretching (loss against input length past the trained
length) and Ladder (the 2017 block updated part by part), each with its frozen inputs and its compute function."""

from gui.panels.going_deeper.panel import SUB_TABS, GoingDeeperPanel

__all__ = ["GoingDeeperPanel", "SUB_TABS"]
