"""Readers for every loadable format, each yielding ``(line, record)`` like :func:`read_bundle`.

* JSONL bundles (``.jsonl``, ``.ndjson``): see :mod:`bfsql.loading.bundle`.
* Triple tables (``.csv``, ``.tsv``): ``subject, predicate, object`` plus the optional
  columns ``subject_type, object_type, confidence, source_documents``.
* RDF (``.nt``, ``.ttl``, RDF/XML) through rdflib, the optional extra ``rdf``
  (from a checkout: ``pip install './core[rdf]'``).
* Ontologies: OBO (:mod:`bfsql.loading.obo`) and OWL (:mod:`bfsql.loading.owl`, rdflib too).
* Property graphs: KGX (:mod:`bfsql.loading.kgx`), Neo4j import CSV (:mod:`bfsql.loading.neo4j_csv`)
  and GraphML (:mod:`bfsql.loading.graphml`).

How a file's format is told: :mod:`bfsql.loading.formats`.

Entities that a triple table or RDF file only mentions are yielded as
:class:`ImpliedEntity`, which a store inserts only when the id is not already known,
so loading ``entities.jsonl`` and ``edges.csv`` in any order keeps the full entities.
See docs/bundle-format.md for the mappings.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from bfsql.errors import clip
from bfsql.loading.bundle import Record, Row, parse_record, read_bundle
from bfsql.loading.errors import BadRow, LoadError, RowErrors, report
from bfsql.loading.formats import FORMATS, check_format, detect_format, refuse_sqlite_source
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.lines import ByteCallback, bounded_lines, check_lines, decode_line
from bfsql.loading.prefixes import PrefixMap
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.table_rows import RowFeed

__all__ = [
    "DEFAULT_ENTITY_TYPE",
    "FORMATS",
    "ImpliedEntity",
    "check_format",
    "detect_format",
    "literal_value",
    "local_name",
    "parse_rdf_graph",
    "rdf_error",
    "rdf_install_hint",
    "read_rdf",
    "read_records",
    "read_triple_table",
    "refuse_sqlite_source",
    "require_rdflib",
]

DEFAULT_ENTITY_TYPE = "Entity"
"""The type of an implied entity whose type nobody states."""

TABLE_COLUMNS = ("subject", "predicate", "object", "subject_type", "object_type", "confidence", "source_documents")
"""Columns of a triple table, in positional order when the file has no header."""


class ImpliedEntity(EntityRecord):
    """An entity known only because a triple mentions it; never replaces a stored entity."""


@overload
def read_records(
    path: str | Path, fmt: str | None = ..., *, limits: LoadLimits = ..., errors: RowErrors | None = ...,
    prefixes: PrefixMap | None = ..., on_bytes: ByteCallback | None = ..., plain: Literal[False] = ...,
    term_type: str | None = ...,
) -> Iterator[tuple[int, Record]]:
    ...


@overload
def read_records(
    path: str | Path, fmt: str | None = ..., *, limits: LoadLimits = ..., errors: RowErrors | None = ...,
    prefixes: PrefixMap | None = ..., on_bytes: ByteCallback | None = ..., plain: bool,
    term_type: str | None = ...,
) -> Iterator[tuple[int, Row]]:
    ...


def read_records(
    path: str | Path,
    fmt: str | None = None,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    prefixes: PrefixMap | None = None,
    on_bytes: ByteCallback | None = None,
    plain: bool = False,
    term_type: str | None = None,
) -> Iterator[tuple[int, Row]]:
    """Yield ``(line, record)`` from a file of any supported format (``fmt`` overrides detection).

    Bad rows raise :class:`BadRow`, or with ``errors`` are collected there and skipped
    (a bad CSV header, an unclosed quote, an RDF syntax error or an over-long line still
    raise: nothing after them can be read). ``prefixes`` compacts RDF ids (see
    :mod:`bfsql.loading.prefixes`; without it they stay full IRIs). ``on_bytes`` hears
    of the bytes read, for progress. A SQLite database is refused whatever ``fmt`` says
    (:func:`refuse_sqlite_source`). With ``plain``, a bundle's rows of the simplest shapes
    come as tuples (:mod:`bfsql.loading.plain`). ``term_type`` is the type of every term
    of an ontology (OBO, OWL); by default its namespace.
    """
    fmt = check_format(fmt) if fmt is not None else detect_format(path)
    refuse_sqlite_source(path)
    if fmt == "jsonl":
        return read_bundle(path, limits=limits, errors=errors, on_bytes=on_bytes, plain=plain)
    if fmt in ("csv", "tsv"):
        return read_triple_table(
            path, delimiter="," if fmt == "csv" else "\t", limits=limits, errors=errors, on_bytes=on_bytes
        )
    if fmt in ("nt", "ttl", "rdfxml"):
        return read_rdf(path, fmt, limits=limits, errors=errors, prefixes=prefixes, on_bytes=on_bytes)
    return _read_graph_format(path, fmt, limits, errors, prefixes, on_bytes, term_type)


def _read_graph_format(
    path: str | Path, fmt: str, limits: LoadLimits, errors: RowErrors | None, prefixes: PrefixMap | None,
    on_bytes: ByteCallback | None, term_type: str | None,
) -> Iterator[tuple[int, Record]]:
    """The records of an ontology or property-graph file (their modules are imported when first read)."""
    if fmt == "obo":
        from bfsql.loading.obo import read_obo

        return read_obo(path, limits=limits, errors=errors, on_bytes=on_bytes, term_type=term_type)
    if fmt == "owl":
        from bfsql.loading.owl import read_owl

        return read_owl(path, limits=limits, errors=errors, prefixes=prefixes, on_bytes=on_bytes, term_type=term_type)
    if fmt == "kgx":
        from bfsql.loading.kgx import read_kgx

        return read_kgx(path, limits=limits, errors=errors, on_bytes=on_bytes)
    if fmt == "neo4j":
        from bfsql.loading.neo4j_csv import read_neo4j_csv

        return read_neo4j_csv(path, limits=limits, errors=errors, on_bytes=on_bytes)
    from bfsql.loading.graphml import read_graphml

    return read_graphml(path, limits=limits, errors=errors, on_bytes=on_bytes)


def _header(row: list[str], path: str, line: int) -> list[str] | None:
    names = [cell.strip().casefold() for cell in row]
    if names[:3] != ["subject", "predicate", "object"]:
        return None
    unknown = [n for n in names if n not in TABLE_COLUMNS]
    if unknown:
        raise BadRow(path, line, f"unknown column(s) {unknown}; known columns: {', '.join(TABLE_COLUMNS)} "
                     "(a KGX edge file? load it with --format kgx)")
    if len(set(names)) != len(names):
        raise BadRow(path, line, "a column name appears twice")
    return names


_ONE_LINE_COLUMNS = ("subject", "predicate", "object", "subject_type", "object_type")


def _table_row(
    row: list[str], columns: list[str], path: str, line: int, feed: RowFeed
) -> tuple[dict[str, Any], tuple[str | None, str | None]]:
    """The relationship of a table row, and the types it gives its subject and object."""
    if len(row) != len(columns):
        raise BadRow(path, line, f"expected {len(columns)} columns, got {len(row)}")
    cells = {column: cell.strip() for column, cell in zip(columns, row, strict=True)}
    if feed.number > line:
        spanning = [c for c in _ONE_LINE_COLUMNS if "\n" in cells.get(c, "")]
        if spanning:
            raise BadRow(
                path,
                line,
                f"{spanning[0]}: a quoted value runs from line {line} to line {feed.number}; "
                "is its closing quote missing?",
            )
    documents = cells.get("source_documents", "")
    relationship = {
        "kind": "relationship",
        "subject": cells["subject"],
        "predicate": cells["predicate"],
        "object": cells["object"],
        "confidence": cells.get("confidence") or None,
        "source_documents": [d.strip() for d in documents.split(";") if d.strip()],
    }
    return relationship, (cells.get("subject_type") or None, cells.get("object_type") or None)


def read_triple_table(
    path: str | Path,
    delimiter: str = ",",
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield relationships from a CSV/TSV triple table, then the entities it implies.

    The header is optional: a first row starting ``subject, predicate, object`` names
    the columns; otherwise columns are taken positionally in :data:`TABLE_COLUMNS`
    order. ``source_documents`` is ``;``-separated. An implied entity has the first
    type any row gives it (else ``Entity``) and its id as name. TSV has no quoting.
    A quoted CSV value that is never closed is an error, not the rest of the file.
    """
    name = str(path)
    implied: dict[str, tuple[int, str | None]] = {}  # small entries: a stream of distinct ids stays lean
    with open(path, "rb") as handle:
        feed = RowFeed(handle, name, limits, errors, on_bytes)
        reader = csv.reader(
            feed, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE, strict=True
        )
        columns: list[str] | None = None
        try:
            for row in reader:
                line = feed.row_start
                feed.row_done()
                if not any(cell.strip() for cell in row):
                    continue
                if columns is None:
                    columns = _header(row, name, line)
                    if columns is not None:
                        continue
                    columns = _positional_columns(row, name, line)
                record = _table_relationship(row, columns, name, line, feed, limits, errors, implied)
                if record is not None:
                    yield line, record
        except csv.Error as exc:
            raise _malformed_table(exc, "CSV" if delimiter == "," else "TSV", name, feed.row_start) from None
    for entity_id, (line, entity_type) in implied.items():
        yield line, ImpliedEntity(id=entity_id, entity_type=entity_type or DEFAULT_ENTITY_TYPE, name=entity_id)


def _positional_columns(row: list[str], path: str, line: int) -> list[str]:
    """The columns of a table without a header, named in :data:`TABLE_COLUMNS` order from its first row."""
    if not 3 <= len(row) <= len(TABLE_COLUMNS):
        raise BadRow(path, line, f"expected 3 to {len(TABLE_COLUMNS)} columns, got {len(row)}")
    return list(TABLE_COLUMNS[: len(row)])


def _table_relationship(
    row: list[str], columns: list[str], path: str, line: int, feed: RowFeed, limits: LoadLimits,
    errors: RowErrors | None, implied: dict[str, tuple[int, str | None]],
) -> RelationshipRecord | None:
    """The checked relationship of a table row, its ends noted in ``implied``; ``None`` when reported bad."""
    try:
        obj, types = _table_row(row, columns, path, line, feed)
        record = parse_record(obj, path, line, limits)
        assert isinstance(record, RelationshipRecord)
        for entity_id, entity_type in zip((record.subject, record.object), types, strict=True):
            _note_implied(implied, entity_id, entity_type, path, line, limits)
    except BadRow as exc:
        report(errors, exc)
        return None
    return record


def _note_implied(
    implied: dict[str, tuple[int, str | None]], entity_id: str, entity_type: str | None, path: str, line: int,
    limits: LoadLimits,
) -> None:
    """Record an entity a row mentions: the line it first appears on, and the first type any row gives it."""
    seen = implied.get(entity_id)
    if seen is None or (seen[1] is None and entity_type):
        if entity_type:
            _check_implied(entity_id, entity_type, path, line, limits)
        implied[entity_id] = (seen[0] if seen else line, entity_type)


def _malformed_table(exc: csv.Error, kind: str, path: str, line: int) -> BadRow:
    """The bad row of a table the csv module cannot read; an unclosed quote is named as such."""
    if "unexpected end of data" in str(exc):
        message = f"a quoted value opened on line {line} is never closed (a missing closing quote?)"
    else:
        message = f"malformed {kind}: {exc}"
    return BadRow(path, line, message)


def _check_implied(entity_id: str, entity_type: str, path: str, line: int, limits: LoadLimits) -> None:
    """Check, like any record, the implied entity that a table row gives a type."""
    row = {"kind": "entity", "id": entity_id, "entity_type": entity_type, "name": entity_id}
    parse_record(row, path, line, limits, model=ImpliedEntity)


def local_name(iri: str) -> str:
    """The part of an IRI after its last ``#``, ``/`` or ``:``; the whole IRI if that is empty."""
    for separator in ("#", "/", ":"):
        if separator in iri:
            tail = iri.rsplit(separator, 1)[1]
            return tail or iri
    return iri


def literal_value(literal: Any) -> Any:
    """An rdflib literal as a bundle value: booleans, integers, strings and finite floats as such, else its text."""
    value = literal.toPython()
    if isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return str(literal)


def _first_bad_nt_line(path: str, limits: LoadLimits) -> int:
    """N-Triples errors carry no position; every line stands alone, so re-parse line by line."""
    import rdflib

    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, path, limits.line_bytes), start=1):
            try:
                rdflib.Graph().parse(data=decode_line(raw, path, number), format="nt")
            except Exception:
                return number
    return 0


_RDFLIB_FORMATS = {"nt": "nt", "ttl": "turtle", "rdfxml": "xml"}
"""rdflib's parser name of each RDF format."""


def rdf_error(path: str, syntax: str, exc: Exception, limits: LoadLimits) -> BadRow:
    """The bad row of an rdflib syntax error in ``path`` (``syntax``: an rdflib parser name), at its line if known."""
    line = getattr(exc, "lines", None)  # turtle's BadSyntax: 0-based line
    if isinstance(line, int):
        number = line + 1
    elif callable(getattr(exc, "getLineNumber", None)):  # RDF/XML's SAXParseException
        number = exc.getLineNumber()  # type: ignore[attr-defined]
    else:
        number = _first_bad_nt_line(path, limits) if syntax == "nt" else 0
    message = getattr(exc, "_why", None) or getattr(exc, "msg", None) or str(exc)
    if callable(getattr(exc, "getMessage", None)):
        message = exc.getMessage()  # type: ignore[attr-defined]
    kind = {"nt": "N-Triples", "turtle": "Turtle", "xml": "RDF/XML"}.get(syntax, syntax)
    return BadRow(path, number, f"cannot parse {kind}: {clip(str(message), 300)}")


def rdf_install_hint() -> str:
    """The command that installs rdflib from a checkout (bfsql is not on a package index yet)."""
    return "from a checkout of the bfsql repository, pip install './core[rdf]'"


def require_rdflib(fmt: str) -> None:
    """:class:`LoadError` saying what to install when rdflib (the extra ``rdf``) is missing."""
    try:
        import rdflib  # noqa: F401
    except ImportError:
        kind = {"nt": "N-Triples", "ttl": "Turtle", "rdfxml": "RDF/XML", "owl": "OWL"}.get(fmt, fmt)
        raise LoadError(f"reading {kind} needs rdflib, which is not installed: {rdf_install_hint()}") from None


def parse_rdf_graph(path: str, syntax: str, limits: LoadLimits, on_bytes: ByteCallback | None) -> Any:
    """The rdflib graph of the file ``path`` in ``syntax`` (an rdflib parser name), its lines checked first.

    The file is read line by line within ``limits.line_bytes`` and as UTF-8 before rdflib reads it whole;
    a syntax error is a :class:`BadRow` at its line where rdflib tells it.
    """
    import rdflib

    if not Path(path).is_file():
        raise LoadError(f"no such file: {path}")
    check_lines(path, limits.line_bytes, on_bytes)
    graph = rdflib.Graph(bind_namespaces="none")
    try:
        graph.parse(path, format=syntax)
    except Exception as exc:  # rdflib raises many unrelated types for syntax errors
        raise rdf_error(path, syntax, exc, limits) from None
    return graph


def read_rdf(
    path: str | Path,
    fmt: str = "ttl",
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    prefixes: PrefixMap | None = None,
    on_bytes: ByteCallback | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield entities and relationships from an N-Triples (``nt``), Turtle (``ttl``) or RDF/XML (``rdfxml``) file.

    Every IRI subject becomes an entity whose id is its IRI, compacted by ``prefixes``
    (``ex:braf``; then ``canonical_url`` keeps the full IRI): ``rdf:type`` gives the
    entity type (local name; the smallest when there are several, the rest kept in
    ``properties["types"]``, ``Entity`` when untyped), ``skos:prefLabel`` or
    ``rdfs:label`` the name (English or untagged first), further labels and
    ``skos:altLabel`` the synonyms, any other literal a property named by the
    predicate's local name (a list when repeated). A triple with an IRI object becomes
    a relationship whose predicate is the local name; its object, if never a subject,
    an implied entity named by its local name. Blank nodes are skipped. The file is
    first read line by line within ``limits.line_bytes``; rdflib then parses it whole
    and reports no positions, so records carry line 0 and errors name the subject.
    """
    require_rdflib(fmt)
    import rdflib

    source = str(path)
    graph = parse_rdf_graph(source, _RDFLIB_FORMATS[fmt], limits, on_bytes)

    def ident(iri: Any) -> str:
        return prefixes.compact(str(iri)) if prefixes is not None else str(iri)

    def record(subject: str, obj: dict[str, Any], model: type[Record] | None = None) -> Record | None:
        try:
            return parse_record(obj, source, 0, limits, model)
        except BadRow as exc:
            report(errors, BadRow(source, 0, f"<{clip(subject, 200)}>: {exc.message}"))
            return None

    subjects = sorted({s for s in graph.subjects() if isinstance(s, rdflib.URIRef)}, key=str)
    known = set(subjects)
    mentioned: dict[str, None] = {}
    for iri in subjects:
        facts = _subject_facts(graph, iri)
        rows = [_rdf_entity_row(str(iri), ident(iri), facts)]
        for predicate, obj in facts.links:
            rows.append({"kind": "relationship", "subject": ident(iri), "predicate": predicate, "object": ident(obj)})
            if obj not in known:
                mentioned[str(obj)] = None
        for row in rows:
            found = record(str(iri), row)
            if found is not None:
                yield 0, found
    for target in mentioned:
        found = record(target, _implied_rdf_row(target, ident(target)), ImpliedEntity)
        if found is not None:
            yield 0, found


@dataclass
class _SubjectFacts:
    """What an RDF graph states about one subject, gathered before it becomes records."""

    types: list[str] = field(default_factory=list)
    """Local names of its ``rdf:type`` classes."""
    labels: list[tuple[bool, bool, str]] = field(default_factory=list)
    """``(not a prefLabel, not English or untagged, text)``: sorted, the name comes first."""
    synonyms: list[str] = field(default_factory=list)
    """Its ``skos:altLabel`` texts."""
    properties: dict[str, list[Any]] = field(default_factory=dict)
    """Other literals, by the local name of their predicate."""
    links: list[tuple[str, Any]] = field(default_factory=list)
    """``(predicate local name, object IRI)`` of each triple with an IRI object."""


def _subject_facts(graph: Any, iri: Any) -> _SubjectFacts:
    """Sort the statements about ``iri`` into types, labels, synonyms, properties and links (blank nodes skipped)."""
    import rdflib
    from rdflib.namespace import RDF

    facts = _SubjectFacts()
    for predicate, obj in sorted(graph.predicate_objects(iri), key=lambda po: (str(po[0]), str(po[1]))):
        if isinstance(obj, rdflib.BNode):
            continue
        if predicate == RDF.type and isinstance(obj, rdflib.URIRef):
            facts.types.append(local_name(str(obj)))
        elif isinstance(obj, rdflib.Literal):
            _add_literal(facts, predicate, obj)
        else:
            facts.links.append((local_name(str(predicate)), obj))
    facts.types.sort()
    return facts


def _add_literal(facts: _SubjectFacts, predicate: Any, literal: Any) -> None:
    """File a literal as a label, a synonym or a property value."""
    from rdflib.namespace import RDFS, SKOS

    if predicate in (RDFS.label, SKOS.prefLabel):
        facts.labels.append((predicate != SKOS.prefLabel, literal.language not in (None, "", "en"), str(literal)))
    elif predicate == SKOS.altLabel:
        facts.synonyms.append(str(literal))
    else:
        facts.properties.setdefault(local_name(str(predicate)), []).append(literal_value(literal))


def _rdf_entity_row(iri: str, entity_id: str, facts: _SubjectFacts) -> dict[str, Any]:
    """The bundle row of the entity a subject becomes: first type, best label as name, the rest as synonyms."""
    label_texts = [text for *_, text in sorted(facts.labels)]
    props: dict[str, Any] = {key: values[0] if len(values) == 1 else values for key, values in facts.properties.items()}
    if len(facts.types) > 1:
        props["types"] = facts.types
    name = label_texts[0] if label_texts else local_name(iri)
    return {
        "kind": "entity",
        "id": entity_id,
        "entity_type": facts.types[0] if facts.types else DEFAULT_ENTITY_TYPE,
        "name": name,
        "synonyms": [s for s in dict.fromkeys(label_texts[1:] + facts.synonyms) if s != name],
        "properties": props,
        **({"canonical_url": iri} if entity_id != iri else {}),
    }


def _implied_rdf_row(target: str, entity_id: str) -> dict[str, Any]:
    """The bundle row of an IRI that is only ever an object: untyped, named by its local name."""
    implied = {"kind": "entity", "id": entity_id, "entity_type": DEFAULT_ENTITY_TYPE, "name": local_name(target)}
    if entity_id != target:
        implied["canonical_url"] = target
    return implied
