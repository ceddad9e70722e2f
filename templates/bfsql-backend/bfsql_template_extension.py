"""The template's Jinja extension: where the bfsql checkout that holds this template is, and shell quoting.

bfsql is not on PyPI yet, so a generated plugin's development steps install it from a
checkout; by default the one this template was rendered from (cookiecutter puts the
template's directory on ``sys.path`` while it renders, which is how this module is found).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from jinja2 import Environment
from jinja2.ext import Extension

CHECKOUT = Path(__file__).resolve().parents[2]
"""The bfsql checkout this template belongs to: the directory holding ``core/`` and ``templates/``."""


def bfsql_core(checkout: str) -> str:
    """The ``core`` directory (the distribution ``bfsql``) of the checkout ``checkout`` (``~`` expanded)."""
    return str(Path(checkout).expanduser() / "core")


class BfsqlCheckout(Extension):
    """Adds the global ``bfsql_checkout`` (the default answer) and the filters ``bfsql_core`` and ``shell_quote``."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.globals["bfsql_checkout"] = str(CHECKOUT)
        environment.filters["bfsql_core"] = bfsql_core
        environment.filters["shell_quote"] = shlex.quote
