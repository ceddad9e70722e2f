"""Test helpers for backend authors: the conformance suite and the standard graph.

``from bfsql.testing import BackendConformance`` and subclass it; see
docs/writing-a-backend.md. The pytest plugin (:mod:`bfsql.testing.plugin`) is
registered by the ``bfsql[testing]`` extra and provides the ``standard_bundle`` fixture.
"""

from __future__ import annotations

from typing import Any

import pytest

# Plain asserts in the suite's helpers report their operands like asserts in test files.
pytest.register_assert_rewrite(
    "bfsql.testing.answers", "bfsql.testing.conformance", "bfsql.testing.idmap", "bfsql.testing.parity"
)

__all__ = ["BackendConformance", "IdMap", "assert_parity"]

_LAZY = {
    "BackendConformance": "bfsql.testing.conformance",
    "IdMap": "bfsql.testing.idmap",
    "assert_parity": "bfsql.testing.parity",
}


def __getattr__(name: str) -> Any:
    # Imported on first use, so that loading the pytest plugin stays cheap for every test run.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
