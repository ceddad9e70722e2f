"""Compact ids for RDF: ``lv2:Plugin`` instead of ``http://lv2plug.in/ns/lv2core#Plugin``.

The conventions are those of the SPARQL backend (``--prefix NAME=IRI``), so that a graph
gets the same ids whether it is served from an endpoint or loaded from a file:

* an IRI under a known namespace becomes ``NAME:local``; the longest namespace wins,
  then the first given, so ids always read back as the same IRI;
* ``=IRI`` (an empty name, Turtle's ``@prefix :``) is the default namespace: its IRIs
  become the bare local part, when that part is not empty and has no ``:``;
* an IRI under no known namespace stays the full IRI;
* ``rdf rdfs owl xsd skos prov dcterms`` are known without being given, after the others;
* IRI schemes (``http``, ``urn``, ...) are refused as names: ids would become ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bfsql.loading.errors import LoadError
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.lines import ByteCallback, bounded_lines, decode_line

__all__ = ["BUILTIN_PREFIXES", "PrefixMap", "compact_iri", "parse_prefix", "turtle_prefixes"]

BUILTIN_PREFIXES: tuple[tuple[str, str], ...] = (
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("skos", "http://www.w3.org/2004/02/skos/core#"),
    ("prov", "http://www.w3.org/ns/prov#"),
    ("dcterms", "http://purl.org/dc/terms/"),
)
"""Prefixes known without being given (as in the SPARQL backend); given ones come first."""

RESERVED_NAMES = frozenset({"http", "https", "urn", "ftp", "file", "mailto", "tag", "data"})
"""IRI schemes: a prefix with one of these names would make full IRIs ambiguous."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_NOT_IN_IRIS = re.compile(r'[\x00-\x20<>"{}|^`\\\x7f-\x9f\ud800-\udfff]')
# Turtle's @prefix / SPARQL-style PREFIX declarations, one per line as writers emit them.
_DECLARATION = re.compile(r"\s*(?:@prefix|PREFIX)\s+([A-Za-z][\w.\-]*)?:\s*<([^>]*)>", re.IGNORECASE)


def _namespace_problem(namespace: str) -> str | None:
    if not _SCHEME.match(namespace):
        return "is not an absolute IRI (it needs a scheme such as 'http:')"
    bad = _NOT_IN_IRIS.search(namespace)
    return f"contains {bad[0]!r}, which no IRI may hold" if bad else None


def parse_prefix(spec: str) -> tuple[str, str]:
    """``(name, namespace)`` from ``NAME=IRI`` (``=IRI`` for the default namespace); :class:`LoadError` if bad."""
    name, sep, namespace = spec.partition("=")
    name, namespace = name.strip(), namespace.strip()
    if not sep or not namespace:
        raise LoadError(f"prefix {spec!r} is not of the form NAME=IRI (e.g. lv2=http://lv2plug.in/ns/lv2core#)")
    if name and not _NAME.fullmatch(name):
        raise LoadError(f"prefix name {name!r} must start with a letter and use letters, digits, _ . -")
    if name.lower() in RESERVED_NAMES:
        raise LoadError(f"prefix name {name!r} is an IRI scheme; full IRIs would become ambiguous")
    problem = _namespace_problem(namespace)
    if problem:
        raise LoadError(f"prefix {name or '(default)'!r}: {namespace!r} {problem}")
    return name, namespace


def turtle_prefixes(
    path: str | Path, limits: LoadLimits = DEFAULT_LIMITS, on_bytes: ByteCallback | None = None
) -> Iterator[tuple[str, str]]:
    """The ``(name, namespace)`` pairs a Turtle file declares, in order (relative and reserved ones left out).

    Reads the file line by line within ``limits.line_bytes`` (a longer line raises
    :class:`~bfsql.loading.errors.BadRow`), so it also checks the file before rdflib reads it whole.
    """
    name = str(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, name, limits.line_bytes, on_bytes), start=1):
            if b"prefix" not in raw.lower():
                continue
            match = _DECLARATION.match(decode_line(raw, name, number))
            if match is None:
                continue
            prefix, namespace = match[1] or "", match[2]
            if prefix.lower() not in RESERVED_NAMES and _namespace_problem(namespace) is None:
                yield prefix, namespace


@dataclass(frozen=True)
class PrefixMap:
    """Compact ids ``NAME:local`` for IRIs under known namespaces (see the module docstring)."""

    prefixes: tuple[tuple[str, str], ...]
    """(name, namespace IRI) pairs, most preferred first."""

    @classmethod
    def build(cls, *groups: Iterable[tuple[str, str]], builtins: bool = True) -> PrefixMap:
        """The pairs of ``groups`` in order, then the built-in prefixes; a name or namespace seen before is skipped."""
        pairs: list[tuple[str, str]] = []
        for group in (*groups, BUILTIN_PREFIXES if builtins else ()):
            for name, namespace in group:
                if all(name != known and namespace != ns for known, ns in pairs):
                    pairs.append((name, namespace))
        return cls(tuple(pairs))

    def compact(self, iri: str) -> str:
        """``NAME:local`` for the longest namespace that ``iri`` starts with, else ``iri`` itself."""
        return compact_iri(iri, self.prefixes)


def compact_iri(iri: str, prefixes: Iterable[tuple[str, str]]) -> str:
    """``NAME:local`` for the longest of ``prefixes`` (name, namespace) that ``iri`` starts with, else ``iri``.

    Under a default namespace (name ``""``) the id is the bare local part, used only when that
    part is not empty and has no ``:``, so that it reads back as the same IRI. The loader and
    the sparql backend compact ids by this one rule.
    """
    best: tuple[str, str] | None = None
    for name, namespace in prefixes:
        if not iri.startswith(namespace) or (best is not None and len(namespace) <= len(best[1])):
            continue
        local = iri[len(namespace) :]
        if name or (local and ":" not in local):
            best = (name, namespace)
    if best is None:
        return iri
    local = iri[len(best[1]) :]
    return f"{best[0]}:{local}" if best[0] else local
