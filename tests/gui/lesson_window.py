"""One main window with torch and the default model loaded, shared by a test module that pages through lessons."""

from __future__ import annotations

from PySide6.QtCore import QSettings


def loaded_window(request, tmp_path_factory, name: str):
    """Yield the window (1400 x 900, preferences in a temporary file), then close it."""
    from pytestqt.qtbot import QtBot

    from gui.main_window import MainWindow

    bot = QtBot(request)
    settings = QSettings(str(tmp_path_factory.mktemp(name) / "prefs.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    win.remember_preferences = False
    # The offscreen screen is smaller than a laptop's; test_window_fits checks fitting, these modules the lessons.
    win.fit_to_screen = lambda: None
    win.resize(1400, 900)
    win.show()
    with bot.waitSignal(win.model_loaded, timeout=60_000):
        win.start_loading()
    yield win
    win.close()
    win.deleteLater()
