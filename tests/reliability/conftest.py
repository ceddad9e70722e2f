"""Reliability tests: shared fixtures and the figures report printed at the end of the run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FIGURES: dict[str, Any] = {}
"""Figures the tests measured (calls fuzzed, latencies, RSS, ...), printed and saved at the end."""


@pytest.fixture
def figures() -> dict[str, Any]:
    """Record a measured figure: ``figures["name"] = value``."""
    return FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for name, value in sorted(FIGURES.items()):
        terminalreporter.write_line(f"{name}: {json.dumps(value)}")
    target = Path(os.environ.get("BFSQL_RELIABILITY_REPORT", ".nox/reliability-figures.json"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(FIGURES, indent=2))
