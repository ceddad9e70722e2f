"""Plugin loading through real distributions with entry points in group ``bfsql``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bfsql import plugins


def install_dist(site: Path, dist: str, module: str, source: str) -> None:
    """Lay out an installed distribution (module + dist-info with an entry point) in ``site``."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[bfsql]\n{dist.removeprefix('bfsql-')} = {module}\n")
    (info / "RECORD").write_text("")


GOOD = """
    from pydantic import BaseModel
    import bfsql
    from bfsql.backends.memory import MemoryBackend

    class Config(BaseModel):
        greeting: str = "hi"

    @bfsql.hookimpl
    def register_backends(register):
        register("good", lambda config: MemoryBackend(), Config, "A test backend.")
"""

BROKEN_IMPORT = "raise ImportError('missing dependency: libfoo')\n"

BROKEN_REGISTER = """
    import bfsql

    @bfsql.hookimpl
    def register_backends(register):
        raise RuntimeError("cannot register")
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    install_dist(site, "bfsql-good", "bfsql_good", GOOD)
    install_dist(site, "bfsql-broken", "bfsql_broken", BROKEN_IMPORT)
    install_dist(site, "bfsql-badreg", "bfsql_badreg", BROKEN_REGISTER)
    monkeypatch.syspath_prepend(str(site))
    for var in ("BFSQL_LOAD_PLUGINS", "BFSQL_DISABLE_PLUGINS", "BFSQL_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    plugins.reset()
    yield site
    plugins.reset()


def by_name(listing):
    return {entry["name"]: entry for entry in listing}


def test_builtin_backends_are_listed_without_any_plugin():
    plugins.reset()
    assert {"memory", "sqlite"} <= set(plugins.get_backends())
    names = by_name(plugins.list_plugins())
    assert names["bfsql.backends.memory"]["hooks"] == ["register_backends"]
    assert names["bfsql.backends.memory"]["builtin"] is True


def test_broken_plugins_are_recorded_and_others_still_work(site):
    listing = by_name(plugins.list_plugins())
    assert listing["good"]["distribution"] == "bfsql-good"
    assert listing["good"]["version"] == "1.2.3"
    assert "missing dependency: libfoo" in listing["broken"]["error"]
    backends = plugins.get_backends()
    assert "good" in backends and backends["good"].plugin == "good"
    assert any(e["name"] == "badreg" and "cannot register" in e["error"] for e in plugins.load_errors())


def test_allow_list_and_block_list(site, monkeypatch):
    monkeypatch.setenv("BFSQL_LOAD_PLUGINS", "good")
    plugins.reset()
    assert "broken" not in by_name(plugins.list_plugins())
    monkeypatch.delenv("BFSQL_LOAD_PLUGINS")
    monkeypatch.setenv("BFSQL_DISABLE_PLUGINS", "good, broken")
    plugins.reset()
    names = by_name(plugins.list_plugins())
    assert "good" not in names and "broken" not in names and "badreg" in names


def test_strict_mode_raises(site, monkeypatch):
    monkeypatch.setenv("BFSQL_STRICT_PLUGINS", "1")
    plugins.reset()
    with pytest.raises(plugins.PluginLoadError, match="broken"):
        plugins.get_plugin_manager()


def test_cli_lists_plugins_and_errors_without_crashing(site):
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "bfsql", "plugins", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    listing = by_name(json.loads(done.stdout))
    assert "error" in listing["broken"] and "good" in listing


def test_cli_prints_a_readable_table_by_default(site):
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "bfsql", "plugins"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "VERSION", "FROM", "PROVIDES"]
    sqlite = next(line for line in lines if line.startswith("bfsql.backends.sqlite"))
    assert "built-in" in sqlite and "backend sqlite" in sqlite
    assert any(line.startswith("broken") and "FAILED TO LOAD" in line for line in lines), done.stdout


def test_plugins_are_not_loaded_at_import_time():
    code = "import bfsql, bfsql.plugins as p; print(p._pm is None)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True"


MISSPELT = """
    import bfsql

    @bfsql.hookimpl
    def process_node(metadata, tool):
        return None

    @bfsql.hookimpl
    def register_backend(register):
        raise AssertionError("never called")
"""


def test_a_misspelt_hook_refuses_the_plugin(site, monkeypatch):
    """pluggy's check_pending, per plugin: a hook no spec names is an error of that plugin, not silence."""
    install_dist(site, "bfsql-misspelt", "bfsql_misspelt", MISSPELT)
    plugins.reset()
    (error,) = [e["error"] for e in plugins.load_errors() if e["name"] == "misspelt"]
    assert "'process_node' (did you mean 'process_nodes'?)" in error
    assert "'register_backend' (did you mean 'register_backends'?)" in error
    assert plugins.get_plugin_manager().get_plugin("misspelt") is None  # refused, not half-registered
    assert "good" in plugins.get_backends()
    monkeypatch.setenv("BFSQL_STRICT_PLUGINS", "1")
    monkeypatch.setenv("BFSQL_DISABLE_PLUGINS", "broken,badreg")
    plugins.reset()
    with pytest.raises(plugins.PluginLoadError, match=r"misspelt.*process_node"):
        plugins.get_plugin_manager()
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "bfsql", "plugins"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert any(line.startswith("misspelt") and "FAILED TO LOAD" in line and "process_node" in line
               for line in done.stdout.splitlines()), done.stdout
