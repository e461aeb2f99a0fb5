"""Tabs sized by the page on show: one wide page must not make every other page scroll sideways."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from gui.widgets.page_tabs import PageTabs


def wide_page(buttons: int = 40) -> QWidget:
    page = QWidget()
    row = QHBoxLayout(page)
    for index in range(buttons):
        row.addWidget(QPushButton(f"button {index}"))
    return page


def test_the_minimum_width_follows_the_current_page(qtbot):
    tabs = PageTabs()
    qtbot.addWidget(tabs)
    narrow, wide = QLabel("narrow"), wide_page()
    wide.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    tabs.addTab(narrow, "narrow")
    tabs.addTab(wide, "wide")
    wide_width = wide.minimumSizeHint().width()

    assert tabs.minimumSizeHint().width() < wide_width / 4
    tabs.setCurrentWidget(wide)
    assert tabs.minimumSizeHint().width() >= wide_width
    assert wide.sizePolicy().horizontalPolicy() == QSizePolicy.Policy.Expanding  # its own policy is back
    assert wide.sizePolicy().verticalPolicy() == QSizePolicy.Policy.Fixed
    tabs.setCurrentWidget(narrow)
    assert tabs.minimumSizeHint().width() < wide_width / 4


def test_a_wide_panel_leaves_the_window_narrow_on_the_others(window, qtbot):
    wide = wide_page()
    window.tabs.addTab(wide, "wide")
    wide_width = wide.minimumSizeHint().width()
    window.tabs.setCurrentIndex(0)
    assert window.tabs.minimumSizeHint().width() < wide_width
    scroll = window.central_scroll.horizontalScrollBar()
    window.resize(max(400, wide_width // 2), 600)
    qtbot.waitUntil(lambda: window.tabs.width() <= window.central_scroll.viewport().width())
    assert scroll.maximum() == 0  # the shown panel fits: nothing to scroll to
    window.tabs.setCurrentWidget(wide)
    qtbot.waitUntil(lambda: scroll.maximum() > 0)  # the wide panel itself scrolls
