"""Metrics, the audit log, rate limits and traces of a served graph, through real MCP clients.

Over HTTP: ``bfsql serve`` with a shared token, ``--metrics``, ``--audit-log`` and rate limits;
the figures and lines are read back from ``/metrics`` and the log file. In-process: the
tool-error form of a rate limit, the audit log's rotation, and the spans of a call, caught by
the OpenTelemetry SDK's in-memory exporter.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from bfsql.demo import ensure_demo_db
from bfsql.server.audit import AuditLog
from bfsql.server.callers import Caller, as_caller
from bfsql.server.pipeline import CallRecord
from bfsql.server.ratelimit import RateLimits
from bfsql.server.run import open_server
from bfsql.settings import GraphPlan, ServerSettings
from bfsql_testsupport.spans import EXPORTER
from bfsql_testsupport.team import mcp_client, raw_call, serving

TOKEN = "a-shared-token-long-enough"


def _sample(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition text (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            head, _, value = line.rpartition(" ")
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                return float(value)
    return 0.0


async def _calls(url: str) -> list[str]:
    """Two describes and two traversals (admitted), then one traversal too many."""
    errors = []
    async with mcp_client(url, TOKEN) as client:
        for _ in range(2):
            assert not (await client.call_tool("describe_entity", {"id": "HGNC:BRAF"})).is_error
        for _ in range(2):
            assert not (await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1})).is_error
        try:
            refused = await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1})
            errors.append(refused.content[0].text)
        except Exception as exc:  # the 429's JSON-RPC error, as the SDK client raises it
            errors.append(str(exc))
    return errors


def test_limits_metrics_and_audit_over_http(tmp_path: Path):
    audit = tmp_path / "audit.jsonl"
    options = ["--auth-token", TOKEN, "--metrics", "--audit-log", str(audit), "--rate-limit", "6/minute",
               "--heavy-rate-limit", "2/minute"]
    with serving(options, log=tmp_path / "serve.log") as (url, _):
        errors = asyncio.run(_calls(url))
        assert len(errors) == 1 and "Try again in" in errors[0] and "2/minute" in errors[0], errors

        over = raw_call(url, "bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1}, TOKEN)
        assert over.status_code == 429
        assert 1 <= int(over.headers["retry-after"]) <= 60
        assert "Try again in" in over.json()["error"]["message"]

        assert raw_call(url, "describe_entity", {"id": "HGNC:RAF1"}, TOKEN).status_code == 200  # calls: 5 of 6
        assert raw_call(url, "describe_entity", {"id": "HGNC:RAF1"}, TOKEN).status_code == 200  # 6 of 6
        assert raw_call(url, "describe_entity", {"id": "HGNC:RAF1"}, TOKEN).status_code == 429

        base = url.removesuffix("/mcp")
        assert httpx.get(base + "/metrics", timeout=30).status_code == 401, "metrics are behind the token"
        metrics = httpx.get(base + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).text

    graph = {"graph": "sqlite"}
    assert _sample(metrics, "bfsql_tool_calls_total", tool="describe_entity", outcome="ok", **graph) == 4
    assert _sample(metrics, "bfsql_tool_calls_total", tool="bfs_query", outcome="ok", **graph) == 2
    assert _sample(metrics, "bfsql_tool_calls_total", tool="bfs_query", outcome="rate_limited", **graph) == 2
    assert _sample(metrics, "bfsql_tool_calls_total", tool="describe_entity", outcome="rate_limited", **graph) == 1
    assert _sample(metrics, "bfsql_tool_call_seconds_count", tool="bfs_query", **graph) == 2
    assert _sample(metrics, "bfsql_answer_chars_count", tool="describe_entity") == 4
    assert _sample(metrics, "bfsql_cache_misses_total", primitive="predicates", **graph) >= 1
    assert 'bfsql_cache_hit_ratio{graph="sqlite"}' in metrics  # its value is checked on PostgreSQL (test_replicas)
    assert "bfsql_heavy_calls_waiting{" in metrics and "bfsql_backend_errors_total" in metrics

    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["outcome"] for line in lines].count("ok") == 6
    assert [line["outcome"] for line in lines].count("rate_limited") == 3
    for line in lines:
        assert set(line) == {"time", "principal", "graph", "tool", "arguments_sha256", "outcome", "ms", "chars"}
        assert line["principal"] == "client:127.0.0.1" and line["graph"] == "sqlite"
    canonical = json.dumps({"id": "HGNC:BRAF"}, sort_keys=True, separators=(",", ":"))
    assert lines[0]["arguments_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert "HGNC" not in audit.read_text(), "the log holds hashes of the arguments, never the arguments"


async def _served(settings: ServerSettings) -> Any:
    from bfsql.plugins import get_backends

    spec = get_backends()["sqlite"]
    config = spec.config_model(db=ensure_demo_db())
    return open_server([GraphPlan("famplex", spec, config, settings)], settings)


async def test_a_call_over_its_limit_is_a_tool_error_saying_when_to_retry():
    settings = ServerSettings(rate_limit="2/minute")
    async with await _served(settings) as server:
        server.rate_limits = RateLimits({"famplex": settings})
        async with Client(server) as client:
            with as_caller(Caller("user:ann")):
                for _ in range(2):
                    assert not (await client.call_tool("describe_entity", {"id": "HGNC:BRAF"})).is_error
                refused = await client.call_tool("describe_entity", {"id": "HGNC:BRAF"})
    assert refused.is_error
    assert "allows 2/minute calls per user. Try again in" in refused.content[0].text


def test_the_audit_log_rotates(tmp_path: Path):
    log = AuditLog(str(tmp_path / "audit.jsonl"), max_mb=0.002, backups=2)  # about 2 kB a file
    try:
        for i in range(100):
            log.record(CallRecord("search_entities", "famplex", {"query": f"q{i}"}, "ok", 0.01, 120))
    finally:
        log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    for name in files:
        assert (tmp_path / name).stat().st_size <= 2200
        assert all(json.loads(line)["tool"] == "search_entities" for line in (tmp_path / name).read_text().splitlines())


def test_one_call_is_one_line_whatever_the_names_hold(tmp_path: Path):
    """U+2028, U+0085 and other line breaks in a token's ``sub`` are escaped in the audit log: one call, one line."""
    path = tmp_path / "audit.jsonl"
    breaking = "a\u2028b\x85c\u2029d\x9be\nf"
    log = AuditLog(str(path), max_mb=1, backups=1)
    try:
        with as_caller(Caller(f"user:{breaking}")):
            log.record(CallRecord(f"tool{breaking}", "famplex", {}, "unknown_tool", 0.0))
            log.record(CallRecord("describe_entity", "famplex", {"id": "X"}, "ok", 0.01, 10))
    finally:
        log.close()
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == 2 and text.split("\n") == [*text.splitlines(), ""]
    assert not any(c in text for c in "\u2028\x85\u2029\x9b")
    first = json.loads(text.splitlines()[0])
    assert first["principal"] == f"user:{breaking}" and first["tool"] == f"tool{breaking}"


def test_the_audit_log_always_rotates(tmp_path: Path):
    """``audit_log_backups = 0`` is refused: it would turn rotation off and let the file grow without bound."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ServerSettings(audit_log_backups=0)
    with pytest.raises(ValueError, match="at least one rotated file"):
        AuditLog(str(tmp_path / "audit.jsonl"), max_mb=1, backups=0)


async def test_a_call_continues_the_callers_trace_with_spans_per_primitive():
    from bfsql.server.trace_export import annotate

    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    async with await _served(ServerSettings()) as server:
        server.observe = annotate  # as serve_http does
        async with Client(server) as client:
            EXPORTER.clear()  # the start-up's own primitive calls are no part of the call
            answer = await client.call_tool("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 2},
                                            meta={"traceparent": f"00-{trace_id}-{parent_id}-01"})
            assert not answer.is_error
    spans = EXPORTER.get_finished_spans()
    tool = next(s for s in spans if s.name == "tools/call bfs_query")
    assert format(tool.context.trace_id, "032x") == trace_id
    assert tool.parent is not None and format(tool.parent.span_id, "016x") == parent_id
    assert tool.attributes["bfsql.graph"] == "famplex" and tool.attributes["bfsql.outcome"] == "ok"
    assert tool.attributes["bfsql.answer_chars"] > 0
    primitives = [s for s in spans if s.name.startswith("bfsql.primitive ")]
    assert primitives, [s.name for s in spans]
    by_id = {s.context.span_id: s for s in spans}
    for span in primitives:
        assert span.context.trace_id == tool.context.trace_id
        ancestor = span
        while ancestor.parent is not None and ancestor.parent.span_id in by_id:
            ancestor = by_id[ancestor.parent.span_id]
        assert ancestor is tool, f"{span.name} is not under the tool call's span"
        assert span.attributes["bfsql.graph"] == "famplex"


@pytest.mark.parametrize(("options", "said"), [
    (["--rate-limit", "lots"], "a rate is COUNT/PERIOD"),
    (["--oauth-issuer", "https://login.example.org"], "needs both --oauth-issuer and --oauth-resource"),
    (["--oauth-issuer", "login.example.org", "--oauth-resource", "https://kg.example.org/mcp"], "http(s) URL"),
    (["--audit-log-backups", "0"], "--audit-log-backups (or BFSQL_AUDIT_LOG_BACKUPS): must be greater than or equal"),
])
def test_team_settings_that_cannot_work_are_refused_at_start(options: list[str], said: str):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "bfsql", "serve", "--transport", "http", "--port", "0", *options],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and said in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(("ratio", "traceparent", "traced"), [
    (0.0, None, False),
    (1.0, None, True),
    (0.0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
    (0.0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", False),
    (0.0, "00-not-a-trace-01", False),
])
async def test_whether_a_call_is_traced_is_decided_before_the_sdk_sees_it(ratio: float, traceparent: str | None,
                                                                         traced: bool):
    """:class:`SampledFirst` in front of the SDK's span middleware: the ratio for calls without a caller's trace,
    the caller's decision otherwise; a malformed ``traceparent`` forces nothing."""
    from bfsql.server.trace_export import SampledFirst, annotate

    async with await _served(ServerSettings()) as server:
        server.observe = annotate
        assert SampledFirst.install(server.middleware, ratio)
        assert not SampledFirst.install(server.middleware, ratio), "installed once"
        async with Client(server) as client:
            EXPORTER.clear()
            meta = {"traceparent": traceparent} if traceparent else None
            assert not (await client.call_tool("describe_entity", {"id": "HGNC:BRAF"}, meta=meta)).is_error
    names = [span.name for span in EXPORTER.get_finished_spans()]
    assert ("tools/call describe_entity" in names) is traced, names
