"""A widget dimmed under an "updating" badge while its inputs changed and its result is on its way."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QLabel, QWidget

from gui import theme

STALE_GRACE_MS = 150  # a result faster than this replaces the old one without dimming it first
STALE_OPACITY = 0.35  # what shows through the veil: the look of the content at this opacity over the window


class _Veil(QWidget):
    """A sheet of the window's colour over the target, so that it reads as dimmed.

    Not a QGraphicsOpacityEffect: an effect renders the whole target into an offscreen pixmap on every repaint
    of anything inside it (a progress line, a plot's hover), tens of milliseconds of the GUI thread per frame on a
    panel of plots. The veil repaints the target once when it appears and only its own rectangle after that.
    """

    def __init__(self, target: QWidget) -> None:
        super().__init__(target)
        self.setObjectName("stale-veil")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()

    def paintEvent(self, event) -> None:
        colour = QColor(theme.current().window)
        colour.setAlphaF(1.0 - STALE_OPACITY)
        QPainter(self).fillRect(event.rect(), colour)


class _FollowSize(QObject):
    """Keeps the veil the size of its target."""

    def __init__(self, target: QWidget, veil: QWidget) -> None:
        super().__init__(target)
        self._veil = veil
        target.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self._veil.setGeometry(watched.rect())
        return False


class StaleMark:
    """Dims a widget under an "updating" badge; shown only after a grace period, removed at once."""

    def __init__(self, target: QWidget, badge_parent: QWidget) -> None:
        self._target = target
        self._veil = _Veil(target)
        self._follow = _FollowSize(target, self._veil)
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
        self._veil.hide()
        self._badge.hide()

    @property
    def dimmed(self) -> bool:
        return not self._veil.isHidden()

    def titles_faded(self) -> bool:
        return any(plot.getPlotItem().titleLabel.opacity() < 1 for plot in self._target.findChildren(pg.PlotWidget))

    def _dim(self) -> None:
        if not self.stale:
            return
        self._veil.setGeometry(self._target.rect())
        self._veil.raise_()
        self._veil.show()
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
