"""The formats ``bfsql load`` reads, and how a source's format is told: its extension, then a look at its start.

* ``.jsonl``/``.ndjson`` bundles, ``.csv``/``.tsv`` triple tables, ``.nt``/``.ttl`` RDF, ``.obo`` and ``.owl``
  ontologies (``.owl.ttl`` too): by extension alone.
* ``.rdf``/``.xml``: by the root element: ``rdf:RDF`` is ``owl`` when it declares an ontology or classes,
  else ``rdfxml``.
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
}
"""Every format name ``--format`` takes, with what it reads."""

RDF_FORMATS = frozenset({"nt", "ttl", "rdfxml", "owl"})
"""Formats read by rdflib, whose ids are IRIs compacted by prefixes."""

_SNIFFED = (".rdf", ".xml")
_HEAD_BYTES = 65536


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
    """``owl`` or ``rdfxml`` by the root element of an XML file; None for another root."""
    root = xml_root(path)
    if root != "RDF":
        return None
    head = _head(path).decode("utf-8", "replace")
    return "owl" if re.search(r"<owl:(Ontology|Class)\b", head) else "rdfxml"


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
        return FORMATS[suffix]
    refuse_sqlite_source(path)
    hint = " (a file of one JSON object per line is --format jsonl)" if suffix == ".json" else ""
    if suffix in _SNIFFED:
        hint = " (its root element is not rdf:RDF)"
    raise LoadError(
        f"cannot tell the format of {path} from its extension {suffix or '(none)'!r}; "
        f"name it with --format ({format_list()}){hint}"
    )


def expand_sources(paths: list[Path], fmt: str | None) -> list[tuple[Path, str]]:
    """Each source with its format; :class:`LoadError` for a source of unknown format, FileNotFoundError."""
    files: list[tuple[Path, str]] = []
    for path in paths:
        files.append((path, fmt or detect_format(path)))
        if not path.exists() or path.is_dir():
            raise FileNotFoundError(f"no such file: {path}")
    return files
