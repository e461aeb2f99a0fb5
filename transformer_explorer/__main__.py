"""`python -m transformer_explorer`: the same as the `transformer-explorer` command."""

import sys

from transformer_explorer.launcher import main

if __name__ == "__main__":
    sys.exit(main())
