"""bfsql's pytest plugin, opt-in: ``addopts = "-p bfsql.testing.plugin"`` (or ``pytest -p ...``).

Installing bfsql does not load it into anybody's pytest runs; the conformance suite works
without it. What it adds:

* The ``standard_bundle`` fixture for any test: the standard graph as a JSONL bundle in ``tmp_path``.
* Conformance checks that do not apply to a backend (see
  :mod:`bfsql.testing.applicability`) are not collected when the test class declares
  its capabilities, and every check left out is listed at the end of the run.
* A cache of its own: unless ``BFSQL_CACHE_DIR`` is set, the run builds demo stores in a temporary
  directory removed at its end, so tests neither read nor change the user's ``~/.cache/bfsql``
  (a demo store left there by an install with other embedders made results depend on it).
* The ``slow`` marker, for tests that build environments (deselect with ``-m "not slow"``), and
  the ``reliability`` marker, for fuzzing, injection, fault, hub and load tests (run by the
  ``reliability`` nox session, left out of the others).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bfsql.demo import CACHE_DIR_VARIABLE
from bfsql.testing.applicability import leave_out, recorded, unmet
from bfsql.testing.standard_graph import write_standard_bundle

__all__ = ["figures", "standard_bundle"]

FIGURES: dict[str, Any] = {}
"""Figures measured by reliability tests, printed and saved at the end of the run."""


@pytest.fixture
def figures() -> dict[str, Any]:
    """Record a measured figure, named after its backend: ``figures["sqlite.load"] = {...}``."""
    return FIGURES


def _save_figures(terminalreporter: Any) -> None:
    terminalreporter.section("reliability figures")
    for name, value in sorted(FIGURES.items()):
        terminalreporter.write_line(f"{name}: {json.dumps(value)}")
    backends = "-".join(sorted({name.split(".", 1)[0] for name in FIGURES}))
    report = Path(os.environ.get("BFSQL_RELIABILITY_REPORT", ".nox/reliability-figures.json"))
    target = report.with_name(f"{report.stem}-{backends}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(FIGURES, indent=2))


_OWN_CACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``slow`` and ``reliability`` markers; give the run a cache of its own."""
    config.addinivalue_line("markers", "slow: a long-running test, e.g. one that builds a virtualenv")
    config.addinivalue_line("markers", "reliability: fuzzing, injection, faults, hubs and load (nox -s reliability)")
    if not os.environ.get(CACHE_DIR_VARIABLE):
        config.stash[_OWN_CACHE] = os.environ[CACHE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="bfsql-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the run's own cache."""
    own = config.stash.get(_OWN_CACHE, None)
    if own is not None:
        os.environ.pop(CACHE_DIR_VARIABLE, None)
        shutil.rmtree(own, ignore_errors=True)


def _declared_capabilities(item: pytest.Item) -> Any:
    """The capabilities declared by a conformance test class, or None."""
    conformance = sys.modules.get("bfsql.testing.conformance")
    cls = getattr(item, "cls", None)
    if conformance is None or cls is None or not issubclass(cls, conformance.BackendConformance):
        return None
    return cls.capabilities


@pytest.hookimpl(trylast=True)  # after -k and -m, so that only checks that would run are reported
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the checks that do not apply to a conformance class's declared capabilities."""
    keep: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        declared = _declared_capabilities(item)
        why = None if declared is None else unmet(getattr(item, "function", None), declared)
        if why is None:
            keep.append(item)
        else:
            left_out.append(item)
            leave_out(config, item.nodeid, why, "not collected")
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the reliability figures; list the conformance checks that did not apply, by test and reason."""
    if FIGURES:
        _save_figures(terminalreporter)
    entries = recorded(config)
    if not entries:
        return
    groups: dict[tuple[str, str, str], int] = {}
    for entry in entries:
        key = (entry.nodeid.split("[", 1)[0], entry.reason, entry.how)
        groups[key] = groups.get(key, 0) + 1
    terminalreporter.section("bfsql conformance: checks that do not apply to the backend")
    for (test, reason, how), count in sorted(groups.items()):
        cases = f" ({count} cases)" if count > 1 else ""
        terminalreporter.line(f"{how}: {test}{cases} - {reason}")


@pytest.fixture
def standard_bundle(tmp_path: Path) -> Path:
    """The standard graph as a JSONL bundle file in ``tmp_path``."""
    return write_standard_bundle(tmp_path)
