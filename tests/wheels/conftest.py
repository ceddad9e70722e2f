"""The built distributions, for the tests of what a user installs (run by the ``wheels`` nox session).

The session builds them and names its folder in ``BFSQL_WHEELS``: ``dist/`` holds the wheels and sdists
PyPI would get, ``everything/`` a virtualenv with core and every plugin installed from them, ``core-only/``
one with core alone. Without that variable these tests skip.
"""

from __future__ import annotations

import email
import os
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
PUBLISHED = [ROOT / "core", *sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))]
"""The source folders of the published distributions: core, then the plugins (as in noxfile.py)."""


def work_folder() -> Path:
    """The ``wheels`` session's folder (``BFSQL_WHEELS``); skips the test without one."""
    configured = os.environ.get("BFSQL_WHEELS")
    if not configured:
        pytest.skip("run by the wheels nox session (nox -s wheels), which builds the distributions")
    return Path(configured)


@dataclass(frozen=True)
class Distribution:
    """A published distribution: its source folder, and its wheel and sdist as built in ``dist``."""

    folder: Path
    dist: Path

    @cached_property
    def pyproject(self) -> dict[str, Any]:
        """Its pyproject.toml."""
        return tomllib.loads((self.folder / "pyproject.toml").read_text(encoding="utf-8"))

    @property
    def name(self) -> str:
        """Its project name (``bfsql-postgres``)."""
        return str(self.pyproject["project"]["name"])

    @property
    def version(self) -> str:
        """Its version."""
        return str(self.pyproject["project"]["version"])

    @property
    def stem(self) -> str:
        """The start of its files' names: the normalised name and the version (``bfsql_postgres-0.1.0``)."""
        return f"{self.name.replace('-', '_')}-{self.version}"

    @property
    def packages(self) -> list[Path]:
        """The package folders its wheel is built from."""
        wheel = self.pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
        return [self.folder / package for package in wheel["packages"]]

    @property
    def wheel(self) -> Path:
        """Its wheel."""
        return self.dist / f"{self.stem}-py3-none-any.whl"

    @property
    def sdist(self) -> Path:
        """Its sdist."""
        return self.dist / f"{self.stem}.tar.gz"

    @cached_property
    def wheel_files(self) -> set[str]:
        """The names of the files in its wheel."""
        with zipfile.ZipFile(self.wheel) as wheel:
            return set(wheel.namelist())

    @cached_property
    def sdist_files(self) -> set[str]:
        """The names of the files in its sdist, relative to the sdist's top folder."""
        with tarfile.open(self.sdist) as sdist:
            return {member.name.removeprefix(f"{self.stem}/") for member in sdist.getmembers() if member.isfile()}

    def read_wheel(self, name: str) -> bytes:
        """A file of its wheel."""
        with zipfile.ZipFile(self.wheel) as wheel:
            return wheel.read(name)

    def read_sdist(self, name: str) -> bytes:
        """A file of its sdist (a name relative to the top folder)."""
        with tarfile.open(self.sdist) as sdist:
            extracted = sdist.extractfile(f"{self.stem}/{name}")
            assert extracted is not None, name
            return extracted.read()

    @cached_property
    def metadata(self) -> Message:
        """Its wheel's METADATA, the core metadata that pip and PyPI read."""
        return email.message_from_bytes(self.read_wheel(f"{self.stem}.dist-info/METADATA"))


def built(folder: Path) -> Distribution:
    """The distribution from ``folder`` as the session built it (skips without the session)."""
    return Distribution(folder, work_folder() / "dist")


@pytest.fixture(params=PUBLISHED, ids=lambda folder: folder.name)
def distribution(request: pytest.FixtureRequest) -> Distribution:
    """Each published distribution in turn."""
    return built(request.param)


@pytest.fixture(params=PUBLISHED[1:], ids=lambda folder: folder.name)
def plugin(request: pytest.FixtureRequest) -> Distribution:
    """Each plugin in turn."""
    return built(request.param)


@pytest.fixture
def core() -> Distribution:
    """Core (the distribution ``bfsql``)."""
    return built(PUBLISHED[0])
