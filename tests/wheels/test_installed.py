"""The built wheels installed as a user installs them, in the ``wheels`` session's two fresh virtualenvs: one
with core and every plugin (so with the embedder wordllama-256), one with core alone. Where each bfsql
distribution came from, and the README's quick start in both, beside one demo cache that the first fills."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql_testsupport.explore import running_explorer
from bfsql_testsupport.readme import quick_start

from conftest import PUBLISHED, ROOT, built, work_folder

VENVS = ["everything", "core-only"]
CACHE = "BFSQL_CACHE_DIR"


def bfsql(venv: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``bfsql`` command of one of the session's virtualenvs."""
    done = subprocess.run([str(work_folder() / venv / "bin" / "bfsql"), *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo-store cache first filled by the virtualenv with every plugin: the demo embedded with wordllama-256."""
    cache = tmp_path_factory.mktemp("demo-cache")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(CACHE, str(cache))
        assert "vector" in bfsql("everything", "query", "search_entities", "query=BRAF").stdout
    assert [store.name for store in cache.glob("famplex-*-wordllama-256.sqlite")]
    return cache


@pytest.fixture(autouse=True)
def shared_cache(demo_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bfsql started here uses that cache."""
    monkeypatch.setenv(CACHE, str(demo_cache))


@pytest.mark.parametrize("venv", VENVS)
def test_every_bfsql_distribution_came_from_the_built_files(venv: str):
    script = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']:"
              " d.read_text('direct_url.json') for d in m.distributions() if d.metadata['Name'].startswith('bfsql')}))")
    python = str(work_folder() / venv / "bin" / "python")
    installed = json.loads(subprocess.run([python, "-c", script], capture_output=True, text=True, check=True).stdout)
    published = {built(folder).name for folder in PUBLISHED}
    assert published & set(installed) == (published if venv == "everything" else {"bfsql"})
    folders = tuple((work_folder() / folder).as_uri() + "/" for folder in ("dist", "ci-only"))
    for name, origin in installed.items():
        assert origin and json.loads(origin)["url"].startswith(folders), f"{name} came from {origin}"


def test_every_plugin_is_found_and_loads():
    plugins = json.loads(bfsql("everything", "plugins", "--json").stdout)
    assert [plugin for plugin in plugins if "error" in plugin] == []
    found = {plugin["distribution"] for plugin in plugins if "distribution" in plugin}
    assert found == {built(folder).name for folder in PUBLISHED[1:]}


@pytest.mark.parametrize("args", quick_start(ROOT / "README.md"), ids=lambda args: " ".join(args[:2]))
@pytest.mark.parametrize("venv", VENVS)
def test_the_readme_quick_start_answers_as_written(venv: str, args: list[str]):
    assert "HGNC:BRAF" in bfsql(venv, *args).stdout  # every line's answer holds BRAF


def test_core_alone_answers_beside_the_store_an_embedder_built(demo_cache: Path):
    assert "(lexical)" in bfsql("core-only", "query", "search_entities", "query=BRAF").stdout
    # famplex-VERSION-bfsql-VERSION-HASH-EMBEDDER.sqlite: wordllama-256's store and core's, side by side
    built_by = sorted(store.stem.split("-", 5)[5] for store in demo_cache.glob("famplex-*.sqlite"))
    assert built_by == ["lexical", "wordllama-256"]


@pytest.mark.parametrize("venv", VENVS)
async def test_bfsql_serve_answers_an_mcp_call(venv: str):
    server = StdioServerParameters(command=str(work_folder() / venv / "bin" / "bfsql"), args=["serve"],
                                   env=dict(os.environ))
    async with Client(server) as client:
        result = await client.call_tool("search_entities", {"query": "BRAF", "node_types": ["Gene"]})
    assert not result.is_error and json.loads(result.content[0].text)["items"][0]["id"] == "HGNC:BRAF"


@pytest.mark.parametrize("venv", VENVS)
def test_the_explorer_serves_its_page_and_libraries_from_the_installed_package(venv: str):
    with running_explorer(bfsql=[str(work_folder() / venv / "bin" / "bfsql")]) as base:
        page = httpx.get(base)
        assert page.status_code == 200 and "<title>bfsql explore</title>" in page.text
        for address in re.findall(r'(?:src|href)="(static/[^"]+)"', page.text):
            assert httpx.get(base + address).status_code == 200, address
