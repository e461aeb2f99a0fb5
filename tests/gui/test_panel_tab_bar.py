"""The panel tab bar shows every panel's tab at once: on a 1366 x 768 laptop with and without a lesson beside the
panels, and on a 1080p projector at text 160% without one, no tab hides behind scroll arrows. On the laptop without
a lesson (the README's screenshot) every tab shows its whole name; elsewhere the tab shown does."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QToolButton

from tests.gui.file_opening import open_lesson

# (theme, text scale, the window's size on that screen: the free area less a desktop's title bar and panel)
SCREENS = {"laptop": ("light", 1.0, (1366, 740)), "projector": ("projector", 1.6, (1766, 994))}


@pytest.fixture
def built_window(qtbot, settings, compute):
    from gui.main_window import MainWindow

    window = MainWindow(settings=settings, compute=compute)
    window.remember_preferences = False
    window.fit_to_screen = lambda: None  # the offscreen screen is smaller than the ones measured here
    window.set_full_screen = lambda on: None  # and full screen would shrink the window to it
    qtbot.addWidget(window)
    window.build_panels()
    yield window
    window.close()


def hidden_tabs(window) -> list[str]:
    """The tabs not wholly inside the bar (reached only through its scroll arrows)."""
    bar = window.tabs.tabBar()
    arrows = any(button.isVisible() for button in bar.findChildren(QToolButton))
    return [window.tabs.tabText(index) for index in range(bar.count())
            if arrows or not bar.rect().contains(bar.tabRect(index))]


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_panel_tab_is_in_view_with_and_without_a_lesson(qtbot, qapp, built_window, screen):
    from core.lessons import bundled_lesson_paths
    from gui.panels import PANEL_CLASSES

    theme_name, scale, size = SCREENS[screen]
    window = built_window
    window.state.set_theme(theme_name)
    window.state.set_font_scale(scale)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    bar = window.tabs.tabBar()
    assert bar.count() == len(PANEL_CLASSES)
    qtbot.waitUntil(lambda: bar.width() > 0)
    assert not hidden_tabs(window), (screen, "no lesson")
    if screen == "laptop":  # the README's screenshot: every name whole
        assert all(bar.tabRect(index).width() >= bar.tabSizeHint(index).width() for index in range(bar.count()))
    for index, panel in enumerate(PANEL_CLASSES):
        assert panel.title in window.tabs.tabToolTip(index)  # a shortened name is whole in its tooltip
    # A lesson's dock takes a third of the width (presentation view hides the tab bar altogether).
    assert open_lesson(qtbot, window, bundled_lesson_paths()[12]) == ""
    try:
        qapp.processEvents()
        assert window.lessons.dock.isVisible() and bar.isVisible()
        for index in range(bar.count()):
            window.tabs.setCurrentIndex(index)
            qapp.processEvents()
            # On the laptop every tab; at projector text, where ten tabs beside a lesson cannot all be named even
            # shortened, the tab shown, whole, with the others behind the arrows (and in the Panels menu).
            hidden = hidden_tabs(window)
            assert not hidden if screen == "laptop" else bar.rect().contains(bar.tabRect(index)), (screen, hidden)
            assert bar.tabRect(index).width() >= bar.tabSizeHint(index).width()  # the tab shown is named whole
    finally:
        window.state.set_theme("light")
        window.state.set_font_scale(1.0)
