"""``python -m bfsql``: the same as the ``bfsql`` command."""

from bfsql.cli import main

main()
