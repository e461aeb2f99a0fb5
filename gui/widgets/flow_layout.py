"""A layout that places its items left to right and wraps them onto further rows when space runs out.

Qt has none built in (this follows Qt's own Flow Layout example). Control rows use it so that a
panel's minimum width is its widest control group, not the sum of all of them: the window then fits
a 1366-pixel laptop, and a 1920-pixel projector at large text scales beside a lesson. An item wider
than the row narrows to it where its minimum allows (a wrapping group, a word-wrapped caption, at the
height it then needs), and items that expand sideways share what their row leaves over.

The rows a width wraps onto are the layout's minimum height at that width. Qt asks a layout for its
minimum without a width, and a box layout around this one gives the wrapped rows their height all
the same, taking it from its other items: plots laid out below their minimum, labels drawn over
each other. So the minimum height follows the width the layout was last given, and a change of it
invalidates the layouts above, which then make room or let the page scroll.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLayout, QLayoutItem, QSizePolicy, QStyle, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = -1) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self._wrapped_height = 0  # the height of the rows at the width last laid out
        # heightForWidth by width, as Qt's own box layouts cache it: a layout pass asks the same width
        # dozens of times. Cleared by invalidate(), which Qt calls on every layout inside a widget's
        # layout whenever that one is activated after a child changed.
        self._height_for_width: dict[int, int] = {}
        self._invalidation_posted = False
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    # ---- QLayout's item list -------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt's name)
        self._items.append(item)
        self.invalidate()

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        if not 0 <= index < len(self._items):
            return None
        self.invalidate()
        return self._items.pop(index)

    # ---- sizes ---------------------------------------------------------------------------------
    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        height = self._height_for_width.get(width)
        if height is None:
            height = self._height_for_width[width] = self._arrange(QRect(0, 0, width, 0), move=False)
        return height

    def invalidate(self) -> None:
        self._height_for_width.clear()
        super().invalidate()

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        # A width below the widest item (a first layout pass, a collapsed page) would put every item
        # on a row of its own: the minimum is taken at the width the items can have.
        height = self._arrange(rect, move=True)
        widest = self.minimumSize().width()
        if rect.width() < widest:
            height = self.heightForWidth(widest)
        if height != self._wrapped_height:
            self._wrapped_height = height
            if not self._invalidation_posted:  # after the pass now placing this layout, never inside it
                self._invalidation_posted = True
                QTimer.singleShot(0, self, self._invalidate_above)

    def _invalidate_above(self) -> None:
        """The minimum height changed: the layouts that hold this one measure again."""
        self._invalidation_posted = False
        layout = self.parent()
        while isinstance(layout, QLayout):
            layout.invalidate()
            layout = layout.parent()
        widget = self.parentWidget()
        if widget is not None:
            widget.updateGeometry()

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
        """The widest single item (every other item can wrap below it), as high as the rows it last wrapped onto."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        size += QSize(margins.left() + margins.right(), margins.top() + margins.bottom())
        return QSize(size.width(), max(size.height(), self._wrapped_height))

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
        rows: list[list[tuple[QLayoutItem, QSize]]] = [[]]
        x = area.x()
        for item in self._items:
            if item.isEmpty():
                continue
            size = fitted_size(item, area.width())
            if rows[-1] and x + size.width() > area.right() + 1:
                rows.append([])
                x = area.x()
            rows[-1].append((item, size))
            x += size.width() + self._gap(item, Qt.Orientation.Horizontal)
        y = area.y()
        for index, row in enumerate(item_row for item_row in rows if item_row):
            if index:
                y += self._gap(row[0][0], Qt.Orientation.Vertical)
            placed = self._widened(row, area.width())
            row_height = max(size.height() for _item, _x, size in placed)
            if move:
                for item, offset, size in placed:
                    # Items of one row share its height, centred, as in a QHBoxLayout.
                    top = y + (row_height - size.height()) // 2
                    item.setGeometry(QRect(QPoint(area.x() + offset, top), size))
            y += row_height
        return y - rect.y() + margins.bottom()

    def _widened(self, row: list[tuple[QLayoutItem, QSize]], width: int) -> list[tuple[QLayoutItem, int, QSize]]:
        """Each item of a row with its x offset and size: what the row leaves over goes to the items that
        expand sideways (a slider and its caption; a caption then takes the height of its wider lines)."""
        gaps = [self._gap(item, Qt.Orientation.Horizontal) for item, _size in row[:-1]]  # after each but the last
        used = sum(size.width() for _item, size in row) + sum(gaps)
        growing = [index for index, (item, _size) in enumerate(row)
                   if item.expandingDirections() & Qt.Orientation.Horizontal]
        spare = max(0, width - used) if growing else 0
        placed, offset = [], 0
        for index, (item, size) in enumerate(row):
            if index:
                offset += gaps[index - 1]
            if index in growing:
                rank = growing.index(index)
                wide = size.width() + spare // len(growing) + (1 if rank < spare % len(growing) else 0)
                height = size.height()
                if wide != size.width() and item.hasHeightForWidth():
                    height = min(height, max(item.heightForWidth(wide), item.minimumSize().height()))
                size = QSize(wide, height)
            placed.append((item, offset, size))
            offset += size.width()
        return placed


def fitted_size(item: QLayoutItem, width: int) -> QSize:
    """The item's preferred size, narrowed to width where its minimum allows (a wrapping group or caption
    then takes the height it needs at that width)."""
    hint = item.sizeHint()
    if hint.width() <= width:
        return hint
    narrow = max(width, item.minimumSize().width())
    if narrow >= hint.width():
        return hint
    height = item.heightForWidth(narrow) if item.hasHeightForWidth() else hint.height()
    return QSize(narrow, max(height, item.minimumSize().height()))


def wrapping_group(*widgets: QWidget, spacing: int = 6) -> QWidget:
    """Widgets that share one line where the row has room and wrap below each other where it has not
    (a long caption and its value): a group only as wide as its widest widget."""
    group = QWidget()
    FlowLayout(group, spacing=spacing)
    for widget in widgets:
        group.layout().addWidget(widget)
    return group


def control_group(*widgets: QWidget, spacing: int = 6, grow: bool = False) -> QWidget:
    """Widgets that stay on one line together (a caption and its control) inside a FlowLayout; a group that
    grows takes a share of what its row leaves over (a slider gets long where there is room)."""
    group = QWidget()
    row = QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(spacing)
    for widget in widgets:
        row.addWidget(widget)
    group.setSizePolicy(QSizePolicy.Policy.Expanding if grow else QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return group
