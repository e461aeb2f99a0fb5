"""A layout that places its items left to right and wraps them onto further rows when space runs out.

Qt has none built in (this follows Qt's own Flow Layout example). Control rows use it so that a
panel's minimum width is its widest control group, not the sum of all of them: the window then fits
a 1366-pixel laptop, and a 1920-pixel projector at large text scales.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLayout, QLayoutItem, QSizePolicy, QStyle, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = -1) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    # ---- QLayout's item list -------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt's name)
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    # ---- sizes ---------------------------------------------------------------------------------
    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        """One row holding everything: what the layout asks for when there is room."""
        width = height = 0
        for index, item in enumerate(self._items):
            hint = item.sizeHint()
            width += hint.width() + (self._gap(item, Qt.Orientation.Horizontal) if index else 0)
            height = max(height, hint.height())
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802
        """The widest single item: every other item can wrap below it."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    # ---- placement -----------------------------------------------------------------------------
    def _gap(self, item: QLayoutItem, orientation: Qt.Orientation) -> int:
        if self._spacing >= 0:
            return self._spacing
        widget = item.widget()
        style = widget.style() if widget is not None else (self.parentWidget().style() if self.parentWidget() else None)
        if style is None:
            return 6
        metric = (QStyle.PixelMetric.PM_LayoutHorizontalSpacing if orientation == Qt.Orientation.Horizontal
                  else QStyle.PixelMetric.PM_LayoutVerticalSpacing)
        spacing = style.pixelMetric(metric)
        if spacing >= 0:
            return spacing
        return style.layoutSpacing(QSizePolicy.ControlType.PushButton, QSizePolicy.ControlType.PushButton, orientation)

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items row by row inside rect (or only measure); the height used."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row_height = area.x(), area.y(), 0
        row: list[tuple[QLayoutItem, int]] = []

        def place_row() -> None:
            for row_item, row_x in row:
                hint = row_item.sizeHint()
                # Items of one row share its height, centred, as in a QHBoxLayout.
                top = y + (row_height - hint.height()) // 2
                row_item.setGeometry(QRect(QPoint(row_x, top), hint))

        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            gap_x = self._gap(item, Qt.Orientation.Horizontal)
            if row and x + hint.width() > area.right() + 1:
                if move:
                    place_row()
                y += row_height + self._gap(item, Qt.Orientation.Vertical)
                x, row_height, row = area.x(), 0, []
            row.append((item, x))
            x += hint.width() + gap_x
            row_height = max(row_height, hint.height())
        if move:
            place_row()
        return y + row_height - rect.y() + margins.bottom()


def control_group(*widgets: QWidget, spacing: int = 6) -> QWidget:
    """Widgets that stay on one line together (a caption and its control) inside a FlowLayout."""
    group = QWidget()
    row = QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(spacing)
    for widget in widgets:
        row.addWidget(widget)
    group.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return group
