"""Export a widget or a pyqtgraph plot to PNG or SVG at a chosen size, for slides.

What is exported is what the screen shows at that size: the widget (a plot's view, with its colour
bar and legend) is laid out at the chosen size for the moment it is drawn into a QImage (PNG) or a
QSvgGenerator (SVG, with scatter markers as vector shapes), then put back. The SVG is flattened
(gui.widgets.svg_flatten) so librsvg, ImageMagick and browsers draw it as Qt does. A lesson's answer cover
over the target is hidden while it is drawn unless `include_covers` asks for it. A drawing with a natural
size of its own (the whole block diagram) is scaled to fit instead, centred on the theme background.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QGraphicsView, QWidget

from core.whole_file import replacing
from gui import theme
from gui.widgets.svg_flatten import flatten_svg_file


FORMATS = ("png", "svg")
LAYOUT_ROUNDS = 3  # rounds of posted layout events after a resize: pyqtgraph's nested layouts settle in two


class ExportError(Exception):
    """A user-facing export failure: unknown format, unwritable path."""


def export_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ExportError(f"choose a file ending in .png or .svg (got {Path(path).name!r})")
    return suffix


def export(target: QWidget | pg.PlotItem, path: str | Path, width: int = 1600, height: int = 900,
           include_covers: bool = False) -> Path:
    """Write target to path (.png or .svg) at width x height pixels; returns the path written."""
    path = Path(path)
    kind = export_format(path)
    if width < 16 or height < 16 or width > 16384 or height > 16384:
        raise ExportError(f"choose a size between 16 and 16384 pixels (got {width} x {height})")
    if not path.parent.is_dir():
        raise ExportError(f"the folder {path.parent} does not exist")
    # Written whole or not at all (core.whole_file): a failed export never leaves half a file.
    try:
        with replacing(path) as temporary, nullcontext() if include_covers else covers_hidden(shown_widget(target)):
            _export_widget(target, str(temporary), kind, width, height)
    except OSError as error:
        raise ExportError(f"could not write {path}: {error.strerror or error}") from None
    return path


def _screen_dpi(widget: QWidget | None) -> int:
    return widget.logicalDpiX() if widget is not None else 96


def shown_widget(target: QWidget | pg.PlotItem) -> QWidget:
    """The widget on screen that shows `target`: a plot's view (with its colour bar and legend), else the widget."""
    if isinstance(target, pg.PlotItem):
        scene = target.scene()
        views = scene.views() if scene is not None else []
        if not views:
            raise ExportError("this plot is not on screen yet; show its tab and export again")
        return views[0]
    return target


def relays_out(widget: QWidget) -> bool:
    """Whether the widget lays itself out for any size (a plot, a pie, a panel): exported at the size asked.

    A drawing with a natural size of its own (the whole block diagram) is scaled to fit instead.
    """
    return isinstance(widget, QGraphicsView) or widget.layout() is not None


@contextmanager
def laid_out_at(widget: QWidget, width: int, height: int):
    """The widget resized to width x height and laid out there, as the screen would show it; then put back."""
    geometry = widget.geometry()
    try:
        widget.resize(width, height)
        if widget.layout() is not None:
            widget.layout().activate()
        # pyqtgraph lays out its axes, legends and colour bars through posted events, a nested layout
        # (the colour bar inside the plot) in a second round.
        for _ in range(LAYOUT_ROUNDS):
            QApplication.sendPostedEvents()
        if widget.size() != QSize(width, height):  # a parent's layout moved in: take the size again
            widget.resize(width, height)
            QApplication.sendPostedEvents(widget)
        yield
    finally:
        widget.setGeometry(geometry)
        parent = widget.parentWidget()
        if parent is not None and parent.layout() is not None:
            parent.layout().invalidate()


@contextmanager
def covers_hidden(widget: QWidget):
    """A lesson's answer covers on or inside the widget hidden while it is drawn, then shown again."""
    from gui.lessons import AnswerCover

    window = widget.window()
    covers = [cover for cover in window.findChildren(AnswerCover)
              if cover.isVisibleTo(window) and (cover.parentWidget() is widget or widget.isAncestorOf(cover)
                                                or cover.parentWidget().isAncestorOf(widget))]
    for cover in covers:
        cover.hide()
    try:
        yield
    finally:
        for cover in covers:
            cover.show()
            cover.raise_()


def remembered_export_path(settings, label: str) -> str:
    """Where the save dialog starts: the last export's folder and format, else the home folder and PNG."""
    folder = Path(str(settings.value("export/dir", str(Path.home()))))
    kind = str(settings.value("export/format", "png"))
    return str(folder / f"{label}.{kind if kind in FORMATS else 'png'}")


def remember_export(settings, path: str | Path) -> None:
    """The folder and format of an export written, for the next one."""
    path = Path(path)
    settings.setValue("export/dir", str(path.parent))
    settings.setValue("export/format", export_format(path))


@contextmanager
def drawn_as_shapes(widget: QWidget, painter: QPainter):
    """pyqtgraph items in export mode and views without their background cache: scatter markers and
    backgrounds as vector shapes, not a cached sprite sheet or a bitmap."""
    views = [widget] if isinstance(widget, QGraphicsView) else []
    views += widget.findChildren(QGraphicsView)
    items = [item for view in views if view.scene() is not None for item in view.scene().items()
             if hasattr(item, "setExportMode")]
    options = {"antialias": True, "background": None, "painter": painter, "resolutionScale": 1.0}
    caches = [(view, view.cacheMode()) for view in views]
    for view, _mode in caches:
        view.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
    for item in items:
        item.setExportMode(True, options)
    try:
        yield
    finally:
        for item in items:
            item.setExportMode(False)
        for view, mode in caches:
            view.setCacheMode(mode)


def _export_widget(target: QWidget | pg.PlotItem, path: str, kind: str, width: int, height: int) -> None:
    widget = shown_widget(target)
    background = QColor(theme.current().base if isinstance(target, pg.PlotItem) else theme.current().window)
    if kind == "png":
        device = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)  # as the screen paints
        device.setDotsPerMeterX(round(_screen_dpi(widget) / 0.0254))
        device.setDotsPerMeterY(round(_screen_dpi(widget) / 0.0254))
        device.fill(background)
    else:
        device = QSvgGenerator()
        device.setFileName(path)
        device.setSize(QSize(width, height))
        device.setViewBox(QRectF(0, 0, width, height))
        device.setResolution(_screen_dpi(widget))
        title = target.titleLabel.text if isinstance(target, pg.PlotItem) else widget.windowTitle() or widget.objectName()
        device.setTitle(title or "Transformer Explorer")
    painter = QPainter(device)  # no render hints of its own: the widget paints with its own, as on screen
    try:
        if kind == "svg":
            painter.fillRect(QRectF(0, 0, width, height), background)
        if relays_out(widget):
            with laid_out_at(widget, width, height), drawn_as_shapes(widget, painter) if kind == "svg" else nullcontext():
                # QWidget.render explicitly: QGraphicsView overrides render() with a scene-rendering signature.
                QWidget.render(widget, painter, QPoint())
        else:
            _paint_scaled(painter, widget, width, height)
    finally:
        painter.end()
    if kind == "png" and not device.save(path, "PNG"):
        raise ExportError(f"could not write {path}")
    if kind == "svg":
        flatten_svg_file(path)


def _paint_scaled(painter: QPainter, widget: QWidget, width: int, height: int) -> None:
    """A drawing of a natural size of its own, scaled to fit the target and centred."""
    source = widget.size()
    if source.width() < 1 or source.height() < 1:
        source = widget.sizeHint().expandedTo(QSize(16, 16))
        widget.resize(source)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    scale = min(width / source.width(), height / source.height())
    painter.translate((width - source.width() * scale) / 2, (height - source.height() * scale) / 2)
    painter.scale(scale, scale)
    QWidget.render(widget, painter, QPoint())


__all__ = ["covers_hidden", "export", "export_format", "ExportError", "FORMATS", "laid_out_at", "remember_export", "remembered_export_path", "shown_widget"]
