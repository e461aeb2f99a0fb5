"""The `transformer-explorer` command: no arguments, `gui` or a window option opens the desktop app; a
subcommand runs headless; --help and --version answer without importing Qt or torch."""

from __future__ import annotations

import os
import signal
import sys

import transformer_explorer

INTERRUPTED = "transformer-explorer: interrupted"  # what Ctrl-C prints, from the command line or a command


def _exit_interrupted(signum: int, frame: object) -> None:
    """Ctrl-C outside a command's own work (importing torch, parsing, shutting down): one line and exit 130 at
    once. A KeyboardInterrupt raised here could surface anywhere, in an import or an atexit hook, as a
    traceback; a command that cleans up after Ctrl-C installs its own handler while it runs (core.cli.main)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or reentered stream: the line below still goes out
            pass
    try:
        os.write(2, (INTERRUPTED + "\n").encode())
    except OSError:
        pass
    os._exit(130)


def _own_interrupts(handler=_exit_interrupted) -> None:
    """Take Ctrl-C for the rest of the process."""
    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread, where alone a handler can live: an embedding's own business
        pass


def _ensure_standard_streams() -> None:
    # A windowed executable (the packaged app on Windows and macOS, a gui-script) starts without standard streams.
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def version_line() -> str:
    from gui import APP_ID, APP_VERSION

    return f"{APP_ID} {APP_VERSION}"


def root_help() -> str:
    """The subcommands (from a table, so no subcommand module is imported) and the window's options."""
    from core.cli import build_root_parser
    from gui.app import window_options_parser

    parser = build_root_parser(parents=[window_options_parser(add_help=False)])
    parser.add_argument("--version", action="version", version=version_line(), help="print the version and exit")
    return parser.format_help()


def _foreign_modules_message() -> str | None:
    found = transformer_explorer.foreign_modules()
    if not found:
        return None
    return (f"transformer-explorer: error: another installed package took the app's module name: {', '.join(found)}; "
            "reinstall transformer-explorer in a virtual environment of its own")


def main(argv: list[str] | None = None) -> int:
    _own_interrupts()  # first: the imports below (torch among them) take seconds
    _ensure_standard_streams()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(root_help(), end="")
        return 0
    if argv[:1] in (["-V"], ["--version"]):
        from core.kernel_cache import version_lines

        print(version_line())
        print("\n".join(version_lines()))  # the measured kernel choice, read from the cache without torch
        return 0
    problem = _foreign_modules_message()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    from gui.app import GUI_OPTIONS  # argparse only: Qt is imported when the window opens

    if not argv or argv[0] == "gui" or argv[0].split("=", 1)[0] in GUI_OPTIONS:
        return window(argv[1:] if argv and argv[0] == "gui" else argv)
    from core.cli import main as cli_main

    return cli_main(argv)


def window(argv: list[str] | None = None) -> int:
    """Open the desktop app (the gui-script entry point, which has no console on Windows)."""
    _own_interrupts()
    _ensure_standard_streams()
    from gui.app import main as gui_main

    _own_interrupts(signal.default_int_handler)  # the window handles its own KeyboardInterrupt
    return gui_main(sys.argv[1:] if argv is None else argv)
