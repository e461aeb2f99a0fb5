"""Export a widget or a pyqtgraph plot to PNG or SVG at a chosen size, for slides.

A plot is drawn from its graphics scene, a widget with its own paint code, into a QImage (PNG) or
a QSvgGenerator (SVG, vectors), scaled to fit the chosen size and centred on the theme background.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

from gui import theme

# The process umask, read once (os.umask can only be read by setting it).
_UMASK = os.umask(0)
os.umask(_UMASK)

FORMATS = ("png", "svg")


class ExportError(Exception):
    """A user-facing export failure: unknown format, unwritable path."""


def export_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ExportError(f"choose a file ending in .png or .svg (got {Path(path).name!r})")
    return suffix


def export(target: QWidget | pg.PlotItem, path: str | Path, width: int = 1600, height: int = 900) -> Path:
    """Write target to path (.png or .svg) at width x height pixels; returns the path written."""
    path = Path(path)
    kind = export_format(path)
    if width < 16 or height < 16 or width > 16384 or height > 16384:
        raise ExportError(f"choose a size between 16 and 16384 pixels (got {width} x {height})")
    if not path.parent.is_dir():
        raise ExportError(f"the folder {path.parent} does not exist")
    # Write beside the target and move into place, so a failed export never leaves half a file.
    try:
        handle, temporary = tempfile.mkstemp(prefix=".export-", suffix=f".{kind}", dir=path.parent)
    except OSError as error:
        raise ExportError(f"cannot write in {path.parent}: {error.strerror or error}") from None
    os.close(handle)
    try:
        if isinstance(target, pg.PlotItem):
            _export_plot(target, temporary, kind, width, height)
        else:
            _export_widget(target, temporary, kind, width, height)
        # mkstemp makes owner-only files; a saved file should get the usual permissions.
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    except OSError as error:
        raise ExportError(f"could not write {path}: {error.strerror or error}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path


def _screen_dpi(widget: QWidget | None) -> int:
    return widget.logicalDpiX() if widget is not None else 96


def _export_plot(item: pg.PlotItem, path: str, kind: str, width: int, height: int) -> None:
    """Draw the plot's part of its scene into the target, scaled to fit and centred.

    The painter gets the screen's resolution so that fonts and ticks lay out exactly as on screen.
    (pyqtgraph's own exporters drop axis labels when they re-render at another size, and its SVG
    exporter cannot parse the path syntax of recent Qt versions.)
    """
    views = item.scene().views()
    dpi = _screen_dpi(views[0] if views else None)
    source = item.sceneBoundingRect()
    background = QColor(theme.current().base)
    if kind == "svg":
        device = QSvgGenerator()
        device.setFileName(path)
        device.setSize(QSize(width, height))
        device.setViewBox(QRectF(0, 0, width, height))
        device.setResolution(dpi)
        device.setTitle(item.titleLabel.text or "plot")
    else:
        device = QImage(width, height, QImage.Format.Format_ARGB32)
        device.setDotsPerMeterX(round(dpi / 0.0254))
        device.setDotsPerMeterY(round(dpi / 0.0254))
        device.fill(background)
    painter = QPainter(device)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.fillRect(QRectF(0, 0, width, height), background)
        item.scene().render(painter, QRectF(0, 0, width, height), source, Qt.AspectRatioMode.KeepAspectRatio)
    finally:
        painter.end()
    if kind == "png" and not device.save(path, "PNG"):
        raise ExportError(f"could not write {path}")


def _export_widget(widget: QWidget, path: str, kind: str, width: int, height: int) -> None:
    source = widget.size()
    if source.width() < 1 or source.height() < 1:
        source = widget.sizeHint().expandedTo(QSize(16, 16))
        widget.resize(source)
    if kind == "png":
        image = QImage(width, height, QImage.Format.Format_ARGB32)
        image.setDotsPerMeterX(round(_screen_dpi(widget) / 0.0254))
        image.setDotsPerMeterY(round(_screen_dpi(widget) / 0.0254))
        image.fill(QColor(theme.current().window))
        painter = QPainter(image)
        try:
            _paint_scaled(painter, widget, source, width, height)
        finally:
            painter.end()
        if not image.save(path, "PNG"):
            raise ExportError(f"could not write {path}")
    else:
        generator = QSvgGenerator()
        generator.setFileName(path)
        generator.setSize(QSize(width, height))
        generator.setViewBox(QRectF(0, 0, width, height))
        generator.setResolution(_screen_dpi(widget))
        generator.setTitle(widget.windowTitle() or widget.objectName() or "Transformer Explorer")
        painter = QPainter(generator)
        try:
            painter.fillRect(QRectF(0, 0, width, height), QColor(theme.current().window))
            _paint_scaled(painter, widget, source, width, height)
        finally:
            painter.end()


def _paint_scaled(painter: QPainter, widget: QWidget, source: QSize, width: int, height: int) -> None:
    """Lay the widget out at the aspect of the target, then scale its painting to fill it."""
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    scale = min(width / source.width(), height / source.height())
    painter.translate((width - source.width() * scale) / 2, (height - source.height() * scale) / 2)
    painter.scale(scale, scale)
    # QWidget.render explicitly: QGraphicsView overrides render() with a scene-rendering signature.
    QWidget.render(widget, painter, QPoint())


__all__ = ["export", "export_format", "ExportError", "FORMATS"]
