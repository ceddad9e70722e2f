"""Refuse what cannot make a working plugin: a backend name that cannot be an entry-point name, a
distribution suffix and a module suffix; a bfsql checkout that is not one."""

import re
import sys
from pathlib import Path

NAME = "{{ cookiecutter.name }}"
CHECKOUT = {{ cookiecutter.bfsql_checkout | tojson }}
CORE = Path({{ cookiecutter.__bfsql_core | tojson }})

if not re.fullmatch(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*", NAME):
    sys.exit(
        f"ERROR: backend name {NAME!r} must be lowercase letters and digits, optionally separated by single "
        "'-' or '_' (e.g. 'example', 'my-store'); it names the entry point, bfsql-NAME and bfsql_NAME."
    )


def _is_bfsql_core(core: Path) -> bool:
    """Whether ``core`` holds the distribution bfsql (read without tomllib: cookiecutter may run on Python < 3.11)."""
    try:
        meta = (core / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r'^name\s*=\s*"bfsql"\s*$', meta, re.MULTILINE) is not None


if not CORE.is_absolute() or not _is_bfsql_core(CORE):
    sys.exit(
        f"ERROR: bfsql_checkout {CHECKOUT!r} is not "
        + ("an absolute path" if not CORE.is_absolute() else "a bfsql checkout (its core/pyproject.toml is not bfsql's)")
        + ": give the absolute path of your clone of the bfsql repository, the directory holding core/ and "
        "templates/ (the default is the clone this template came from)."
    )
