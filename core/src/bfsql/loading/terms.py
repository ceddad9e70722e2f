"""Ontology terms as bundle rows, made alike from OBO and OWL so that both files of one ontology load the same.

An OBO id ``HP:0000118`` and its OWL IRI ``http://purl.obolibrary.org/obo/HP_0000118`` are the same term
(the OBO library's rule, which the OBO-to-OWL translation follows): both load as the id ``HP:0000118``
with that IRI as ``canonical_url``. An obsolete term is kept, hidden (``status: "merged"``, the status the
stores hide), with ``properties.obsolete`` and its ``replaced_by``/``consider`` ids.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DEFAULT_TERM_TYPE", "OBO_PURL", "curie_of_purl", "purl_of_curie", "term_row"]

DEFAULT_TERM_TYPE = "Term"
"""The type of a term whose ontology gives it no namespace (and no ``--term-type`` is given)."""

OBO_PURL = "http://purl.obolibrary.org/obo/"
"""The namespace of OBO library terms: ``PREFIX_LOCAL`` under it is the id ``PREFIX:LOCAL``."""

_CURIE = re.compile(r"([A-Za-z][A-Za-z0-9_.\-]*):([A-Za-z0-9_.\-]+)")
_PURL_LOCAL = re.compile(r"([A-Za-z][A-Za-z0-9.\-]*)_([A-Za-z0-9_.\-]+)")


def purl_of_curie(curie: str) -> str | None:
    """The OBO PURL of a prefixed id (``GO:0008150`` → ``…/obo/GO_0008150``); None for another kind of id."""
    match = _CURIE.fullmatch(curie)
    return f"{OBO_PURL}{match[1]}_{match[2]}" if match else None


def curie_of_purl(iri: str) -> str | None:
    """The prefixed id of an OBO PURL (``…/obo/GO_0008150`` → ``GO:0008150``); None for another IRI."""
    if not iri.startswith(OBO_PURL):
        return None
    match = _PURL_LOCAL.fullmatch(iri[len(OBO_PURL):])
    return f"{match[1]}:{match[2]}" if match else None


def term_row(
    term_id: str,
    term_type: str,
    name: str | None,
    synonyms: list[str],
    properties: dict[str, Any],
    url: str | None,
) -> dict[str, Any]:
    """The entity row of a term: synonyms without repeats or the name, hidden when ``properties.obsolete``."""
    row: dict[str, Any] = {"kind": "entity", "id": term_id, "entity_type": term_type, "name": name}
    kept = [s for s in dict.fromkeys(synonyms) if s and s != name]
    if kept:
        row["synonyms"] = kept
    if properties:
        row["properties"] = properties
    if properties.get("obsolete"):
        row["status"] = "merged"
    if url is not None:
        row["canonical_url"] = url
    return row
