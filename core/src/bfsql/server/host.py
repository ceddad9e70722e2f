"""The graphs a server answers for and its tools: every call through one pipeline, without the MCP SDK.

A :class:`ToolHost` holds the served graphs (opened inside the event loop that answers them),
the tools collected from the ``register_tools`` hook (the built-in ones,
:mod:`bfsql.server.tools`, and any plugin's), each graph's heavy-call slots, and the call
dispatch: which graph a call names, what a caller may see, rate limits, refusals. Its
:meth:`~ToolHost.answer` gives a call's :class:`~bfsql.server.pipeline.ToolAnswer`.

Two things stand on it: :class:`~bfsql.server.app.BfsqlServer`, the host behind the MCP
protocol (every ``tools/call`` is :meth:`~ToolHost.answer` made an MCP result), and
``bfsql query``, which asks a host directly. Both answer the same document for the same
call; only the second starts without the MCP SDK (about a second of imports). Nothing here
imports ``mcp``.

A server with several graphs gives every tool an optional ``graph`` argument (the default
graph, the first, answers calls without it); each graph keeps its own backend, cache,
embedder and settings, and a graph that fails leaves the others answering. A caller
(:mod:`bfsql.server.callers`) whose token grants only some graphs sees only those: in the
tools' graph enum and descriptions, the instructions, describe_schema's ``graphs``, and the
errors, where another graph is as unknown as one that does not exist. Its default graph is
the first it may see.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from bfsql.backend import GraphBackend, gather_or_cancel
from bfsql.engine.examples import examples_or_placeholders
from bfsql.errors import BfsqlError, clip
from bfsql.graph import Graph
from bfsql.models import GraphListing
from bfsql.pacing import HeavySlots
from bfsql.plugins import BackendSpec, collect, create_embedder, resolve_embedder_name
from bfsql.server.callers import Caller, current_caller
from bfsql.server.instructions import SERVER_INSTRUCTIONS, graphs_injection, schema_injection
from bfsql.server.pipeline import CallRecord, Observer, ToolAnswer, failed, run_tool
from bfsql.server.tool_spec import ToolSpec, tool_spec
from bfsql.server.tools import register_builtin_tools
from bfsql.settings import DEFAULT_MAX_HEAVY_CALLS, GraphPlan, ServerSettings, graph_name_error

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bfsql.server.ratelimit import RateLimits

__all__ = [
    "GC_THRESHOLDS", "SENT_CHARS", "ServedGraph", "ToolHost", "build_host", "collect_tools", "open_graph",
    "open_host", "start_failure", "start_up_heap_frozen", "tune_garbage_collector",
]

logger = logging.getLogger("bfsql.server")
startup = logging.getLogger("bfsql.startup")

SENT_CHARS = 100
"""Characters of a tool or graph name as a client sent it that a refused call's record keeps (the rest is clipped)."""

Report = Callable[[float, float | None, str | None], Awaitable[None]]
"""Reports a call's progress (the MCP context's ``report_progress``)."""


@dataclass
class ServedGraph:
    """One graph a server answers for, with its own settings."""

    name: str
    graph: Graph | None
    """None when it could not be opened (``failure`` says why)."""
    settings: ServerSettings
    description: str | None = None
    """The configuration file's description of the graph (None: the store's own is shown)."""
    backend: str = ""
    failure: str | None = None
    schema: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))
    """Its entity types and predicates, read at start-up."""

    @property
    def stored_description(self) -> str | None:
        """The store's own description, read at start-up (None for a graph that could not be opened)."""
        return self.graph.stored_description if self.graph is not None else None

    @property
    def shown_description(self) -> str | None:
        """The description clients are shown (the graph's, see :meth:`Graph.describe`; the configuration file's
        for a graph that could not be opened)."""
        return self.graph.shown_description if self.graph is not None else self.description

    def listing(self, default: bool) -> GraphListing:
        """How describe_schema lists it."""
        return GraphListing(name=self.name, description=self.shown_description, backend=self.backend,
                            default=default, available=self.graph is not None)


class ToolHost:
    """The served graphs and the tools; :meth:`answer` runs one call through the pipeline on the graph it names."""

    def __init__(
        self, graphs: Sequence[ServedGraph], tools: list[ToolSpec], max_heavy_calls: int = DEFAULT_MAX_HEAVY_CALLS,
        injected: str = "",
    ) -> None:
        if not graphs:
            raise ValueError("a server needs at least one graph")
        self.words = next(served.graph.examples for served in graphs if served.graph is not None)
        self.graphs = {served.name: served for served in graphs}
        self.default = graphs[0]
        self.tools = {spec.name: spec for spec in tools}
        self.slots = {name: HeavySlots(max_heavy_calls) for name in self.graphs}
        """Each graph's heavy calls (traversals) in flight at once; more wait their turn. Per graph, so that a
        graph whose store stops answering holds only its own slots, never another graph's."""
        self.injected = injected
        """What the traversal tools' descriptions say of the graphs (rewritten for a caller who sees fewer)."""
        self.observe: Observer | None = None
        """Gets every call's record (metrics, audit log, traces: set up by :mod:`bfsql.server.team`)."""
        self.rate_limits: RateLimits | None = None
        """Rate limits per principal and graph, when configured."""

    @property
    def graph(self) -> Graph | None:
        """The default graph."""
        return self.default.graph

    def visible(self, caller: Caller | None = None) -> list[ServedGraph]:
        """The graphs ``caller`` (default: the current one) may see, the default first."""
        caller = caller or current_caller()
        return [served for served in self.graphs.values() if caller.sees(served.name)]

    def instructions_for(self, caller: Caller) -> str:
        """The server's instructions as ``caller`` reads them: naming only the graphs it may see."""
        visible = self.visible(caller)
        return self.words.say(SERVER_INSTRUCTIONS) + (
            graphs_injection(visible) if len(self.graphs) > 1 and visible else "")

    def _refuse(self, outcome: str, tool: str, graph: str, arguments: Any, text: str) -> ToolAnswer:
        """The tool error of a call refused before it ran, recorded with the tool and graph names as sent (clipped)."""
        if self.observe is not None:
            self.observe(CallRecord(clip(tool, SENT_CHARS), clip(graph, SENT_CHARS), arguments, outcome, 0.0))
        return failed(text)

    def _refusal(self, spec: ToolSpec, served: ServedGraph, caller: Caller, arguments: Any) -> ToolAnswer | None:
        """A tool error when ``caller`` is over its rate limit on ``served`` (the call is counted otherwise)."""
        if self.rate_limits is None:
            return None
        over = self.rate_limits.hit(caller.principal, served.name, spec.heavy)
        if over is None:
            return None
        return self._refuse("rate_limited", spec.name, served.name, arguments, over.message(served.name))

    def _asked_graph(self, arguments: Any, visible: list[ServedGraph]) -> str:
        """The graph a call names, as sent; else the caller's default graph ("" when it may see none)."""
        asked = arguments.get("graph") if len(self.graphs) > 1 and isinstance(arguments, dict) else None
        if asked is not None:
            return str(asked)
        return visible[0].name if visible else ""

    async def answer(self, name: str, arguments: dict[str, Any], report: Report | None = None) -> ToolAnswer:
        """Run one call through the pipeline on the graph it names; errors name the tools or graphs.

        A call refused before it runs (an unknown tool, a graph the caller may not see, an
        unavailable graph, a rate limit) is recorded too, its outcome one of
        :data:`~bfsql.server.pipeline.REFUSALS`.
        """
        caller = current_caller()
        visible = self.visible(caller)
        spec = self.tools.get(name)
        if spec is None:
            return self._refuse("unknown_tool", name, self._asked_graph(arguments, visible), arguments,
                                f"Unknown tool {clip(name)!r}. This server's tools: {', '.join(self.tools)}.")
        if not visible:
            return self._refuse("not_granted", name, self._asked_graph(arguments, visible), arguments,
                                "Your credentials grant none of this server's graphs: ask for a token with a graph "
                                "scope.")
        if len(self.graphs) == 1:
            refused = self._refusal(spec, self.default, caller, arguments)
            return refused or await run_tool(
                spec, arguments, self.default.graph, self.default.settings,  # type: ignore[arg-type]
                report, slots=self.slots[self.default.name], observe=self.observe)
        return await self._answer_among(spec, arguments, caller, visible, report)

    def _named_graph(
        self, name: str, chosen: Any, arguments: Any, visible: list[ServedGraph]
    ) -> ServedGraph | ToolAnswer:
        """The graph a call of tool ``name`` names (``chosen``; None for the caller's default), or the refusal of
        a graph the caller may not see, that does not exist, or that could not be opened."""
        names = [g.name for g in visible]
        if chosen is not None and (not isinstance(chosen, str) or chosen not in names):
            # The caller is told of a graph it may not see what it is told of one that does not exist.
            outcome = "not_granted" if isinstance(chosen, str) and chosen in self.graphs else "unknown_graph"
            return self._refuse(outcome, name, str(chosen), arguments, graph_name_error(str(chosen), names))
        served = self.graphs[chosen] if chosen is not None else visible[0]
        if served.graph is None:
            others = ", ".join(g.name for g in visible if g.graph is not None)
            return self._refuse(
                "unavailable", name, served.name, arguments,
                f"Graph {served.name!r} is unavailable: it could not be opened at start-up ({served.failure}). "
                f"The other graphs answer: {others}. Restart the server once its store is reachable."
            )
        return served

    async def _answer_among(
        self, spec: ToolSpec, arguments: Any, caller: Caller, visible: list[ServedGraph], report: Report | None
    ) -> ToolAnswer:
        """A call on a server of several graphs: the one it names (else the caller's default), said in the answer."""
        arguments = dict(arguments) if isinstance(arguments, dict) else arguments
        chosen = arguments.pop("graph", None) if isinstance(arguments, dict) else None
        served = self._named_graph(spec.name, chosen, arguments, visible)
        if isinstance(served, ToolAnswer):
            return served
        assert served.graph is not None  # an unavailable graph was refused
        listing = None if chosen is not None else [g.listing(g is visible[0]) for g in visible]
        about: dict[str, Any] = {"graph": served.name}
        if chosen is None and len(visible) > 1:  # so that a miss here is not taken for a miss everywhere
            about["other_graphs"] = [g.name for g in visible if g is not served]
        refused = self._refusal(spec, served, caller, arguments)
        result = refused or await run_tool(spec, arguments, served.graph, served.settings, report, graphs=listing,
                                           slots=self.slots[served.name], observe=self.observe, about=about)
        if result.is_error:
            return ToolAnswer(f"[graph {served.name}] {result.text}")
        return result


def collect_tools() -> list[ToolSpec]:
    """Every tool: the built-in ones, registered here by the server, then the plugins' (``register_tools`` hook).

    A plugin's tool whose name is taken is an error of that plugin (see ``bfsql plugins``).
    """
    builtin: dict[str, ToolSpec] = {}

    def register(fn: Callable[..., Any], **options: Any) -> None:
        spec = tool_spec(fn, plugin="bfsql", **options)
        builtin[spec.name] = spec

    register_builtin_tools(register)

    def plugin_tool(fn: Callable[..., Any], *, plugin: str, **options: Any) -> ToolSpec:
        spec = tool_spec(fn, plugin=plugin, **options)
        if spec.name in builtin:
            raise ValueError(f"tool {spec.name!r} is one of bfsql's own")
        return spec

    return [*builtin.values(), *collect("register_tools", plugin_tool, "tool").values()]


async def _prepare(served: ServedGraph, warm_up: bool = True) -> None:
    """Bind the graph's embedder and read its schema (a store whose vectors come from another embedder fails here).

    ``warm_up`` loads the embedder's model now, not under the first search's clock and memory (a
    server); one call (``bfsql query``) loads it only if it searches.
    """
    graph = served.graph
    assert graph is not None
    if not graph.embedder_chosen:  # a graph built with an embedder keeps it; else the setting ("auto": the store's own)
        stored = graph.stored_embedder
        embedder = create_embedder(resolve_embedder_name(served.settings.embedder, stored[0] if stored else None))
        graph.set_embedder(embedder)
        if warm_up:
            await embedder.embed(["warm-up"])
    await graph.bind_embedder()
    types, preds, stored = await gather_or_cancel(
        graph.entity_types(), graph.predicates(), graph.read_stored_description()
    )
    served.schema = (types, preds)
    graph.examples = await examples_or_placeholders(graph, types, preds)
    if graph.description and len(stored) > len(graph.description) and stored != graph.description:
        startup.info("graph %s: the configuration's description is shown; the store's own (%d characters) is "
                     "longer", served.name, len(stored))


def start_failure(exc: BaseException, start_timeout: float) -> str:
    """Why one of several graphs is unavailable, in the words describe_schema and its tool errors use."""
    if isinstance(exc, TimeoutError):
        return f"it did not start within {start_timeout:g} s (start_timeout)"
    return str(exc) or type(exc).__name__


async def _prepare_or_fail(served: ServedGraph, warm_up: bool) -> None:
    """Prepare one of several graphs within its start timeout; on failure it is served as unavailable."""
    try:
        await asyncio.wait_for(_prepare(served, warm_up), served.settings.start_timeout)
    except Exception as exc:
        served.failure = start_failure(exc, served.settings.start_timeout)
        logger.error("graph %s could not start: %s", served.name, served.failure)
        served.graph = None


H = TypeVar("H", bound=ToolHost)


async def build_host(
    graph: Graph | Sequence[ServedGraph],
    settings: ServerSettings | None = None,
    max_heavy_calls: int = DEFAULT_MAX_HEAVY_CALLS,
    *,
    kind: type[H] = ToolHost,  # type: ignore[assignment]
    warm_up: bool = True,
) -> H:
    """A host of ``kind`` answering the BFS-QL tools (and plugin tools) over an open graph, or several.

    ``graph`` is one open :class:`Graph` (answered with ``settings``) or the graphs of a
    configuration file, the default first. When a graph has at most 20 entity types and 30
    predicates, the traversal tools' descriptions list them, so a client knows the valid
    filter values from the start. With several graphs, one that fails to start is logged and
    answered as unavailable; with one, its failure is raised.
    """
    if isinstance(graph, Graph):
        served: list[ServedGraph] = [ServedGraph(graph.name, graph, settings or ServerSettings())]
    else:
        served = list(graph)
    if len(served) == 1 and served[0].graph is not None:
        await _prepare(served[0], warm_up)
    else:
        await asyncio.gather(*(_prepare_or_fail(entry, warm_up) for entry in served if entry.graph is not None))
    if all(entry.graph is None for entry in served):
        raise BfsqlError("No graph could be opened: " + "; ".join(f"{e.name}: {e.failure}" for e in served) + ".",
                         "Check each graph's backend options; the log says more.")
    if len(served) == 1:
        injected = schema_injection(*served[0].schema) or ""
    else:
        injected = graphs_injection(served, with_schema=True)
    examples = next(entry.graph.examples for entry in served if entry.graph is not None)
    tools = collect_tools()
    for spec in tools:
        spec.examples = examples  # the default graph's words, before the schema's own are injected
        spec.description = examples.say(spec.description) + (injected if spec.injects_schema else "")
    return kind(served, tools, max_heavy_calls, injected)


@asynccontextmanager
async def open_graph(spec: BackendSpec, config: BaseModel, **graph_options: Any) -> AsyncIterator[Graph]:
    """Build the backend (awaiting an async factory) and wrap it in a Graph; close it after."""
    backend = spec.factory(config)
    if inspect.isawaitable(backend):
        backend = await backend
    if not isinstance(backend, GraphBackend):
        raise TypeError(f"backend {spec.name!r} factory returned {type(backend).__name__}, not a bfsql.GraphBackend")
    graph_options.setdefault("name", spec.name)
    graph = Graph(backend, **graph_options)
    try:
        yield graph
    finally:
        await graph.aclose()


GC_THRESHOLDS = (700, 10, 1000)
"""The server's garbage-collector thresholds: Python's defaults but full collections 100 times rarer.

A full collection walks every live object: the cache, a store's in-memory index, the answers
in flight. A full traversal allocates tens of thousands of small dicts and tuples, which with
the default thresholds (700, 10, 10) set off several full collections per call: a 1-hop full
``bfs_query`` from an HPO hub on PostgreSQL took 180-210 ms, 77-88 ms with these. Almost all of
the engine's garbage is freed by reference counting; only cycles wait for the rarer collections.
"""


def tune_garbage_collector() -> None:
    """Set :data:`GC_THRESHOLDS` (process-wide; ``bfsql serve``, ``query`` and ``explore`` call it)."""
    gc.set_threshold(*GC_THRESHOLDS)


@contextmanager
def start_up_heap_frozen() -> Iterator[None]:
    """Keep what exists now (modules, schemas, the opened stores) out of every later collection, until the block
    ends (a long-lived server: :func:`bfsql.server.run.open_server`).

    A full collection walks every object the collector tracks, and a started server's own (90,000
    after the imports alone: 22 ms a full collection) outnumber what most calls leave. What is frozen
    is still freed by reference counting; only cycles among it wait, and the block's end hands it
    back to the collector (a process that opens servers one after the other, such as a test run,
    keeps nothing frozen past its server).
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@asynccontextmanager
async def open_host(
    plans: Sequence[GraphPlan],
    settings: ServerSettings | None = None,
    *,
    kind: type[H] = ToolHost,  # type: ignore[assignment]
    warm_up: bool = True,
) -> AsyncIterator[H]:
    """Open every planned graph and build a host of ``kind`` over them; close them all after.

    With several graphs, they open at once, and one that cannot be opened within its
    ``start_timeout`` is logged and served as unavailable; a single graph's failure is raised.
    Sets the server's garbage-collector thresholds.
    """
    tune_garbage_collector()
    async with AsyncExitStack() as stack:

        async def open_one(plan: GraphPlan) -> ServedGraph:
            entry = ServedGraph(plan.name, None, plan.settings, plan.description, plan.spec.name)
            opening = open_graph(plan.spec, plan.config, name=plan.name, description=plan.description,
                                 primitive_timeout=plan.settings.primitive_timeout)
            if len(plans) == 1:
                entry.graph = await stack.enter_async_context(opening)
                return entry
            try:
                entry.graph = await asyncio.wait_for(stack.enter_async_context(opening), plan.settings.start_timeout)
            except Exception as exc:
                entry.failure = start_failure(exc, plan.settings.start_timeout)
                logger.error("graph %s (%s) could not be opened: %s", plan.name, plan.spec.name, entry.failure)
            return entry

        served = list(await asyncio.gather(*(open_one(plan) for plan in plans)))
        heavy_calls = settings.max_heavy_calls if settings is not None else DEFAULT_MAX_HEAVY_CALLS
        yield await build_host(served, max_heavy_calls=heavy_calls, kind=kind, warm_up=warm_up)
