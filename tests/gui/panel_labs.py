"""Tearing down a panel on its own LabState and compute worker, as the panel fixtures build them."""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QEvent

RESULT_TIMEOUT_MS = 20_000


def close_panel_lab(qtbot, compute, panel) -> None:
    """Let the worker finish, deliver what it queued for the panel, stop it, then delete the panel.

    The fixtures own the panel's lifetime (no qtbot.addWidget): pytest-qt would close the panel
    before this teardown runs, while the worker may still have a result on its way to it.
    """
    qtbot.waitUntil(lambda: not compute.busy, timeout=RESULT_TIMEOUT_MS)
    QCoreApplication.sendPostedEvents()  # results the worker queued reach the panel while it still exists
    compute.shutdown()
    panel.close()
    panel.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
