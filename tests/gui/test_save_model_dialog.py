"""Save model as...: a new folder by default, a question before replacing the app's own model, a refusal for other files."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from gui import save_model_dialog
from gui.save_model_dialog import choose_model_folder, confirm_model_folder, suggested_folder


@pytest.fixture
def boxes(monkeypatch):
    """Message boxes answered without showing them: records (title, text, plain) and answers `answer[0]`."""
    shown: list[tuple[str, str, bool]] = []
    answer = [QMessageBox.StandardButton.Cancel]

    def exec_(box):
        from PySide6.QtCore import Qt

        shown.append((box.windowTitle(), box.text(), box.textFormat() == Qt.TextFormat.PlainText))
        return answer[0]

    monkeypatch.setattr(QMessageBox, "exec", exec_)
    return shown, answer


def test_the_suggestion_is_a_new_folder_named_after_the_model(tmp_path):
    assert suggested_folder(tmp_path, "tiny-gpt") == tmp_path / "tiny-gpt"
    (tmp_path / "tiny-gpt").mkdir()
    (tmp_path / "tiny-gpt-2").write_text("")
    assert suggested_folder(tmp_path, "tiny-gpt") == tmp_path / "tiny-gpt-3"
    assert suggested_folder(tmp_path, "<img src='x'>/..") == tmp_path / "img-src-x"
    assert suggested_folder(tmp_path, "..") == tmp_path / "model"


def test_the_dialog_opens_on_a_new_folder(qtbot, tmp_path, monkeypatch, boxes):
    (tmp_path / "tiny-gpt").mkdir()
    asked = []

    def fake_dialog(parent, title, start, filter_, **kwargs):
        asked.append(start)
        return start, ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake_dialog)
    assert choose_model_folder(None, "Save model as", tmp_path, "tiny-gpt") == tmp_path / "tiny-gpt-2"
    assert asked == [str(tmp_path / "tiny-gpt-2")] and boxes[0] == []


def test_a_folder_of_other_files_is_refused_in_plain_text(qtbot, tmp_path, boxes):
    folder = tmp_path / "<b>home"
    folder.mkdir()
    (folder / "config.json").write_text("mine")
    assert confirm_model_folder(None, folder) is None
    shown, _ = boxes
    assert len(shown) == 1 and "did not write (config.json)" in shown[0][1] and shown[0][2]
    assert (folder / "config.json").read_text() == "mine"


def test_replacing_the_apps_own_model_is_asked(qtbot, tmp_path, boxes):
    from core.checkpoints import json_writer, write_checkpoint_folder

    folder = write_checkpoint_folder(tmp_path / "saved", {"config.json": json_writer({})})
    shown, answer = boxes
    assert confirm_model_folder(None, folder) is None  # Cancel, the default
    answer[0] = QMessageBox.StandardButton.Yes
    assert confirm_model_folder(None, folder) == folder
    assert [title for title, _, plain in shown if plain] == ["Replace the saved model?"] * 2
    (tmp_path / "empty").mkdir()
    assert confirm_model_folder(None, tmp_path / "empty") == tmp_path / "empty"
    assert len(shown) == 2


def test_save_model_as_in_the_window_never_replaces_other_files(qtbot, window, tmp_path, monkeypatch, boxes):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("mine")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(folder), ""))
    window.save_model_dialog()
    assert (folder / "tokenizer.json").read_text() == "mine" and sorted(p.name for p in folder.iterdir()) == ["tokenizer.json"]
    assert "did not write (tokenizer.json)" in boxes[0][0][1]


def test_a_save_error_is_a_sentence(qtbot, window, tmp_path, monkeypatch):
    from core import checkpoints

    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(checkpoints.os, "mkdir", read_only)
    window.save_model(tmp_path / "saved")
    qtbot.waitUntil(lambda: any(box.isVisible() for box in window.message_boxes), timeout=30_000)
    box = [box for box in window.message_boxes if box.isVisible()][-1]
    assert box.text() == f"cannot save to {tmp_path / 'saved'}: the disk is read-only"
    box.close()
    assert not Path(tmp_path / "saved").exists()
