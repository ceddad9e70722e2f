"""The cookiecutter backend template: what it renders, and that the result passes its own tests.

The slow test builds a fresh virtualenv, installs core (with the ``testing`` extra) from
this checkout and the rendered plugin, and runs the plugin's tests and ``bfsql plugins``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from cookiecutter.exceptions import FailedHookException
from cookiecutter.main import cookiecutter

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "bfsql-backend"
CORE = ROOT / "core"


def render(output: Path, **context: str) -> Path:
    """Render the template without prompts; returns the generated project's directory."""
    return Path(cookiecutter(str(TEMPLATE), no_input=True, output_dir=str(output), extra_context=context))


def files_of(project: Path) -> set[str]:
    return {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}


def test_renders_exactly_the_project_files(tmp_path: Path) -> None:
    project = render(tmp_path)
    assert project.name == "bfsql-example"
    assert files_of(project) == {
        ".gitignore",
        "README.md",
        "docs/index.md",
        "pyproject.toml",
        "src/bfsql_example/__init__.py",
        "tests/conftest.py",
        "tests/test_conformance.py",
        "tests/test_discovery.py",
        "tests/test_reliability.py",
    }
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "bfsql-example"
    assert meta["project"]["entry-points"]["bfsql"] == {"example": "bfsql_example"}
    assert meta["build-system"]["build-backend"] == "hatchling.build"
    assert "bfsql[testing]>=0.1" in meta["project"]["optional-dependencies"]["test"]
    assert meta["tool"]["pytest"]["ini_options"]["addopts"] == "-p bfsql.testing.plugin"


def test_derives_names_from_a_hyphenated_backend_name(tmp_path: Path) -> None:
    project = render(tmp_path, name="my-store", description='A "quoted" store', author="Ada Lovelace")
    assert project.name == "bfsql-my-store"
    assert "src/bfsql_my_store/__init__.py" in files_of(project)
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    assert meta["project"]["description"] == 'A "quoted" store'
    assert meta["project"]["authors"] == [{"name": "Ada Lovelace"}]
    assert meta["project"]["entry-points"]["bfsql"] == {"my-store": "bfsql_my_store"}
    source = (project / "src/bfsql_my_store/__init__.py").read_text()
    assert "class MyStoreBackend(GraphBackend):" in source and "class MyStoreConfig(BaseModel):" in source
    compile(source, "__init__.py", "exec")


@pytest.mark.parametrize("name", ["Example", "my store", "2fast", "bad--name", "trailing-"])
def test_refuses_a_name_that_cannot_name_a_plugin(tmp_path: Path, name: str) -> None:
    with pytest.raises(FailedHookException):
        render(tmp_path, name=name)


def run(command: list[str | Path], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure, fail the test with its output."""
    result = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.mark.slow
def test_generated_plugin_passes_its_tests_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    project = render(tmp_path / "rendered")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    python = bin_dir / "python"
    run([python, "-m", "pip", "install", "--quiet", f"{CORE}[testing]", f"{project}[test]"])

    tests = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project)
    assert " passed" in tests.stdout and " failed" not in tests.stdout, tests.stdout

    listing = json.loads(run([bin_dir / "bfsql", "plugins", "--json"], cwd=tmp_path).stdout)
    entry = next((p for p in listing if p["name"] == "example"), None)
    assert entry is not None, listing
    assert entry.get("distribution") == "bfsql-example" and "register_backends" in entry["hooks"], entry

    # The generated plugin's graph served next to the demo, from one configuration file.
    from bfsql.testing.standard_graph import TP53, write_standard_bundle

    config = tmp_path / "graphs.toml"
    config.write_text(f"""[graphs.demo]\nbackend = "sqlite"\n\n[graphs.example]\nbackend = "example"\n"""
                      f"""bundle = "{write_standard_bundle(tmp_path)}"\n""")
    bfsql = bin_dir / "bfsql"
    served = json.loads(run([bfsql, "query", "--config", config, "search_entities", "query=TP53", "graph=example",
                             "--json"], cwd=tmp_path).stdout)
    assert served[0]["id"] == TP53
    demo = json.loads(run([bfsql, "query", "--config", config, "search_entities", "query=RAF1", "--json"],
                          cwd=tmp_path).stdout)
    assert demo[0]["id"] == "HGNC:RAF1"

    # An author changes the config, as the docs invite: the tests follow conftest.store_config.
    source = project / "src" / "bfsql_example" / "__init__.py"
    source.write_text(source.read_text().replace("    bundle: Path = Field(", "    graph_file: Path = Field(")
                      .replace("(config.bundle)", "(config.graph_file)"))
    conftest = project / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text().replace("(bundle=bundle)", "(graph_file=bundle)"))
    run([python, "-m", "pip", "install", "--quiet", "--no-deps", str(project)])
    again = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project)
    assert " passed" in again.stdout and " failed" not in again.stdout, again.stdout
