"""Top activating contexts, each token a box shaded by the feature's activation there, the firing token outlined.

Painted, not rich text: a token's characters are drawn as they are (made visible by core.display), so
no text of the corpus is ever read as markup.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from gui import theme

ROW_PAD = 6


class ShadedContexts(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("features-contexts")
        self.rows: list[tuple[float, list[str], list[float], int]] = []  # (activation, labels, values, marked)
        self.top = 1.0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)

    def set_rows(self, rows: list[tuple[float, list[str], list[float], int]]) -> None:
        self.rows = rows
        self.top = max((max(values, default=0.0) for _a, _l, values, _m in rows), default=1.0) or 1.0
        self.updateGeometry()
        self.update()

    def clear(self) -> None:
        self.set_rows([])

    def _line_height(self) -> int:
        return QFontMetrics(theme.font()).height() + ROW_PAD

    def sizeHint(self) -> QSize:
        return QSize(400, max(1, len(self.rows)) * self._line_height() + ROW_PAD)

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self.sizeHint().height())

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        font = theme.font()
        painter.setFont(font)
        metrics = QFontMetrics(font)
        accent = QColor(theme.color("highlight"))
        text_color = QColor(theme.color("text"))
        height = self._line_height()
        label_width = metrics.horizontalAdvance("00.00  ")
        for row, (activation, labels, values, marked) in enumerate(self.rows):
            y = ROW_PAD // 2 + row * height
            painter.setPen(text_color)
            painter.drawText(QRectF(0, y, label_width, height - ROW_PAD), Qt.AlignmentFlag.AlignVCenter,
                             f"{activation:.2f}")
            x = float(label_width)
            for index, (label, value) in enumerate(zip(labels, values)):
                width = metrics.horizontalAdvance(label) + 4
                if x + width > self.width():
                    break
                box = QRectF(x, y, width, height - ROW_PAD)
                if value > 0:
                    shade = QColor(accent)
                    shade.setAlphaF(min(1.0, 0.12 + 0.7 * value / self.top))
                    painter.fillRect(box, shade)
                if index == marked:
                    painter.setPen(QPen(accent, 2))
                    painter.drawRect(box.adjusted(1, 1, -1, -1))
                painter.setPen(text_color)
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, label)
                x += width
        painter.end()
