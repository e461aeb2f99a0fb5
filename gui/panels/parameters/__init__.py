"""Parameters panel: one view per sub-tab (breakdown, compare two, width sweep, budgets)."""

from core.display import format_bytes, format_flops
from gui.panels.parameters.common import AGREES, DIFFERS, block_norm_params, pie_slices
from gui.panels.parameters.panel import SUBTABS, ParametersPanel
from gui.panels.parameters.sweep import sweep_widths

__all__ = ["ParametersPanel", "SUBTABS", "AGREES", "DIFFERS", "block_norm_params", "pie_slices", "format_flops",
           "format_bytes", "sweep_widths"]
