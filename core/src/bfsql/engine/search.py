"""Hybrid entity search: the rankings a backend can give, fused (see docs/search.md).

Rankers:

* **lexical** — the backend's ``search_entities`` (BM25, full-text, ILIKE, CONTAINS:
  whatever the store has). Every backend has it.
* **vector** — the backend's ``vector_search`` on the embedding of the query, when the
  backend has entity vectors (:func:`bfsql.backend.has_vector_search`).

Modes: ``exact`` (id, name or synonym equal to the query, case-insensitive),
``lexical``, ``vector``, ``hybrid`` (``alpha * vector + (1 - alpha) * lexical`` over
min-max-normalised scores) and ``rrf`` (reciprocal rank fusion, ``sum 1 / (60 + rank)``).
The default is ``hybrid`` when the backend has vectors, else ``lexical``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from bfsql.backend import gather_or_cancel
from bfsql.errors import InvalidArgument, clip
from bfsql.graph import Graph
from bfsql.models import EntityStub

__all__ = [
    "DEFAULT_ALPHA",
    "RRF_K",
    "SEARCH_LIMIT",
    "SEARCH_MODES",
    "SearchMode",
    "available_modes",
    "default_mode",
    "labels_of",
    "min_max",
    "rank_scores",
    "search_entities",
]

SearchMode = Literal["exact", "lexical", "vector", "hybrid", "rrf"]
SEARCH_MODES: tuple[str, ...] = ("exact", "lexical", "vector", "hybrid", "rrf")
VECTOR_MODES = frozenset({"vector", "hybrid", "rrf"})
DEFAULT_ALPHA = 0.5
"""Weight of the vector ranker in ``hybrid`` mode (seed 003's default)."""
RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al., 2009)."""
SEARCH_LIMIT = 20
"""Most stubs a search returns."""
MAX_LABELS = 20
"""Synonyms per entity considered by exact matching and semantic scoring."""


def available_modes(graph: Graph) -> list[str]:
    """The modes this graph's backend supports, in the order of :data:`SEARCH_MODES`."""
    if graph.has_vector_search:
        return list(SEARCH_MODES)
    return ["exact", "lexical"]


def default_mode(graph: Graph) -> str:
    """The best mode the backend supports: ``hybrid`` with vectors, else ``lexical``."""
    return "hybrid" if graph.has_vector_search else "lexical"


def check_mode(graph: Graph, mode: str | None, alpha: float) -> str:
    """The mode to use; :class:`InvalidArgument` for an unknown or unsupported mode or a bad alpha."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 <= float(alpha) <= 1.0:
        raise InvalidArgument(
            f"alpha must be a number from 0 to 1; got {alpha!r}.",
            "alpha=1 ranks by vectors only, alpha=0 by the lexical ranker only; 0.5 weighs them equally.",
        )
    if mode is None:
        return default_mode(graph)
    available = available_modes(graph)
    if mode not in SEARCH_MODES:
        raise InvalidArgument(
            f"Unknown search mode {mode!r}.", f"Use one of: {', '.join(available)} (this graph's modes)."
        )
    if mode not in available:
        raise InvalidArgument(
            f"Search mode {mode!r} needs vector search, which this graph's backend "
            f"({type(graph.backend).__name__}) does not offer. Available modes: {', '.join(available)}.",
            "Use mode='lexical' (or omit mode). A sqlite store gets entity vectors from "
            "'bfsql load --embedder NAME'; other backends document how to enable vectors.",
        )
    return mode


MAX_QUERY_CHARS = 1000
"""Longest search query: a name, not a text."""


def check_query(query: str) -> str:
    """The query, if it is one; :class:`InvalidArgument` for an empty, overlong or letterless one."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query must not be empty.", 'Pass a name or alias, e.g. query="BRAF".')
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"query is longer than {MAX_QUERY_CHARS} characters ({len(query)}).", "Search for a name, not a text."
        )
    if not any(ch.isalnum() for ch in query):
        raise InvalidArgument(
            f"query {clip(query)!r} has no letter or digit to search for.", 'Pass a name or alias, e.g. query="BRAF".'
        )
    return query


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """Scores scaled to [0, 1] by ``(s - min) / (max - min)``; all equal (or one) -> 1.0."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def rank_scores(stubs: list[EntityStub]) -> dict[str, float]:
    """A ranker's scores by id: its own when every stub has one, else ``(n - i) / n`` by rank i."""
    if stubs and all(isinstance(s.score, int | float) for s in stubs):
        return {s.id: float(s.score) for s in reversed(stubs)}  # type: ignore[arg-type]
    n = len(stubs)
    scores: dict[str, float] = {}
    for i, stub in enumerate(stubs):
        scores.setdefault(stub.id, (n - i) / n)
    return scores


def labels_of(entity_id: str, metadata: dict[str, Any], limit: int = MAX_LABELS) -> list[str]:
    """The names an entity goes by: its ``name`` (else its id) and up to ``limit`` synonyms."""
    labels: list[str] = []
    name = metadata.get("name")
    labels.append(name if isinstance(name, str) and name.strip() else entity_id)
    synonyms = metadata.get("synonyms")
    if isinstance(synonyms, list):
        labels.extend(s for s in synonyms[:limit] if isinstance(s, str) and s.strip())
    return list(dict.fromkeys(labels))


def _unique(stubs: Iterable[EntityStub]) -> list[EntityStub]:
    seen: dict[str, EntityStub] = {}
    for stub in stubs:
        seen.setdefault(stub.id, stub)
    return list(seen.values())


async def _exact(graph: Graph, query: str, node_types: list[str] | None, limit: int) -> list[EntityStub]:
    """Entities whose id, name or a synonym equals the query (case-insensitively)."""
    q = query.strip().casefold()
    lexical, by_id = await gather_or_cancel(graph.search_entities(query, node_types), graph.get_nodes([query.strip()]))
    candidates = _unique(lexical)
    id_hits = {i: n for i, n in by_id.items() if node_types is None or n.entity_type in node_types}
    metadata = await graph.metadata_for_nodes(list(dict.fromkeys([*id_hits, *(c.id for c in candidates)])))
    ranked: list[tuple[int, int, EntityStub]] = []
    for entity_id, node in id_hits.items():
        name = metadata.get(entity_id, {}).get("name")
        stub = EntityStub(id=entity_id, entity_type=node.entity_type, name=name if isinstance(name, str) else None)
        ranked.append((0, 0, stub))
    for position, stub in enumerate(candidates):
        meta = metadata.get(stub.id, {})
        labels = labels_of(stub.id, meta)
        name = meta.get("name")
        if stub.id.casefold() == q:
            tier = 0
        elif isinstance(name, str) and name.casefold() == q:
            tier = 1
        elif any(label.casefold() == q for label in labels):
            tier = 2
        else:
            continue
        ranked.append((tier, position + 1, stub))
    ranked.sort(key=lambda item: (item[0], item[1]))
    out = _unique(stub for _, _, stub in ranked)[:limit]
    return [s.model_copy(update={"score": 1.0, "rankers": ["exact"]}) for s in out]


def _fuse(
    lists: dict[str, list[EntityStub]], mode: str, alpha: float, limit: int
) -> list[EntityStub]:
    stubs: dict[str, EntityStub] = {}
    for ranked in lists.values():
        for stub in ranked:
            known = stubs.get(stub.id)
            if known is None or (known.name is None and stub.name is not None):
                stubs[stub.id] = stub
    fused: dict[str, float] = dict.fromkeys(stubs, 0.0)
    rankers: dict[str, list[str]] = {key: [] for key in stubs}
    first_rank: dict[str, tuple[int, int]] = {}
    for order, (ranker, ranked) in enumerate(lists.items()):
        if mode == "rrf":
            seen: set[str] = set()
            for rank, stub in enumerate(ranked, start=1):
                if stub.id in seen:
                    continue
                seen.add(stub.id)
                fused[stub.id] += 1.0 / (RRF_K + rank)
                rankers[stub.id].append(ranker)
                first_rank.setdefault(stub.id, (rank, order))
        else:
            weight = alpha if ranker == "vector" else 1.0 - alpha
            normalised = min_max(rank_scores(ranked))
            for rank, stub in enumerate(_unique(ranked), start=1):
                fused[stub.id] += weight * normalised[stub.id]
                rankers[stub.id].append(ranker)
                best = first_rank.get(stub.id)
                if best is None or rank < best[0]:
                    first_rank[stub.id] = (rank, order)
    ordered = sorted(stubs, key=lambda key: (-fused[key], first_rank[key], key))[:limit]
    return [
        stubs[key].model_copy(update={"score": round(fused[key], 6), "rankers": rankers[key]}) for key in ordered
    ]


async def search_entities(
    graph: Graph,
    query: str,
    node_types: list[str] | None = None,
    *,
    mode: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    limit: int = SEARCH_LIMIT,
) -> list[EntityStub]:
    """Ranked stubs for ``query`` in ``mode`` (default: the best the backend supports).

    Every stub carries ``rankers`` (which rankers found it) and, except in ``lexical``
    mode with a backend that gives no scores, a ``score``.
    """
    chosen = check_mode(graph, mode, alpha)
    check_query(query)
    if node_types == []:
        return []
    if chosen == "exact":
        return await _exact(graph, query, node_types, limit)
    if chosen == "lexical":
        stubs = _unique(await graph.search_entities(query, node_types, limit))[:limit]
        return [s.model_copy(update={"rankers": ["lexical"]}) for s in stubs]
    await graph.bind_embedder()
    (vector,) = await graph.embed([query])
    if chosen == "vector":
        stubs = _unique(await graph.vector_search(vector, node_types, limit))[:limit]
        return [
            s.model_copy(update={"score": None if s.score is None else round(s.score, 6), "rankers": ["vector"]})
            for s in stubs
        ]
    lexical, nearest = await gather_or_cancel(
        graph.search_entities(query, node_types), graph.vector_search(vector, node_types, limit)
    )
    return _fuse({"lexical": list(lexical), "vector": list(nearest)}, chosen, float(alpha), limit)
