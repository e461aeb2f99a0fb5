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


def test_a_screenshot_of_a_chosen_panel_and_sub_tab(qtbot, tmp_path, capsys):
    session = tmp_path / "moe.json"
    write_session(session, Session(config=get_preset("tiny-moe"), seed=0, text="To be, or not", panels={}))
    shot = tmp_path / "router.png"
    code = main(["--screenshot", str(shot), "--session", str(session), "--panel", "Families/Router", "--size", "1000x700"])
    assert code == 0, capsys.readouterr().err
    assert QImage(str(shot)).width() >= 1000
    code = main(["--screenshot", str(shot), "--panel", "Families/Nowhere", "--size", "1000x700"])
    err = capsys.readouterr().err
    assert code == 1 and "Families has no sub-tab 'Nowhere'; its sub-tabs are Fill in the blank, Cross-attention, Router" in err


def test_a_bad_size_is_refused(capsys):
    assert main(["--self-test", "--size", "big"]) == 2
    assert "WIDTHxHEIGHT" in capsys.readouterr().err


def test_self_test_fails_at_once_with_the_reason_when_torch_cannot_load(qtbot, monkeypatch, capsys):
    import gui.main_window

    def broken_torch(*_args, **_kwargs):
        raise ImportError("libtorch_cpu.so: cannot open shared object file")

    monkeypatch.setattr(gui.main_window, "load_torch", broken_torch)
    code = main(["--self-test", "--timeout", "60"])
    err = capsys.readouterr().err
    assert code == 1
    assert "torch could not be loaded" in err and "libtorch_cpu.so" in err
    assert "did not load in time" not in err


def test_self_test_fails_when_a_packaged_copy_lost_the_sidebar_help(qtbot, monkeypatch, capsys):
    """A frozen app without core/config.py's source runs every panel fine but shows no field help."""
    import core.config

    monkeypatch.setattr(core.config, "config_field_docs", lambda: {})
    code = main(["--self-test", "--timeout", "120"])
    err = capsys.readouterr().err
    assert code == 1
    assert "sidebar help" in err and "core/config.py" in err


def test_a_refusal_in_words_is_a_panel_working(qtbot, tmp_path, capsys):
    """An encoder-decoder has nothing to sample and no single stack to patch: those panels say so, and pass."""
    session = tmp_path / "pair.json"
    write_session(session, Session(config=get_preset("tiny-encoder-decoder"), text="the cat sat"))
    code = main(["--self-test", "--session", str(session)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "self-test: Generate refused, in words: Tiny-encoder-decoder is an encoder-decoder" in out.out
    assert "self-test passed" in out.out
