"""The bundled zero-config demo graph: FamPlex, human protein families and complexes.

FamPlex (https://github.com/sorgerlab/famplex, CC0 1.0) is vendored as its source
CSVs, version 0.0.5, in ``famplex/``; see docs/demo-graph.md. :func:`famplex_records`
turns them into bundle records and :func:`ensure_demo_db` builds them into a SQLite
store in the user's cache, once per bfsql version and data content.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.util
import os
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from bfsql.embedders import AUTO, is_semantic
from bfsql.loading.records import EntityRecord, RelationshipRecord
from bfsql.loading.store_format import SCHEMA_VERSION
from bfsql.plugins import create_embedder, preferred_embedder
from bfsql.version import __version__

if TYPE_CHECKING:
    from bfsql.loading.bundle import Record

__all__ = [
    "CACHE_DIR_VARIABLE", "DATA_DIR", "FAMPLEX_VERSION", "cache_dir", "demo_store", "ensure_demo_db",
    "famplex_description", "famplex_records",
]

DATA_DIR = Path(__file__).parent / "famplex"
"""The vendored FamPlex CSVs."""

FAMPLEX_VERSION = "0.0.5"
"""The FamPlex release the CSVs come from."""

RELATIONS_DOCUMENT = "famplex:relations.csv"
"""The ``source_documents`` entry of every demo relationship."""

_FILES = ("entities.csv", "relations.csv", "descriptions.csv", "equivalences.csv", "grounding_map.csv")
_MEMBER_TYPES = {"HGNC": "Gene", "UP": "Protein"}
_URLS = {
    "FPLX": "https://identifiers.org/fplx:{}",
    "HGNC": "https://identifiers.org/hgnc.symbol:{}",
    "UP": "https://identifiers.org/uniprot:{}",
}


def _rows(name: str) -> list[list[str]]:
    with (DATA_DIR / name).open(newline="", encoding="utf-8") as handle:
        return [[cell.strip() for cell in row] for row in csv.reader(handle) if any(row)]


def _xref(namespace: str, identifier: str) -> str:
    return identifier if identifier.startswith(f"{namespace}:") else f"{namespace}:{identifier}"


def famplex_records() -> list[Record]:
    """The FamPlex graph as bundle records: entities sorted by id, then relations in file order.

    * ``FPLX:<name>`` for every FamPlex entity: a ``Complex`` when some entity is
      ``partof`` it (it has parts), else a ``Family`` (it only has ``isa`` members);
      named by its BEL label when equivalences.csv has one, else by its FamPlex name
      with underscores as spaces; ``description``/``description_source`` from
      descriptions.csv and ``xrefs`` (``NS:ID``) from equivalences.csv.
    * ``HGNC:<symbol>`` (``Gene``) and ``UP:<accession>`` (``Protein``) for every
      gene or protein that relations.csv places in a family or complex, named by
      the symbol or accession.
    * Synonyms: the FamPlex name, further BEL labels, and every text that
      grounding_map.csv grounds to the entity. Groundings to entities outside the
      graph (chemicals, other genes) are not used.
    * ``isa``/``partof`` relationships from relations.csv, with
      ``source_documents = ["famplex:relations.csv"]`` and no confidence.
    """
    tables = _FamPlexTables.read()
    ids = {f"FPLX:{family}" for family in tables.families}
    ids.update(end for subject, _, obj in tables.relations for end in (subject, obj))
    records: list[Record] = [_famplex_entity(entity_id, tables) for entity_id in sorted(ids)]
    records.extend(
        RelationshipRecord(subject=subject, predicate=rel, object=obj, source_documents=[RELATIONS_DOCUMENT])
        for subject, rel, obj in tables.relations
    )
    return records


@dataclass(frozen=True)
class _FamPlexTables:
    """FamPlex's CSVs, indexed the way the records are built from them."""

    families: list[str]
    """Every FamPlex name (entities.csv)."""
    relations: list[tuple[str, str, str]]
    """``(subject id, isa|partof, object id)`` in file order (relations.csv)."""
    equivalences: dict[str, list[tuple[str, str]]]
    """``(namespace, identifier)`` equivalents of each FamPlex name (equivalences.csv)."""
    descriptions: dict[str, tuple[str, str]]
    """``(reference, text)`` of each FamPlex name that has one (descriptions.csv)."""
    grounded: dict[str, list[str]]
    """The texts grounding_map.csv grounds to each ``NS:ID``."""
    complexes: set[str]
    """The ids that some entity is ``partof``."""

    @classmethod
    def read(cls) -> _FamPlexTables:
        """Read the vendored CSVs."""
        equivalences: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for namespace, identifier, family in _rows("equivalences.csv"):
            equivalences[family].append((namespace, identifier))
        grounded: dict[str, list[str]] = defaultdict(list)
        for row in _rows("grounding_map.csv"):
            for namespace, identifier in zip(row[1::2], row[2::2], strict=False):
                if namespace and identifier:
                    grounded[f"{namespace}:{identifier}"].append(row[0])
        relations = [(f"{ns1}:{id1}", rel, f"{ns2}:{id2}") for ns1, id1, rel, ns2, id2 in _rows("relations.csv")]
        return cls(
            families=[row[0] for row in _rows("entities.csv")],
            relations=relations,
            equivalences=equivalences,
            descriptions={family: (reference, text) for family, reference, text in _rows("descriptions.csv")},
            grounded=grounded,
            complexes={obj for _, rel, obj in relations if rel == "partof"},
        )


def _famplex_entity(entity_id: str, tables: _FamPlexTables) -> EntityRecord:
    """The entity record of a FamPlex family or complex, or of a gene or protein among their members."""
    namespace, local = entity_id.split(":", 1)
    properties: dict[str, object] = {}
    if namespace == "FPLX":
        name, synonyms, entity_type, properties = _family_fields(entity_id, local, tables)
    else:
        name, synonyms, entity_type = local, tables.grounded[entity_id], _MEMBER_TYPES[namespace]
    return EntityRecord(
        id=entity_id,
        entity_type=entity_type,
        name=name,
        synonyms=[s for s in dict.fromkeys(synonyms) if s != name],
        properties=properties,
        source=f"FamPlex {FAMPLEX_VERSION}",
        canonical_url=_URLS[namespace].format(local),
    )


def _family_fields(
    entity_id: str, local: str, tables: _FamPlexTables
) -> tuple[str, list[str], str, dict[str, object]]:
    """Name, synonyms, type and properties of ``FPLX:<local>``: BEL label first, description and xrefs."""
    equivalent = tables.equivalences.get(local, [])
    labels = [identifier for ns, identifier in equivalent if ns == "BEL"]
    name = labels[0] if labels else local.replace("_", " ")
    synonyms = [local, *labels[1:], *tables.grounded[entity_id]]
    entity_type = "Complex" if entity_id in tables.complexes else "Family"
    properties: dict[str, object] = {}
    if local in tables.descriptions:
        reference, text = tables.descriptions[local]
        properties["description"] = text
        if reference:
            properties["description_source"] = reference
    if equivalent:
        properties["xrefs"] = [_xref(ns, identifier) for ns, identifier in equivalent]
    return name, synonyms, entity_type, properties


def famplex_description(records: list[Record]) -> str:
    """The demo graph's ``graph_description``, with its counts."""
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        counts[record.entity_type if isinstance(record, EntityRecord) else record.kind] += 1
    return (
        f"FamPlex {FAMPLEX_VERSION} (sorgerlab/famplex, CC0 1.0): {counts['Family']} human protein families and "
        f"{counts['Complex']} protein complexes (ids FPLX:<name>), with the {counts['Gene']} HGNC genes "
        f"(HGNC:<symbol>) and {counts['Protein']} UniProt proteins (UP:<accession>) that are their members "
        f"('isa' edges) or parts ('partof' edges), {counts['relationship']} edges in all. Families and complexes "
        "also nest in each other. Nodes carry names, synonyms from FamPlex's grounding map, MeSH-based "
        "descriptions and cross-references (xrefs) to BEL, GO, InterPro, Pfam, MeSH, Reactome and others."
    )


CACHE_DIR_VARIABLE = "BFSQL_CACHE_DIR"
"""The environment variable that moves the cache of built demo stores."""

LEXICAL = "lexical"
"""The last part of the name of a demo store built without vectors (no semantic embedder installed)."""


def cache_dir() -> Path:
    """Where built demo stores live: ``$BFSQL_CACHE_DIR``, else the platform's cache folder for bfsql
    (``$XDG_CACHE_HOME/bfsql``, by default ``~/.cache/bfsql``, on Linux; ``~/Library/Caches/bfsql`` on macOS;
    ``%LOCALAPPDATA%\\bfsql\\Cache`` on Windows)."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    return Path(configured) if configured else Path(platformdirs.user_cache_dir("bfsql", appauthor=False))


@functools.cache
def _content_hash() -> str:
    """Hash of everything the demo store is built from, so any change rebuilds it."""
    digest = hashlib.sha256(SCHEMA_VERSION.encode())
    loader = importlib.util.find_spec("bfsql.loading.sqlite_loader")  # its source, without loading it
    assert loader is not None and loader.origin is not None
    for path in [*(DATA_DIR / name for name in _FILES), Path(__file__), Path(loader.origin)]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def ensure_demo_db() -> Path:
    """The path of the built demo store, building it first if needed.

    The file name carries the bfsql version, a hash of the data and build code, and the
    embedder that made its vectors (the preferred semantic embedder installed, else none:
    ``lexical``), so an upgrade builds a fresh store, virtualenvs with different embedders
    sharing a cache each find their own, and installing an embedder gives the demo its
    vectors at the next start. The build goes through
    :func:`~bfsql.loading.sqlite_loader.load_records`, which writes a temporary file
    and renames it into place, so a reader never sees a half-built store and two
    processes building at once both end with a complete one.
    """

    built_by = preferred_embedder() or LEXICAL
    path = cache_dir() / f"famplex-{FAMPLEX_VERSION}-bfsql-{__version__}-{_content_hash()}-{built_by}.sqlite"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        from bfsql.loading import sqlite_loader

        records = famplex_records()
        sqlite_loader.load_records(path, records, description=famplex_description(records))
    return path


def _stored_embedder(path: Path) -> str | None:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return row[0] if row else None


def demo_store(embedder: str = AUTO) -> Path:
    """The demo store to serve with ``embedder`` (a registered name, or ``auto``), built first if needed.

    The demo is built with the preferred embedder (see :func:`ensure_demo_db`), which ``auto``
    serves. Another embedder gets a copy of the demo embedded with it, built once and kept beside
    it, so that vector search and path queries work with whichever embedder the server uses; a
    store's vectors are never compared with another model's. The store is chosen before it is
    opened: a served store never switches files.
    """
    base = ensure_demo_db()
    stored = _stored_embedder(base)
    if embedder in (AUTO, stored):
        return base
    chosen = create_embedder(embedder)
    if stored is None and not is_semantic(chosen):
        return base  # a lexical demo and a spelling embedder: nothing to compare
    target = base.with_name(f"{base.stem}-{chosen.name}-{chosen.dimension}.sqlite")
    if not target.is_file():
        from bfsql.loading import sqlite_loader

        sqlite_loader.reembed_store(target, chosen, base)
    return target
