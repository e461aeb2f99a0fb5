"""docs/cli.md is the parsers' own description: regenerated in memory, it equals the committed page."""

from __future__ import annotations

from tools import cli_reference


def test_the_committed_reference_matches_the_parsers():
    committed = cli_reference.REFERENCE.read_text(encoding="utf-8")
    assert committed == cli_reference.render(), "docs/cli.md is out of date: run python tools/cli_reference.py"


def test_every_subcommand_and_window_option_is_in_the_reference():
    from core.cli import COMMANDS
    from gui.app import GUI_OPTIONS

    page = cli_reference.render()
    for name in COMMANDS:
        assert f"\n## {name}\n" in page
        assert f"transformer-explorer {name}" in page
    for option in GUI_OPTIONS:
        if option != "--timeout":  # hidden from --help, so from the reference too
            assert f"`{option}" in page, option


def test_help_text_cannot_break_the_tables():
    assert cli_reference._escape("a | b <i>x</i> *y*") == "a \\| b &lt;i>x&lt;/i> \\*y\\*"
