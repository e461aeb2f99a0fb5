"""Uncaught errors: log them with the traceback, show a short dialog, keep the app running."""

from __future__ import annotations

import html
import logging
import logging.handlers
import sys
import threading
import traceback
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QObject, QStandardPaths, Qt, Signal, Slot
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

log = logging.getLogger("transformer_explorer")


def log_dir() -> Path:
    location = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericCacheLocation)
    base = Path(location) if location else Path.home() / ".cache"
    return base / "transformer-explorer"


def setup_logging(directory: Path | None = None) -> Path | None:
    """Log to app.log under the user's cache dir (rotated); returns the file, or None if unwritable."""
    directory = directory or log_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(directory / "app.log", maxBytes=1_000_000, backupCount=2, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return directory / "app.log"


def log_file() -> Path | None:
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


class ErrorDialog(QDialog):
    """A short message, the log location, and a button that copies the full details."""

    def __init__(self, summary: str, details: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Something went wrong")
        self.details = details
        layout = QVBoxLayout(self)
        message = QLabel(f"<b>{html.escape(summary)}</b><br>The lab keeps running; the last action may not have finished.")
        message.setWordWrap(True)
        layout.addWidget(message)
        where = log_file()
        if where is not None:
            location = QLabel(f"Details are in {where}")
            location.setTextFormat(Qt.TextFormat.PlainText)  # a path, never markup
            layout.addWidget(location)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy details")
        self.copy_button.clicked.connect(self.copy_details)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def copy_details(self) -> None:
        QApplication.clipboard().setText(self.details)


class ErrorReporter(QObject):
    """Installed as sys.excepthook and threading.excepthook; dialogs always open on the GUI thread."""

    _report = Signal(str, str)

    def __init__(self, parent_widget: QWidget | None = None) -> None:
        super().__init__()
        self.parent_widget = parent_widget
        self.dialogs: list[ErrorDialog] = []
        self.summaries: list[str] = []  # every uncaught error of this run, for the self-test
        self._report.connect(self._show)
        self._previous_hooks = (sys.excepthook, threading.excepthook)

    def install(self) -> None:
        sys.excepthook = self.handle
        threading.excepthook = lambda args: self.handle(args.exc_type, args.exc_value, args.exc_traceback)

    def uninstall(self) -> None:
        sys.excepthook, threading.excepthook = self._previous_hooks

    def handle(self, kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            QApplication.quit()
            return
        details = "".join(traceback.format_exception(kind, value, tb))
        log.error("uncaught error:\n%s", details)
        text = str(value).strip().splitlines()[0] if str(value).strip() else ""
        summary = f"{kind.__name__}: {text}" if text else kind.__name__
        self.summaries.append(summary)
        self._report.emit(summary, details)

    @Slot(str, str)
    def _show(self, summary: str, details: str) -> None:
        dialog = ErrorDialog(summary, details, self.parent_widget)
        self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
        dialog.open()


__all__ = ["ErrorReporter", "ErrorDialog", "setup_logging", "log_dir", "log_file"]
