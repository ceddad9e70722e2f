"""The graph ranker of search: entities the graph links to what the query names (seed 003's third ranker).

A query such as ``BRAF inhibitor`` names an entity (``BRAF``) and says something about what
is linked to it (``inhibitor``). The ranker finds the *anchors* (entities whose name or a
synonym is exactly a span of one to three query words, through the backend's lexical search),
hops once from them, and scores each linked entity by the share of the query's words its
neighbourhood explains: a word names a linked anchor, or matches a word of the linking
edge's predicate, or of the entity's own name or type (equal, or one a stem of the other:
``inhibitor`` matches ``INHIBITS``). An entity is a hit only when it explains a word its
anchors do not name themselves: the neighbours of ``BRAF`` are no answer to ``BRAF``.

It runs on every backend through the primitives (``search_entities``, ``get_nodes``,
``metadata_for_nodes``, ``hop``), at a bounded cost: at most :data:`MAX_SPANS` lexical
searches and one hop of at most :data:`MAX_ANCHORS` entities, of which at most
:data:`MAX_EDGES_PER_ANCHOR` edges each are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bfsql.backend import gather_or_cancel
from bfsql.engine.labels import labels_of
from bfsql.graph import Graph
from bfsql.models import EntityStub

__all__ = ["MAX_ANCHORS", "MAX_EDGES_PER_ANCHOR", "MAX_SPANS", "GraphHit", "graph_ranking", "query_words"]

MAX_SPANS = 6
"""Most spans of the query looked up as anchor names (longest first)."""
MAX_ANCHORS = 4
"""Most anchors hopped from."""
MAX_EDGES_PER_ANCHOR = 20_000
"""Most edges of one anchor scored (a hub's first ones, in the order the store gives them)."""
_SPAN_HITS = 5
"""Lexical hits read per span when looking for the entity it names exactly."""
_FUNCTION_WORDS = frozenset(
    "a an and are as at be by for from in is it of on or that the their to was which with".split()
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class GraphHit:
    """An entity the graph ranker found: its stub, its score and how many edges to anchors support it."""

    stub: EntityStub
    score: float
    """The share of the query's words its neighbourhood explains, in (0, 1]."""
    support: int
    """Edges linking it to an anchor."""


def query_words(text: str) -> list[str]:
    """The words a query is scored by: casefolded, without function words, each once."""
    words = [w for w in _WORD.findall(text.casefold()) if w not in _FUNCTION_WORDS]
    return list(dict.fromkeys(words))


def _term_words(text: str) -> set[str]:
    """The words of a predicate, name or type (``subClassOf`` and ``INHIBITS_GENE`` split at their joins)."""
    return {w.casefold() for w in _WORD.findall(_CAMEL.sub(" ", text))}


def _same_word(a: str, b: str) -> bool:
    """Equal, or sharing a stem: a common prefix of at least 4 characters that leaves at most 3 of either."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 4 and len(a) - common <= 3 and len(b) - common <= 3


def _spans(words: list[str]) -> list[str]:
    """Runs of one to three consecutive words, longest first, at most :data:`MAX_SPANS`."""
    spans = [" ".join(words[i : i + n]) for n in (3, 2, 1) for i in range(len(words) - n + 1)]
    return list(dict.fromkeys(spans))[:MAX_SPANS]


async def _anchors(graph: Graph, words: list[str]) -> dict[str, set[str]]:
    """Entities a span of the query names exactly, with the words of that span."""
    spans = _spans(words)
    found = await gather_or_cancel(*(graph.search_entities(span, None, _SPAN_HITS) for span in spans))
    candidates = {stub.id for stubs in found for stub in stubs}
    if not candidates:
        return {}
    metadata = await graph.metadata_for_nodes(sorted(candidates))
    anchors: dict[str, set[str]] = {}
    for span, stubs in zip(spans, found, strict=True):
        for stub in stubs:
            labels = {" ".join(query_words(label)) for label in labels_of(stub.id, metadata.get(stub.id, {}))}
            if span in labels or span == " ".join(query_words(stub.id)):
                anchors.setdefault(stub.id, set()).update(span.split())
    ranked = sorted(anchors.items(), key=lambda item: (-len(item[1]), item[0]))
    return dict(ranked[:MAX_ANCHORS])


async def graph_ranking(graph: Graph, query: str, node_types: list[str] | None, limit: int) -> list[GraphHit]:
    """The graph ranker's hits for ``query``, best first, at most ``limit``; [] when the query names no entity
    or nothing linked to one explains more of it."""
    words = query_words(query)
    if len(words) < 2:
        return []
    anchors = await _anchors(graph, words)
    if not anchors:
        return []
    neighbourhoods = await graph.hop(list(anchors))
    explained: dict[str, set[str]] = {}
    support: dict[str, int] = {}
    stubs: dict[str, EntityStub] = {}
    for anchor, named in anchors.items():
        around = neighbourhoods.get(anchor)
        if around is None:
            continue
        for subject, predicate, obj, other_type, other_name in around.edges[:MAX_EDGES_PER_ANCHOR]:  # plain tuples
            other = obj if subject == anchor else subject
            if other == anchor or other_type is None:
                continue
            if node_types is not None and other_type not in node_types:
                continue
            own = _term_words(predicate) | _term_words(other_type) | _term_words(other_name or other)
            said = set(named) | {w for w in words if w not in named and any(_same_word(w, t) for t in own)}
            explained.setdefault(other, set()).update(said)
            support[other] = support.get(other, 0) + 1
            stubs.setdefault(other, EntityStub(id=other, entity_type=other_type, name=other_name))
    hits = []
    for entity_id, said in explained.items():
        if not any(said <= named for named in anchors.values()):
            hits.append(GraphHit(stubs[entity_id], round(len(said) / len(words), 6), support[entity_id]))
    hits.sort(key=lambda h: (-h.score, -h.support, h.stub.id))
    return hits[:limit]
