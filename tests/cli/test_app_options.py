"""Every option of the window has a bound: a value outside it is one line and exit 2 before any window or torch."""

from __future__ import annotations

import os

import pytest

from gui.app import main


@pytest.fixture(autouse=True)
def no_window(monkeypatch):
    """A refused option must stop main() before it builds the window or starts torch."""
    import gui.main_window

    def refuse(*_args, **_kwargs):
        raise AssertionError("the window was built for an option that should have been refused")

    monkeypatch.setattr(gui.main_window, "MainWindow", refuse)


def _refused(capsys, argv: list[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusals exit from parse_args
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    quoted = sum(len(argument) for argument in argv if argument in err)  # a temp path's length varies with the run
    assert len(lines) == 1 and len(err) - quoted < 400, err
    assert "Traceback" not in err and "usage:" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("value", "shown"),
    [("0", "'0'"), ("-3", "'-3'"), ("201", "'201'"), ("9" * 5000, "'999999999999999999999999999...'"), ("two", "'two'"),
     ("1.5", "'1.5'")],
)
def test_step_is_a_whole_number_from_1_to_the_largest_lesson(capsys, value, shown):
    line = _refused(capsys, ["--lesson", "causal-mask", "--step", value])
    assert f"argument --step: must be a whole number from 1 to 200, got {shown}" in line


def test_a_step_past_the_lessons_own_steps_names_its_range(capsys):
    line = _refused(capsys, ["--lesson", "causal-mask", "--step", "200"])
    assert "has steps 1 to" in line and "not 200" in line


@pytest.mark.parametrize("value", ["0.49", "3.01", "nan", "inf", "-0.5", "1e400", "9" * 5000])
def test_font_scale_is_bounded(capsys, value):
    assert "--font-scale expects a number from 0.5 to 3.0" in _refused(capsys, ["--font-scale", value])


def test_font_scale_that_is_no_number_is_one_line(capsys):
    assert "argument --font-scale: invalid float value" in _refused(capsys, ["--font-scale", "big"])


@pytest.mark.parametrize("value", ["0x0", "99x100", "8193x100", "100000x100000", "1920", "1920x1080x3", "x", "1" * 5000 + "x100"])
def test_size_is_bounded(capsys, value):
    assert "--size expects WIDTHxHEIGHT from 100x100 to 8192x8192" in _refused(capsys, ["--size", value])


@pytest.mark.parametrize("value", ["0", "-1", "3601", "nan"])
def test_the_self_tests_timeout_is_bounded(capsys, value):
    assert "argument --timeout: must be a number from 1 to 3600" in _refused(capsys, ["--self-test", "--timeout", value])


def test_choices_are_one_line_without_the_usage_block(capsys):
    assert "argument --theme: invalid choice: 'neon'" in _refused(capsys, ["--theme", "neon"])
    assert "unrecognized arguments: --no-such-option" in _refused(capsys, ["--no-such-option"])
    assert "expected one argument" in _refused(capsys, ["--session"])


def _special_files(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    return {"a FIFO": fifo, "a link to /dev/zero": zero, "a folder": tmp_path, "a symlink loop": loop,
            "a missing file": tmp_path / "missing.json"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("option", ["--session", "--lesson"])
def test_session_and_lesson_files_of_every_kind_are_refused_before_the_window(capsys, tmp_path, option):
    # A lesson is a bundled name or a file: a path that leads nowhere (missing, a loop) is looked up as a name.
    nowhere = "cannot read" if option == "--session" else "no bundled lesson or file called"
    expected = {"a FIFO": "not a regular file", "a link to /dev/zero": "not a regular file", "a folder": "is a folder",
                "a symlink loop": nowhere, "a missing file": "does not exist" if option == "--session" else nowhere}
    for kind, path in _special_files(tmp_path).items():
        line = _refused(capsys, [option, str(path)])
        assert option in line and expected[kind] in line, (kind, line)


def test_a_session_that_is_not_one_is_refused_before_the_window(capsys, tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"seed": 1}', encoding="utf-8")
    assert "--session: this is not a Transformer Explorer session file" in _refused(capsys, ["--session", str(path)])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_screenshot_needs_a_file_it_can_write(capsys, tmp_path):
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    for value, expected in ((str(tmp_path / "missing" / "x.png"), "does not exist"), (str(tmp_path), "the name of a PNG file"),
                            (str(fifo), "not a regular file"), ("", "the name of a PNG file")):
        assert expected in _refused(capsys, ["--self-test", "--screenshot", value]), value


@pytest.mark.parametrize("argv", [["shapes", "--config", "x" * 5000], ["pitfalls", "a" * 5000], ["params", "--preset", "p" * 5000]])
def test_a_subcommands_error_quoting_a_long_value_is_one_short_line(capsys, argv):
    from core.cli import MAX_MESSAGE_CHARS
    from core.cli import main as cli_main

    try:
        code = cli_main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err[:300]
    assert len(err) < MAX_MESSAGE_CHARS + 100 and "..." in err


@pytest.mark.parametrize("argv", [["evaluate", "--checkpoint", "tiny-gpt", "--text-file", "\x00"],
                                  ["export", "--checkpoint", "tiny-gpt", "--out", "a\x00b"]])
def test_a_nul_character_in_any_argument_is_one_line(capsys, argv):
    from core.cli import main as cli_main

    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == "transformer-explorer: error: an argument holds a NUL character, which no file name or value can hold"
