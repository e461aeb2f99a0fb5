"""Light, dark and projector palettes, the run-time font scale, pens and colormaps for plots.

Panels never pick colours themselves: they call `pen(role)`, `brush(role)`, `series_color(i)`,
`colormap()` and `font()`, and the base Panel re-styles its plots through `style_plot` whenever the
theme or the font scale changes. Categorical colours are the Okabe-Ito set and the default
colormaps are viridis / cividis, so every plot reads for colour-blind viewers too.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyleFactory

if TYPE_CHECKING:
    import pyqtgraph as pg

# pyqtgraph is imported only when the first plot is made: the window shows before it loads.

# Okabe & Ito (2008): distinguishable under the common colour-vision deficiencies.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True)
class Theme:
    name: str
    label: str
    window: str
    base: str  # background of text fields, tables and plots
    alternate: str
    text: str
    muted: str  # secondary text, grid lines
    accent: str  # selection, highlighted items
    warning: str  # the attention-matrix call-out, error text
    line_width: float  # pixels for data lines
    axis_width: float
    font_boost: float  # multiplies the user's font scale (the projector reads from the back row)
    colormap_name: str
    roles: tuple[tuple[str, str], ...]  # pen role -> colour

    def role_color(self, role: str) -> str:
        return dict(self.roles).get(role, self.text)


THEMES: dict[str, Theme] = {
    theme.name: theme
    for theme in (
        Theme(
            name="light",
            label="Light",
            window="#f5f6f8",
            base="#ffffff",
            alternate="#eef1f5",
            text="#1f2328",
            muted="#8a929b",
            accent="#0072B2",
            warning="#c2410c",
            line_width=1.6,
            axis_width=1.0,
            font_boost=1.0,
            colormap_name="viridis",
            roles=(("primary", "#0072B2"), ("secondary", "#E69F00"), ("tertiary", "#009E73"), ("highlight", "#D55E00"), ("grid", "#d0d7de")),
        ),
        Theme(
            name="dark",
            label="Dark",
            window="#1e2024",
            base="#16181b",
            alternate="#24272c",
            text="#e6e8eb",
            muted="#8b949e",
            accent="#56B4E9",
            warning="#ff9f5a",
            line_width=1.6,
            axis_width=1.0,
            font_boost=1.0,
            colormap_name="viridis",
            roles=(("primary", "#56B4E9"), ("secondary", "#E69F00"), ("tertiary", "#2fc08f"), ("highlight", "#ff7f3f"), ("grid", "#3a3f46")),
        ),
        Theme(
            name="projector",
            label="Projector",
            window="#ffffff",
            base="#ffffff",
            alternate="#f0f0f0",
            text="#000000",
            muted="#333333",
            accent="#0050a0",
            warning="#b00000",
            line_width=4.0,
            axis_width=2.5,
            font_boost=1.35,
            colormap_name="cividis",
            roles=(("primary", "#0050a0"), ("secondary", "#c06000"), ("tertiary", "#006a4e"), ("highlight", "#b00000"), ("grid", "#777777")),
        ),
    )
}
THEME_NAMES = tuple(THEMES)
DEFAULT_THEME = "light"

# The legibility rule at projector scale (gui.legibility checks it): no text under MIN_TEXT_PX pixels,
# no control under MIN_CONTROL_PX pixels across.
MIN_TEXT_PX = 14
MIN_CONTROL_PX = 24

# Control parts at 100% text, in pixels (Fusion's own sizes); scaled_style grows them with the text.
INDICATOR_PX = 13  # a check box's or radio button's box
SLIDER_HANDLE_PX = 15
SLIDER_THICKNESS_PX = 16
SLIDER_STEPS = 128  # the most positions a slider offers (the context of the Positions panel's m and n)
SLIDER_PX_PER_STEP = 1  # each position a pixel of its own: any one can be hit with the mouse

_current = THEMES[DEFAULT_THEME]
_font_scale = 1.0
_base_point_size: float | None = None
_style: QProxyStyle | None = None  # held here: the application does not keep a Python style alive


def current() -> Theme:
    return _current


def font_scale() -> float:
    """The user's scale times the theme's boost: what every text size is multiplied by."""
    return _font_scale * _current.font_boost


def apply_theme(app: QApplication, name: str, scale: float = 1.0) -> Theme:
    """Set the application palette, font size and pyqtgraph defaults; returns the theme applied."""
    global _current, _font_scale, _base_point_size
    theme = THEMES.get(name, THEMES[DEFAULT_THEME])
    _current = theme
    _font_scale = scale
    if _base_point_size is None:
        size = app.font().pointSizeF()
        _base_point_size = size if size > 0 else 10.0
    # Fusion is chosen where the QApplication is made (gui.app passes -style Fusion). Text at 100% takes
    # Fusion as it is; larger text takes the proxy over it, whose sizes follow the scale. The proxy answers
    # every one of the style's size questions in Python, hundreds a repaint, and each waits for the
    # interpreter's lock while the worker runs Python: so it is set only where its sizes differ from
    # Fusion's. Either is set before the palette (a new style resets the palette).
    global _style
    scaled = abs(font_scale() - 1.0) > 1e-9
    if _style is None or app.style() is not _style or isinstance(_style, QProxyStyle) != scaled:
        _style = scaled_style() if scaled else QStyleFactory.create("Fusion")
        app.setStyle(_style)
    app.setPalette(_palette(theme))
    font = QFont(app.font())
    font.setPointSizeF(_base_point_size * font_scale())
    app.setFont(font)
    if "pyqtgraph" in sys.modules:
        configure_pyqtgraph()
    return theme


def control_px(base_px: int) -> int:
    """A control part's size in pixels: the style's size at 100% grown with the text, never below it."""
    return max(base_px, round(base_px * font_scale()))


def scaled_style() -> QProxyStyle:
    """The application style: Fusion, with check-box and radio indicators and slider handles that grow
    with the text.

    Fusion draws them at a fixed size whatever the font: at the projector's 160% a 13 px box sits beside
    30 px text. These sizes are read at every layout and paint, so a new text scale needs no re-polish;
    at projector scale every control is at least MIN_CONTROL_PX to hit. A horizontal slider is long enough
    to give each of SLIDER_STEPS positions SLIDER_PX_PER_STEP pixels.
    """
    from PySide6.QtWidgets import QSlider, QStyle

    metric = QStyle.PixelMetric
    sizes = {
        metric.PM_IndicatorWidth: INDICATOR_PX, metric.PM_IndicatorHeight: INDICATOR_PX,
        metric.PM_ExclusiveIndicatorWidth: INDICATOR_PX, metric.PM_ExclusiveIndicatorHeight: INDICATOR_PX,
        metric.PM_SliderThickness: SLIDER_THICKNESS_PX, metric.PM_SliderControlThickness: SLIDER_HANDLE_PX,
        metric.PM_SliderLength: SLIDER_HANDLE_PX,
    }

    class ScaledStyle(QProxyStyle):
        def pixelMetric(self, which, option=None, widget=None) -> int:  # noqa: N802 (Qt's name)
            base = sizes.get(which)
            return control_px(base) if base is not None else super().pixelMetric(which, option, widget)

        def polish(self, target):
            result = super().polish(target)
            if isinstance(target, QSlider):
                # A slider's minimum length is its handle's: too short to reach each of 128 positions.
                length = SLIDER_STEPS * SLIDER_PX_PER_STEP + control_px(SLIDER_HANDLE_PX)
                if target.orientation() == Qt.Orientation.Horizontal:
                    target.setMinimumWidth(max(target.minimumWidth(), length))
                else:
                    target.setMinimumHeight(max(target.minimumHeight(), length))
            return result

    return ScaledStyle("Fusion")


def configure_pyqtgraph() -> None:
    """pyqtgraph's defaults for plots created from now on (existing ones go through style_plot)."""
    import pyqtgraph as pg

    pg.setConfigOptions(background=_current.base, foreground=_current.text, antialias=True)


def _palette(theme: Theme) -> QPalette:
    palette = QPalette()
    colors = {
        QPalette.ColorRole.Window: theme.window,
        QPalette.ColorRole.WindowText: theme.text,
        QPalette.ColorRole.Base: theme.base,
        QPalette.ColorRole.AlternateBase: theme.alternate,
        QPalette.ColorRole.Text: theme.text,
        QPalette.ColorRole.Button: theme.alternate,
        QPalette.ColorRole.ButtonText: theme.text,
        QPalette.ColorRole.ToolTipBase: theme.base,
        QPalette.ColorRole.ToolTipText: theme.text,
        QPalette.ColorRole.PlaceholderText: theme.muted,
        QPalette.ColorRole.Highlight: theme.accent,
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: theme.accent,
        QPalette.ColorRole.BrightText: theme.warning,
    }
    for role, color in colors.items():
        palette.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(theme.muted))
    return palette


def color(role: str) -> QColor:
    """A named colour of the current theme: primary, secondary, tertiary, highlight, grid, text, muted, warning, accent."""
    theme = _current
    direct = {"text": theme.text, "muted": theme.muted, "warning": theme.warning, "accent": theme.accent, "base": theme.base}
    return QColor(direct.get(role) or theme.role_color(role))


def pen(role: str = "primary", width: float | None = None, **kwargs) -> object:
    """A pyqtgraph pen in the theme's colour and line width (thick on the projector)."""
    import pyqtgraph as pg

    return pg.mkPen(color(role), width=width if width is not None else _current.line_width, **kwargs)


def brush(role: str = "primary", alpha: int = 255) -> object:
    import pyqtgraph as pg

    c = color(role)
    c.setAlpha(alpha)
    return pg.mkBrush(c)


def series_color(index: int) -> QColor:
    """The index-th categorical colour (Okabe-Ito; black is replaced by the text colour)."""
    value = OKABE_ITO[index % (len(OKABE_ITO) - 1)]
    return QColor(value)


def colormap(name: str | None = None) -> pg.ColorMap:
    """The theme's perceptually uniform colormap (viridis, or cividis on the projector)."""
    import pyqtgraph as pg

    return pg.colormap.get(name or _current.colormap_name)


def font(relative: float = 1.0, bold: bool = False) -> QFont:
    """The application font at the current scale, times `relative`."""
    base = _base_point_size or 10.0
    result = QFont()
    result.setPointSizeF(base * font_scale() * relative)
    result.setBold(bold)
    return result


def plain_axis_numbers(axis) -> None:
    """Tick numbers as they are on an axis without units.

    pyqtgraph scales a unitless axis whose values stay under 1 (or pass 1e9) and writes the factor beside its
    label, "probability (x0.001)" over ticks of 0 to 500: a factor nobody reads as one. An axis with units
    (bytes, seconds) keeps its SI prefix, "kB" reads well. Disabling the prefix keeps the scale of the range it was
    disabled at, so the scale is set back to 1 as well.
    """
    if axis.labelUnits:
        return
    axis.enableAutoSIPrefix(False)
    if axis.autoSIPrefixScale != 1.0:
        axis.autoSIPrefixScale = 1.0
        axis.labelUnitPrefix = ""
        axis.picture = None  # the tick texts are redrawn unscaled
        axis.update()


TICK_GAP = 1.15  # the least distance between two tick labels of an axis, in lines of its tick font


def _nicer_spacing(spacing: float) -> float:
    """The next step of the 1, 2, 5 series above `spacing`."""
    decade = 10.0 ** math.floor(math.log10(spacing))
    for step in (2.0, 5.0, 10.0):
        if step * decade > spacing * 1.0001:
            return step * decade
    return 20.0 * decade


def space_ticks(axis: pg.AxisItem) -> None:
    """Keep the tick labels a vertical axis picks itself at least TICK_GAP lines apart.

    pyqtgraph chooses the number of ticks from the axis's length alone and always labels its first level:
    on a short axis in large text (a colour bar beside a two-row map at projector scale) "1.0, 0.8, ... 0"
    are drawn on top of each other. Finer levels too close to label are left out, and where even the first
    is, its spacing is widened along 1, 2, 5, 10.
    """
    if getattr(axis, "_spaced_ticks", False):
        return
    choose = axis.tickSpacing

    def least_gap() -> float:
        from PySide6.QtGui import QFontMetrics

        # pyqtgraph's own measure of a label: its font's line, less the 20% it trims.
        return QFontMetrics(axis.style.get("tickFont") or axis.font()).height() * 0.8 * TICK_GAP

    def spaced(low: float, high: float, size: float):
        levels = choose(low, high, size)
        if axis.orientation not in ("left", "right") or size <= 0 or not high > low or not levels:
            return levels
        least = least_gap()
        per_unit = size / (high - low)
        kept = [(spacing, offset) for spacing, offset in levels if spacing * per_unit >= least]
        if kept:
            return kept
        spacing = levels[0][0]
        while spacing * per_unit < least:
            spacing = _nicer_spacing(spacing)
        return [(spacing, 0.0)]

    values_of = axis.tickValues

    def thinned(low: float, high: float, size: float):
        """A log axis's decades bypass tickSpacing: where they are still too close, every k-th is kept."""
        levels = values_of(low, high, size)
        if axis.orientation not in ("left", "right") or size <= 0 or not high > low or not levels:
            return levels
        least = least_gap()
        per_unit = size / (high - low)
        first, *finer = levels
        spacing, values = first
        values = sorted(values)
        gap = min((b - a for a, b in zip(values, values[1:])), default=high - low) * per_unit
        if gap < least:
            values = values[::math.ceil(least / gap)] if gap > 0 else values[:1]
            return [(spacing, values)]
        return [first, *((s, v) for s, v in finer if s is not None and s * per_unit >= least)]

    axis.tickSpacing = spaced
    axis.tickValues = thinned
    axis._spaced_ticks = True
    axis.picture = None  # drawn again with the new ticks
    axis.update()


def style_plot(target: pg.PlotWidget | pg.PlotItem) -> None:
    """Apply the theme and font scale to an existing plot: background, axes, tick and label fonts."""
    import pyqtgraph as pg

    theme = _current
    if isinstance(target, pg.PlotWidget):
        target.setBackground(theme.base)
        item = target.getPlotItem()
    else:
        item = target
    tick_font = font(0.9)
    label_px = max(8, round(tick_font.pointSizeF() * 1.35))
    for name in ("left", "bottom", "right", "top"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(theme.text, width=theme.axis_width))
        axis.setTextPen(pg.mkPen(theme.text))
        axis.setStyle(tickFont=tick_font, tickLength=-6)
        space_ticks(axis)
        if axis.labelText:
            axis.setLabel(axis.labelText, units=axis.labelUnits or None, **{"color": theme.text, "font-size": f"{label_px}px"})
    for name in ("left", "bottom", "right", "top"):
        plain_axis_numbers(item.getAxis(name))
    if item.titleLabel is not None and item.titleLabel.text:
        item.setTitle(item.titleLabel.text, color=theme.text, size=f"{round(label_px * 1.1)}px")
    legend = item.legend
    if legend is not None:
        legend.setLabelTextColor(theme.text)
        legend.setLabelTextSize(f"{label_px}px")
        for _sample, label in legend.items:
            label.setText(label.text)  # setAttr alone does not re-render the label


__all__ = [
    "Theme",
    "THEMES",
    "THEME_NAMES",
    "DEFAULT_THEME",
    "MIN_CONTROL_PX",
    "MIN_TEXT_PX",
    "OKABE_ITO",
    "apply_theme",
    "configure_pyqtgraph",
    "control_px",
    "scaled_style",
    "space_ticks",
    "current",
    "font_scale",
    "color",
    "pen",
    "brush",
    "series_color",
    "colormap",
    "font",
    "style_plot",
    "plain_axis_numbers",
]
