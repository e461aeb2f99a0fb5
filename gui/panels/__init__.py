"""The panels of the main window, in tab order. Adding a panel = one file here + one line below."""

from gui.panels.architecture import ArchitecturePanel
from gui.panels.base import Panel
from gui.panels.causal_lab import CausalLabPanel
from gui.panels.families import FamiliesPanel
from gui.panels.features import FeaturesPanel
from gui.panels.generate import GeneratePanel
from gui.panels.going_deeper import GoingDeeperPanel
from gui.panels.norms import NormsPanel
from gui.panels.parameters import ParametersPanel
from gui.panels.positions import PositionsPanel
from gui.panels.shapes import ShapesPanel
from gui.panels.tokens import TokensPanel
from gui.panels.train import TrainPanel

PANEL_CLASSES: list[type[Panel]] = [
    ArchitecturePanel,
    TokensPanel,
    PositionsPanel,
    GoingDeeperPanel,
    NormsPanel,
    ParametersPanel,
    ShapesPanel,
    TrainPanel,
    GeneratePanel,
    CausalLabPanel,
    FamiliesPanel,
    FeaturesPanel,
]

__all__ = ["PANEL_CLASSES", "Panel"]
