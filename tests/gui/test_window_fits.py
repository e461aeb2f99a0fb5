"""The window fits the screens it is used on: a 1366 x 768 laptop, and a 1080p projector at large text."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QPushButton, QWidget

from gui.widgets.flow_layout import FlowLayout, control_group

TITLE_BAR_AND_TASKBAR_PX = 60  # what the desktop takes from the screen's height


@pytest.fixture
def full_window(qtbot, settings, compute):
    """Every panel built (no model needed: sizes come from the widgets alone)."""
    from gui.main_window import MainWindow

    win = MainWindow(settings=settings, compute=compute)
    win.remember_preferences = False
    qtbot.addWidget(win)
    win.build_panels()
    yield win
    win.close()


@pytest.mark.parametrize(("theme_name", "scale", "screen"), [
    ("light", 1.0, (1366, 768)),
    ("projector", 1.0, (1366, 768)),
    ("projector", 1.6, (1920, 1080)),
])
def test_the_window_fits_the_screen(full_window, qapp, theme_name, scale, screen):
    full_window.state.set_theme(theme_name)
    full_window.state.set_font_scale(scale)
    qapp.processEvents()
    minimum = full_window.minimumSizeHint()
    widest = max(range(full_window.tabs.count()), key=lambda i: full_window.tabs.widget(i).minimumSizeHint().width())
    assert minimum.width() <= screen[0], (minimum, full_window.tabs.tabText(widest))
    assert minimum.height() <= screen[1] - TITLE_BAR_AND_TASKBAR_PX, minimum


def test_a_flow_wraps_its_groups_instead_of_widening(qtbot):
    host = QWidget()
    qtbot.addWidget(host)
    flow = FlowLayout(host, spacing=4)
    buttons = [QPushButton(f"button {index}") for index in range(6)]
    for first, second in zip(buttons[::2], buttons[1::2], strict=True):
        flow.addWidget(control_group(first, second))
    groups = [flow.itemAt(index) for index in range(flow.count())]
    widest = max(group.sizeHint().width() for group in groups)
    one_row = flow.sizeHint()
    assert flow.minimumSize().width() == widest < one_row.width()

    # Wide enough: one row. One group wide: one row per group, each inside the given width.
    assert flow.heightForWidth(one_row.width()) == one_row.height()
    tall = flow.heightForWidth(widest)
    assert tall >= 3 * max(group.sizeHint().height() for group in groups)
    flow.setGeometry(QRect(0, 0, widest, tall))
    rows = sorted({group.geometry().top() for group in groups})
    assert len(rows) == 3
    for group in groups:
        assert group.geometry().right() < widest and group.geometry().bottom() < tall
    # A caption and its control stay together on one line.
    for first, second in zip(buttons[::2], buttons[1::2], strict=True):
        assert first.mapTo(host, first.rect().center()).y() == second.mapTo(host, second.rect().center()).y()
