"""The entry point: --self-test drives the real window end to end, with a session and a screenshot."""

from __future__ import annotations

import json

from PySide6.QtGui import QImage

from core.presets import get_preset
from gui.app import main
from gui.session import Session, write_session


def test_self_test_with_a_session_and_a_screenshot(qtbot, tmp_path, capsys):
    session = tmp_path / "lab.json"
    write_session(session, Session(config=get_preset("tiny-moe"), seed=3, text="abc", panels={"Tensor shapes": {"seq": 16}}))
    shot = tmp_path / "window.png"
    code = main(["--self-test", "--session", str(session), "--screenshot", str(shot), "--size", "1000x700", "--theme", "dark"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "self-test passed" in out.out
    image = QImage(str(shot))
    assert image.width() >= 1000 and image.height() >= 700  # panels' minimum sizes may widen the window
    assert json.loads(session.read_text(encoding="utf-8"))["seed"] == 3


def test_a_bad_size_is_refused(capsys):
    assert main(["--self-test", "--size", "big"]) == 2
    assert "WIDTHxHEIGHT" in capsys.readouterr().err
