"""Write docs/cli.md, the command-line reference, from the parsers themselves, so it cannot drift.

    python tools/cli_reference.py            # rewrite docs/cli.md
    python tools/cli_reference.py --check    # exit 1 if docs/cli.md differs from what the parsers say

The page is rendered from each parser's actions (option strings, metavar, choices, default, help) rather
than from argparse's own help text, whose layout changes between Python versions and terminal widths;
tests/cli/test_cli_reference.py regenerates it in memory and compares.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REFERENCE = ROOT / "docs" / "cli.md"
PROG = "transformer-explorer"

HEADER = f"""# Command-line reference

Generated from the parsers by `python tools/cli_reference.py`; do not edit by hand
(`tests/cli/test_cli_reference.py` fails when this page and the parsers disagree). Worked examples and
the figures the commands print are in [Command line](command-line.md).

`{PROG}` is also `python main.py` in a source checkout and `python -m transformer_explorer`. With no
subcommand, with `gui`, or with one of the window's options it opens the desktop app; with a subcommand it
runs headless. `{PROG} --help` lists both and `{PROG} --version` prints the version. Bad input prints one
line and exits with code 2.
"""


def _escape(text: str) -> str:
    """Help text as Markdown that shows it literally: no table breaks, no emphasis from '*', no HTML from '<'."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;")


def _expand(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An action's help with argparse's %(default)s-style fields filled in, as --help would print it."""
    text = action.help or ""
    if "%" in text:
        fields = {**vars(action), "prog": parser.prog}
        if action.choices is not None:
            fields["choices"] = ", ".join(map(str, action.choices))
        text = text % fields
    return " ".join(text.split())


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    if action.nargs in ("*",):
        return f"[{name} ...]"
    if action.nargs in ("+",):
        return f"{name} [{name} ...]"
    if action.nargs == "?":
        return f"[{name}]"
    return name


def _usage_part(action: argparse.Action) -> str:
    metavar = _metavar(action)
    if not action.option_strings:
        return metavar
    text = action.option_strings[-1] + (f" {metavar}" if metavar else "")
    return text if action.required else f"[{text}]"


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions
            if action.help != argparse.SUPPRESS and not isinstance(action, argparse._SubParsersAction)]


USAGE_WIDTH = 96  # wrapped here rather than by argparse, whose wrapping follows the terminal and the Python version


def _usage(parser: argparse.ArgumentParser, prog: str) -> str:
    parts = [_usage_part(action) for action in _visible(parser) if "-h" not in action.option_strings]
    lines, line = [], prog
    for part in parts:
        if len(line) + 1 + len(part) > USAGE_WIDTH and line.strip():
            lines.append(line)
            line = " " * (len(prog) + 1) + part
        else:
            line += " " + part
    return "\n".join([*lines, line])


def _default_note(action: argparse.Action) -> str:
    """The default, unless the help already names it."""
    if "default" in (action.help or "") or action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], "") or action.required:
        return ""
    if not action.option_strings:
        return ""
    return f" (default: `{action.default}`)"


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    rows = ["| argument | what it does |", "| --- | --- |"]
    for action in actions:
        names = ", ".join(action.option_strings) if action.option_strings else action.dest
        metavar = _metavar(action)
        argument = f"`{names}{' ' + metavar if metavar else ''}`"
        choices = ""
        if action.choices is not None and action.metavar is not None:
            choices = " One of: " + ", ".join(f"`{choice}`" for choice in action.choices) + "."
        rows.append(f"| {argument.replace('|', chr(92) + '|')} | {_escape(_expand(parser, action))}{choices}"
                    f"{_default_note(action)} |")
    return rows


def _section(parser: argparse.ArgumentParser, title: str, prog: str, summary: str = "") -> list[str]:
    lines = [f"## {title}", ""]
    if summary or parser.description:
        lines += [_escape(" ".join((summary or parser.description or "").split())), ""]
    lines += ["```", _usage(parser, prog), "```", ""]
    actions = [action for action in _visible(parser) if "-h" not in action.option_strings]
    if actions:
        lines += _table(parser, actions) + [""]
    return lines


def render() -> str:
    """The whole reference page, from the window's option parser and every subcommand's parser."""
    from core.cli import COMMANDS, build_parser
    from gui.app import window_options_parser

    lines = HEADER.rstrip("\n").split("\n") + [""]
    lines += ["## Contents", ""]
    lines += [f"- [`{PROG}` (the window)](#the-window)"]
    lines += [f"- [`{name}`](#{name}): {_escape(line)}" for name, (_module, line) in COMMANDS.items()]
    lines += [""]
    window = window_options_parser()
    lines += _section(window, "The window", f"{PROG} [gui]", "Open the desktop app; these options apply to that run only.")
    subparsers = next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    for name, (_module, line) in COMMANDS.items():
        lines += _section(subparsers.choices[name], name, f"{PROG} {name}", line)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/cli.md from the command line's parsers.")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if docs/cli.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = REFERENCE.read_text(encoding="utf-8") if REFERENCE.is_file() else ""
        if current != text:
            print(f"{REFERENCE.relative_to(ROOT)} is out of date: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    temporary = REFERENCE.with_suffix(".md.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(REFERENCE)  # written whole or not at all
    print(f"wrote {REFERENCE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
