"""Refuse a backend name that cannot be an entry-point name, a distribution suffix and a module suffix."""

import re
import sys

NAME = "{{ cookiecutter.name }}"

if not re.fullmatch(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*", NAME):
    sys.exit(
        f"ERROR: backend name {NAME!r} must be lowercase letters and digits, optionally separated by single "
        "'-' or '_' (e.g. 'example', 'my-store'); it names the entry point, bfsql-NAME and bfsql_NAME."
    )
