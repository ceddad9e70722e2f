"""Readers for every loadable format, each yielding ``(line, record)`` like :func:`read_bundle`.

* JSONL bundles (``.jsonl``, ``.ndjson``): see :mod:`bfsql.loading.bundle`.
* Triple tables (``.csv``, ``.tsv``): ``subject, predicate, object`` plus the optional
  columns ``subject_type, object_type, confidence, source_documents``.
* RDF (``.nt``, ``.ttl``) through rdflib, the optional extra ``bfsql[rdf]``.

Entities that a triple table or RDF file only mentions are yielded as
:class:`ImpliedEntity`, which a store inserts only when the id is not already known,
so loading ``entities.jsonl`` and ``edges.csv`` in any order keeps the full entities.
See docs/bundle-format.md for the mappings.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bfsql.loading.bundle import BadRow, Record, parse_record, read_bundle
from bfsql.loading.records import EntityRecord, RelationshipRecord

__all__ = [
    "DEFAULT_ENTITY_TYPE",
    "FORMATS",
    "ImpliedEntity",
    "detect_format",
    "read_rdf",
    "read_records",
    "read_triple_table",
]

FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".nt": "nt",
    ".ttl": "ttl",
}
"""File extension to format name."""

DEFAULT_ENTITY_TYPE = "Entity"
"""The type of an implied entity whose type nobody states."""

TABLE_COLUMNS = ("subject", "predicate", "object", "subject_type", "object_type", "confidence", "source_documents")
"""Columns of a triple table, in positional order when the file has no header."""


class ImpliedEntity(EntityRecord):
    """An entity known only because a triple mentions it; never replaces a stored entity."""


def detect_format(path: str | Path) -> str:
    """The format name of ``path`` from its extension; ``ValueError`` when unknown."""
    suffix = Path(path).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        known = ", ".join(sorted(set(FORMATS.values())))
        raise ValueError(
            f"cannot tell the format of {path} from its extension {suffix!r}; give the format explicitly ({known})"
        ) from None


def read_records(path: str | Path, fmt: str | None = None) -> Iterator[tuple[int, Record]]:
    """Yield ``(line, record)`` from a file of any supported format (``fmt`` overrides detection)."""
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        return read_bundle(path)
    if fmt in ("csv", "tsv"):
        return read_triple_table(path, delimiter="," if fmt == "csv" else "\t")
    if fmt in ("nt", "ttl"):
        return read_rdf(path, fmt)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(sorted(set(FORMATS.values())))}")


def _header(row: list[str], path: str, line: int) -> list[str] | None:
    names = [cell.strip().casefold() for cell in row]
    if names[:3] != ["subject", "predicate", "object"]:
        return None
    unknown = [n for n in names if n not in TABLE_COLUMNS]
    if unknown:
        raise BadRow(path, line, f"unknown column(s) {unknown}; known columns: {', '.join(TABLE_COLUMNS)}")
    if len(set(names)) != len(names):
        raise BadRow(path, line, "a column name appears twice")
    return names


def read_triple_table(path: str | Path, delimiter: str = ",") -> Iterator[tuple[int, Record]]:
    """Yield relationships from a CSV/TSV triple table, then the entities it implies.

    The header is optional: a first row starting ``subject, predicate, object`` names
    the columns; otherwise columns are taken positionally in :data:`TABLE_COLUMNS`
    order. ``source_documents`` is ``;``-separated. An implied entity has the first
    type any row gives it (else ``Entity``) and its id as name. TSV has no quoting.
    """
    name = str(path)
    implied: dict[str, tuple[int, str | None]] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(
            handle, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
        )
        columns: list[str] | None = None
        try:
            for row in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if columns is None:
                    columns = _header(row, name, line)
                    if columns is not None:
                        continue
                    if not 3 <= len(row) <= len(TABLE_COLUMNS):
                        raise BadRow(name, line, f"expected 3 to {len(TABLE_COLUMNS)} columns, got {len(row)}")
                    columns = list(TABLE_COLUMNS[: len(row)])
                if len(row) != len(columns):
                    raise BadRow(name, line, f"expected {len(columns)} columns, got {len(row)}")
                cells = {column: cell.strip() for column, cell in zip(columns, row, strict=True)}
                documents = cells.get("source_documents", "")
                obj = {
                    "kind": "relationship",
                    "subject": cells["subject"],
                    "predicate": cells["predicate"],
                    "object": cells["object"],
                    "confidence": cells.get("confidence") or None,
                    "source_documents": [d.strip() for d in documents.split(";") if d.strip()],
                }
                record = parse_record(obj, name, line)
                assert isinstance(record, RelationshipRecord)
                for entity_id, entity_type in (
                    (record.subject, cells.get("subject_type")),
                    (record.object, cells.get("object_type")),
                ):
                    seen = implied.get(entity_id)
                    if seen is None or (seen[1] is None and entity_type):
                        implied[entity_id] = (seen[0] if seen else line, entity_type or None)
                yield line, record
        except csv.Error as exc:
            raise BadRow(name, reader.line_num, f"malformed {'CSV' if delimiter == ',' else 'TSV'}: {exc}") from None
    for entity_id, (line, entity_type) in implied.items():
        yield line, ImpliedEntity(id=entity_id, entity_type=entity_type or DEFAULT_ENTITY_TYPE, name=entity_id)


def _local_name(iri: str) -> str:
    """The part of an IRI after its last ``#``, ``/`` or ``:``; the whole IRI if that is empty."""
    for separator in ("#", "/", ":"):
        if separator in iri:
            tail = iri.rsplit(separator, 1)[1]
            return tail or iri
    return iri


def _literal_value(literal: Any) -> Any:
    value = literal.toPython()
    if isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return str(literal)


def _first_bad_nt_line(path: str) -> int:
    """N-Triples errors carry no position; every line stands alone, so re-parse line by line."""
    import rdflib

    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                rdflib.Graph().parse(data=line, format="nt")
            except Exception:
                return number
    return 0


def _rdf_error(path: str, fmt: str, exc: Exception) -> BadRow:
    line = getattr(exc, "lines", None)  # turtle's BadSyntax: 0-based line
    number = line + 1 if isinstance(line, int) else _first_bad_nt_line(path) if fmt == "nt" else 0
    message = getattr(exc, "_why", None) or getattr(exc, "msg", None) or str(exc)
    return BadRow(path, number, f"cannot parse {'N-Triples' if fmt == 'nt' else 'Turtle'}: {message}")


def read_rdf(path: str | Path, fmt: str = "ttl") -> Iterator[tuple[int, Record]]:
    """Yield entities and relationships from an N-Triples (``nt``) or Turtle (``ttl``) file.

    Every IRI subject becomes an entity with its full IRI as id: ``rdf:type`` gives
    the entity type (local name; the smallest when there are several, the rest kept
    in ``properties["types"]``, ``Entity`` when untyped), ``skos:prefLabel`` or
    ``rdfs:label`` the name (English or untagged first), further labels and
    ``skos:altLabel`` the synonyms, any other literal a property named by the
    predicate's local name (a list when repeated). A triple with an IRI object becomes
    a relationship whose predicate is the local name; its object, if never a subject,
    an implied entity named by its local name. Blank nodes are skipped. rdflib reports
    no positions, so records carry line 0.
    """
    try:
        import rdflib
        from rdflib.namespace import RDF, RDFS, SKOS
    except ImportError:
        raise ImportError("reading N-Triples/Turtle needs rdflib: pip install 'bfsql[rdf]'") from None
    source = str(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such file: {source}")
    graph = rdflib.Graph()
    try:
        graph.parse(source, format="nt" if fmt == "nt" else "turtle")
    except Exception as exc:  # rdflib raises many unrelated types for syntax errors
        raise _rdf_error(source, fmt, exc) from None

    subjects = sorted({s for s in graph.subjects() if isinstance(s, rdflib.URIRef)}, key=str)
    known = set(subjects)
    mentioned: dict[str, None] = {}
    for subject in subjects:
        types: list[str] = []
        labels: list[Any] = []
        synonyms: list[str] = []
        properties: dict[str, list[Any]] = {}
        relationships: list[RelationshipRecord] = []
        for predicate, obj in sorted(graph.predicate_objects(subject), key=lambda po: (str(po[0]), str(po[1]))):
            if isinstance(obj, rdflib.BNode):
                continue
            if predicate == RDF.type and isinstance(obj, rdflib.URIRef):
                types.append(_local_name(str(obj)))
            elif isinstance(obj, rdflib.Literal):
                if predicate in (RDFS.label, SKOS.prefLabel):
                    labels.append((predicate != SKOS.prefLabel, obj.language not in (None, "", "en"), str(obj)))
                elif predicate == SKOS.altLabel:
                    synonyms.append(str(obj))
                else:
                    properties.setdefault(_local_name(str(predicate)), []).append(_literal_value(obj))
            else:
                relationships.append(
                    RelationshipRecord(subject=str(subject), predicate=_local_name(str(predicate)), object=str(obj))
                )
                if obj not in known:
                    mentioned[str(obj)] = None
        types.sort()
        label_texts = [text for *_, text in sorted(labels)]
        props: dict[str, Any] = {key: values[0] if len(values) == 1 else values for key, values in properties.items()}
        if len(types) > 1:
            props["types"] = types
        name = label_texts[0] if label_texts else _local_name(str(subject))
        yield (
            0,
            EntityRecord(
                id=str(subject),
                entity_type=types[0] if types else DEFAULT_ENTITY_TYPE,
                name=name,
                synonyms=[s for s in dict.fromkeys(label_texts[1:] + synonyms) if s != name],
                properties=props,
            ),
        )
        for relationship in relationships:
            yield 0, relationship
    for iri in mentioned:
        yield 0, ImpliedEntity(id=iri, entity_type=DEFAULT_ENTITY_TYPE, name=_local_name(iri))
