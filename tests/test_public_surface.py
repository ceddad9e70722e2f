"""Plugins and the template use bfsql's public surface only: ``bfsql`` itself and ``bfsql.testing``.

Everything a backend or a plugin needs is importable from ``bfsql``; the conformance and
reliability kit is :mod:`bfsql.testing`. Any other ``bfsql.*`` module is internal and may
change, so a plugin that reached into one would break on a core release.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bfsql

ROOT = Path(__file__).parents[1]
SOURCES = sorted(
    p
    for folder in ("plugins", "templates")
    for p in (ROOT / folder).rglob("*.py")
    if not {".nox", "venv", ".venv", "build"} & set(p.parts)
)
FROM_IMPORT = re.compile(r"^\s*from (bfsql(?:\.[\w.]+)?) import \(?([^)#\n]*(?:\n[^)#]*)*?)\)?\s*$", re.MULTILINE)
PLAIN_IMPORT = re.compile(r"^\s*import (bfsql\.[\w.]+)", re.MULTILINE)


def _offences(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = [f"import {module}" for module in PLAIN_IMPORT.findall(text) if not module.startswith("bfsql.testing")]
    for module, names in FROM_IMPORT.findall(text):
        if module == "bfsql":
            for item in names.split(","):
                name = item.split(" as ")[0].strip()
                if name and not hasattr(bfsql, name):
                    found.append(f"from bfsql import {name} (not public)")
        elif module != "bfsql.testing" and not module.startswith("bfsql.testing."):
            found.append(f"from {module} import ...")
    return found


def test_there_are_sources_to_check():
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_the_public_surface(path: Path):
    offences = _offences(path)
    assert not offences, f"{path.relative_to(ROOT)} reaches into bfsql's internals: {offences}"
