"""Transformer Explorer. No arguments, `gui` or a window option (--theme, --session, ...) opens the desktop app; a subcommand runs headless."""

from __future__ import annotations

import sys


def _ensure_standard_streams() -> None:
    # A windowed executable (the packaged app on Windows and macOS) starts without standard streams.
    import os

    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    _ensure_standard_streams()
    argv = sys.argv[1:] if argv is None else argv
    from gui.app import GUI_OPTIONS  # argparse only: Qt is imported when the window opens

    if not argv or argv[0] == "gui" or argv[0].split("=", 1)[0] in GUI_OPTIONS:
        from gui.app import main as gui_main

        return gui_main(argv[1:] if argv and argv[0] == "gui" else argv)
    from core.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
