"""Transformer Explorer from a source checkout: `python main.py` is the `transformer-explorer` command.

No arguments, `gui` or a window option (--theme, --session, ...) opens the desktop app; a subcommand runs
headless.
"""

from __future__ import annotations

import sys

from transformer_explorer.launcher import main

if __name__ == "__main__":
    sys.exit(main())
