"""Prometheus metrics of a server (``--metrics``: ``GET /metrics``, ``bfsql[team]``).

Per-call figures come from the pipeline's call records (:meth:`Metrics.record`), in one place:

* ``bfsql_tool_calls_total{tool,graph,outcome}`` (outcomes: :data:`~bfsql.server.pipeline.OUTCOMES`),
  ``bfsql_backend_errors_total{graph}``;
* ``bfsql_tool_call_seconds{tool,graph}`` (histogram), ``bfsql_answer_chars{tool}`` (histogram),
  ``bfsql_answers_truncated_total{tool,graph}``;
* ``bfsql_http_refused_total{outcome}``: requests refused for their credentials
  (:data:`~bfsql.server.pipeline.HTTP_REFUSALS`) before the MCP server saw them.

A label is a name of this server's tools or graphs, or :data:`UNKNOWN`: a name a client sent
that the server does not have never becomes a label value, so the series stay bounded whatever
clients send.

Read at each scrape from the graphs themselves: ``bfsql_cache_hits_total`` and
``bfsql_cache_misses_total{graph,primitive}``, ``bfsql_cache_hit_ratio{graph}``,
``bfsql_heavy_calls_waiting{graph}`` and ``bfsql_heavy_calls_running{graph}``. Each server keeps
its own registry; a replica is scraped on its own address.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bfsql.errors import BfsqlError
from bfsql.server.pipeline import HTTP_REFUSALS, REFUSALS, CallRecord

if TYPE_CHECKING:
    from bfsql.server.app import BfsqlServer

__all__ = ["LATENCY_BUCKETS", "SIZE_BUCKETS", "UNKNOWN", "Metrics"]

UNKNOWN = "(unknown)"
"""The label value of a tool or graph name the server does not have (a graph name cannot hold parentheses, and
MCP's naming rules allow none in a tool's)."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a cached describe answers in a millisecond, a hub traversal in seconds, the timeout is a minute."""

SIZE_BUCKETS = (100, 500, 2000, 8000, 20000, 40000, 80000, 160000)
"""Characters of an answer (20k tokens, the default budget, is about 80k characters)."""


def _prometheus() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
    except ImportError:
        raise BfsqlError("--metrics needs prometheus-client, which is not installed.",
                         "pip install 'bfsql[team]'") from None
    return prometheus_client


class Metrics:
    """A server's metrics, in a registry of its own, and the ASGI app that serves them."""

    def __init__(self, server: BfsqlServer) -> None:
        prometheus = _prometheus()
        self.registry = prometheus.CollectorRegistry()
        self.server = server
        self.calls = prometheus.Counter("bfsql_tool_calls", "Tool calls, by how they ended.",
                                        ["tool", "graph", "outcome"], registry=self.registry)
        self.backend_errors = prometheus.Counter("bfsql_backend_errors", "Tool calls failed by the graph's store.",
                                                 ["graph"], registry=self.registry)
        self.seconds = prometheus.Histogram("bfsql_tool_call_seconds", "Time a tool call took.", ["tool", "graph"],
                                            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.chars = prometheus.Histogram("bfsql_answer_chars", "Characters of a tool answer.", ["tool"],
                                          buckets=SIZE_BUCKETS, registry=self.registry)
        self.truncated = prometheus.Counter("bfsql_answers_truncated", "Answers that say something was left out.",
                                            ["tool", "graph"], registry=self.registry)
        self.refused = prometheus.Counter("bfsql_http_refused", "HTTP requests refused for their credentials.",
                                          ["outcome"], registry=self.registry)
        for outcome in HTTP_REFUSALS:
            self.refused.labels(outcome)
        self._series: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self.registry.register(_GraphCollector(server, prometheus))
        self.app = prometheus.make_asgi_app(registry=self.registry)

    def record(self, record: CallRecord) -> None:
        """Count one call (or one request refused over HTTP)."""
        if record.outcome in HTTP_REFUSALS:
            self.refused.labels(record.outcome).inc()
            return
        tool = record.tool if record.tool in self.server.tools else UNKNOWN
        graph = record.graph if record.graph in self.server.graphs else UNKNOWN
        key = (tool, graph, record.outcome)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = self._series_of(*key)
        calls, errors, seconds, chars, truncated = series
        calls.inc()
        if errors is not None:
            errors.inc()
        if seconds is None:
            return  # refused before it ran: no latency or answer to count
        seconds.observe(record.seconds)
        if chars is not None and truncated is not None:
            chars.observe(record.chars)
            if record.cut:
                truncated.inc()

    def _series_of(self, tool: str, graph: str, outcome: str) -> tuple[Any, ...]:
        """The labelled series a call of ``tool`` on ``graph`` ending in ``outcome`` counts in (None: not counted).

        Looked up once per combination: ``labels()`` checks and converts its values, takes a lock
        and hashes them, which was a third of what the metrics cost a call.
        """
        ran = outcome not in REFUSALS
        ok = outcome == "ok"
        return (
            self.calls.labels(tool, graph, outcome),
            self.backend_errors.labels(graph) if outcome == "backend_error" else None,
            self.seconds.labels(tool, graph) if ran else None,
            self.chars.labels(tool) if ok else None,
            self.truncated.labels(tool, graph) if ok else None,
        )


class _GraphCollector:
    """The figures read from the graphs at each scrape: cache hits and misses, heavy calls waiting and running."""

    def __init__(self, server: BfsqlServer, prometheus: Any) -> None:
        self.server = server
        self.core = prometheus.core

    def describe(self) -> list[Any]:
        """Nothing up front (the metrics are made at each scrape)."""
        return []

    def collect(self) -> Iterator[Any]:
        """The cache and slot figures of every graph."""
        core = self.core
        hits = core.CounterMetricFamily("bfsql_cache_hits", "Primitive calls answered by the cache.",
                                        labels=["graph", "primitive"])
        misses = core.CounterMetricFamily("bfsql_cache_misses", "Primitive calls the cache passed to the store.",
                                          labels=["graph", "primitive"])
        ratio = core.GaugeMetricFamily("bfsql_cache_hit_ratio", "Share of cached primitive calls the cache answered.",
                                       labels=["graph"])
        waiting = core.GaugeMetricFamily("bfsql_heavy_calls_waiting", "Traversals waiting for a heavy-call slot.",
                                         labels=["graph"])
        running = core.GaugeMetricFamily("bfsql_heavy_calls_running", "Traversals holding a heavy-call slot.",
                                         labels=["graph"])
        for name, served in self.server.graphs.items():
            cache = served.graph.cache if served.graph is not None else None
            found = missed = 0
            for primitive, keyed in (cache.caches.items() if cache is not None else ()):
                hits.add_metric([name, primitive], keyed.lru.hits)
                misses.add_metric([name, primitive], keyed.lru.misses)
                found, missed = found + keyed.lru.hits, missed + keyed.lru.misses
            if found + missed:
                ratio.add_metric([name], found / (found + missed))
            slots = self.server.slots[name]
            waiting.add_metric([name], slots.waiting)
            running.add_metric([name], slots.running)
        yield from (hits, misses, ratio, waiting, running)
