"""Reading JSON-LD documents of the REST shape into ids, types, edges and metadata.

Structural fields are recognised by what they mean, not only by how they are spelled:
a key counts as the member list if it expands to ``hydra:member`` (or is ``@graph``, or
is spelled ``relations``/``results``/``member``…), as a triple's subject if it expands
to ``rdf:subject`` (or is spelled ``subject``), and so on. Keyword aliases (``"id":
"@id"``) are honoured.

Without a client context, ids, types, predicates and metadata are returned as the
document writes them. With one (``--context``), types, predicates and metadata keys are
expanded with the document's context and compacted with the client's, and value objects
are unwrapped. Ids always stay as the API writes them, because they go back into its
URLs; only an id that is the API's own entity URL is mapped back to the plain id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any
from urllib.parse import urljoin

from bfsql import Edge, EntityStub, NodeInfo
from bfsql_jsonld.context import (
    ActiveContext,
    ContextLoader,
    Term,
    compact_iri,
    context_refs,
    document_refs,
    expand_iri,
    process_context,
)
from bfsql_jsonld.errors import MalformedResponse
from bfsql_jsonld.urls import UrlTemplate, shown

__all__ = ["Field", "Frame", "Reader", "Schema", "VectorEndpoint"]

HYDRA = "http://www.w3.org/ns/hydra/core#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"


@dataclass(frozen=True)
class Field:
    """A structural field: the IRIs (or keywords) it expands to, and its plain spellings."""

    iris: frozenset[str]
    names: frozenset[str]


def _field(iris: set[str], names: set[str]) -> Field:
    return Field(frozenset(iris), frozenset(names))


ID = _field({"@id"}, {"id"})
TYPE = _field({"@type"}, {"entity_type", "type"})
MEMBERS = _field({HYDRA + "member", "@graph"}, {"relations", "results", "member", "members", "items", "entities"})
SUBJECT = _field({RDF + "subject"}, {"subject"})
PREDICATE = _field({RDF + "predicate"}, {"predicate"})
OBJECT = _field({RDF + "object"}, {"object"})
NAME = _field(
    {"http://schema.org/name", "https://schema.org/name", RDFS + "label", SKOS + "prefLabel"}, {"name", "label"}
)
SCORE = _field(set(), {"score"})
NEXT = _field({HYDRA + "next"}, {"next"})
VIEW = _field({HYDRA + "view"}, {"view"})
METADATA = _field(set(), {"metadata"})


@dataclass(frozen=True)
class Frame:
    """A JSON object read under its active JSON-LD context; ``url`` is the document's."""

    obj: dict[str, Any]
    ctx: ActiveContext
    url: str


@dataclass(frozen=True)
class VectorEndpoint:
    """Where the API answers vector searches, and the embedder its vectors come from."""

    url: str
    embedder: str
    dimension: int


@dataclass
class Schema:
    """What the schema document says: vocabulary, description, capabilities, batch endpoints."""

    entity_types: list[str]
    predicates: list[str]
    description: str | None = None
    next_steps: str | None = None
    comprehensive: bool = True
    capabilities: dict[str, bool] | None = None
    batch: dict[str, str] | None = None
    """Batch endpoint URLs (absolute) by name: ``entities``, ``relations``, ``relation_metadata``."""
    max_batch: int = 500
    spelling: dict[str, str] = dataclass_field(default_factory=dict)
    """Client spelling → API spelling of every type and predicate (for query parameters)."""
    vector: VectorEndpoint | None = None


class Reader:
    """Turns fetched JSON-LD documents into frames and frames into bfsql values."""

    def __init__(
        self,
        loader: ContextLoader,
        entity_template: UrlTemplate,
        expand_context: Any = None,
        client_context: Any = None,
    ) -> None:
        self._loader = loader
        self._entity_template = entity_template
        self._expand_context = expand_context
        self.client: ActiveContext | None = None
        self._client_context = client_context

    async def prepare(self) -> None:
        """Resolve the contexts the options reference (the client and expand contexts)."""
        refs = [*context_refs(self._expand_context, None), *context_refs(self._client_context, None)]
        resolved = await self._loader.resolve(refs, "the --context/--expand-context option")
        if self._client_context is not None:
            self.client = process_context(ActiveContext.initial(None), self._client_context, resolved)

    async def document(self, data: Any, url: str, link_context: str | None = None) -> Frame:
        """A fetched document as a frame: its contexts (inline, Link header, --expand-context) resolved."""
        if not isinstance(data, dict):
            raise MalformedResponse(
                f"{shown(url)} answered a JSON {type(data).__name__}, not a JSON-LD object.",
                "Check the URL templates (see docs/backends/jsonld.md).",
            )
        refs = [*context_refs(self._expand_context, url), *document_refs(data, url)]
        if link_context is not None and "@context" not in data:
            refs.append(urljoin(url, link_context))
        resolved = await self._loader.resolve(refs, url)
        ctx = ActiveContext.initial(url)
        if self._expand_context is not None:
            ctx = process_context(ctx, self._expand_context, resolved, base_url=url)
        if link_context is not None and "@context" not in data:
            ctx = process_context(ctx, urljoin(url, link_context), resolved, base_url=url)
        return self._child(data, ctx, url)

    def _child(self, obj: dict[str, Any], ctx: ActiveContext, url: str, term: Term | None = None) -> Frame:
        resolved = self._loader.documents
        if term is not None and term.context is not None:
            ctx = process_context(ctx, term.context, resolved, base_url=url)
        if "@context" in obj:
            ctx = process_context(ctx, obj["@context"], resolved, base_url=url)
        return Frame(obj, ctx, url)

    # -- finding fields --------------------------------------------------------

    @staticmethod
    def _entries(frame: Frame) -> Iterator[tuple[str, str | None, Term | None, Any]]:
        for key, value in frame.obj.items():
            keyword = frame.ctx.keyword_of(key)
            if keyword is not None:
                yield key, keyword, None, value
            else:
                yield key, expand_iri(frame.ctx, key, vocab=True), frame.ctx.terms.get(key), value

    def find(self, frame: Frame, field: Field) -> tuple[str, Term | None, Any] | None:
        """The entry for ``field``: by meaning (expanded IRI) first, then by plain spelling."""
        entries = list(self._entries(frame))
        for key, iri, term, value in entries:
            if iri in field.iris:
                return key, term, value
        for key, _iri, term, value in entries:
            if key in field.names:
                return key, term, value
        return None

    def members(self, frame: Frame) -> list[Frame]:
        """The member objects of a list document (relations, search results, batch answers)."""
        hit = self.find(frame, MEMBERS)
        if hit is None:
            raise MalformedResponse(
                f"{shown(frame.url)} has no member list (hydra:member, @graph or 'relations').",
                "Check the URL templates (see docs/backends/jsonld.md).",
            )
        _key, term, value = hit
        items = value if isinstance(value, list) else [value]
        if isinstance(value, dict) and "@list" in value:
            items = value["@list"]
        frames = []
        for item in items:
            if not isinstance(item, dict):
                raise MalformedResponse(
                    f"{shown(frame.url)} lists {item!r} where an object was expected.", "Members must be JSON objects."
                )
            frames.append(self._child(item, frame.ctx, frame.url, term))
        return frames

    def next_link(self, frame: Frame) -> str | None:
        """The absolute URL of the next page: hydra:next, in the body or its hydra:view, or HAL ``_links``."""
        hit = self.find(frame, NEXT)
        if hit is None:
            view = self.find(frame, VIEW)
            if view is not None:
                for item in view[2] if isinstance(view[2], list) else [view[2]]:
                    if isinstance(item, dict):
                        hit = self.find(self._child(item, frame.ctx, frame.url, view[1]), NEXT)
                        if hit is not None:
                            break
        raw: Any = hit[2] if hit is not None else None
        links = frame.obj.get("_links")
        if raw is None and isinstance(links, dict):
            raw = links.get("next")
        if isinstance(raw, dict):
            raw = raw.get("@id", raw.get("href"))
        if raw is None:
            return None
        if not isinstance(raw, str):
            raise MalformedResponse(f"{shown(frame.url)} has a next link that is not a URL: {raw!r}.", "Fix the API.")
        return urljoin(frame.url, expand_iri(frame.ctx, raw, document_relative=True) or raw)

    # -- values ------------------------------------------------------------------

    def node_id(self, frame: Frame, raw: Any) -> str:
        """A canonical id from an ``@id`` value: as written, or the plain id if it is the API's entity URL."""
        if isinstance(raw, dict):
            hit = self.find(self._child(raw, frame.ctx, frame.url), ID)
            raw = hit[2] if hit is not None else None
        if not isinstance(raw, str) or not raw:
            raise MalformedResponse(f"{shown(frame.url)} has an invalid id {raw!r}.", "Ids are non-empty strings.")
        ctx = frame.ctx
        if ctx.base == ctx.original_base:  # resolve against an explicit @base only, never the document URL
            ctx = ActiveContext(base=None, vocab=ctx.vocab, terms=ctx.terms)
        expanded = expand_iri(ctx, raw, document_relative=True)
        mapped = self._entity_template.match_id(expanded) if expanded else None
        return mapped if mapped is not None else raw

    def vocab_term(self, frame: Frame, raw: Any) -> str:
        """A type or predicate name: as written, or compacted with the client context."""
        if isinstance(raw, dict):
            raw = raw.get("@id", raw.get("@value"))
        if not isinstance(raw, str) or not raw:
            raise MalformedResponse(f"{shown(frame.url)} has an invalid type or predicate {raw!r}.", "Use strings.")
        if self.client is None:
            return raw
        iri = expand_iri(frame.ctx, raw, vocab=True)
        return compact_iri(self.client, iri) if iri else raw

    def required(self, frame: Frame, field: Field, what: str) -> tuple[str, Term | None, Any]:
        """Like :meth:`find`, but a missing field is a :class:`MalformedResponse`."""
        hit = self.find(frame, field)
        if hit is None:
            spelled = sorted(field.names)[0]
            raise MalformedResponse(
                f"{shown(frame.url)}: a {what} has no {spelled!r} ({'/'.join(sorted(field.iris))}).",
                "Check the API's documents against docs/backends/jsonld.md.",
            )
        return hit

    def entity(self, frame: Frame) -> tuple[str, NodeInfo, dict[str, Any]]:
        """``(id, NodeInfo(entity_type, name), metadata)`` of an entity document."""
        id_key, _, raw_id = self.required(frame, ID, "entity")
        type_key, _, raw_type = self.required(frame, TYPE, "entity")
        types = raw_type if isinstance(raw_type, list) else [raw_type]
        if not types:
            raise MalformedResponse(f"{shown(frame.url)}: the entity has an empty @type.", "Give every entity a type.")
        info = NodeInfo(self.vocab_term(frame, types[0]), self.name(frame))
        return self.node_id(frame, raw_id), info, self.metadata(frame, {id_key, type_key})

    def name(self, frame: Frame) -> str | None:
        """The display name of a node object (``schema:name``, ``rdfs:label`` …), or None."""
        hit = self.find(frame, NAME)
        value = hit[2] if hit is not None else None
        if isinstance(value, list):
            value = value[0] if value else None
        if isinstance(value, dict):
            value = value.get("@value")
        return value if isinstance(value, str) else None

    def stub(self, frame: Frame) -> EntityStub:
        """A search hit: id, type, name and score when given."""
        entity_id, info, _ = self.entity(frame)
        score = self.find(frame, SCORE)
        score_value = score[2] if score is not None and isinstance(score[2], (int, float)) else None
        return EntityStub(
            id=entity_id,
            entity_type=info.entity_type,
            name=info.name,
            score=float(score_value) if score_value is not None else None,
        )

    def triple(self, frame: Frame) -> Edge:
        """The edge a relation object describes."""
        return self.relation(frame)[0]

    def relation(self, frame: Frame) -> tuple[Edge, dict[str, NodeInfo]]:
        """The edge a relation object describes, and what it says of its ends.

        An end written as a node object with a type (``"object": {"@id": "X", "@type":
        "Gene", "name": "…"}``) is described: its id maps to its type and name. An end
        written as a plain id says nothing about the entity.
        """
        _, subject_term, subject = self.required(frame, SUBJECT, "relation")
        _, _, predicate = self.required(frame, PREDICATE, "relation")
        _, object_term, obj = self.required(frame, OBJECT, "relation")
        edge = Edge(self.node_id(frame, subject), self.vocab_term(frame, predicate), self.node_id(frame, obj))
        ends: dict[str, NodeInfo] = {}
        for end_id, raw, term in ((edge.subject, subject, subject_term), (edge.object, obj, object_term)):
            info = self._described(frame, raw, term)
            if info is not None:
                ends[end_id] = info
        return edge, ends

    def _described(self, frame: Frame, raw: Any, term: Term | None) -> NodeInfo | None:
        """Type and name of a relation end given as a typed node object; None for a plain id."""
        if not isinstance(raw, dict):
            return None
        node = self._child(raw, frame.ctx, frame.url, term)
        hit = self.find(node, TYPE)
        types = (hit[2] if isinstance(hit[2], list) else [hit[2]]) if hit is not None else []
        if not types:
            return None
        return NodeInfo(self.vocab_term(node, types[0]), self.name(node))

    def relation_metadata(self, frame: Frame) -> dict[str, Any]:
        """Metadata of a relation document: its ``metadata`` object, or its own non-structural keys."""
        found = self.find(frame, METADATA)
        if found is not None:
            _key, term, value = found
            if not isinstance(value, dict):
                raise MalformedResponse(f"{shown(frame.url)}: relation metadata is not an object.", "Fix the API.")
            if term is not None and term.type == "@json":  # a JSON literal: verbatim in every mode
                return dict(value)
            return self.metadata(self._child(value, frame.ctx, frame.url, term), set())
        excluded = {hit[0] for field in (SUBJECT, PREDICATE, OBJECT) if (hit := self.find(frame, field))}
        return self.metadata(frame, excluded)

    def metadata(self, frame: Frame, excluded: set[str]) -> dict[str, Any]:
        """Every non-keyword entry of an object except ``excluded`` keys."""
        if self.client is None:
            return {k: v for k, v in frame.obj.items() if k not in excluded and frame.ctx.keyword_of(k) is None}
        out: dict[str, Any] = {}
        for key, iri, term, value in self._entries(frame):
            if key in excluded or (iri is not None and iri.startswith("@")):
                continue
            out[compact_iri(self.client, iri) if iri else key] = self._plain(frame, value, term)
        return out

    def _plain(self, frame: Frame, value: Any, term: Term | None) -> Any:
        """A metadata value as plain JSON, read through ``term``: ``@id`` and ``@vocab`` strings mapped."""
        if term is not None and term.type == "@json":
            return value
        if isinstance(value, list):
            return [self._plain(frame, v, term) for v in value]
        if isinstance(value, dict):
            return self._plain_object(frame, value, term)
        if isinstance(value, str) and term is not None:
            if term.type == "@id":
                return self.node_id(frame, value)
            if term.type == "@vocab":
                return self.vocab_term(frame, value)
        return value

    def _plain_object(self, frame: Frame, value: dict[str, Any], term: Term | None) -> Any:
        """A value object's value, a ``@list``/``@set``'s items, else a nested node (just its id if that is all)."""
        if "@value" in value:
            return value["@value"]
        for container in ("@list", "@set"):
            if container in value:
                return self._plain(frame, value[container], term)
        child = self._child(value, frame.ctx, frame.url, term)
        node: dict[str, Any] = {}
        id_hit, type_hit = self.find(child, ID), self.find(child, TYPE)
        if id_hit is not None and id_hit[0] != "id":
            node["@id"] = self.node_id(child, id_hit[2])
        if type_hit is not None and type_hit[0] not in ("type", "entity_type"):
            raw = type_hit[2] if isinstance(type_hit[2], list) else [type_hit[2]]
            node["@type"] = [self.vocab_term(child, t) for t in raw]
        if set(node) == {"@id"} and len(value) == 1:
            return node["@id"]
        node.update(self.metadata(child, {h[0] for h in (id_hit, type_hit) if h is not None}))
        return node

    def schema(self, frame: Frame) -> Schema:
        """The schema document's vocabulary, description, capabilities and batch endpoints."""
        obj = frame.obj

        spelling: dict[str, str] = {}

        def names(key: str) -> list[str]:
            values = obj.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise MalformedResponse(
                    f"{shown(frame.url)}: '{key}' is not a list of names.", "Fix the schema document."
                )
            for value in values:
                spelling[self.vocab_term(frame, value)] = value
            return sorted({self.vocab_term(frame, v) for v in values})

        batch = obj.get("batch")
        endpoints: dict[str, str] | None = None
        max_batch = 500
        if isinstance(batch, dict):
            endpoints = {k: urljoin(frame.url, v) for k, v in batch.items() if isinstance(v, str)}
            if isinstance(batch.get("max_ids"), int) and batch["max_ids"] > 0:
                max_batch = batch["max_ids"]
        capabilities = obj.get("capabilities")
        vector = obj.get("vector_search")
        endpoint = None
        if isinstance(vector, dict):
            url, embedder, dimension = vector.get("url"), vector.get("embedder"), vector.get("dimension")
            if not (isinstance(url, str) and isinstance(embedder, str) and isinstance(dimension, int)):
                raise MalformedResponse(
                    f"{shown(frame.url)}: 'vector_search' needs a url, an embedder and a dimension.",
                    "Fix the schema document.",
                )
            endpoint = VectorEndpoint(urljoin(frame.url, url), embedder, dimension)
        return Schema(
            entity_types=names("entity_types"),
            predicates=names("predicates"),
            description=_text(obj.get("description", obj.get("graph_description"))),
            next_steps=_text(obj.get("next_steps")),
            comprehensive=obj.get("comprehensive", True) is not False,
            capabilities={k: v for k, v in capabilities.items() if isinstance(v, bool)}
            if isinstance(capabilities, dict)
            else None,
            batch=endpoints or None,
            max_batch=max_batch,
            spelling=spelling,
            vector=endpoint,
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
