"""The one dialog that picks a folder to save a model into (File > Save model as..., Train > Save model...).

It proposes a new folder beside the last one used, asks before replacing a model this app saved,
and refuses a folder holding anything else, so one click never replaces a user's own files.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

MAX_SUGGESTION_TRIES = 1000


def suggested_folder(start_dir: Path, name: str) -> Path:
    """A folder under `start_dir` that does not exist yet, named after the model: tiny-gpt, tiny-gpt-2, ..."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-") or "model"
    candidate = start_dir / stem
    for number in range(2, MAX_SUGGESTION_TRIES):
        if not candidate.exists():
            return candidate
        candidate = start_dir / f"{stem}-{number}"
    return candidate


def choose_model_folder(parent: QWidget, title: str, start_dir: Path, name: str) -> Path | None:
    """Ask where to save a model; None when the user cancels or the place is refused (with a message)."""
    if not start_dir.is_dir():
        start_dir = Path.home()
    path, _ = QFileDialog.getSaveFileName(
        parent, title, str(suggested_folder(start_dir, name)), "",
        options=QFileDialog.Option.DontConfirmOverwrite,  # confirm_model_folder asks, knowing what is there
    )  # fmt: skip
    if not path:
        return None
    return confirm_model_folder(parent, Path(path))


def confirm_model_folder(parent: QWidget, folder: Path) -> Path | None:
    """`folder` if a model may be saved there: new, empty, or a model this app saved that the user agrees to replace."""
    from core.checkpoints import CheckpointError, foreign_entries

    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        _refuse(parent, f"{folder} is a file, not a folder. Choose a new folder name.")
        return None
    if not folder.exists():
        return folder
    try:
        foreign = foreign_entries(folder)
    except CheckpointError as error:
        _refuse(parent, str(error))
        return None
    if foreign:
        shown = ", ".join(foreign[:4]) + (f" and {len(foreign) - 4} more" if len(foreign) > 4 else "")
        _refuse(parent, f"{folder} holds files this app did not write ({shown}). "
                        "Choose a new folder name; nothing was changed.")  # fmt: skip
        return None
    if not any(folder.iterdir()):
        return folder
    box = QMessageBox(QMessageBox.Icon.Question, "Replace the saved model?",
                      f"{folder} holds a model saved by this app. Replace it with the current model?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)  # fmt: skip
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return folder if box.exec() == QMessageBox.StandardButton.Yes else None


def _refuse(parent: QWidget, text: str) -> None:
    box = QMessageBox(QMessageBox.Icon.Warning, "Choose another folder", text, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.exec()
