"""Every refused call leaves a trace: an audit line and a metric, with bounded labels.

Two graphs under OAuth (a real OpenID provider), with ``--metrics`` and ``--audit-log``. A token
granting ``famplex`` calls ``restricted`` (not granted), ``nowhere`` (not served) and tools the
server does not have; requests without a valid token (401) or with one granting no graph (403)
are refused before the MCP server. Calls refused by a rate limit are checked in
test_observability.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bfsql_testsupport.oidc import OpenIdProvider
from bfsql_testsupport.team import METRICS_SCOPE, raw_call, serving, two_graphs_config

PROBES = 200
"""Distinct unknown tool names sent: none may become a label value."""

LONG_NAME = "x" * 3000


@pytest.fixture(scope="module")
def served(provider: OpenIdProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server's MCP URL and its audit log."""
    folder = tmp_path_factory.mktemp("refused")
    audit = folder / "audit.jsonl"
    options = ["--config", str(two_graphs_config(folder)), "--oauth-issuer", provider.issuer,
               "--oauth-resource", provider.resource, "--metrics",  # type: ignore[attr-defined]
               "--audit-log", str(audit)]
    with serving(options, port=provider.server_port, log=folder / "serve.log") as (url, _):  # type: ignore[attr-defined]
        yield url, audit


def _refused_as_a_tool_error(url: str, tool: str, arguments: dict[str, Any], token: str) -> None:
    answer = raw_call(url, tool, arguments, token)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["isError"] is True, answer.text


def _label_values(metrics: str, name: str, label: str) -> set[str]:
    values = set()
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            head = line.split("}", 1)[0]
            values.update(part.split('="', 1)[1].rstrip('"') for part in head[len(name) + 1:].split('",')
                          if part.startswith(f'{label}="'))
    return values


def _sample(metrics: str, name: str, **labels: str) -> float:
    for line in metrics.splitlines():
        head, _, value = line.rpartition(" ")
        if head.startswith(name + "{") and all(f'{k}="{v}"' in head for k, v in labels.items()):
            return float(value)
    return 0.0


def test_refused_calls_are_audited_and_counted_with_bounded_labels(served: tuple[str, Path],
                                                                   provider: OpenIdProvider):
    url, audit = served
    resource = provider.resource  # type: ignore[attr-defined]
    analyst = provider.token("analyst", "graph:famplex", resource)
    _refused_as_a_tool_error(url, "search_entities", {"query": "BRAF", "graph": "restricted"}, analyst)
    _refused_as_a_tool_error(url, "search_entities", {"query": "BRAF", "graph": "nowhere"}, analyst)
    _refused_as_a_tool_error(url, LONG_NAME, {"graph": "famplex"}, analyst)
    for i in range(PROBES):
        _refused_as_a_tool_error(url, f"probe_{i}", {}, analyst)
    assert raw_call(url, "search_entities", {"query": "BRAF"}).status_code == 401
    assert raw_call(url, "search_entities", {"query": "BRAF"}, provider.token("nobody", resource=resource)
                    ).status_code == 403
    operator = provider.token("prometheus", METRICS_SCOPE, resource)
    metrics = httpx.get(url.replace("/mcp", "/metrics"), headers={"Authorization": f"Bearer {operator}"},
                        timeout=30).text

    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_outcome.setdefault(line["outcome"], []).append(line)
    (hidden,) = by_outcome["not_granted"]
    assert (hidden["principal"], hidden["tool"], hidden["graph"]) == ("user:analyst", "search_entities", "restricted")
    (absent,) = by_outcome["unknown_graph"]
    assert (absent["principal"], absent["tool"], absent["graph"]) == ("user:analyst", "search_entities", "nowhere")
    unknown = by_outcome["unknown_tool"]
    assert len(unknown) == PROBES + 1 and {line["principal"] for line in unknown} == {"user:analyst"}
    assert {line["graph"] for line in unknown} == {"famplex"}
    assert {f"probe_{i}" for i in range(PROBES)} <= {line["tool"] for line in unknown}
    long = next(line["tool"] for line in unknown if line["tool"].startswith("xxx"))
    assert len(long) < 200 and "3000 characters" in long, "a name as sent is clipped"
    (anonymous,) = by_outcome["unauthenticated"]
    assert (anonymous["principal"], anonymous["tool"], anonymous["graph"]) == ("client:127.0.0.1",
                                                                               "search_entities", "")
    (scopeless,) = by_outcome["forbidden"]
    assert (scopeless["principal"], scopeless["tool"]) == ("user:nobody", "search_entities")

    calls = "bfsql_tool_calls_total"
    assert _sample(metrics, calls, tool="search_entities", graph="restricted", outcome="not_granted") == 1
    assert _sample(metrics, calls, tool="search_entities", graph="(unknown)", outcome="unknown_graph") == 1
    assert _sample(metrics, calls, tool="(unknown)", graph="famplex", outcome="unknown_tool") == PROBES + 1
    assert _sample(metrics, "bfsql_http_refused_total", outcome="unauthenticated") == 1
    assert _sample(metrics, "bfsql_http_refused_total", outcome="forbidden") == 1
    assert "probe_" not in metrics and "nowhere" not in metrics and "xxx" not in metrics
    tools = _label_values(metrics, calls, "tool")
    assert tools == {"search_entities", "(unknown)"}, tools
    assert _label_values(metrics, calls, "graph") <= {"famplex", "restricted", "(unknown)"}
