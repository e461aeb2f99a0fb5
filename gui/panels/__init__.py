"""The panels of the main window, in tab order. Adding a panel = one file here + one line below."""

from gui.panels.base import Panel
from gui.panels.shapes import ShapesPanel

PANEL_CLASSES: list[type[Panel]] = [
    ShapesPanel,
]

__all__ = ["PANEL_CLASSES", "Panel"]
