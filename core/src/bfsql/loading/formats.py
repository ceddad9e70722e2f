"""The formats ``bfsql load`` reads, and how a source's format is told: its extension, then a look at its start.

* ``.jsonl``/``.ndjson`` bundles, ``.csv``/``.tsv`` triple tables, ``.nt``/``.ttl`` RDF, ``.obo`` and ``.owl``
  ontologies (``.owl.ttl`` too), ``.graphml`` property graphs: by extension alone.
* ``.csv``/``.tsv`` whose header names Neo4j import columns (``:ID``, ``:START_ID``) are ``neo4j``.
* ``.rdf``/``.xml``: by the root element: ``graphml`` is GraphML, ``rdf:RDF`` is ``owl`` when it declares an
  ontology or classes, else ``rdfxml``.
* KGX is only read when named (``--format kgx``): its tables look like any other table.

A directory is a source only for KGX: its node and edge files (:func:`kgx_files`).
"""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

from bfsql.loading.errors import LoadError

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "RDF_FORMATS",
    "check_format",
    "detect_format",
    "expand_sources",
    "format_list",
    "kgx_files",
    "refuse_sqlite_source",
    "xml_root",
]

FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".nt": "nt",
    ".ttl": "ttl",
    ".obo": "obo",
    ".owl": "owl",
    ".graphml": "graphml",
}
"""File extension to format name, for the extensions that say the format alone."""

FORMAT_NAMES: dict[str, str] = {
    "jsonl": "JSONL bundle",
    "csv": "CSV triple table",
    "tsv": "TSV triple table",
    "nt": "N-Triples",
    "ttl": "Turtle",
    "rdfxml": "RDF/XML",
    "obo": "OBO ontology",
    "owl": "OWL ontology (RDF/XML or Turtle)",
    "kgx": "KGX nodes/edges (TSV, CSV or JSON Lines)",
    "neo4j": "Neo4j import CSV",
    "graphml": "GraphML",
}
"""Every format name ``--format`` takes, with what it reads."""

RDF_FORMATS = frozenset({"nt", "ttl", "rdfxml", "owl"})
"""Formats read by rdflib, whose ids are IRIs compacted by prefixes."""

_SNIFFED = (".rdf", ".xml")
_HEAD_BYTES = 65536
_NEO4J_COLUMN = re.compile(r"(^|[,\t])\s*\"?[^,\t\"]*:(ID|START_ID|END_ID)(\([^)]*\))?\"?\s*([,\t]|$)")
_KGX_NAME = re.compile(r"(^|[_.\-])(nodes|edges)\.(tsv|csv|jsonl)$", re.IGNORECASE)


_SQLITE_HEADER = b"SQLite format 3\x00"


def _is_bfsql_store(path: Path) -> bool:
    """Whether the SQLite database ``path`` has a bfsql store's ``meta.schema_version`` (opened read-only)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def refuse_sqlite_source(path: str | Path) -> None:
    """:class:`LoadError` when the source ``path`` is a SQLite database (a store to serve, not a file to load).

    Only regular files are looked at: a pipe's first bytes would be lost.
    """
    path = Path(path)
    if not _head(path).startswith(_SQLITE_HEADER):
        return
    shown = shlex.quote(str(path))
    if _is_bfsql_store(path):
        raise LoadError(
            f"{path} is a bfsql store (a SQLite database), not a file to load: serve it with "
            f"`bfsql serve --db {shown}`, or load files into it with `bfsql load --db {shown} FILE...`"
        )
    raise LoadError(
        f"{path} is a SQLite database but not a bfsql store, and bfsql load reads only graph files "
        f"({', '.join(FORMAT_NAMES.values())}): export its graph to one of those (see docs/bundle-format.md) "
        "and load that"
    )


def format_list() -> str:
    """The format names, comma-separated, for messages."""
    return ", ".join(FORMAT_NAMES)


def check_format(fmt: str) -> str:
    """``fmt`` if it is a format name, else :class:`LoadError` listing them."""
    if fmt not in FORMAT_NAMES:
        raise LoadError(f"unknown format {fmt!r}; use one of {format_list()}")
    return fmt


def _head(path: Path) -> bytes:
    """The first bytes of a regular file (nothing for a pipe, whose bytes would be lost, or an unreadable file)."""
    try:
        if not path.is_file():
            return b""
        with open(path, "rb") as handle:
            return handle.read(_HEAD_BYTES)
    except OSError:
        return b""


def xml_root(path: str | Path) -> str | None:
    """The local name of the root element of an XML file (``RDF``, ``graphml``, ``Ontology``); None if not XML."""
    head = _head(Path(path)).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not head.startswith("<"):
        return None
    root = re.search(r"<(?![?!])([\w.\-]+:)?([\w.\-]+)", head)
    return root[2] if root else None


def _xml_format(path: Path) -> str | None:
    """``graphml``, ``owl`` or ``rdfxml`` by the root element of an XML file; None for another root."""
    root = xml_root(path)
    if root == "graphml":
        return "graphml"
    if root != "RDF":
        return None
    head = _head(path).decode("utf-8", "replace")
    return "owl" if re.search(r"<owl:(Ontology|Class)\b", head) else "rdfxml"


def _table_format(path: Path, fmt: str) -> str:
    """``neo4j`` for a table whose header names Neo4j import columns, else ``fmt``."""
    first = _head(path).split(b"\n", 1)[0].decode("utf-8", "replace")
    return "neo4j" if _NEO4J_COLUMN.search(first) else fmt


def detect_format(path: str | Path) -> str:
    """The format name of ``path`` (see the module docstring); :class:`LoadError` saying to name it when unknown.

    A SQLite database of an unknown extension is refused as such
    (:func:`bfsql.loading.readers.refuse_sqlite_source`).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if path.name.lower().endswith(".owl.ttl"):
        return "owl"
    if suffix in _SNIFFED:
        found = _xml_format(path)
        if found is not None:
            return found
    elif suffix in FORMATS:
        fmt = FORMATS[suffix]
        return _table_format(path, fmt) if fmt in ("csv", "tsv") else fmt
    refuse_sqlite_source(path)
    hint = " (a file of one JSON object per line is --format jsonl)" if suffix == ".json" else ""
    if suffix in _SNIFFED:
        hint = " (its root element is neither rdf:RDF nor graphml)"
    raise LoadError(
        f"cannot tell the format of {path} from its extension {suffix or '(none)'!r}; "
        f"name it with --format ({format_list()}){hint}"
    )


def kgx_files(directory: Path) -> list[Path]:
    """The KGX files of ``directory`` (``*nodes.tsv``, ``*_edges.jsonl``, ...): node files first, by name."""
    roles = {p: match[2].lower() for p in directory.iterdir() if p.is_file() and (match := _KGX_NAME.search(p.name))}
    return sorted(roles, key=lambda p: (roles[p] != "nodes", p.name))


def expand_sources(paths: list[Path], fmt: str | None) -> list[tuple[Path, str]]:
    """Each source with its format, a KGX directory replaced by its files; :class:`LoadError` for a bad source."""
    files: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():
            members = kgx_files(path)
            if fmt != "kgx" or not members:
                hint = (" of KGX node and edge files: load it with --format kgx" if members
                        else "; bfsql load reads files (and, with --format kgx, a directory of *nodes.tsv and "
                        "*edges.tsv or .jsonl files)")
                raise LoadError(f"{path} is a directory{hint}")
            files.extend((member, "kgx") for member in members)
        else:
            files.append((path, fmt or detect_format(path)))
            if not path.exists():
                raise FileNotFoundError(f"no such file: {path}")
    return files
