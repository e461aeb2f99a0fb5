"""`python -m transformer_explorer`: the same as the `transformer-explorer` command."""

import sys

try:
    from transformer_explorer.launcher import main
except KeyboardInterrupt:  # Ctrl-C before the launcher takes it over: the same one line
    sys.stderr.write("transformer-explorer: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
