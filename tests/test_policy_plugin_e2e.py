"""A policy plugin installed through the entry-point group ``bfsql`` changes what every tool answers.

The plugin (written below, installed as a distribution with an entry point on ``PYTHONPATH``)
wraps two batch primitives once: ``hop`` and ``predicates`` hide the ``partof`` predicate,
``metadata_for_nodes`` redacts the ``xrefs`` field. Through a real MCP client against
``bfsql serve`` on the demo graph, each is gone from bfs_query, intersect_subgraphs,
path_query, describe_schema and describe_entities — and present when the plugin is disabled.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

PLUGIN = '''
"""Hide the partof predicate and the xrefs field from every answer."""

import bfsql


@bfsql.hookimpl(wrapper=True)
def hop(entity_ids):
    inner = yield
    return bfsql.then(inner, lambda found: {
        i: there._replace(edges=[r for r in there.edges if r[1] != "partof"]) for i, there in found.items()})


@bfsql.hookimpl(wrapper=True)
def predicates():
    inner = yield
    return bfsql.then(inner, lambda names: [n for n in names if n != "partof"])


@bfsql.hookimpl(wrapper=True)
def metadata_for_nodes(entity_ids):
    inner = yield
    return bfsql.then(inner, lambda found: {i: {k: v for k, v in m.items() if k != "xrefs"} for i, m in found.items()})
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the plugin module and its distribution metadata, as pip would install them."""
    root = tmp_path_factory.mktemp("site")
    (root / "bfsql_policy_example.py").write_text(textwrap.dedent(PLUGIN))
    info = root / "bfsql_policy_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bfsql-policy-example\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[bfsql]\npolicy = bfsql_policy_example\n")
    return root


def _env(site: Path, enabled: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    if not enabled:
        env["BFSQL_DISABLE_PLUGINS"] = "policy"
    return env


async def _answers(site: Path, enabled: bool) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve"], env=_env(site, enabled))
    calls = {
        "schema": ("describe_schema", {}),
        "bfs": ("bfs_query", {"seeds": ["FPLX:AMPK"], "max_hops": 1}),
        "intersection": ("intersect_subgraphs", {"seeds": ["FPLX:AMPK_alpha", "FPLX:AMPK_beta"], "k": 1}),
        "path": ("path_query", {"query": "@FPLX:AMPK_alpha -[partof]-> type:Complex"}),
        "entities": ("describe_entities", {"ids": ["FPLX:AMPK", "FPLX:AMPK_alpha"]}),
    }
    answers = {}
    async with Client(params) as client:
        for name, (tool, arguments) in calls.items():
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text  # the answer's one document
            assert not result.is_error, (name, text)
            answers[name] = json.loads(text)
    return answers


def _predicates(answer: dict[str, Any]) -> set[str]:
    return {edge["predicate"] for edge in answer["edges"]}


def _fields(answer: dict[str, Any]) -> set[str]:
    return {key for node in answer.get("nodes", []) for key in (node.get("metadata") or {})}


def test_the_plugin_is_listed(site: Path) -> None:
    listing = subprocess.run([sys.executable, "-m", "bfsql", "plugins", "--json"], env=_env(site, True),
                             capture_output=True, text=True, check=True).stdout
    entry = next(p for p in json.loads(listing) if p["name"] == "policy")
    assert entry["distribution"] == "bfsql-policy-example"
    assert {"hop", "predicates", "metadata_for_nodes"} <= set(entry["hooks"])


def test_one_wrapper_per_primitive_changes_every_tool(site: Path) -> None:
    plain = asyncio.run(_answers(site, enabled=False))
    policed = asyncio.run(_answers(site, enabled=True))

    assert "partof" in plain["schema"]["predicates"]
    assert "partof" not in policed["schema"]["predicates"]

    assert "partof" in _predicates(plain["bfs"]) and "xrefs" in _fields(plain["bfs"])
    assert "partof" not in _predicates(policed["bfs"]) and "xrefs" not in _fields(policed["bfs"])
    assert "isa" in _predicates(policed["bfs"])  # only the one predicate is hidden

    assert "FPLX:AMPK" in {n["id"] for n in plain["intersection"]["nodes"]}  # both are partof AMPK
    assert "FPLX:AMPK" not in {n["id"] for n in policed["intersection"]["nodes"]}

    assert [r["entity"]["id"] for r in plain["path"]["results"]] == ["FPLX:AMPK"]
    assert policed["path"]["results"] == []
    assert "partof" not in json.dumps(policed["path"]["metadata"].get("available_relations", []))

    assert [d["id"] for d in policed["entities"]["items"]] == [d["id"] for d in plain["entities"]["items"]]
    for described in policed["entities"]["items"]:
        assert "xrefs" not in described["metadata"]
    assert any("xrefs" in described["metadata"] for described in plain["entities"]["items"])
