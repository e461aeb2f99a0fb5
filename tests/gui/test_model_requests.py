"""A model build the sidebar has moved away from is not adopted when it arrives."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from core.presets import get_preset


def test_a_build_the_sidebar_went_back_from_is_dropped(qtbot, window):
    state = window.state
    loaded = window.loaded.config
    state.set_config(get_preset("tiny-llama"))
    window.request_model()  # at once, not after the sidebar's timer
    state.set_config(loaded)  # back (an undo) before it is built: the loaded model is this config's again
    window.request_model()
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    QApplication.processEvents()  # the build's result, queued to the window
    assert window.loaded.config == state.config == loaded
    assert state.model is window.loaded.model
