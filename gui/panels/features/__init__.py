"""Features: the panel (panel.py), the dashboard and steering views, and what they compute on the worker."""

from gui.panels.features.panel import SUB_TABS, FeaturesPanel

__all__ = ["FeaturesPanel", "SUB_TABS"]
