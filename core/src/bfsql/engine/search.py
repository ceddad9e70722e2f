"""Honest entity search: the rankings a backend can give, each kept to its relevant hits, fused.

Rankers (docs/search.md states the rules in full):

* **lexical** — the backend's ``search_entities`` (BM25, full-text, trigram, ILIKE,
  CONTAINS: whatever the store has). Every backend has it. Each hit is scored here, the
  same way for every backend, by how its name or a synonym matches the query
  (:func:`lexical_score`): 1.0 for an exact (case-insensitive) match.
* **vector** — the backend's ``vector_search`` on the embedding of the query, when the
  backend has entity vectors. Hits whose cosine is below the embedder's
  ``min_similarity`` (or the caller's) are dropped: a query that means nothing in the
  graph gets no vector hit.

* **graph** — entities the graph links to what the query names (``BRAF inhibitor``: what
  is linked to BRAF by a predicate like ``inhibits``), through the primitives, on every
  backend (:mod:`bfsql.engine.graph_ranker`).

Modes: ``exact``, ``lexical``, ``vector``, ``hybrid`` (``alpha * vector_score +
(1 - alpha) * lexical_score``, 0 for a ranker that did not find the entity) and ``rrf``
(seed 003's multi mode: reciprocal rank fusion of lexical, graph and, with vectors, vector,
``sum 1 / (60 + rank)``). Except in ``vector`` mode, exact matches come first with score 1.0.
Fusion only ever combines hits some ranker found relevant, so nothing relevant gives ``[]``.
The default is ``hybrid`` when the backend has vectors, else ``lexical``.

Cost: the backend sees at most :data:`STORE_TERMS` words and :data:`STORE_CHARS`
characters of the query (:func:`store_text`), whatever its length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from bfsql.backend import gather_or_cancel
from bfsql.embedders import min_similarity as embedder_min_similarity
from bfsql.engine.filters import match_names
from bfsql.engine.graph_ranker import graph_ranking
from bfsql.engine.labels import labels_of
from bfsql.errors import InvalidArgument, clip
from bfsql.graph import Graph
from bfsql.models import EntityStub

__all__ = [
    "DEFAULT_ALPHA",
    "MAX_QUERY_CHARS",
    "RRF_K",
    "SEARCH_LIMIT",
    "SEARCH_MODES",
    "STORE_CHARS",
    "STORE_TERMS",
    "SearchMode",
    "available_modes",
    "check_query",
    "default_mode",
    "labels_of",
    "lexical_score",
    "search_entities",
    "store_text",
]

SearchMode = Literal["exact", "lexical", "vector", "hybrid", "rrf"]
SEARCH_MODES: tuple[str, ...] = ("exact", "lexical", "vector", "hybrid", "rrf")
DEFAULT_ALPHA = 0.5
"""Weight of the vector ranker in ``hybrid`` mode (seed 003's default)."""
RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al., 2009)."""
SEARCH_LIMIT = 20
"""Most stubs a search returns by default."""
MAX_QUERY_CHARS = 1000
"""Longest search query: a name, not a text."""
STORE_TERMS = 12
"""Most words of a query sent to the backend's lexical search."""
STORE_CHARS = 200
"""Most characters of a query sent to the backend's lexical search (and embedded)."""


def available_modes(graph: Graph) -> list[str]:
    """The modes this graph's backend supports, in the order of :data:`SEARCH_MODES`."""
    if graph.has_vector_search:
        return list(SEARCH_MODES)
    return ["exact", "lexical", "rrf"]


def default_mode(graph: Graph) -> str:
    """The best mode the backend supports: ``hybrid`` with vectors, else ``lexical``."""
    return "hybrid" if graph.has_vector_search else "lexical"


def _check_unit(name: str, value: object, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise InvalidArgument(f"{name} must be a number from 0 to 1; got {value!r}.", hint)
    return float(value)


def check_mode(graph: Graph, mode: str | None, alpha: float) -> str:
    """The mode to use; :class:`InvalidArgument` for an unknown or unsupported mode or a bad alpha."""
    _check_unit(
        "alpha", alpha, "alpha=1 ranks by vectors only, alpha=0 by the lexical ranker only; 0.5 weighs them equally."
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
            f"Search mode {mode!r} needs entity vectors, which this graph does not have. "
            f"Available modes: {', '.join(available)}.",
            "Use mode='lexical' (or omit mode). A sqlite store gets entity vectors from "
            "'bfsql load --embedder NAME'; other backends document how to enable vectors.",
        )
    return mode


def check_query(query: str) -> str:
    """The query, if it is one; :class:`InvalidArgument` for an empty, overlong or letterless one.

    Letterless covers punctuation-only, NUL-only and control-character queries: nothing in
    them can match a name, so they are refused the same way on every backend.
    """
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


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_WORD = re.compile(r"\w+", re.UNICODE)


def store_text(query: str) -> str:
    """What the backend is asked for: the query without control characters, cut to its first
    :data:`STORE_TERMS` words and :data:`STORE_CHARS` characters (a bound on any store's cost)."""
    text = " ".join(_CONTROL.sub(" ", query).split())
    words = text.split(" ")
    if len(words) > STORE_TERMS:
        text = " ".join(words[:STORE_TERMS])
    return text[:STORE_CHARS].strip()


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def lexical_score(query: str, entity_id: str, labels: list[str]) -> float:
    """How well ``query`` matches an entity's id or labels, in [0, 1], best label wins.

    1.0: the id, name or a synonym equals the query (case-insensitively). 0.5-0.9: every
    query word is a word of the label (the last may be a prefix), more the larger the share
    of the label's words matched. 0.2-0.5: the label contains the query or some of its
    words, more the larger the share of the label covered. 0.2: the backend found the entity
    but no label shows why (e.g. stemming, an unlisted field).
    """
    q = " ".join(query.split()).casefold()
    if entity_id.casefold() == q or any(" ".join(label.split()).casefold() == q for label in labels):
        return 1.0
    q_words = _words(q)
    best = 0.2
    for label in labels:
        text = label.casefold()
        words = _words(text)
        if not words or not q_words:
            continue
        matched = [
            w for i, w in enumerate(q_words)
            if w in words or (i == len(q_words) - 1 and any(lw.startswith(w) for lw in words))
        ]
        if len(matched) == len(q_words):
            best = max(best, 0.5 + 0.4 * min(1.0, len(q_words) / len(words)))
        elif q in text:
            best = max(best, 0.2 + 0.3 * len(q) / len(text))
        elif matched:
            best = max(best, 0.2 + 0.3 * sum(map(len, matched)) / len(text))
    return round(min(best, 0.9), 6)


@dataclass
class _Hit:
    stub: EntityStub
    rank: dict[str, int] = field(default_factory=dict)
    """1-based rank of the hit in each ranker's list that has it."""
    lexical: float | None = None
    vector: float | None = None
    graph: float | None = None


def _unique(stubs: Iterable[EntityStub]) -> list[EntityStub]:
    seen: dict[str, EntityStub] = {}
    for stub in stubs:
        known = seen.get(stub.id)
        if known is None:
            seen[stub.id] = stub
        elif known.name is None and stub.name is not None:
            seen[stub.id] = known.model_copy(update={"name": stub.name})
    return list(seen.values())


async def _lexical(graph: Graph, query: str, text: str, node_types: list[str] | None, limit: int) -> list[_Hit]:
    """The backend's lexical hits, each scored by :func:`lexical_score`; exact matches (and the
    entity whose id is the query) first, then by score, then in the backend's order."""
    found, by_id = await gather_or_cancel(
        graph.search_entities(text, node_types, limit), graph.get_nodes([query.strip()])
    )
    stubs = _unique(found)
    for entity_id, node in by_id.items():
        if (node_types is None or node.entity_type in node_types) and entity_id not in {s.id for s in stubs}:
            stubs.insert(0, EntityStub(id=entity_id, entity_type=node.entity_type, name=node.name))
    if not stubs:
        return []
    metadata = await graph.metadata_for_nodes([s.id for s in stubs])
    hits = []
    for position, stub in enumerate(stubs, start=1):
        score = lexical_score(query, stub.id, labels_of(stub.id, metadata.get(stub.id, {})))
        hits.append((-score, position, _Hit(stub, {"lexical": position}, lexical=score)))
    hits.sort(key=lambda item: (item[0], item[1]))
    return [hit for _, _, hit in hits[:limit]]


async def _vector(
    graph: Graph, text: str, node_types: list[str] | None, limit: int, least: float
) -> list[_Hit]:
    """The backend's nearest entities whose cosine is at least ``least``."""
    await graph.bind_embedder()
    (vector,) = await graph.embed([text])
    nearest = _unique(await graph.vector_search(vector, node_types, limit))
    return [
        _Hit(stub, {"vector": position}, vector=round(float(stub.score), 6))
        for position, stub in enumerate(nearest, start=1)
        if isinstance(stub.score, int | float) and stub.score >= least
    ]


def _fuse(lists: dict[str, list[_Hit]], mode: str, alpha: float) -> list[tuple[float, _Hit]]:
    """Hits of every list merged by id and scored by ``mode``, best first."""
    merged: dict[str, _Hit] = {}
    for hits in lists.values():
        for hit in hits:
            known = merged.get(hit.stub.id)
            if known is None:
                merged[hit.stub.id] = _Hit(hit.stub, dict(hit.rank), hit.lexical, hit.vector, hit.graph)
                continue
            known.rank.update(hit.rank)
            known.lexical = known.lexical if hit.lexical is None else hit.lexical
            known.vector = known.vector if hit.vector is None else hit.vector
            known.graph = known.graph if hit.graph is None else hit.graph
            if known.stub.name is None and hit.stub.name is not None:
                known.stub = hit.stub
    scored = []
    for hit in merged.values():
        if hit.lexical == 1.0:
            score = 1.0
        elif mode == "rrf":
            score = sum(1.0 / (RRF_K + rank) for rank in hit.rank.values())
        else:
            score = alpha * (hit.vector or 0.0) + (1.0 - alpha) * (hit.lexical or 0.0)
        scored.append((score, hit))
    order = {ranker: i for i, ranker in enumerate(lists)}
    scored.sort(
        key=lambda item: (
            -item[0],
            min((rank, order[ranker]) for ranker, rank in item[1].rank.items()),
            item[1].stub.id,
        )
    )
    return scored


def _stub(hit: _Hit, score: float) -> EntityStub:
    rankers = [r for r in ("lexical", "vector", "graph") if r in hit.rank]
    return hit.stub.model_copy(
        update={
            "score": round(score, 6),
            "rankers": rankers,
            "lexical_score": hit.lexical,
            "vector_score": hit.vector,
            "graph_score": hit.graph,
        }
    )


async def _graph(graph: Graph, query: str, node_types: list[str] | None, limit: int) -> list[_Hit]:
    """The graph ranker's hits (see :mod:`bfsql.engine.graph_ranker`)."""
    return [
        _Hit(hit.stub, {"graph": position}, graph=hit.score)
        for position, hit in enumerate(await graph_ranking(graph, query, node_types, limit), start=1)
    ]


async def search_entities(
    graph: Graph,
    query: str,
    node_types: list[str] | None = None,
    *,
    mode: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    limit: int = SEARCH_LIMIT,
    min_similarity: float | None = None,
) -> list[EntityStub]:
    """Ranked stubs for ``query`` in ``mode`` (default: the best the backend supports); ``[]`` when
    nothing relevant matches.

    Every stub carries ``score``, ``rankers`` (which rankers found it) and each ranker's own
    score (``lexical_score``, ``vector_score``). ``min_similarity`` is the least cosine of a
    vector hit (default: the embedder's own, see :func:`bfsql.embedders.min_similarity`).
    """
    chosen = check_mode(graph, mode, alpha)
    check_query(query)
    if min_similarity is not None:
        min_similarity = _check_unit(
            "min_similarity", min_similarity, "It is the least cosine a vector hit needs; omit it for the default."
        )
    if node_types == []:
        return []
    if node_types is not None:  # one case rule for every filter: "paper" names the type Paper
        node_types = sorted(match_names(frozenset(node_types), await graph.entity_types())[0])
    text = store_text(query)
    if chosen == "exact":
        hits = await _lexical(graph, query, text, node_types, limit)
        return [_stub(h, 1.0).model_copy(update={"rankers": ["exact"]}) for h in hits if h.lexical == 1.0]
    if chosen == "lexical":
        return [_stub(h, h.lexical or 0.0) for h in await _lexical(graph, query, text, node_types, limit)]
    least = embedder_min_similarity(graph.embedder) if min_similarity is None else min_similarity
    if chosen == "vector":
        return [_stub(h, h.vector or 0.0) for h in await _vector(graph, text, node_types, limit, least)]
    rankers = {"lexical": _lexical(graph, query, text, node_types, limit)}
    if graph.has_vector_search:
        rankers["vector"] = _vector(graph, text, node_types, limit, least)
    if chosen == "rrf":
        rankers["graph"] = _graph(graph, text, node_types, limit)
    found = await gather_or_cancel(*rankers.values())
    fused = _fuse(dict(zip(rankers, found, strict=True)), chosen, float(alpha))
    return [_stub(hit, score) for score, hit in fused[:limit]]
