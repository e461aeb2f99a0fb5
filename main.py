"""Transformer Explorer from a source checkout: `python main.py` is the `transformer-explorer` command.

No arguments, `gui` or a window option (--theme, --session, ...) opens the desktop app; a subcommand runs
headless.
"""

from __future__ import annotations

import sys

try:
    from transformer_explorer.launcher import main
except KeyboardInterrupt:  # Ctrl-C before the launcher takes it over: the same one line
    sys.stderr.write("transformer-explorer: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
