"""Window options out of range: one line and exit 2 before any window or torch."""

from __future__ import annotations

import pytest

from gui.app import main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--size", "100000x100000"], "--size expects WIDTHxHEIGHT from 100x100 to 8192x8192, e.g. 1920x1080 (got '100000x100000')"),
        (["--size", "99x5000"], "--size expects WIDTHxHEIGHT from 100x100"),
        (["--size", "1" * 5000 + "x100"], "--size expects WIDTHxHEIGHT"),
        (["--device", "banana"], "--device expects cpu, cuda, cuda:N, mps or auto (got 'banana')"),
        (["--panel", "Nowhere/Tab"], "--panel: there is no panel 'Nowhere'; the panels are Architecture, Tokens & masks"),
    ],
)
def test_a_bad_window_option_is_one_line_and_exit_2(capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expected in err and len(err) < 300


def test_a_bad_device_in_the_environment_is_named(capsys, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_DEVICE", "banana")
    assert main(["--self-test"]) == 2
    assert "TRANSFORMER_EXPLORER_DEVICE expects cpu, cuda, cuda:N, mps or auto (got 'banana')" in capsys.readouterr().err
