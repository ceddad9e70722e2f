"""The standard graph of the conformance suite, rendered as RDF (N-Triples).

Core's suite has no RDF rendering, so this is it:

* an entity is an IRI (``iri(standard_id)``) with ``rdf:type`` vocab:<entity_type>,
  ``rdfs:label`` (its name), ``skos:altLabel`` (synonyms) and one literal per property
  (vocab:<key>); a merged entity is marked ``owl:deprecated true``;
* a relationship is the triple itself plus one reified ``rdf:Statement`` (a blank node)
  carrying vocab:confidence, ``dcterms:source`` per source document and vocab:<key>
  per property; each evidence record is a blank node linked by ``prov:wasDerivedFrom``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rdflib import BNode, Graph, Literal, Namespace, URIRef
from rdflib.namespace import DCTERMS, OWL, PROV, RDF, RDFS, SKOS, XSD

from bfsql import EntityRecord, EvidenceRecord, Record, RelationshipRecord
from bfsql.testing.standard_graph import standard_records

VOCAB = Namespace("http://bfsql.test/vocab/")
"""Types, predicates and property keys of the standard graph; the default namespace (bare names) in tests."""

ENTITY_NAMESPACES = {
    "GENE": "http://bfsql.test/gene/",
    "DISEASE": "http://bfsql.test/disease/",
    "DRUG": "http://bfsql.test/drug/",
    "PAPER": "http://bfsql.test/paper/",
}
PREFIXES = [f"={VOCAB}", *(f"{name.lower()}={iri}" for name, iri in ENTITY_NAMESPACES.items())]
"""``--prefix`` values under which standard ids become compact ids like ``gene:TP53``."""


def compact_id(standard_id: str) -> str:
    """The compact id of a standard id under :data:`PREFIXES` (``GENE:TP53`` -> ``gene:TP53``)."""
    kind, _, local = standard_id.partition(":")
    return f"{kind.lower()}:{local}"


def compact_iri(standard_id: str) -> str:
    """The IRI behind :func:`compact_id` (``GENE:TP53`` -> ``http://bfsql.test/gene/TP53``)."""
    kind, _, local = standard_id.partition(":")
    return ENTITY_NAMESPACES.get(kind, f"http://bfsql.test/{kind.lower()}/") + local


def _literal(value: Any) -> Literal:
    if isinstance(value, bool):
        return Literal(value, datatype=XSD.boolean)
    if isinstance(value, int):
        return Literal(value, datatype=XSD.integer)
    if isinstance(value, float):
        return Literal(value, datatype=XSD.double)
    return Literal(str(value))


def _add_values(graph: Graph, subject: Any, key: str, value: Any) -> None:
    for item in value if isinstance(value, list) else [value]:
        graph.add((subject, VOCAB[key], _literal(item)))


def standard_graph_rdf(iri: Callable[[str], str]) -> Graph:
    """The standard graph as an rdflib Graph, entity ids written as ``iri(standard_id)``."""
    return records_rdf(standard_records(), iri)


def records_rdf(records: Iterable[Record], iri: Callable[[str], str]) -> Graph:
    """Bundle records as an rdflib Graph (see the module), entity ids written as ``iri(id)``."""
    graph = Graph()
    statements: dict[tuple[str, str, str], BNode] = {}
    for record in records:
        if isinstance(record, EntityRecord):
            node = URIRef(iri(record.id))
            graph.add((node, RDF.type, VOCAB[record.entity_type]))
            if record.name is not None:
                graph.add((node, RDFS.label, Literal(record.name)))
            for synonym in record.synonyms:
                graph.add((node, SKOS.altLabel, Literal(synonym)))
            for key, value in record.properties.items():
                _add_values(graph, node, key, value)
            for key in ("source", "canonical_url", "confidence"):
                if getattr(record, key) is not None:
                    _add_values(graph, node, key, getattr(record, key))
            if record.merged:
                graph.add((node, OWL.deprecated, Literal(True)))
        elif isinstance(record, RelationshipRecord):
            triple = (URIRef(iri(record.subject)), VOCAB[record.predicate], URIRef(iri(record.object)))
            graph.add(triple)
            statement = statements.setdefault((record.subject, record.predicate, record.object), BNode())
            graph.add((statement, RDF.type, RDF.Statement))
            graph.add((statement, RDF.subject, triple[0]))
            graph.add((statement, RDF.predicate, triple[1]))
            graph.add((statement, RDF.object, triple[2]))
            if record.confidence is not None:
                _add_values(graph, statement, "confidence", record.confidence)
            for document in record.source_documents:
                graph.add((statement, DCTERMS.source, Literal(document)))
            for key, value in record.properties.items():
                _add_values(graph, statement, key, value)
        elif isinstance(record, EvidenceRecord):
            statement = statements[(record.subject, record.predicate, record.object)]
            evidence = BNode()
            graph.add((statement, PROV.wasDerivedFrom, evidence))
            for key, value in record.provenance().items():
                _add_values(graph, evidence, key, value)
    return graph


def write_standard_ntriples(path: Path, iri: Callable[[str], str]) -> Path:
    """Write the standard graph as N-Triples to ``path``."""
    return write_ntriples(path, standard_records(), iri)


def write_ntriples(path: Path, records: Iterable[Record], iri: Callable[[str], str]) -> Path:
    """Write bundle records as N-Triples to ``path``."""
    path.write_text(records_rdf(records, iri).serialize(format="nt", encoding=None) or "", encoding="utf-8")
    return path
