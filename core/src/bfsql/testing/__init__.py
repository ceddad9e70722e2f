"""Test helpers for backend authors: the conformance suite and the standard graph.

``from bfsql.testing import BackendConformance`` and subclass it; see
docs/writing-a-backend.md. The suite needs nothing else. The pytest plugin
(:mod:`bfsql.testing.plugin`) is opt-in (``-p bfsql.testing.plugin`` in ``addopts``): it
leaves out, at collection, the checks that do not apply to a backend's declared
capabilities and lists them at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bfsql.lazy import lazy_names

if TYPE_CHECKING:
    from bfsql.testing.conformance import BackendConformance
    from bfsql.testing.idmap import IdMap
    from bfsql.testing.parity import assert_parity
    from bfsql.testing.profiles import CLIENT_PROFILES, ClientProfile, read_as, seen_by

# Plain asserts in the suite's helpers report their operands like asserts in test files.
pytest.register_assert_rewrite(
    "bfsql.testing.answers", "bfsql.testing.conformance", "bfsql.testing.idmap", "bfsql.testing.parity",
    "bfsql.testing.profile_checks", "bfsql.testing.profiles",
)

__all__ = ["CLIENT_PROFILES", "BackendConformance", "ClientProfile", "IdMap", "assert_parity", "read_as",
           "reset_plugins", "seen_by"]

_LAZY = {  # imported on first use, so that loading the pytest plugin stays cheap for every test run
    "BackendConformance": "bfsql.testing.conformance",
    "CLIENT_PROFILES": "bfsql.testing.profiles",
    "ClientProfile": "bfsql.testing.profiles",
    "read_as": "bfsql.testing.profiles",
    "seen_by": "bfsql.testing.profiles",
    "IdMap": "bfsql.testing.idmap",
    "assert_parity": "bfsql.testing.parity",
}


def reset_plugins() -> None:
    """Forget the loaded plugins, so the next use loads them again (a test that installs a plugin needs it)."""
    from bfsql.plugins import reset

    reset()


__getattr__ = lazy_names(__name__, _LAZY)
