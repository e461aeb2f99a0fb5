"""The status bar names the linear layers' kernel path and, when it is not fp32, their precision."""

from __future__ import annotations

import pytest

from core import kernels


@pytest.fixture(autouse=True)
def restore_the_process_setting():
    choice, precision = kernels.current_choice(), kernels.current_precision()
    yield
    kernels.set_choice(choice)
    kernels.set_precision(precision)


def open_window(qtbot, settings, **requested):
    from gui.main_window import MainWindow
    from gui.panels.shapes import ShapesPanel

    window = MainWindow(settings=settings, panel_classes=[ShapesPanel], **requested)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        window.start_loading()
    return window


def test_the_status_bar_names_the_path_the_window_uses(qtbot, settings):
    path = "onednn" if kernels.onednn_status()[0] else "default"
    window = open_window(qtbot, settings, requested_kernels=path)
    assert kernels.current_choice().path == path
    assert window.kernels_label.text() == f"kernels: {'oneDNN' if path == 'onednn' else 'default'}"
    assert "precision: fp32" in window.kernels_label.toolTip() and "asked for" in window.kernels_label.toolTip()
    window.close()


@pytest.mark.skipif(not kernels.cpu_has_native_bf16(), reason="this CPU has no native bf16")
def test_bf16_is_labelled_on_screen(qtbot, settings):
    window = open_window(qtbot, settings, requested_kernels="default", requested_precision="bf16")
    assert kernels.current_precision().requested == "bf16"
    assert window.kernels_label.text() == "kernels: default | precision: bf16 (values differ from fp32)"
    window.close()


def test_a_precision_the_cpu_cannot_run_falls_back_to_fp32_with_a_message(qtbot, settings):
    window = open_window(qtbot, settings, requested_kernels="default", requested_precision="fp16")
    assert kernels.current_precision().requested == "fp32"
    assert window.kernels_label.text() == "kernels: default"
    assert "fp16 runs on CUDA only" in window.statusBar().currentMessage()
    window.close()
