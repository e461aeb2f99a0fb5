"""What a lesson draws over the window: the outline around the part a step points at, the cards that
cover a step's answer until Reveal, and how a lesson finds a panel's part by its declared name."""

from __future__ import annotations

import html
import re
from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QWidget,
)
from shiboken6 import isValid

from core.lesson_parts import PANEL_PARTS
from gui import theme

FOCUS_MS = 4000  # how long the outline stays: long enough to find it from the back row
FOLLOW_MS = 200  # how often the outline re-measures its target while it shows
FOCUS_DELAY_MS = 150  # let the tab switch and the layout settle before measuring the target
# A focused widget with less than this share in view (of what the viewport could show of it) is scrolled
# to; one more in view stays put, so the step's setup beside it (sliders, the token strip) stays on screen.
SLIVER = 0.25
_TAGS = re.compile(r"<[^>]+>")

def widget_text(widget: Any) -> str:
    """What a widget shows, as plain text, for a lesson's {{name}} placeholder."""
    if isinstance(widget, QLabel):
        text = widget.text()
        if "<" in text:  # the panels write their captions as rich text
            text = html.unescape(_TAGS.sub("", re.sub(r"<br\s*/?>", " ", text)))
        return " ".join(text.split())
    if isinstance(widget, (QLineEdit, QAbstractSpinBox)):
        return widget.text()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QAbstractButton):
        return widget.text()
    return ""


def find_panel_widget(panel: QWidget, name: str) -> QWidget | None:
    """The panel's widget called `name`: the path core.lesson_parts declares for it, an attribute of the panel,
    else a child's objectName."""
    declared = PANEL_PARTS.get(getattr(panel, "title", ""))
    path = declared.paths.get(name) if declared is not None else None
    if path:
        target: Any = panel
        for attribute in path.split("."):
            target = getattr(target, attribute, None)
        return target if isinstance(target, QWidget) else None
    candidate = getattr(panel, name, None)
    if isinstance(candidate, QWidget):
        return candidate
    return panel.findChild(QWidget, name)


def shown_rect(widget: QWidget) -> QRect:
    """The part of `widget` (in its own coordinates) inside the viewports it scrolls in: what can be on screen."""
    rect = widget.rect()
    ancestor = widget.parentWidget()
    while ancestor is not None and not rect.isEmpty():
        # Only a viewport the widget lies in: a cover over a table is the table's child, beside its viewport.
        if isinstance(ancestor, QAbstractScrollArea) and ancestor.viewport().isAncestorOf(widget):
            port = ancestor.viewport()
            rect = rect.intersected(QRect(widget.mapFrom(port, QPoint(0, 0)), port.size()))
        ancestor = ancestor.parentWidget()
    return rect


def bring_into_view(widget: QWidget) -> None:
    """Scroll the scroll areas around `widget` to it when only a SLIVER of what could be in view is (a panel
    wider than its room, left scrolled to the far end by an earlier step)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            shown, port = shown_rect(widget), parent.viewport().size()
            wanted_w, wanted_h = min(widget.width(), port.width()), min(widget.height(), port.height())
            if shown.width() < SLIVER * wanted_w or shown.height() < SLIVER * wanted_h:
                parent.ensureWidgetVisible(widget, 24, 24)  # a widget wider than the view: its start
        parent = parent.parentWidget()


def find_panel_widgets(panel: QWidget, name: str) -> list[QWidget]:
    """The widgets called `name`: one, or each of a panel attribute that holds several (two pies side by side)."""
    candidate = getattr(panel, name, None)
    if isinstance(candidate, (tuple, list)) and candidate and all(isinstance(item, QWidget) for item in candidate):
        return list(candidate)
    widget = find_panel_widget(panel, name)
    return [widget] if widget is not None else []


class FocusOutline(QWidget):
    """A frame drawn over a widget of the window for a few seconds; clicks pass through it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("lesson-focus-outline")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.target: QWidget | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clear)
        # The panel may still lay out around the target (a view's first result resizes its neighbours):
        # the frame follows it while it shows.
        self._follow = QTimer(self)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self._fit)
        self.hide()

    def point_at(self, target: QWidget, milliseconds: int = FOCUS_MS) -> None:
        self.target = target
        self._fit()
        self.show()
        self.raise_()
        self._timer.start(milliseconds)
        self._follow.start()

    def _fit(self) -> None:
        target = self.target
        if target is None or not isValid(target):
            self.clear()
            return
        window = self.parentWidget()
        margin = 4
        # The part on screen: a panel wider than its room scrolls, and the frame must not run over the docks.
        shown = shown_rect(target)
        if shown.isEmpty():
            shown = target.rect()
        top_left = target.mapTo(window, shown.topLeft())
        self.setGeometry(QRect(top_left, shown.size()).adjusted(-margin, -margin, margin, margin))

    def clear(self) -> None:
        self._timer.stop()
        self._follow.stop()
        self.target = None
        self.hide()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width = 4
        painter.setPen(QPen(theme.color("warning"), width))
        painter.drawRoundedRect(self.rect().adjusted(width // 2, width // 2, -width // 2, -width // 2), 6, 6)


class AnswerCover(QWidget):
    """An opaque card over a widget that shows a step's answer, until the student has predicted and revealed.

    A child of the covered widget, so it moves, resizes and shows with it (a view shows its content
    with its first result), raised again whenever the widget lays out its scroll bars; it takes the
    mouse too, so no hover readout gives the number away. (Not a sibling: a splitter would take a
    sibling for a pane of its own.)
    """

    TEXT = "Predict first, then Reveal (Page Down)"
    SHORTER = ("Predict first, then Reveal", "Predict, then Reveal")  # for a cover too small for TEXT

    def __init__(self, target: QWidget) -> None:
        super().__init__(target)
        self.setObjectName("lesson-answer-cover")
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.target = target
        target.installEventFilter(self)
        # The text sits in the part on screen: scrolling a panel wider than its room moves that part.
        ancestor = target.parentWidget()
        while ancestor is not None:
            if isinstance(ancestor, QAbstractScrollArea):
                for bar in (ancestor.horizontalScrollBar(), ancestor.verticalScrollBar()):
                    bar.valueChanged.connect(self.update)
            ancestor = ancestor.parentWidget()
        self._fit()

    def shown_text(self) -> tuple[str, QRect]:
        """The longest of the texts that fits the part of the cover on screen, and that part."""
        shown = shown_rect(self)
        room = (shown if not shown.isEmpty() else self.rect()).adjusted(6, 2, -6, -2)
        metrics = QFontMetrics(theme.font(1.0, bold=True))
        flags = int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap)
        for text in (self.TEXT, *self.SHORTER):
            needed = metrics.boundingRect(room, flags, text)
            if needed.width() <= room.width() and needed.height() <= room.height():
                return text, room
        return self.SHORTER[-1], room

    def restyle(self) -> None:
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        accent = theme.color("accent")
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(theme.current().window))
        painter.setPen(QPen(accent, 2, Qt.PenStyle.DashLine))
        painter.drawRect(self.rect().adjusted(1, 1, -2, -2))
        painter.setFont(theme.font(1.0, bold=True))
        painter.setPen(accent)
        flags = Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap
        text, room = self.shown_text()
        painter.drawText(room, int(flags), text)

    def _fit(self) -> None:
        self.setGeometry(self.target.rect())
        self.show()
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.target and event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest,
                                                       QEvent.Type.ChildAdded, QEvent.Type.ChildPolished):
            self._fit()
            QTimer.singleShot(0, self, self.raise_)  # after the widget's own handler has placed its scroll bars
        return False

    def remove(self) -> None:
        if isValid(self.target):
            self.target.removeEventFilter(self)
        self.hide()
        self.deleteLater()



__all__ = [
    "FOCUS_MS",
    "AnswerCover",
    "FocusOutline",
    "bring_into_view",
    "find_panel_widget",
    "find_panel_widgets",
    "shown_rect",
    "widget_text",
]
