"""The legibility rule at projector scale: text readable from the back row, controls big enough to hit.

No text is drawn under MIN_TEXT_PX pixels, and no control (button, check box, spin box, combo box,
slider, text field) is under MIN_CONTROL_PX pixels across. `legibility_problems(window)` lists what
breaks the rule among the widgets on screen and the text items of their plots.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontInfo
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QScrollBar,
    QSlider,
    QTabBar,
    QWidget,
)

MIN_TEXT_PX = 14
MIN_CONTROL_PX = 24
TEXT_WIDGETS = (QLabel, QAbstractButton, QLineEdit, QComboBox, QAbstractSpinBox, QTabBar)
CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QSlider, QLineEdit)


@dataclass(frozen=True)
class Problem:
    kind: str  # "text" or "control"
    where: str  # the widget's objectName, else its class and text
    pixels: int

    def __str__(self) -> str:
        limit = MIN_TEXT_PX if self.kind == "text" else MIN_CONTROL_PX
        return f"{self.where}: {self.kind} {self.pixels} px, under {limit} px"


def text_px(font: QFont) -> int:
    return QFontInfo(font).pixelSize()


def describe(widget: QWidget) -> str:
    """The widget's objectName, else its class, text or tip and the nearest named parent."""
    if widget.objectName():
        return widget.objectName()
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    text = text or widget.toolTip()
    parent = widget.parentWidget()
    while parent is not None and not parent.objectName():
        parent = parent.parentWidget()
    inside = f" in {parent.objectName()}" if parent is not None else ""
    return f"{type(widget).__name__} {text[:30]!r}{inside}" if text else f"{type(widget).__name__}{inside}"


def control_px(widget: QWidget) -> int:
    """How big a control is to hit: a slider's thickness, else the smaller side."""
    if isinstance(widget, QSlider):
        return widget.height() if widget.orientation() == Qt.Orientation.Horizontal else widget.width()
    return min(widget.width(), widget.height())


def shows_text(widget: QWidget) -> bool:
    if isinstance(widget, (QLabel, QAbstractButton)):
        return bool(widget.text().strip())
    return True


def legibility_problems(root: QWidget) -> list[Problem]:
    """What breaks the rule among the visible widgets under `root` and the text of their plots."""
    problems: list[Problem] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not widget.isVisible() or isinstance(widget, QScrollBar) or isinstance(
                widget.parentWidget(), (QScrollBar, QTabBar, QLineEdit, QAbstractSpinBox)):
            continue  # scroll bars, a tab bar's scroll arrows, a text field's clear button: the style's parts
        if isinstance(widget, TEXT_WIDGETS) and shows_text(widget) and text_px(widget.font()) < MIN_TEXT_PX:
            problems.append(Problem("text", describe(widget), text_px(widget.font())))
        if isinstance(widget, CONTROLS) and control_px(widget) < MIN_CONTROL_PX:
            problems.append(Problem("control", describe(widget), control_px(widget)))
        if isinstance(widget, QGraphicsView) and widget.scene() is not None:
            problems += plot_text_problems(widget)
    return problems


def plot_text_problems(view: QGraphicsView) -> list[Problem]:
    """Tick labels and text items of a plot that are too small."""
    where = view.objectName() or type(view).__name__
    problems = []
    for item in view.scene().items():
        if not item.isVisible():
            continue
        if isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
            font = item.style.get("tickFont") or item.font()
            if text_px(font) < MIN_TEXT_PX:
                problems.append(Problem("text", f"{where} {item.orientation} ticks", text_px(font)))
        elif isinstance(item, pg.TextItem) and item.textItem.toPlainText().strip():
            if text_px(item.textItem.font()) < MIN_TEXT_PX:
                problems.append(Problem("text", f"{where} label {item.textItem.toPlainText()[:20]!r}", text_px(item.textItem.font())))
    return problems


__all__ = ["MIN_CONTROL_PX", "MIN_TEXT_PX", "Problem", "legibility_problems"]
