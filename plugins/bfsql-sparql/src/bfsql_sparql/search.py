"""search_entities: find candidate labels on the endpoint, rank them in Python.

Three ways to find candidates, chosen by ``--search-mode``:

* ``contains``: portable ``CONTAINS(LCASE(STR(?label)), …)``, ordered by the endpoint
  (exact, prefix, then shorter labels) and bounded by ``--search-candidates``;
* ``bif``: Virtuoso's full-text index (``bif:contains``) over the words of the query;
  falls back to ``contains`` when the query has no word, nothing matches, or Virtuoso
  refuses it (a fallback that Virtuoso cuts short at ``--query-timeout`` still
  answers with what it found);
* ``exact``: index lookups of the query as written, lower-cased and capitalised, in
  the configured languages; for endpoints too large to scan (Wikidata).

The candidates' names and synonyms are then read, and every candidate is ranked like
the memory backend ranks (exact, prefix, contains; name before synonym; shorter first).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bfsql_sparql import queries
from bfsql_sparql.client import SparqlClient, SparqlEndpointError, Term
from bfsql_sparql.terms import InvalidTerm, string_expression, string_literal

__all__ = ["WORD_MATCH_RANK", "Candidates", "bif_expression", "find_candidates"]

logger = logging.getLogger("bfsql.sparql")

WORD_MATCH_RANK = 6
"""Rank of a full-text hit whose label does not contain the query as one substring (after all lexical ranks)."""
BIF_WILDCARD_MIN = 4
"""Virtuoso expands ``word*`` only for words of at least this many characters."""
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Candidates:
    """Entity IRIs that matched, in the endpoint's order, and whether they came from a word search."""

    iris: list[str]
    word_search: bool


def bif_expression(text: str) -> str | None:
    """A ``bif:contains`` argument (a SPARQL literal) matching every word of ``text``; None when it has no word.

    Each word is reduced to letters and digits and quoted, so nothing in ``text`` can
    change the free-text expression; words of 4+ characters also match as prefixes.
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))[:8]
    if not words:
        return None
    terms = [f'"{word}*"' if len(word) >= BIF_WILDCARD_MIN else f'"{word}"' for word in words]
    return string_literal(" AND ".join(terms))


def _exact_literals(text: str, languages: Sequence[str]) -> list[str]:
    variants = list(dict.fromkeys([text, text.lower(), text[:1].upper() + text[1:], text.title()]))
    tags = list(dict.fromkeys([*languages, ""])) if languages else ["", "en"]  # untagged literals always count
    literals = []
    for variant in variants:
        written = string_literal(variant)
        literals += [written + (f"@{tag}" if tag else "") for tag in tags]
    return literals


async def find_candidates(
    client: SparqlClient,
    text: str,
    mode: str,
    label_predicates: Sequence[str],
    languages: Sequence[str],
    limit: int,
    type_iris: Sequence[str] = (),
    untyped: bool = False,
    *,
    type_predicate: str,
) -> Candidates:
    """Entity IRIs whose labels match ``text``, best first, at most ``limit`` labels examined."""
    if mode == "exact":
        try:
            literals = _exact_literals(text, languages)
        except InvalidTerm:
            return Candidates([], word_search=False)  # a backslash before 'u' cannot be looked up exactly
        rows = await client.select(
            queries.search_exact_query(
                literals, label_predicates, limit, type_iris, untyped, type_predicate=type_predicate
            )
        )
        return Candidates(_iris(rows), word_search=False)
    if mode == "bif":
        expression = bif_expression(text)
        if expression is not None:
            try:
                rows = await client.select(
                    queries.search_bif_query(
                        expression,
                        label_predicates,
                        languages,
                        limit,
                        type_iris,
                        untyped,
                        type_predicate=type_predicate,
                    ),
                    allow_partial=True,
                )
                if rows:
                    return Candidates(_iris(rows), word_search=True)
            except SparqlEndpointError as exc:
                logger.info("sparql: bif:contains refused %r (%s); searching with CONTAINS", text, exc.message)
    needle = string_expression(text.lower())
    rows = await client.select(
        queries.search_contains_query(
            needle, label_predicates, languages, limit, type_iris, untyped, type_predicate=type_predicate
        ),
        allow_partial=True,
    )
    return Candidates(_iris(rows), word_search=False)


def _iris(rows: list[dict[str, Term]]) -> list[str]:
    return list(dict.fromkeys(row["e"].value for row in rows if "e" in row and row["e"].kind == "uri"))
