"""File > Get a model...: the bundled models, the Hugging Face cache and the catalogue, with downloads.

The list is made on the compute worker (it counts parameters through core.params). A download runs
on a thread of its own that never touches torch (core.hub_download imports no torch), reports bytes
to a progress bar and stops at its next chunk when Cancel is pressed. Opening a model goes through
the window's open_model(path), like File > Open model folder.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.display import format_bytes

COLUMNS = ("Model", "Where", "Family", "Parameters", "Size", "Status")
WHERE_TEXT = {"bundled": "bundled", "cache": "on this computer", "hub": "Hugging Face Hub"}
LIST_CHANNEL = "model-library"
# Download threads still running when their dialog closed (they stop at their next chunk).
_UNFINISHED: list[QThread] = []


def list_models():
    """Worker side: every model the library knows (bundled, cached, catalogue)."""
    from core.model_library import library

    return library()


class DownloadThread(QThread):
    """One download with huggingface_hub; no torch on this thread."""

    progressed = Signal(int, int)  # bytes done, bytes known so far
    succeeded = Signal(str)  # the snapshot folder
    failed = Signal(str)  # a one-line reason
    cancelled = Signal(str)

    def __init__(self, repo_id: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        from core.hub_download import CancelFlag

        self.repo_id = repo_id
        self.cancel_flag = CancelFlag()

    def run(self) -> None:
        from core.hub_download import DownloadCancelled, DownloadError, download_model

        try:
            result = download_model(self.repo_id, on_progress=self.progressed.emit, cancelled=self.cancel_flag)
        except DownloadCancelled as error:
            self.cancelled.emit(str(error))
        except DownloadError as error:
            self.failed.emit(str(error))
        except Exception as error:  # a bug must not end the thread silently: the dialog shows it
            self.failed.emit(f"unexpected error: {type(error).__name__}: {error}")
        else:
            self.succeeded.emit(str(result.folder))


class ModelLibraryDialog(QDialog):
    """Lists models with their sizes; Download fetches a Hub model, Open loads the selected one."""

    listed = Signal()  # the table holds a fresh list
    download_progressed = Signal(int, int)  # bytes done, bytes known so far
    download_finished = Signal(bool)  # True when the files are in the cache

    def __init__(self, compute, open_model: Callable[[Path], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Get a model")
        self.compute = compute
        self.open_model = open_model
        self.entries: list = []
        self.download: DownloadThread | None = None

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda _item: self.open_selected())

        self.about = QLabel()
        self.about.setTextFormat(Qt.TextFormat.PlainText)
        self.about.setWordWrap(True)
        self.status = QLabel("Listing models...")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setVisible(False)

        self.open_button = QPushButton("&Open")
        self.download_button = QPushButton("&Download")
        self.cancel_button = QPushButton("&Cancel download")
        self.refresh_button = QPushButton("&Refresh")
        self.close_button = QPushButton("Close")
        self.open_button.clicked.connect(self.open_selected)
        self.download_button.clicked.connect(self.download_selected)
        self.cancel_button.clicked.connect(self.cancel_download)
        self.refresh_button.clicked.connect(self.refresh)
        self.close_button.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for button in (self.open_button, self.download_button, self.cancel_button, self.refresh_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.about)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.resize(980, 420)
        self._update_buttons()
        self.refresh()

    # ---- listing -------------------------------------------------------------------------------
    def refresh(self) -> None:
        self.refresh_button.setEnabled(False)
        self.compute.submit(LIST_CHANNEL, list_models, self._show_entries, "listing models",
                            on_error=self._listing_failed)

    def _listing_failed(self, message: str) -> None:
        self.refresh_button.setEnabled(True)
        self.status.setText(f"Could not list the models: {message}")

    def _show_entries(self, entries: list) -> None:
        selected = self.selected_entry()
        self.entries = list(entries)
        self.table.setRowCount(len(self.entries))
        for row, entry in enumerate(self.entries):
            parameters = f"{entry.parameters:,}" if entry.parameters is not None else "?"
            size = format_bytes(entry.size_bytes) if entry.size_bytes is not None else "?"
            if entry.where == "hub":
                size = f"~{size} download"
            status = entry.problem or ("ready" if entry.openable else "download to use")
            cells = (entry.name, WHERE_TEXT.get(entry.where, entry.where), entry.family, parameters, size, status)
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column in (3, 4):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                tip = entry.size_note if column == 4 else (entry.problem or str(entry.path or ""))
                # A tooltip is rich text when it looks like markup; a folder's name or a problem quoting it is escaped.
                item.setToolTip(f"<p>{html.escape(tip)}</p>" if tip else "")
                self.table.setItem(row, column, item)
        if selected is not None:
            self.select(selected.name)
        self.refresh_button.setEnabled(True)
        if self.download is None:
            self.status.setText(f"{len(self.entries)} models: bundled, in the Hugging Face cache, and on the Hub")
        self._update_buttons()
        self.listed.emit()

    def select(self, name: str) -> bool:
        for row, entry in enumerate(self.entries):
            if entry.name == name:
                self.table.selectRow(row)
                return True
        return False

    def selected_entry(self):
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or not 0 <= rows[0].row() < len(self.entries):
            return None
        return self.entries[rows[0].row()]

    def _update_buttons(self) -> None:
        entry = self.selected_entry()
        busy = self.download is not None
        self.open_button.setEnabled(entry is not None and entry.openable)
        self.download_button.setEnabled(entry is not None and entry.where == "hub" and not busy)
        self.cancel_button.setEnabled(busy)
        self.about.setText(entry.about if entry is not None else "")

    # ---- actions -------------------------------------------------------------------------------
    def open_selected(self) -> None:
        entry = self.selected_entry()
        if entry is None or not entry.openable:
            return
        self.open_model(entry.path)
        self.accept()

    def download_selected(self) -> None:
        entry = self.selected_entry()
        if entry is None or entry.where != "hub" or self.download is not None:
            return
        self.start_download(entry.name)

    def start_download(self, repo_id: str) -> None:
        self.download = DownloadThread(repo_id)
        self.download.progressed.connect(self._show_progress)
        self.download.succeeded.connect(self._download_succeeded)
        self.download.failed.connect(lambda message: self._download_ended(f"Download failed: {message}", False))
        self.download.cancelled.connect(lambda message: self._download_ended(message[:1].upper() + message[1:], False))
        self.progress.setRange(0, 0)  # busy until the first bytes say how much there is
        self.progress.setVisible(True)
        self.status.setText(f"Downloading {repo_id} into the Hugging Face cache...")
        self.download.start()
        self._update_buttons()

    def _show_progress(self, done: int, total: int) -> None:
        self.download_progressed.emit(done, total)
        if total <= 0:
            return
        scale = max(1, total // 1_000_000)  # QProgressBar holds ints: count in steps that fit
        self.progress.setRange(0, total // scale)
        self.progress.setValue(min(done, total) // scale)
        self.status.setText(f"Downloading: {format_bytes(done)} of {format_bytes(total)} so far")

    def _download_succeeded(self, folder: str) -> None:
        repo_id = self.download.repo_id if self.download is not None else ""
        self._download_ended(f"Downloaded {repo_id} to {folder}. Press Open to use it.", True)

    def _download_ended(self, message: str, ok: bool) -> None:
        thread = self.download
        self.download = None
        if thread is not None:
            thread.wait(5000)
        self.progress.setVisible(False)
        self.status.setText(message)
        self._update_buttons()
        if ok:
            name = thread.repo_id if thread is not None else ""
            self.listed.connect(lambda: self.select(name), Qt.ConnectionType.SingleShotConnection)
            self.refresh()
        self.download_finished.emit(ok)

    def cancel_download(self) -> None:
        if self.download is not None:
            self.download.cancel_flag.set()
            self.status.setText("Cancelling: the download stops at its next chunk...")
            self.cancel_button.setEnabled(False)

    def done(self, result: int) -> None:  # close, Esc, accept: a running download is cancelled
        if self.download is not None:
            self.download.cancel_flag.set()
            if not self.download.wait(2000):
                _UNFINISHED.append(self.download)  # it ends at its next chunk; keep it referenced until then
                self.download.finished.connect(lambda thread=self.download: _UNFINISHED.remove(thread))
            self.download = None
        super().done(result)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.done(QDialog.DialogCode.Rejected)
        super().closeEvent(event)
