"""The texts a client reads: server instructions, tool descriptions, usage notes."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_NEXT_STEPS",
    "SERVER_INSTRUCTIONS",
    "TOOL_DESCRIPTIONS",
    "TOOL_USAGE_NOTES",
    "graphs_injection",
    "schema_injection",
]

SERVER_INSTRUCTIONS = """\
This server exposes a knowledge graph through the BFS-QL tools.
Workflow: describe_schema -> search_entities (resolve names to canonical ids) ->
bfs_query(seeds, max_hops=1, topology_only=true) to survey -> describe_entities on
interesting stubs -> filtered bfs_query (node_types / predicates from schema_summary).
Use intersect_subgraphs for "what do all of these share?", and path_query to follow a
chain of relations in one call, e.g. "BRAF" -[isa]-> type:Family <-[isa]- type:Gene.
Every answer is one JSON object; lists come under "items" with their page beside them.
Answers are kept within a size budget: when a result says "truncated", follow its hint
(e.g. the next offset)."""

DEFAULT_NEXT_STEPS = """\
1. search_entities(query) to resolve each name you care about to a canonical id.
2. bfs_query(seeds=[id], max_hops=1, topology_only=true) to survey the neighbourhood.
3. Read schema_summary; call describe_entities on stubs that matter.
4. Re-query with node_types / predicates to get full detail only where needed."""

TOOL_USAGE_NOTES = """\
- Ids are canonical ids from search_entities or earlier results; never guess them.
- bfs_query: follows edges in both directions. node_types / predicates choose which
  items carry full metadata; non-matching items still appear, as stubs. Only
  exclude_node_types (and min_mentions) remove items. topology_only=true returns ids,
  types and bare triples only: the cheapest survey.
- limit/offset page through nodes in a stable order (distance, then id); node_count
  and edge_count always describe the whole traversal. Each edge is returned with the
  page of its later endpoint, so paging never repeats an edge.
- Counting ("how many diseases show phenotype X?", "how big is this neighbourhood?"):
  call bfs_query with limit=0 and read schema_summary.entity_type_counts (nodes by
  type) and predicate_counts (edges by predicate): exact counts of the whole
  traversal (they add up to node_count and edge_count), with no nodes listed, at the
  cost of the walk alone. Never count the ids of a page: it may be cut. (An answer
  that lists every node and edge leaves the counts out: its lists are complete.) Only a
  truncated note max_edges_per_node (a hub's edges not all followed), max_walk_nodes
  or time_limit makes the counts lower bounds; it says "at least N".
- intersect_subgraphs: nodes within k undirected hops of every seed; no paging, but
  limit caps the shared nodes listed (nearest first) and limit=0 gives the counts alone.
- describe_schema may give entity_type_counts, predicate_counts and hubs (the most
  connected entities) for the whole graph; counts_exact=false marks estimates.
- search_entities: mode = exact | lexical | vector | hybrid | rrf (default: the best
  the graph supports; rrf adds a graph ranker: "nutlin inhibits" finds what Nutlin-3
  inhibits); each hit has a score and the rankers that found it. The answer is
  {"page": {offset, returned, total, next_offset}, "items": [hits]}: call again with
  offset=next_offset for more.
- path_query: a chain "name" or @id, then edges -[terms]-> / <-[terms]- ([*] = any
  relation), each optionally followed by type:T, @id or "text". -[isa*]-> walks isa
  edges transitively in one call (all ancestors; <-[isa*]- all descendants), each result
  with its depth. A result's entity is id, entity_type and name (with_metadata=true adds
  its metadata). Empty answers explain why in metadata (reason, available_relations, hint).
- describe_entity / describe_entities: full records for stubs. Unknown ids are
  an error (describe_entity) or listed in "unknown_ids" beside "items" (describe_entities).
- Type and predicate filters match ignoring case.
- Stubs carry the entity's name when the graph has one. Answers fit a size budget
  (max_tokens, per call or the server's): far nodes lose detail first (clipped
  values, then named stubs, then bare stubs), then nodes are cut with an offset to
  continue. "truncated" says what was done to how many items and how to get the
  rest; "warnings" flag unknown seeds or filter values.
- Traversals carry no edge provenance; describe_edges returns it for given edges."""

PATH_QUERY_DESCRIPTION = """Follow a chain of relations in one call (path query language). A query is an entry point
followed by up to 5 edges, each optionally followed by a filter:
  entry:  "text" (search by name, top k matches) | @id (exact canonical id; @"id with spaces")
  edge:   -[terms]-> outgoing | <-[terms]- incoming; terms are fuzzy-matched to the graph's
          predicates ([isa, partof]); a term equal to a predicate matches it exactly; [*] = any
  closure: a quantifier after the terms walks them transitively: -[isa*]-> (1 or more: all
          ancestors; <-[isa*]- all descendants), *3 (exactly 3), *2..4, *..4, *2.. (at most 50
          deep); each entity once, at its least depth, given as the result's depth
  filter: type:T (entity type, case-insensitive) | @id | "text" (top k most similar) | nothing
Example: "BRAF" -[isa]-> type:Family <-[isa]- type:Gene  (genes in BRAF's families).
Returns results (entity: id, entity_type, name; path of entity/edge steps; score = product of
step scores; an edge step without a score matched exactly) and metadata; when nothing is
found, metadata says where and why (no_entry_point; stopped_at_hop with reason and
available_relations) and how to fix the query. Entities come without their metadata:
with_metadata=true adds it, or call describe_entities on the results you need.
k (default 3; unset, a name matching an entity exactly enters there only), threshold (0.5)
and max_results (20) tune it. [] is a syntax error: use [*]."""

TOOL_DESCRIPTIONS = {
    "describe_schema": "Orient: what the graph contains — description, entity types, predicates, "
    "and workflow advice (next_steps); where the store can say them, how many entities of each type and edges "
    "of each predicate, and the biggest hubs. Call first.",
    "search_entities": "Resolve a name, alias or partial name to canonical entity ids (ranked stubs with "
    "id, entity_type, name, score) under items, with the page beside them (total matches, next_offset). Always "
    "call before bfs_query unless you already have an id. node_types restricts the types returned.",
    "bfs_query": "Traverse: the union of the seeds' neighbourhoods up to max_hops (1-5; 1-3 typical), "
    "edges followed in both directions. node_types/predicates choose full detail (others become stubs); "
    "topology_only=true returns the bare structure; exclude_node_types removes types entirely; "
    "min_mentions drops rarely mentioned nodes; limit/offset page through nodes. When the answer does not list "
    "every node and edge (a page, a cut, limit=0), schema_summary counts the whole traversal's nodes by type "
    "(entity_type_counts) and edges by predicate (predicate_counts); limit=0 answers those counts alone, without "
    "nodes: use it for 'how many X' questions and to size a neighbourhood first.",
    "describe_entity": "Expand one stub: the entity's id, entity_type and all metadata as one flat object.",
    "describe_entities": "Expand several stubs in one call: a list of full nodes, in the order asked. Ids the "
    "graph does not know are listed in unknown_ids, beside the items.",
    "intersect_subgraphs": "Intersect: only nodes within k undirected hops (1-5) of every seed (2 or more), "
    "with the edges among them, paths (per shared node, the edges of a shortest path from each seed, in seed "
    "order) for the nearest, and the seeds and path nodes as context stubs. Use for 'what do all of these "
    "share?'. Same detail filters as bfs_query; no paging: limit caps the shared nodes "
    "listed (nearest first), limit=0 answers the counts alone (schema_summary.entity_type_counts).",
    "path_query": PATH_QUERY_DESCRIPTION,
    "describe_edges": "Expand edges: the full metadata of given edges ([subject, predicate, object] triples, or "
    "the edge objects bfs_query answers), with the provenance (evidence text, documents) that traversals leave "
    "out. Edges the graph does not have are listed in unknown_edges, beside the items.",
}

INJECTION_MAX_TYPES = 20
INJECTION_MAX_PREDICATES = 30


def schema_injection(entity_types: list[str], predicates: list[str]) -> str | None:
    """The text appended to traversal tool descriptions when the schema is small enough."""
    if len(entity_types) > INJECTION_MAX_TYPES or len(predicates) > INJECTION_MAX_PREDICATES:
        return None
    if not entity_types and not predicates:
        return None
    return (
        "\n\nValid node_types for this graph: "
        + (", ".join(entity_types) or "(none)")
        + ".\nValid predicates for this graph: "
        + (", ".join(predicates) or "(none)")
        + "."
    )


def graphs_injection(served: Any, with_schema: bool = False) -> str:
    """The text naming a server's graphs (for its instructions, or with each small schema for tool descriptions)."""
    lines = [f"\n\nThis server serves several graphs; pass graph=NAME to choose one (default: {served[0].name})."]
    for entry in served:
        about = f"- {entry.name} ({entry.backend}{', default' if entry is served[0] else ''})"
        about += f": {entry.shown_description}" if entry.shown_description else ""
        if with_schema:
            types, preds = entry.schema
            if entry.graph is None:
                about += " [unavailable]"
            elif len(types) <= INJECTION_MAX_TYPES and len(preds) <= INJECTION_MAX_PREDICATES:
                about += f". node_types: {', '.join(types) or '(none)'}; predicates: {', '.join(preds) or '(none)'}"
            else:
                about += f". Large schema: call describe_schema with graph={entry.name!r}"
        lines.append(about + ".")
    return "\n".join(lines)
