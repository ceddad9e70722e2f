"""What the built wheels and sdists hold: every file of each package (its data too), the licence, and in
each sdist what builds the wheel again."""

from __future__ import annotations

import pytest

from conftest import PUBLISHED, ROOT, Distribution, built, work_folder

CORE_DATA = [
    "bfsql/py.typed",
    "bfsql/testing/standard_graph.jsonl",
    *(f"bfsql/demo/famplex/{name}" for name in ("entities.csv", "relations.csv", "descriptions.csv",
                                                "equivalences.csv", "grounding_map.csv", "README.md")),
    *(f"bfsql/explore/static/{name}" for name in ("index.html", "explorer.js", "explorer.css")),
    *(f"bfsql/explore/static/vendor/{name}" for name in ("cytoscape.min.js", "cytoscape-fcose.js", "cose-base.js",
                                                         "layout-base.js")),
    *(f"bfsql/explore/static/vendor/{name}.LICENSE" for name in ("cytoscape", "cytoscape-fcose", "cose-base",
                                                                 "layout-base")),
]
"""Files core ships besides its modules, named one by one: the marker that tells type checkers the package is
typed, and what it reads at run time (the conformance suite's standard graph, the demo's vendored FamPlex data,
the explorer's page and its vendored libraries with their licences)."""


def package_files(distribution: Distribution) -> dict[str, str]:
    """Every file of the distribution's packages in the source tree: its name in the sdist (from the
    distribution's folder, ``src/bfsql/py.typed``) and its name in the wheel (``bfsql/py.typed``)."""
    return {path.relative_to(distribution.folder).as_posix(): path.relative_to(package.parent).as_posix()
            for package in distribution.packages for path in package.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def test_dist_holds_a_wheel_and_an_sdist_of_each_published_distribution_and_nothing_else():
    found = {path.name for path in (work_folder() / "dist").iterdir()}
    expected = [built(folder) for folder in PUBLISHED]
    assert found == {path.name for distribution in expected for path in (distribution.wheel, distribution.sdist)}


def test_the_wheel_holds_every_file_of_its_packages(distribution: Distribution):
    assert set(package_files(distribution).values()) - distribution.wheel_files == set()


@pytest.mark.parametrize("name", CORE_DATA)
def test_cores_wheel_holds_the_data_core_reads_at_run_time(core: Distribution, name: str):
    assert name in core.wheel_files


def test_the_licence_is_in_the_wheel_and_the_sdist(distribution: Distribution):
    licence = (ROOT / "LICENSE").read_bytes()
    assert distribution.read_wheel(f"{distribution.stem}.dist-info/licenses/LICENSE") == licence
    assert distribution.read_sdist("LICENSE") == licence


def test_the_sdist_holds_what_builds_the_wheel_again(distribution: Distribution):
    needed = {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO", *package_files(distribution)}
    assert needed - distribution.sdist_files == set()
