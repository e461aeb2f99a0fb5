"""Headless command line: subcommands that print the same numbers the panels show.

Each subcommand lives in a module of this package with a `register(subparsers)` function; the
parser is assembled from COMMAND_MODULES. Expected errors (bad config, unknown preset, unreadable
file, ...) print one line to stderr and exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

PROG = "transformer-explorer"

COMMAND_MODULES = [
    "core.cli.inspect",
    "core.cli.shapes",
    "core.cli.causal",
    "core.cli.positions",
    "core.cli.norms",
    "core.cli.models",
]


class CliError(Exception):
    """A user mistake the command line reports in one line (exit code 2)."""


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus a message on error; the app's rule is one line that says what to fix."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=PROG,
        description="Transformer Explorer: take a Transformer apart and watch each claim about it hold. "
        "With no subcommand the desktop app opens.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def _expected_errors() -> tuple[type[BaseException], ...]:
    from core.checkpoints import CheckpointError
    from core.config import ConfigError
    from core.device import DeviceError, MemoryBudgetError
    from core.model import SequenceError
    from core.presets import UnknownPresetError
    from core.tokenizers import TokenizerFileError, UnknownTokenError

    return (
        CliError,
        CheckpointError,
        ConfigError,
        DeviceError,
        MemoryBudgetError,
        SequenceError,
        UnknownPresetError,
        TokenizerFileError,
        UnknownTokenError,
        OSError,  # unreadable or unwritable paths, full disks: the message says which file
    )


def _log_path() -> Path:
    return Path.home() / ".cache" / "transformer-explorer" / "cli-errors.log"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
    except Exception as error:  # a broken installation: torch or another dependency fails to import
        print(f"{PROG}: error: the installation is incomplete, a module failed to load: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except _expected_errors() as error:
        message = error.strerror + f": {error.filename}" if isinstance(error, OSError) and error.filename else str(error)
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug: still one line for the user, details in the log
        log = _log_path()
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as handle:
                handle.write(traceback.format_exc() + "\n")
            where = f" (details in {log})"
        except OSError:
            where = ""
        print(f"{PROG} {args.command}: unexpected error: {type(error).__name__}: {error}{where}", file=sys.stderr)
        return 1
