"""Which conformance checks apply to a backend, decided by its capability flags.

A check that needs a capability is decorated with :func:`requires`. For a backend
without it the check does not apply: it is not collected (when the test class
declares its capabilities) or skipped with an explicit reason (when they are read
from the backend at run time). Either way it is recorded here, and the pytest
plugin lists every such check in a summary section at the end of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import pytest

from bfsql.backend import Capabilities

__all__ = ["NotApplicable", "leave_out", "recorded", "requirements", "requires", "skip", "unmet"]

F = TypeVar("F", bound=Callable[..., Any])

_ATTRIBUTE = "__bfsql_requires__"


@dataclass(frozen=True)
class NotApplicable:
    """A check left out for a backend, and why."""

    nodeid: str
    reason: str
    how: str
    """``"not collected"`` or ``"skipped"``."""


_RECORDED = pytest.StashKey[list[NotApplicable]]()


def requires(**flags: bool) -> Callable[[F], F]:
    """Mark a check as applying only to backends whose capabilities have these values.

    ``@requires(provenance=True)``; ``@requires(lexical_search=True, vector_search=False)``.
    """
    known = set(Capabilities().as_dict())
    unknown = set(flags) - known
    if unknown:
        raise ValueError(f"unknown capability flag(s) {sorted(unknown)}; known: {sorted(known)}")

    def mark(fn: F) -> F:
        setattr(fn, _ATTRIBUTE, dict(flags))
        return fn

    return mark


def requirements(fn: object) -> dict[str, bool]:
    """The capability values a check requires (empty: it always applies)."""
    return dict(getattr(fn, _ATTRIBUTE, {}))


def unmet(fn: object, capabilities: Capabilities) -> str | None:
    """Why the check ``fn`` does not apply to a backend with ``capabilities``, or None if it does."""
    flags = capabilities.as_dict()
    unmet_flags = [
        f"capability {name!r} {'not declared' if wanted else 'declared'} (the check needs {name}={wanted})"
        for name, wanted in requirements(fn).items()
        if flags[name] != wanted
    ]
    return "; ".join(unmet_flags) if unmet_flags else None


def leave_out(config: pytest.Config, nodeid: str, why: str, how: str) -> str:
    """Record a check that does not apply, for the end-of-run summary; returns the full reason."""
    reason = f"not applicable: {why}"
    config.stash.setdefault(_RECORDED, []).append(NotApplicable(nodeid, reason, how))
    return reason


def skip(request: pytest.FixtureRequest, why: str) -> NoReturn:
    """Skip the running check because it does not apply, recording it."""
    pytest.skip(leave_out(request.config, request.node.nodeid, why, "skipped"))


def recorded(config: pytest.Config) -> list[NotApplicable]:
    """Every check recorded as not applicable in this run."""
    entries: list[NotApplicable] = config.stash.get(_RECORDED, [])
    return list(entries)
