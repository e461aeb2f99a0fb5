"""The Generate panel: sampling step by step, and the KV cache."""

from gui.panels.generate.panel import SUB_TABS, GeneratePanel

__all__ = ["GeneratePanel", "SUB_TABS"]
