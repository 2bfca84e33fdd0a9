"""``python -m rirag.cli``: the ``rirag`` command."""

import sys

from rirag.cli import program

if __name__ == "__main__":
    sys.exit(program())
