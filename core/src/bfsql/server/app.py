"""Building the MCP server: the six BFS-QL tools over one :class:`Graph`.

The graph is opened by the caller inside the event loop that serves it (see
:mod:`bfsql.server.run`); :func:`build_server` then reads its schema and registers
the tools, with the valid filter values in the traversal tools' descriptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from bfsql import __version__
from bfsql.backend import gather_or_cancel
from bfsql.embedders import Embedder, create_embedder
from bfsql.engine import TraversalBudget, bfs_query, intersect_subgraphs
from bfsql.engine import search as hybrid
from bfsql.engine.paths import DEFAULT_K, DEFAULT_MAX_RESULTS, DEFAULT_THRESHOLD, path_query
from bfsql.errors import BfsqlError, InvalidArgument, UnknownEntity, clip
from bfsql.graph import Graph
from bfsql.models import (
    BfsResult,
    EntityStub,
    IntersectionResult,
    Node,
    PathQueryResult,
    SchemaDescription,
    to_output,
)
from bfsql.server import budget as fit
from bfsql.server.instructions import (
    DEFAULT_NEXT_STEPS,
    SERVER_INSTRUCTIONS,
    TOOL_DESCRIPTIONS,
    TOOL_USAGE_NOTES,
    schema_injection,
)
from bfsql.server.path_budget import fit_paths

__all__ = ["BFSQL_TOOLS", "EXTRA_TOOLS", "ServeSettings", "build_server"]

logger = logging.getLogger("bfsql.server")

T = TypeVar("T")

DEFAULT_MAX_TOKENS = 20_000
"""Below Claude Code's 25k-token cap on a tool answer, with room for the estimate's error."""

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False)


@dataclass
class ServeSettings:
    """How the server answers: size budget, timeouts and traversal bounds."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout: float = 60.0
    """Seconds a tool call may take before it fails with a timeout error."""
    primitive_timeout: float | None = 30.0
    """Seconds one backend call may take; the error names the primitive (used by the graph's opener)."""
    budget: TraversalBudget = field(default_factory=TraversalBudget)
    name: str = "bfsql"
    embedder: str | Embedder | None = None
    """The embedder (or its registered name) for vector search and path queries; None keeps the graph's."""


def _answer(structured: Any) -> CallToolResult:
    """A tool result with compact JSON text and the same data as structured content."""
    text = fit.compact_json(structured)
    if isinstance(structured, list):
        structured = {"result": structured}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


class _Tools:
    """The tool implementations, bound to one graph and one set of settings."""

    def __init__(self, graph: Graph, settings: ServeSettings) -> None:
        self.graph = graph
        self.settings = settings
        self.budget = dataclasses.replace(settings.budget, answer_chars=fit.answer_limit(settings.max_tokens))
        """The traversal budget, told the answer size so that it skips metadata no answer could hold."""

    async def guarded(self, tool: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run a tool body with a timeout, turning every failure into a clear tool error."""
        try:
            return await asyncio.wait_for(call(), self.settings.timeout)
        except BfsqlError as exc:
            logger.info("%s: %s", tool, exc.message)
            raise ToolError(str(exc)) from None
        except KeyError as exc:
            logger.info("%s: unknown id %s", tool, exc)
            raise ToolError(str(UnknownEntity([str(exc.args[0]) if exc.args else "?"]))) from None
        except TimeoutError:
            logger.warning("%s: timed out after %ss", tool, self.settings.timeout)
            raise ToolError(
                f"{tool} timed out after {self.settings.timeout:g}s. "
                "Narrow the query (fewer hops or seeds, exclude_node_types) or try again."
            ) from None
        except ToolError:
            raise
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this call was cancelled (client or timeout): it ends, and only it
            # A cancellation that reached this call from work it shared with a cancelled one.
            logger.warning("%s: a shared backend call was cancelled under it", tool)
            raise ToolError(f"{tool} was interrupted by another call's cancellation; try again.") from None
        except Exception as exc:
            logger.warning("%s: backend failure: %s: %s", tool, type(exc).__name__, exc)
            raise ToolError(
                f"The graph backend failed ({type(exc).__name__}: {clip(str(exc), 300)}). "
                "This is not caused by your arguments; try again shortly."
            ) from None

    async def progress(self, ctx: Context | None, hop: int, total: int, message: str) -> None:
        if ctx is not None:
            await ctx.report_progress(hop, total, message)

    async def describe_schema(self) -> Annotated[CallToolResult, SchemaDescription]:
        async def body() -> CallToolResult:
            types, preds = await gather_or_cancel(self.graph.entity_types(), self.graph.predicates())
            description = await self.graph.backend.graph_description()
            next_steps = await self.graph.backend.next_steps() or DEFAULT_NEXT_STEPS
            schema = SchemaDescription(
                graph_description=description,
                comprehensive=self.graph.capabilities.comprehensive_schema,
                entity_types=types,
                predicates=preds,
                next_steps=next_steps,
                tool_usage_notes=TOOL_USAGE_NOTES,
            )
            return _answer(fit.fit_schema(to_output(schema), self.settings.max_tokens))

        return await self.guarded("describe_schema", body)

    async def search_entities(
        self,
        query: Annotated[str, Field(description="Name, alias or partial name to look up.")],
        node_types: Annotated[
            list[str] | None, Field(description="Restrict results to these entity types.")
        ] = None,
        mode: Annotated[
            Literal["exact", "lexical", "vector", "hybrid", "rrf"] | None,
            Field(description="Ranking: exact, lexical, vector, hybrid (alpha-weighted) or rrf (reciprocal rank "
                  "fusion). Default: the best this graph supports."),
        ] = None,
        alpha: Annotated[
            float, Field(description="hybrid mode: weight of the vector ranker, 0 (lexical only) to 1 (vector only).")
        ] = hybrid.DEFAULT_ALPHA,
    ) -> Annotated[CallToolResult, list[EntityStub]]:
        async def body() -> CallToolResult:
            if not query.strip():
                raise InvalidArgument("query must not be empty.", "Pass a name or alias, e.g. query=\"BRAF\".")
            if len(query) > 1000:
                raise InvalidArgument("query is longer than 1000 characters.", "Search for a name, not a text.")
            stubs = await hybrid.search_entities(self.graph, query, node_types, mode=mode, alpha=alpha)
            return _answer(fit.fit_list([to_output(s) for s in stubs], self.settings.max_tokens, what="matches"))

        return await self.guarded("search_entities", body)

    async def bfs_query(
        self,
        seeds: Annotated[list[str], Field(description="One or more canonical entity ids.")],
        max_hops: Annotated[int, Field(description="Maximum graph distance from any seed (1-5).")],
        node_types: Annotated[list[str] | None, Field(description="Types that get full metadata.")] = None,
        predicates: Annotated[list[str] | None, Field(description="Predicates that get full metadata.")] = None,
        topology_only: Annotated[bool, Field(description="Bare ids, types and triples only.")] = False,
        exclude_node_types: Annotated[
            list[str] | None, Field(description="Remove these types and their edges entirely.")
        ] = None,
        min_mentions: Annotated[int, Field(description="Drop nodes with total_mentions below this.")] = 1,
        limit: Annotated[int | None, Field(description="Cap the number of nodes returned.")] = None,
        offset: Annotated[int, Field(description="Skip the first N nodes (paging).")] = 0,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, BfsResult]:
        async def body() -> CallToolResult:
            result = await bfs_query(
                self.graph,
                seeds,
                max_hops,
                node_types=node_types,
                predicates=predicates,
                topology_only=topology_only,
                exclude_node_types=exclude_node_types,
                min_mentions=min_mentions,
                limit=limit,
                offset=offset,
                budget=self.budget,
                progress=functools.partial(self.progress, ctx),
            )
            return _answer(fit.fit_traversal(to_output(result), self.settings.max_tokens, offset=offset))

        return await self.guarded("bfs_query", body)

    async def describe_entity(
        self, id: Annotated[str, Field(description="Canonical entity id.")]
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        async def body() -> CallToolResult:
            node, metadata = await gather_or_cancel(self.graph.get_node(id), self.graph.metadata_for_node(id))
            full = self.graph.process_node(node.model_copy(update={"metadata": dict(metadata)}), "describe_entity")
            flat = {**(full.metadata or {}), "id": full.id, "entity_type": full.entity_type}
            return _answer(fit.fit_record(flat, self.settings.max_tokens))

        return await self.guarded("describe_entity", body)

    async def describe_entities(
        self, ids: Annotated[list[str], Field(description="Canonical entity ids.")]
    ) -> Annotated[CallToolResult, list[dict[str, Any]]]:
        async def body() -> CallToolResult:
            if len(ids) > 500:
                raise InvalidArgument(
                    f"describe_entities accepts at most 500 ids; got {len(ids)}.", "Split the ids over several calls."
                )
            wanted = list(dict.fromkeys(ids))
            nodes, metadata = await gather_or_cancel(
                self.graph.get_nodes(wanted), self.graph.metadata_for_nodes(wanted)
            )
            out = []
            for entity_id in wanted:
                if entity_id in nodes:
                    entity_type = nodes[entity_id].entity_type
                    node = Node(id=entity_id, entity_type=entity_type, metadata=dict(metadata.get(entity_id, {})))
                    out.append(to_output(self.graph.process_node(node, "describe_entities")))
            return _answer(fit.fit_list(out, self.settings.max_tokens, what="entities"))

        return await self.guarded("describe_entities", body)

    async def intersect_subgraphs(
        self,
        seeds: Annotated[list[str], Field(description="Two or more canonical entity ids.")],
        k: Annotated[int, Field(description="Hop radius (1-5), edges treated as undirected.")],
        node_types: Annotated[list[str] | None, Field(description="Types that get full metadata.")] = None,
        exclude_node_types: Annotated[
            list[str] | None, Field(description="Remove these types and their edges entirely.")
        ] = None,
        predicates: Annotated[list[str] | None, Field(description="Predicates that get full metadata.")] = None,
        min_mentions: Annotated[int, Field(description="Drop nodes with total_mentions below this.")] = 1,
        topology_only: Annotated[bool, Field(description="Bare ids, types and triples only.")] = False,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, IntersectionResult]:
        async def body() -> CallToolResult:
            result = await intersect_subgraphs(
                self.graph,
                seeds,
                k,
                node_types=node_types,
                predicates=predicates,
                topology_only=topology_only,
                exclude_node_types=exclude_node_types,
                min_mentions=min_mentions,
                budget=self.budget,
                progress=functools.partial(self.progress, ctx),
            )
            return _answer(fit.fit_traversal(to_output(result), self.settings.max_tokens, offset=None))

        return await self.guarded("intersect_subgraphs", body)

    async def path_query(
        self,
        query: Annotated[
            str,
            Field(description='A path query, e.g. "BRAF" -[isa]-> type:Family <-[isa]- type:Gene '
                  "(see the tool description for the syntax)."),
        ],
        k: Annotated[
            int, Field(description="Entry points, relations per entity and semantic matches kept per hop (1-50).")
        ] = DEFAULT_K,
        threshold: Annotated[
            float, Field(description="Least similarity (0-1) for a fuzzy relation or semantic match.")
        ] = DEFAULT_THRESHOLD,
        max_results: Annotated[int, Field(description="Most results returned (1-200).")] = DEFAULT_MAX_RESULTS,
    ) -> Annotated[CallToolResult, PathQueryResult]:
        async def body() -> CallToolResult:
            result = await path_query(
                self.graph, query, k=k, threshold=threshold, max_results=max_results, budget=self.budget
            )
            return _answer(fit_paths(to_output(result), self.settings.max_tokens))

        return await self.guarded("path_query", body)


BFSQL_TOOLS = (
    "describe_schema",
    "search_entities",
    "bfs_query",
    "describe_entity",
    "describe_entities",
    "intersect_subgraphs",
)
"""The six tools of the protocol, in the order of Appendix A."""

EXTRA_TOOLS = ("path_query",)
"""bfsql's tools beyond the protocol's six (all read-only)."""

SCHEMA_TOOLS = frozenset({"bfs_query", "intersect_subgraphs", "path_query"})
"""Tools whose descriptions list the valid node_types and predicates (schema injection)."""


def _bind_graph(fn: Callable[..., Any], graph: Graph) -> Callable[..., Any]:
    """Hide a plugin tool's leading ``graph`` parameter from the tool's schema."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    if not params or params[0].name != "graph":
        return fn

    @functools.wraps(fn)
    async def bound(*args: Any, **kwargs: Any) -> Any:
        result = fn(graph, *args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    bound.__signature__ = signature.replace(parameters=params[1:])  # type: ignore[attr-defined]
    del bound.__wrapped__  # the schema must come from __signature__, not the original
    return bound


async def build_server(graph: Graph, settings: ServeSettings | None = None) -> MCPServer:
    """An MCP server exposing the BFS-QL tools (and plugin tools) over an open ``graph``.

    When the graph has at most 20 entity types and 30 predicates, the traversal tools'
    descriptions list them, so a client knows the valid filter values from the start.
    """
    from bfsql.plugins import get_plugin_manager

    settings = settings or ServeSettings()
    if settings.embedder is not None:
        embedder = create_embedder(settings.embedder) if isinstance(settings.embedder, str) else settings.embedder
        graph.set_embedder(embedder)
    await graph.bind_embedder()  # a store whose vectors come from another embedder fails here, at start-up
    types, preds = await gather_or_cancel(graph.entity_types(), graph.predicates())
    injected = schema_injection(types, preds) or ""
    server: MCPServer = MCPServer(
        settings.name, instructions=SERVER_INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    tools = _Tools(graph, settings)
    for name in BFSQL_TOOLS + EXTRA_TOOLS:
        description = TOOL_DESCRIPTIONS[name] + (injected if name in SCHEMA_TOOLS else "")
        server.add_tool(getattr(tools, name), name=name, description=description, annotations=READ_ONLY)

    def register(fn: Callable[..., Any], name: str | None = None, description: str | None = None) -> None:
        server.add_tool(_bind_graph(fn, graph), name=name, description=description, annotations=READ_ONLY)

    get_plugin_manager().hook.register_tools(register=register)
    return server
