"""Public namespaces that import each of their names on first use (PEP 562).

``bfsql``, ``bfsql.loading`` and ``bfsql.server`` keep their import cheap this way: a backend that
takes one name does not load the engine, the loaders or the MCP SDK with it.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's costs an import that ``import bfsql`` does without (mypy reads the name alike)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_names(namespace: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``namespace``: each name of ``homes`` read from its home module when asked.

    A home is a module name, relative to ``namespace`` when it starts with a dot; a name whose home is
    ``namespace`` itself is its submodule of that name.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {namespace!r} has no attribute {name!r}")
        if home == namespace:
            return importlib.import_module(f"{namespace}.{name}")
        return getattr(importlib.import_module(home, namespace), name)

    return __getattr__
