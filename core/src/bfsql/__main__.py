"""``python -m bfsql``: the same as the ``bfsql`` command."""

from bfsql.launch import main

main()
