"""Features: the panel (panel.py), the dashboard and steering views (what they compute is core.features.views)."""

from gui.panels.features.panel import SUB_TABS, FeaturesPanel

__all__ = ["FeaturesPanel", "SUB_TABS"]
