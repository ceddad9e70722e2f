"""The built-in tools: the six of BFS-QL, path_query and describe_edges.

The server registers them itself (:func:`register_builtin_tools`), with the callback plugins
get from the ``register_tools`` hook, ahead of the plugins' tools; all pass the same pipeline
(:mod:`bfsql.server.pipeline`). Each is a function whose parameters are the tool's arguments
(types, descriptions and examples make its input schema) and whose answer is typed; the
pipeline fits the answer to the budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field

from bfsql.backend import gather_or_cancel
from bfsql.engine import search as hybrid
from bfsql.engine.answer import EdgeRecords, EntityRecords, Listing, Traversal
from bfsql.engine.path_defaults import DEFAULT_K, DEFAULT_MAX_RESULTS, DEFAULT_THRESHOLD, WALK_TIME_SHARE
from bfsql.errors import InvalidArgument, UnknownEntity, clip
from bfsql.graph import Graph
from bfsql.hookspecs import RegisterTool
from bfsql.models import (
    BfsResult,
    EntityStub,
    IntersectionResult,
    ListAnswer,
    Node,
    PathQueryResult,
    ResultEdge,
    SchemaDescription,
    SchemaHub,
    Truncation,
)
from bfsql.rows import Edge, GraphStatistics
from bfsql.server.answers import compact_json
from bfsql.server.instructions import DEFAULT_NEXT_STEPS, TOOL_DESCRIPTIONS, TOOL_USAGE_NOTES
from bfsql.server.tool_spec import Bounded, ToolContext
from bfsql.settings import ServerSettings

__all__ = ["BUILTIN_TOOLS", "BuiltinTool", "register_builtin_tools"]

Ids = Annotated[list[str], Field(description="Canonical entity ids.", examples=[["HGNC:BRAF", "HGNC:RAF1"]])]
Types = Annotated[list[str] | None, Field(description="Entity types that get full metadata.", examples=[["Gene"]])]
Predicates = Annotated[
    list[str] | None, Field(description="Predicates whose edges get full metadata.", examples=[["isa"]])
]
Exclude = Annotated[
    list[str] | None, Field(description="Remove these types and their edges entirely.", examples=[["Paper"]])
]
TopologyOnly = Annotated[bool, Field(description="Ids, types, names and bare triples only: the cheapest survey.")]
MinMentions = Annotated[
    int | None,
    Field(description="Remove nodes whose total_mentions is below this, and their edges (nodes without "
          "total_mentions and the seeds stay). Omitted: no filter.", examples=[2]),
]


SCHEMA_COUNTS = 30
"""Most types (and predicates) describe_schema counts: the most numerous, when the graph has more."""
SCHEMA_HUBS = 10
"""Hubs describe_schema names."""


async def describe_schema(ctx: ToolContext) -> SchemaDescription:
    """Orient: what the graph contains (and how much of it, where the store can say it cheaply)."""
    graph = ctx.graph
    types, preds, counted, problems = await gather_or_cancel(
        graph.entity_types(), graph.predicates(), _statistics(graph), graph.health()
    )
    return SchemaDescription(
        graph_description=await graph.describe(),
        comprehensive=graph.capabilities.comprehensive_schema,
        entity_types=types,
        predicates=preds,
        next_steps=await graph.next_steps() or DEFAULT_NEXT_STEPS,
        tool_usage_notes=TOOL_USAGE_NOTES,
        **_schema_counts(counted),
        graphs=ctx.graphs,
        warnings=problems or None,
    )


async def _statistics(graph: Graph) -> GraphStatistics | None:
    """The graph's statistics (with :data:`SCHEMA_HUBS` hubs), when its backend declares it can say them."""
    return await graph.statistics(SCHEMA_HUBS) if graph.capabilities.statistics else None


def _schema_counts(counted: GraphStatistics | None) -> dict[str, Any]:
    """describe_schema's count fields from the backend's statistics (none when it has none): at most
    :data:`SCHEMA_COUNTS` types and predicates each (the most numerous), :data:`SCHEMA_HUBS` hubs."""
    if counted is None:
        return {}
    fields: dict[str, Any] = {"counts_exact": counted.exact}
    for name in ("entity_type_counts", "predicate_counts"):
        counts: dict[str, int] | None = getattr(counted, name)
        if counts is not None:
            most = sorted(counts, key=lambda key: (-counts[key], key))[:SCHEMA_COUNTS]
            fields[name] = {key: counts[key] for key in sorted(most)}
    if counted.hubs is not None:
        fields["hubs"] = [SchemaHub(id=h.id, entity_type=h.entity_type, name=h.name, degree=h.degree)
                          for h in counted.hubs[:SCHEMA_HUBS]]
    return fields


SEARCH_MAX = 100
"""Most results one search call returns."""
SEARCH_DEPTH = 300
"""Matches one search ranks, whatever the page asked: every page cuts the same ranking, so paging returns each
match once with one score; a page starts within it (offset below this)."""


async def search_entities(
    ctx: ToolContext,
    query: Annotated[str, Field(description="Name, alias or partial name to look up.", examples=["BRAF"])],
    node_types: Annotated[
        list[str] | None, Field(description="Restrict results to these entity types.", examples=[["Gene"]])
    ] = None,
    mode: Annotated[
        Literal["exact", "lexical", "vector", "hybrid", "rrf"] | None,
        Field(description="Ranking: exact, lexical, vector, hybrid (alpha-weighted) or rrf (reciprocal rank "
              "fusion of lexical, vector and a graph ranker that finds what is linked to what the query names). "
              "Default: the best this graph supports.", examples=["lexical"]),
    ] = None,
    alpha: Annotated[
        float,
        Field(description="hybrid mode: weight of the vector ranker, 0 (lexical only) to 1 (vector only).",
              examples=[0.5]),
    ] = hybrid.DEFAULT_ALPHA,
    limit: Annotated[int, Field(description=f"Most results (1-{SEARCH_MAX}).", examples=[20])] = hybrid.SEARCH_LIMIT,
    offset: Annotated[
        int, Field(description=f"Skip the first N results (paging; 0-{SEARCH_DEPTH - 1}).", examples=[20])
    ] = 0,
    min_similarity: Annotated[
        float | None,
        Field(description="Least cosine similarity (0-1) of a vector hit; default: the embedder's measured one.",
              examples=[0.5]),
    ] = None,
) -> Listing:
    """Resolve a name to canonical ids; [] when nothing relevant matches."""
    if not isinstance(limit, int) or not 1 <= limit <= SEARCH_MAX:
        raise InvalidArgument(f"limit must be an integer from 1 to {SEARCH_MAX}; got {limit!r}.", "Example: limit=20.")
    if not isinstance(offset, int) or not 0 <= offset < SEARCH_DEPTH:
        raise InvalidArgument(
            f"offset must be an integer from 0 to {SEARCH_DEPTH - 1}; got {clip(str(offset))}.",
            f"Search ranks the best {SEARCH_DEPTH} matches: to reach others, narrow the query (more words, "
            "node_types).",
        )
    ranked = await hybrid.search_entities(
        ctx.graph, query, node_types, mode=mode, alpha=alpha, limit=SEARCH_DEPTH, min_similarity=min_similarity
    )
    notes = []
    if len(ranked) == SEARCH_DEPTH and offset + limit >= SEARCH_DEPTH:
        notes.append(Truncation(
            reason="search_depth",
            detail=f"Search ranks the best {SEARCH_DEPTH} matches; more entities may match.",
            hint="Narrow the query (more words, node_types) to reach others.",
        ))
    return Listing(ranked[offset:offset + limit], notes, offset, len(ranked))


async def _traversal(
    ctx: ToolContext,
    engine: Callable[..., Awaitable[Traversal]],
    seeds: list[str],
    hops: int,
    filters: dict[str, list[str] | None],
    **options: Any,
) -> Traversal:
    """Run a traversal of the engine (bfs_query, intersect_subgraphs) within the graph's limits, the answer's
    budget and, walked hop by hop, a share of the call's timeout."""
    return await engine(ctx.graph, seeds, hops, **filters, **options, limits=ctx.settings.limits,
                        room=ctx.answer_budget, progress=ctx.progress,
                        time_limit=ctx.settings.timeout * WALK_TIME_SHARE)


async def bfs_query(
    ctx: ToolContext,
    seeds: Annotated[list[str], Field(description="One or more canonical entity ids.", examples=[["FPLX:RAF"]])],
    max_hops: Annotated[int, Field(description="Maximum graph distance from any seed (1-5).", examples=[1])],
    node_types: Types = None,
    predicates: Predicates = None,
    topology_only: TopologyOnly = False,
    exclude_node_types: Exclude = None,
    min_mentions: MinMentions = None,
    limit: Annotated[
        int | None,
        Field(description="Cap the number of nodes returned; 0 answers the counts alone (node_count, edge_count, "
              "schema_summary with counts per type and predicate).", examples=[50]),
    ] = None,
    offset: Annotated[int, Field(description="Skip the first N nodes (paging).", examples=[50])] = 0,
) -> Traversal:
    """Traverse from the seeds."""
    from bfsql.engine.bfs import bfs_query as traverse  # here: a call that does not walk does not load the walks

    filters = {"node_types": node_types, "predicates": predicates, "exclude_node_types": exclude_node_types}
    return await _traversal(ctx, traverse, seeds, max_hops, filters, topology_only=topology_only,
                            min_mentions=min_mentions, limit=limit, offset=offset)


async def describe_entity(
    ctx: ToolContext,
    id: Annotated[str, Field(description="Canonical entity id.", examples=["HGNC:BRAF"])],
) -> EntityRecords:
    """One entity's metadata, flat."""
    nodes, metadata = await gather_or_cancel(ctx.graph.get_nodes([id]), ctx.graph.metadata_for_nodes([id]))
    if id not in nodes:
        raise UnknownEntity([id])
    return EntityRecords([id], {id: nodes[id].entity_type}, {id: dict(metadata.get(id, {}))}, single=True)


DESCRIBE_MAX = 500
"""Most ids one describe_entities call takes."""


async def describe_entities(ctx: ToolContext, ids: Ids) -> EntityRecords:
    """Several entities' metadata."""
    if len(ids) > DESCRIBE_MAX:
        raise InvalidArgument(
            f"describe_entities accepts at most {DESCRIBE_MAX} ids; got {len(ids)}.",
            "Split the ids over several calls.",
        )
    wanted = list(dict.fromkeys(ids))
    nodes, metadata = await gather_or_cancel(ctx.graph.get_nodes(wanted), ctx.graph.metadata_for_nodes(wanted))
    found = [i for i in wanted if i in nodes]
    return EntityRecords(
        found, {i: nodes[i].entity_type for i in found}, {i: dict(metadata.get(i, {})) for i in found},
        missing=[i for i in wanted if i not in nodes],
    )


async def intersect_subgraphs(
    ctx: ToolContext,
    seeds: Annotated[
        list[str], Field(description="Two or more canonical entity ids.", examples=[["HGNC:BRAF", "HGNC:RAF1"]])
    ],
    k: Annotated[int, Field(description="Hop radius (1-5), edges treated as undirected.", examples=[1])],
    node_types: Types = None,
    exclude_node_types: Exclude = None,
    predicates: Predicates = None,
    min_mentions: MinMentions = None,
    topology_only: TopologyOnly = False,
    limit: Annotated[
        int | None,
        Field(description="Cap the number of shared nodes returned, nearest first (no paging); 0 answers the counts "
              "alone.", examples=[50]),
    ] = None,
) -> Traversal:
    """Nodes every seed reaches."""
    from bfsql.engine.intersect import intersect_subgraphs as intersect

    filters = {"node_types": node_types, "predicates": predicates, "exclude_node_types": exclude_node_types}
    return await _traversal(ctx, intersect, seeds, k, filters, topology_only=topology_only, min_mentions=min_mentions,
                            limit=limit)


async def path_query(
    ctx: ToolContext,
    query: Annotated[
        str,
        Field(description='A path query, e.g. "BRAF" -[isa]-> type:Family <-[isa]- type:Gene '
              "(see the tool description for the syntax).", examples=['"BRAF" -[isa]-> type:Family']),
    ],
    k: Annotated[
        int | None, Field(description=f"Entry points, relations per entity and semantic matches kept per hop (1-50). "
                          f"Unset: {DEFAULT_K}, and a name that matches entities exactly enters at those only.",
                          examples=[3])
    ] = None,
    threshold: Annotated[
        float, Field(description="Least similarity (0-1) for a fuzzy relation or semantic match.", examples=[0.5])
    ] = DEFAULT_THRESHOLD,
    max_results: Annotated[
        int, Field(description="Most results returned (1-200).", examples=[20])
    ] = DEFAULT_MAX_RESULTS,
    with_metadata: Annotated[
        bool, Field(description="Give each result's entity its metadata too; default: id, entity_type and name "
                    "only (describe_entities gives the metadata of chosen results).", examples=[True])
    ] = False,
) -> PathQueryResult:
    """Follow a chain of relations."""
    from bfsql.engine.paths import path_query as run_path_query  # here: the path engine loads for path queries only

    return await run_path_query(
        ctx.graph, query, k=k, threshold=threshold, max_results=max_results, limits=ctx.settings.limits,
        time_limit=ctx.settings.timeout * WALK_TIME_SHARE, with_metadata=with_metadata,
    )


EDGES_MAX = 200
"""Most edges one describe_edges call takes."""

EDGE_ITEM_SCHEMA: dict[str, Any] = {"anyOf": [
    {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3},
    {"type": "object", "required": ["subject", "predicate", "object"],
     "properties": {name: {"type": "string"} for name in ("subject", "predicate", "object")}},
]}
"""An edge as describe_edges takes it: a triple, or an edge object as bfs_query answers it."""


def _edge(position: int, item: Any) -> Edge:
    """One asked edge, from a triple or an edge object; :class:`InvalidArgument` saying which forms are taken."""
    if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("subject", "predicate", "object")):
        return Edge(item["subject"], item["predicate"], item["object"])
    if isinstance(item, list | tuple) and len(item) == 3 and all(isinstance(part, str) for part in item):
        return Edge(*item)
    shape = f"a list of {len(item)} item(s)" if isinstance(item, list | tuple) else clip(compact_json(item), 60)
    raise InvalidArgument(
        f"edges[{position}] must be [subject, predicate, object] (three strings) or an object with subject, "
        f"predicate and object; got {shape}.",
        'Example: edges=[["HGNC:BRAF", "isa", "FPLX:RAF"]], or the edges bfs_query answered.',
    )


async def describe_edges(
    ctx: ToolContext,
    edges: Annotated[
        list[Any],
        Field(description="Edges as [subject, predicate, object] triples, or as the {subject, predicate, object} "
              "objects bfs_query answers (other keys, such as metadata, are ignored).",
              examples=[[["HGNC:BRAF", "isa", "FPLX:RAF"]]], json_schema_extra={"items": EDGE_ITEM_SCHEMA}),
    ],
) -> EdgeRecords:
    """Edges' metadata with their provenance."""
    if len(edges) > EDGES_MAX:
        raise InvalidArgument(
            f"describe_edges accepts at most {EDGES_MAX} edges; got {len(edges)}.", "Split them over several calls."
        )
    wanted = list(dict.fromkeys(_edge(i, item) for i, item in enumerate(edges)))
    metadata, provenance = await gather_or_cancel(
        ctx.graph.metadata_for_edges(wanted), ctx.graph.provenance_for_edges(wanted)
    )
    found: dict[tuple[str, str, str], dict[str, Any]] = {e: dict(metadata[e]) for e in wanted if metadata.get(e)}
    for edge, evidence in provenance.items():
        if edge in found and evidence:
            found[edge]["provenance"] = evidence
    return EdgeRecords(list(found), found, missing=[e for e in wanted if e not in found])


class BuiltinTool(NamedTuple):
    """One built-in tool: its function and how the server registers it."""

    fn: Callable[..., Any]
    """The tool (its name is the function's; its description is ``TOOL_DESCRIPTIONS[name]``)."""
    answer: Any
    """The model its answer is validated against."""
    traverses: bool
    """A traversal: its description lists the schema, and it waits for one of its graph's heavy-call slots."""
    own_budget: bool
    """A call may set its own ``max_tokens``."""
    bounded: Bounded | None = None
    """Which of a traversal's calls are cheap enough to need no heavy-call slot."""


BOUNDED_ROWS = 50_000
"""Rows a one-hop bfs_query may read at most (its seeds times ``max_edges_per_node``: a hub's rows past the cap
are not read) and still run without a heavy-call slot: at the defaults, one hop from one or two seeds."""


def _one_hop_from_few(arguments: Mapping[str, Any], settings: ServerSettings) -> bool:
    """A bfs_query whose walk reads at most :data:`BOUNDED_ROWS` rows: one hop from few seeds, without
    min_mentions (which reads every reached node's metadata)."""
    rows = len(set(arguments["seeds"])) * settings.limits.max_edges_per_node
    return arguments["max_hops"] == 1 and arguments.get("min_mentions") is None and rows <= BOUNDED_ROWS


BUILTIN_TOOLS: tuple[BuiltinTool, ...] = (
    BuiltinTool(describe_schema, SchemaDescription, traverses=False, own_budget=False),
    BuiltinTool(search_entities, ListAnswer[EntityStub], traverses=False, own_budget=False),
    BuiltinTool(bfs_query, BfsResult, traverses=True, own_budget=True, bounded=_one_hop_from_few),
    BuiltinTool(describe_entity, dict[str, Any], traverses=False, own_budget=True),
    BuiltinTool(describe_entities, ListAnswer[Node], traverses=False, own_budget=True),
    BuiltinTool(intersect_subgraphs, IntersectionResult, traverses=True, own_budget=True),
    BuiltinTool(path_query, PathQueryResult, traverses=True, own_budget=True),
    BuiltinTool(describe_edges, ListAnswer[ResultEdge], traverses=False, own_budget=True),
)
"""The built-in tools, in the order clients see them."""


def register_builtin_tools(register: RegisterTool) -> None:
    """Register the built-in tools with the server's ``register`` (the callback plugins get from ``register_tools``)."""
    for tool in BUILTIN_TOOLS:
        register(tool.fn, description=TOOL_DESCRIPTIONS[tool.fn.__name__], output=tool.answer,
                 injects_schema=tool.traverses, heavy=tool.traverses, max_tokens=tool.own_budget,
                 bounded=tool.bounded)
