"""GUI test fixtures: preferences and logs go to temporary places, a window with torch and a model loaded."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, QStandardPaths


def pytest_collection_modifyitems(config, items):
    # The offscreen platform cannot resize a native dock; that notice is not a defect of the app.
    for item in items:
        if "tests/gui" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.qt_log_ignore("propagateSizeHints"))


@pytest.fixture(autouse=True, scope="session")
def isolated_settings(tmp_path_factory):
    QStandardPaths.setTestModeEnabled(True)
    folder = tmp_path_factory.mktemp("settings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    yield folder


@pytest.fixture
def compute(qtbot):
    """The one compute worker, with one torch thread: the tests' tensors are tiny."""
    from gui.compute import ComputeController

    controller = ComputeController(torch_threads=1)
    yield controller
    controller.shutdown()


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "prefs.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    """The main window (with the shell's own panel) after torch and the default model have loaded.

    The shell's behaviour is tested with the tensor-shapes panel alone, so that it does not depend on
    every other panel; test_app.py drives the window with every registered panel.
    """
    from gui.main_window import MainWindow
    from gui.panels.shapes import ShapesPanel

    win = MainWindow(settings=settings, panel_classes=[ShapesPanel])
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    with qtbot.waitSignal(win.model_loaded, timeout=60_000):
        win.start_loading()
    yield win
    win.close()
