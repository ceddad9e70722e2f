"""Turning what a user typed into a full-text query that cannot be read as query syntax.

Neo4j's full-text indexes parse Lucene classic query syntax; FalkorDB's parse
RediSearch syntax. User text is never passed through: it is split into terms, each
term is escaped for the target syntax, and the query is assembled from those
terms only. Lowercasing the terms also keeps ``AND``/``OR``/``NOT`` typed by a
user from being read as operators.
"""

from __future__ import annotations

import re

from bfsql_neo4j.dialect import Dialect, DialectName

__all__ = ["LUCENE_SPECIAL", "MAX_QUERY_CHARS", "escape_lucene", "escape_redisearch", "fulltext_query"]

LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')
"""Characters with a meaning in Lucene classic query syntax (``&&`` and ``||`` are covered by ``&`` and ``|``)."""

MAX_QUERY_CHARS = 200
"""Search text beyond this many characters is ignored (a name, not a document)."""

_WORD = re.compile(r"\w+", re.UNICODE)
_REDISEARCH_MIN_PREFIX = 2


def escape_lucene(term: str) -> str:
    """``term`` with every Lucene special character backslash-escaped."""
    return "".join("\\" + ch if ch in LUCENE_SPECIAL else ch for ch in term)


def escape_redisearch(term: str) -> str:
    """``term`` with every character that is not a letter, digit or underscore backslash-escaped."""
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in term)


def _lucene(text: str) -> str:
    terms = [escape_lucene(t) for t in text.lower().split()]
    if not terms:
        return ""
    clauses = [f'"{" ".join(terms)}"^4', "(" + " AND ".join(terms) + ")^2"]
    last = text.lower().split()[-1]
    if _WORD.fullmatch(last):  # wildcard terms are not analysed: only plain words make a useful prefix
        clauses.append("(" + " AND ".join([*terms[:-1], last + "*"]) + ")")
    return " OR ".join(clauses)


def _redisearch(text: str) -> str:
    words = _WORD.findall(text.lower())
    if not words:
        return ""
    terms = [escape_redisearch(w) for w in words]
    exact = " ".join(terms)
    if len(words[-1]) < _REDISEARCH_MIN_PREFIX:
        return exact
    prefixed = " ".join([*terms[:-1], terms[-1] + "*"])
    return f"({exact}) | ({prefixed})"


def fulltext_query(text: str, dialect: Dialect) -> str:
    """The full-text query for ``text`` in ``dialect``'s syntax; ``""`` when there is nothing to search."""
    text = text.replace("\x00", " ").strip()[:MAX_QUERY_CHARS]
    if dialect.name is DialectName.FALKORDB:
        return _redisearch(text)
    return _lucene(text)
