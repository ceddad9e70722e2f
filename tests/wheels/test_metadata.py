"""The built distributions' core metadata, as pip and PyPI read it: complete, with valid classifiers that
agree with the rest (Python versions, typing, licence), and plugins asking for a range of core versions."""

from __future__ import annotations

import re

import trove_classifiers
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import Distribution

PYTHONS = ["3.11", "3.12", "3.13"]
"""The Python versions every distribution says it supports: from its ``requires-python`` floor on."""


def test_the_metadata_says_what_pypi_shows(distribution: Distribution):
    metadata = distribution.metadata
    for field in ("Summary", "Keywords", "Author", "License-Expression", "Requires-Python"):
        assert metadata.get(field, "").strip(), f"{distribution.name} has no {field}"
    assert "LICENSE" in metadata.get_all("License-File", [])
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert str(metadata.get_payload()).strip(), "no long description (the readme)"


def test_the_classifiers_are_valid_and_agree_with_the_rest(distribution: Distribution):
    classifiers = distribution.metadata.get_all("Classifier", [])
    assert set(classifiers) - trove_classifiers.classifiers == set(), "PyPI refuses unknown classifiers"
    # License-Expression says the licence: PyPI refuses an upload with a licence classifier beside it.
    assert [c for c in classifiers if c.startswith("License ::")] == []
    for prefix in ("Development Status ::", "Intended Audience ::", "Operating System ::", "Topic ::"):
        assert any(c.startswith(prefix) for c in classifiers), prefix
    pythons = [c.removeprefix("Programming Language :: Python :: ") for c in classifiers
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert pythons == PYTHONS and "Programming Language :: Python :: 3 :: Only" in classifiers
    supported = SpecifierSet(distribution.metadata["Requires-Python"])
    assert Version(PYTHONS[0]) in supported and Version("3.10") not in supported
    typed = any(name.endswith("/py.typed") for name in distribution.wheel_files)
    assert ("Typing :: Typed" in classifiers) == typed, "Typing :: Typed goes with a py.typed file"


def test_plugins_ask_for_a_range_of_core_versions_that_holds_this_one(plugin: Distribution, core: Distribution):
    """Every requirement of ``bfsql`` (extras' too) admits this core and stops before its next breaking
    version: the next minor one before 1.0, the next major one after."""
    version = Version(core.version)
    breaking = Version(f"0.{version.minor + 1}") if version.major == 0 else Version(f"{version.major + 1}")
    asked = [Requirement(line) for line in plugin.metadata.get_all("Requires-Dist", [])]
    ranges = [requirement.specifier for requirement in asked if requirement.name == "bfsql"]
    assert ranges, f"{plugin.name} does not require bfsql"
    for specifier in ranges:
        assert version in specifier and breaking not in specifier, f"{plugin.name}: bfsql{specifier}"
