"""``python -m dplens``: the command line (``dplens.cli``)."""

import sys

from dplens.cli import main

if __name__ == "__main__":
    sys.exit(main())
