"""Plugins and the template use bfsql's public surface only: ``bfsql`` and the namespaces
``bfsql.loading``, ``bfsql.server`` and ``bfsql.testing``.

What a backend needs is importable from ``bfsql``, which loads only the contract; loading and
serving have namespaces of their own; the conformance and reliability kit is :mod:`bfsql.testing`.
Any other ``bfsql.*`` module is internal and may change, so a plugin that reached into one would
break on a core release.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import bfsql
import bfsql.loading
import bfsql.server

NAMESPACES = {"bfsql": bfsql, "bfsql.loading": bfsql.loading, "bfsql.server": bfsql.server}

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
    found = [f"import {module}" for module in PLAIN_IMPORT.findall(text)
             if module not in NAMESPACES and not module.startswith("bfsql.testing")]
    for module, names in FROM_IMPORT.findall(text):
        if module in NAMESPACES:
            for item in names.split(","):
                name = item.split(" as ")[0].strip()
                if name and not hasattr(NAMESPACES[module], name):
                    found.append(f"from {module} import {name} (not public)")
        elif module != "bfsql.testing" and not module.startswith("bfsql.testing."):
            found.append(f"from {module} import ...")
    return found


def test_import_bfsql_loads_nothing_until_a_name_is_used():
    """``import bfsql`` (which every ``bfsql.*`` import runs first) loads none of bfsql's modules but the lazy
    names and the hop memo (whose function shares its module's name), nor pydantic, so that the ``bfsql``
    command can hand a call to a resident process cheaply; the contract a backend needs, not the engine, the
    SQLite store or the loaders, loads with its first name."""
    code = ("import sys, bfsql; before = sorted(m for m in sys.modules if m.split('.')[0] in ('bfsql', 'pydantic')); "
            "bfsql.GraphBackend; print(before, len([m for m in sys.modules if m.split('.')[0] == 'bfsql']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("]")
    assert done[0] + "]" == "['bfsql', 'bfsql.hop_memo', 'bfsql.lazy']"
    loaded = int(done[1])
    every = len(list((ROOT / "core" / "src" / "bfsql").rglob("*.py")))
    assert loaded < every / 4, f"the contract loads {loaded} of bfsql's {every} modules"


def test_loading_the_plugins_leaves_the_mcp_sdk_unloaded():
    """Every command loads every installed plugin; a plugin that took a name from ``bfsql.server`` (the
    JSON-LD one takes ``HostPolicy``) loaded the MCP SDK with it, half a second of every ``bfsql load``."""
    code = ("import sys; from bfsql.plugins import get_backends, list_plugins; get_backends(); "
            "print(len(list_plugins()), 'mcp' in sys.modules)")
    plugins, mcp_loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout.split()
    assert int(plugins) > 1 and mcp_loaded == "False"


def test_every_public_name_resolves():
    for name, namespace in NAMESPACES.items():
        for attribute in namespace.__all__:
            assert getattr(namespace, attribute) is not None, f"{name}.{attribute}"


def test_there_are_sources_to_check():
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_the_public_surface(path: Path):
    offences = _offences(path)
    assert not offences, f"{path.relative_to(ROOT)} reaches into bfsql's internals: {offences}"
