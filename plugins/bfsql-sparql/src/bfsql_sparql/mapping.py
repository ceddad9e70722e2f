"""How RDF becomes bfsql nodes, edges and metadata.

The rules follow core's RDF loader (``bfsql load x.ttl``), with ids, types and
predicates written as compact ids instead of local names:

* an entity is an IRI that is the subject of a statement (an IRI that is only an
  object is a dangling reference); blank nodes are never entities and their
  statements are skipped;
* ``rdf:type`` gives the entity type: the type in the most preferred namespace (the
  order of ``--prefix``), then the smallest id; the others are listed in
  ``metadata["types"]``; an entity without a type is an ``Entity``;
* the label predicates give the name (most preferred predicate, then preferred
  language, then the smallest text), the other labels and the synonym predicates
  the synonyms;
* every other literal becomes a metadata property named by the predicate's local
  name (a list when repeated); a statement with an IRI object is an edge;
* an edge's metadata comes from the reified statements about it (``rdf:Statement``
  with ``rdf:subject``/``rdf:predicate``/``rdf:object``): their properties by local
  name, ``dcterms:source`` as ``source_documents``; the literal properties of each
  ``prov:wasDerivedFrom`` node are one evidence entry (its provenance).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bfsql_sparql.client import Term
from bfsql_sparql.terms import DCTERMS, XSD, PrefixMap, local_name

__all__ = [
    "UNTYPED",
    "LabelRules",
    "Labels",
    "choose_type",
    "edge_metadata",
    "edge_provenance",
    "evidence_entry",
    "literal_value",
    "node_metadata",
    "ordered_types",
]

UNTYPED = "Entity"
"""The type of an entity without an IRI ``rdf:type`` (as in core's RDF loader)."""

_INTEGER_TYPES = frozenset(
    XSD + name
    for name in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
_FLOAT_TYPES = frozenset(XSD + name for name in ("decimal", "double", "float"))


def literal_value(term: Term) -> Any:
    """A literal as JSON: numbers and booleans typed, everything else its lexical form."""
    datatype = term.datatype
    try:
        if datatype in _INTEGER_TYPES:
            return int(term.value)
        if datatype in _FLOAT_TYPES:
            number = float(term.value)
            return number if math.isfinite(number) else term.value
    except ValueError:
        return term.value
    if datatype == XSD + "boolean" and term.value in ("true", "false", "1", "0"):
        return term.value in ("true", "1")
    return term.value


def ordered_types(type_iris: Iterable[str], prefixes: PrefixMap) -> list[str]:
    """Compact type ids, most preferred first: configured namespace order, then the id."""
    unique = set(type_iris)
    return [
        prefixes.compact(iri) for iri in sorted(unique, key=lambda iri: (prefixes.rank(iri), prefixes.compact(iri)))
    ]


def choose_type(type_iris: Iterable[str], prefixes: PrefixMap) -> str:
    """The entity type: the most preferred of ``type_iris``, or ``Entity``."""
    ordered = ordered_types(type_iris, prefixes)
    return ordered[0] if ordered else UNTYPED


@dataclass(frozen=True)
class LabelRules:
    """Which predicates name an entity, and which languages are preferred."""

    label_predicates: tuple[str, ...]
    """Full IRIs, most preferred first."""
    synonym_predicates: tuple[str, ...]
    languages: tuple[str, ...]
    """Configured language tags, most preferred first; empty: untagged and English first."""

    @property
    def all_predicates(self) -> tuple[str, ...]:
        """Label and synonym predicates, without repeats."""
        return tuple(dict.fromkeys(self.label_predicates + self.synonym_predicates))

    def language_rank(self, language: str | None) -> int:
        """Preference of a literal's language tag, lower is better."""
        tag = (language or "").lower()
        if self.languages:
            return self.languages.index(tag) if tag in self.languages else len(self.languages)
        return 0 if tag in ("", "en") or tag.startswith("en-") else 1

    def best_label(self, labels: Iterable[tuple[str, str, str | None]]) -> str | None:
        """The name among ``(predicate IRI, text, language)`` labels: preferred predicate, then language, then text."""
        ranked = [
            (self.label_predicates.index(p), self.language_rank(language), text)
            for p, text, language in labels
            if p in self.label_predicates
        ]
        return min(ranked)[2] if ranked else None


@dataclass(frozen=True)
class Labels:
    """An entity's name and synonyms."""

    name: str | None
    synonyms: list[str]

    @classmethod
    def from_statements(cls, statements: Sequence[tuple[str, Term]], rules: LabelRules) -> Labels:
        """Derive name and synonyms from ``(predicate IRI, literal)`` pairs (other terms are ignored)."""
        return cls.from_texts(((p, o.value, o.language) for p, o in statements if o.kind == "literal"), rules)

    @classmethod
    def from_texts(cls, literals: Iterable[tuple[str, str, str | None]], rules: LabelRules) -> Labels:
        """Derive name and synonyms from ``(predicate IRI, text, language)`` literals.

        The name is :meth:`LabelRules.best_label`; the other labels, then the synonym
        predicates' texts (sorted), are the synonyms.
        """
        literals = list(literals)
        labels = sorted(
            (rules.label_predicates.index(p), rules.language_rank(language), text)
            for p, text, language in literals
            if p in rules.label_predicates
        )
        texts = [text for *_, text in labels]
        name = texts[0] if texts else None
        synonyms = texts[1:] + sorted(
            text for p, text, _ in literals if p in rules.synonym_predicates and p not in rules.label_predicates
        )
        return cls(name, [s for s in dict.fromkeys(synonyms) if s != name])


def node_metadata(
    iri: str,
    type_ids: list[str],
    literals: Sequence[tuple[str, Term]],
    rules: LabelRules,
    cut: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Metadata of an entity from its ordered compact types and its ``(predicate IRI, literal)`` pairs.

    Like core's ``node_metadata``: properties first, then ``name``, ``synonyms``, and
    ``canonical_url`` (the entity's IRI unless a ``canonical_url`` literal says
    otherwise). ``cut`` is ``(total, returned)`` when not every literal could be read.
    """
    naming = set(rules.all_predicates)
    properties: dict[str, list[Any]] = {}
    for predicate, term in sorted(literals, key=lambda po: (po[0], po[1].value)):
        if predicate not in naming:
            properties.setdefault(local_name(predicate), []).append(literal_value(term))
    metadata: dict[str, Any] = {key: values[0] if len(values) == 1 else values for key, values in properties.items()}
    if len(type_ids) > 1:
        metadata["types"] = type_ids
    labels = Labels.from_statements(literals, rules)
    metadata["name"] = labels.name if labels.name is not None else local_name(iri)
    if labels.synonyms:
        metadata["synonyms"] = labels.synonyms
    metadata.setdefault("canonical_url", iri)
    if cut is not None:
        metadata["values_truncated"] = (
            f"{cut[1]} of {cut[0]} literal values are shown (--edge-limit); query the endpoint for the rest."
        )
    return metadata


def _term_value(term: Term, prefixes: PrefixMap) -> Any:
    return literal_value(term) if term.kind == "literal" else prefixes.compact(term.value)


def _grouped(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    values: dict[str, list[Any]] = {}
    for key, value in pairs:
        bucket = values.setdefault(key, [])
        if value not in bucket:
            bucket.append(value)
    return {key: found[0] if len(found) == 1 else found for key, found in values.items()}


def evidence_entry(properties: Sequence[tuple[str, Term]]) -> dict[str, Any]:
    """One provenance entry from the ``(predicate IRI, literal)`` pairs of an evidence node."""
    ordered = sorted(properties, key=lambda kv: (kv[0], kv[1].value))
    return _grouped((local_name(k), literal_value(v)) for k, v in ordered)


def edge_metadata(annotations: Sequence[tuple[str, Term]], prefixes: PrefixMap) -> dict[str, Any]:
    """Metadata of an existing edge, like core's ``edge_metadata``: its properties and ``source_documents``."""
    ordered = sorted(annotations, key=lambda kv: (kv[0], kv[1].value))
    metadata = _grouped((local_name(k), _term_value(v, prefixes)) for k, v in ordered if k != DCTERMS + "source")
    metadata["source_documents"] = sorted(
        {str(_term_value(v, prefixes)) for k, v in ordered if k == DCTERMS + "source"}
    )
    return metadata


def edge_provenance(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """An edge's evidence entries (see :func:`evidence_entry`) in a stable order: document, section, text."""
    return sorted(
        entries,
        key=lambda e: (str(e.get("document_id", "")), str(e.get("section", "")), str(e.get("text_span", ""))),
    )
