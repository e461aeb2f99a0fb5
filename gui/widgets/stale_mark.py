"""A widget dimmed under an "updating" badge while its inputs changed and its result is on its way."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QGraphicsOpacityEffect, QLabel, QWidget

from gui import theme

STALE_GRACE_MS = 150  # a result faster than this replaces the old one without dimming it first
STALE_OPACITY = 0.35


class StaleMark:
    """Dims a widget under an "updating" badge; shown only after a grace period, removed at once."""

    def __init__(self, target: QWidget, badge_parent: QWidget) -> None:
        self._target = target
        self._badge = QLabel("updating...", badge_parent)
        self._badge.setObjectName("stale-badge")
        self._badge.setTextFormat(Qt.TextFormat.PlainText)
        self._badge.hide()
        self._timer = QTimer(badge_parent)
        self._timer.setSingleShot(True)
        self._timer.setInterval(STALE_GRACE_MS)
        self._timer.timeout.connect(self._dim)
        self.stale = False

    def set(self, stale: bool) -> None:
        if stale == self.stale:
            return
        self.stale = stale
        if stale:
            self._timer.start()
            return
        self._timer.stop()
        self._target.setGraphicsEffect(None)
        self._badge.hide()

    @property
    def dimmed(self) -> bool:
        return self._target.graphicsEffect() is not None

    def titles_faded(self) -> bool:
        return any(plot.getPlotItem().titleLabel.opacity() < 1 for plot in self._target.findChildren(pg.PlotWidget))

    def _dim(self) -> None:
        if not self.stale:
            return
        effect = QGraphicsOpacityEffect(self._target)
        effect.setOpacity(STALE_OPACITY)
        self._target.setGraphicsEffect(effect)
        palette = theme.current()
        self._badge.setStyleSheet(f"background: {palette.base}; color: {palette.text}; border: 1px solid "
                                  f"{palette.muted}; padding: 2px 8px;")
        self._badge.setFont(theme.font(0.95))
        self._badge.adjustSize()
        # Top left: a view wider than its window scrolls, and a right-hand corner may be off screen.
        self._badge.move(8, 8)
        self._badge.raise_()
        self._badge.show()


__all__ = ["STALE_GRACE_MS", "STALE_OPACITY", "StaleMark"]
