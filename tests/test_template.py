"""The cookiecutter backend template: what it renders, and that the result passes its own tests.

The slow test follows the generated README's "Develop" steps literally (the commands are read
from the README and run by bash in the generated directory): a fresh virtualenv, bfsql with its
``testing`` extra from this checkout, the plugin, its tests; then ``bfsql plugins`` and serving.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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


def section_commands(project: Path, heading: str) -> str:
    """The first ```bash block under ``## heading`` in the generated README: what a user pastes."""
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in readme, readme
    section = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, section
    return block.group(1)


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
    assert "bfsql[testing]>=0.1,<0.2" in meta["project"]["optional-dependencies"]["test"]
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
    assert "class MyStoreBackend(GraphBackend):" in source and "class MyStoreConfig(BackendConfig):" in source
    compile(source, "__init__.py", "exec")


@pytest.mark.parametrize("name", ["Example", "my store", "2fast", "bad--name", "trailing-"])
def test_refuses_a_name_that_cannot_name_a_plugin(tmp_path: Path, name: str) -> None:
    with pytest.raises(FailedHookException):
        render(tmp_path, name=name)


def test_the_readme_installs_bfsql_from_this_checkout_first(tmp_path: Path) -> None:
    """bfsql is on no registry: the steps install it from the checkout the template was rendered from."""
    project = render(tmp_path)
    develop = [shlex.split(line) for line in section_commands(project, "Develop").splitlines()]
    assert develop == [
        ["python3", "-m", "venv", ".venv", "&&", ".", ".venv/bin/activate"],
        ["pip", "install", "-e", f"{CORE}[testing]"],
        ["pip", "install", "-e", ".[test]"],
        ["pytest"],
    ]
    install = [shlex.split(line, comments=True) for line in section_commands(project, "Install").splitlines()]
    assert install == [["pip", "install", str(CORE)], ["pip", "install", "."], ["bfsql", "plugins"]]


def test_the_checkout_may_be_given_with_a_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "bfsql").symlink_to(ROOT, target_is_directory=True)
    monkeypatch.setenv("HOME", str(home))
    project = render(tmp_path / "out", bfsql_checkout="~/bfsql")
    assert f"pip install -e '{home}/bfsql/core[testing]'" in section_commands(project, "Develop")


@pytest.mark.parametrize("checkout", ["relative/bfsql", "/", str(ROOT / "plugins"), str(CORE)])
def test_refuses_a_checkout_that_is_not_bfsqls(tmp_path: Path, checkout: str) -> None:
    with pytest.raises(FailedHookException):
        render(tmp_path, bfsql_checkout=checkout)
    assert list(tmp_path.iterdir()) == []


def run(
    command: list[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure, fail the test with its output."""
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="the README's steps are bash")
def test_the_readmes_develop_steps_pass_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    project = render(tmp_path / "rendered")
    # Literally the README's commands, in a shell whose python3 is the one running these tests.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    tests = run(["bash", "-e", "-c", section_commands(project, "Develop")], cwd=project, env=env)
    assert " passed" in tests.stdout and " failed" not in tests.stdout, tests.stdout
    bin_dir = project / ".venv" / "bin"
    python, bfsql = bin_dir / "python", bin_dir / "bfsql"

    listing = json.loads(run([bfsql, "plugins", "--json"], cwd=tmp_path).stdout)
    entry = next((p for p in listing if p["name"] == "example"), None)
    assert entry is not None, listing
    assert entry.get("distribution") == "bfsql-example" and "register_backends" in entry["hooks"], entry

    # The generated plugin's graph served next to the demo, from one configuration file.
    from bfsql.testing.standard_graph import TP53, write_standard_bundle

    config = tmp_path / "graphs.toml"
    config.write_text(f"""[graphs.demo]\nbackend = "sqlite"\n\n[graphs.example]\nbackend = "example"\n"""
                      f"""bundle = "{write_standard_bundle(tmp_path)}"\n""")
    served = json.loads(run([bfsql, "query", "--config", config, "search_entities", "query=TP53", "graph=example",
                             "--json"], cwd=tmp_path).stdout)
    assert served["items"][0]["id"] == TP53
    demo = json.loads(run([bfsql, "query", "--config", config, "search_entities", "query=RAF1", "--json"],
                          cwd=tmp_path).stdout)
    assert demo["items"][0]["id"] == "HGNC:RAF1"

    # An author changes the config, as the docs invite (the install is editable: no reinstall);
    # the tests follow conftest.store_config.
    source = project / "src" / "bfsql_example" / "__init__.py"
    source.write_text(source.read_text().replace("    bundle: Path = Field(", "    graph_file: Path = Field(")
                      .replace("config.bundle", "config.graph_file"))
    conftest = project / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text().replace("(bundle=bundle)", "(graph_file=bundle)"))
    again = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project)
    assert " passed" in again.stdout and " failed" not in again.stdout, again.stdout
