"""The JSON-LD subset, checked against pyld (the reference JSON-LD processor) as an oracle.

pyld is used here only, never at run time: the backend implements the subset it needs
(see bfsql_jsonld/context.py for what and why). Every document below is expanded by
pyld with a document loader that serves local copies and refuses the network.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pyld import jsonld

from bfsql_jsonld.context import (
    ActiveContext,
    ContextLoader,
    compact_iri,
    context_refs,
    document_refs,
    expand_iri,
    process_context,
)
from bfsql_jsonld.errors import ContextError

DOC_URL = "http://api.test/entities/doc"
SCHEMA = "http://schema.org/"

REMOTE = {
    "http://ctx.test/schema.jsonld": {"@context": {"@vocab": SCHEMA, "name": "http://schema.org/name"}},
    "http://ctx.test/prefixes.jsonld": {"@context": {"fplx": "https://identifiers.org/fplx:", "ex": "http://ex.test/"}},
    "http://ctx.test/imported.jsonld": {"@context": {"label": "http://www.w3.org/2000/01/rdf-schema#label"}},
}


def _loader(url: str, options: Any = None) -> dict[str, Any]:
    if url not in REMOTE:
        raise jsonld.JsonLdError("network refused in tests", "jsonld.LoadDocumentError", code="loading document failed")
    return {
        "contentType": "application/ld+json",
        "contextUrl": None,
        "documentUrl": url,
        "document": copy.deepcopy(REMOTE[url]),
    }


DOCUMENTS: list[dict[str, Any]] = [
    {  # prefixes, @vocab and keyword aliases
        "@context": {
            "@vocab": "http://vocab.test/",
            "fplx": "https://identifiers.org/fplx:",
            "id": "@id",
            "type": "@type",
            "syn": {"@id": "http://vocab.test/synonyms"},
        },
        "id": "fplx:RAF",
        "type": "Family",
        "name": "RAF",
        "syn": ["x"],
        "fplx:extra": 1,
    },
    {  # @base and relative ids
        "@context": {"@base": "http://api.test/things/", "@vocab": "http://vocab.test/"},
        "@id": "RAF%20x",
        "@type": "http://types.test/Family",
        "name": "RAF",
    },
    {  # no context: ids resolve against the document URL, absolute keys stay
        "@id": "other",
        "@type": "http://types.test/T",
        "http://vocab.test/name": "n",
    },
    {  # a referenced context, an array of contexts, and a null reset then a new vocab
        "@context": [
            "http://ctx.test/prefixes.jsonld",
            None,
            "http://ctx.test/schema.jsonld",
            {"ex": "http://ex.test/"},
        ],
        "@id": "ex:e1",
        "@type": "Person",
        "name": "N",
        "ex:knows": "v",
    },
    {  # @import (JSON-LD 1.1) and a term defined through another term
        "@context": {
            "@version": 1.1,
            "@import": "http://ctx.test/imported.jsonld",
            "ex": "http://ex.test/",
            "knows": "ex:knows",
            "@vocab": "http://vocab.test/",
        },
        "@id": "ex:e2",
        "@type": "ex:Type",
        "label": "L",
        "knows": "k",
        "plain": 2,
    },
    {  # 1.1 prefix rule: a term whose IRI does not end in a gen-delim is not a prefix
        "@context": {
            "@version": 1.1,
            "@vocab": "http://vocab.test/",
            "name": "http://schema.org/name",
            "gene": "http://genes.test/g/",
            "pfx": {"@id": "http://pfx.test/p", "@prefix": True},
        },
        "@id": "gene:TP53",
        "@type": "pfx:Type",
        "name:x": "not a compact IRI",
        "pfx:key": 3,
    },
]


def _ours(document: dict[str, Any]) -> tuple[ActiveContext, dict[str, Any]]:
    resolved = {url: copy.deepcopy(doc) for url, doc in REMOTE.items()}
    ctx = process_context(ActiveContext.initial(DOC_URL), document.get("@context"), resolved, base_url=DOC_URL)
    return ctx, resolved


@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_expansion_of_ids_types_and_keys_matches_pyld(document: dict[str, Any]) -> None:
    expected = jsonld.expand(copy.deepcopy(document), {"base": DOC_URL, "documentLoader": _loader})[0]
    ctx, _ = _ours(document)
    id_key = next(k for k in document if ctx.keyword_of(k) == "@id")
    type_key = next(k for k in document if ctx.keyword_of(k) == "@type")
    assert expand_iri(ctx, document[id_key], document_relative=True) == expected["@id"]
    assert [expand_iri(ctx, document[type_key], vocab=True)] == expected["@type"]
    ours = {expand_iri(ctx, k, vocab=True) for k in document if k != "@context" and ctx.keyword_of(k) is None}
    assert ours == {k for k in expected if not k.startswith("@")}


@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_compaction_of_keys_and_types_matches_pyld(document: dict[str, Any]) -> None:
    """Compacting back with the document's own context gives pyld's keys and type."""
    expanded = jsonld.expand(copy.deepcopy(document), {"base": DOC_URL, "documentLoader": _loader})
    compacted = jsonld.compact(
        expanded,
        {"@context": document.get("@context", {})},
        {"base": DOC_URL, "documentLoader": _loader, "compactArrays": True},
    )
    ctx, _ = _ours(document)
    keys = {compact_iri(ctx, iri) for iri in expanded[0] if not iri.startswith("@")}
    assert keys == {k for k in compacted if k != "@context" and ctx.keyword_of(k) is None}
    type_key = next(k for k in compacted if ctx.keyword_of(k) == "@type")
    assert compact_iri(ctx, expanded[0]["@type"][0]) == compacted[type_key]


def test_keyword_aliases_and_null_mappings():
    ctx, _ = _ours({"@context": {"id": "@id", "kind": "@type", "skip": None, "@vocab": "http://v.test/"}})
    assert ctx.keyword_of("id") == "@id" and ctx.keyword_of("kind") == "@type" and ctx.keyword_of("name") is None
    assert expand_iri(ctx, "skip", vocab=True) is None
    assert expand_iri(ctx, "other", vocab=True) == "http://v.test/other"


def test_base_null_keeps_ids_as_written():
    ctx = process_context(ActiveContext.initial(DOC_URL), {"@base": None}, {})
    for raw in ("a/b?c#d%e f", "FPLX:RAF", "é/ü", "..", "%2F"):
        assert expand_iri(ctx, raw, document_relative=True) == raw


def test_invalid_contexts_are_clear_errors():
    with pytest.raises(ContextError, match="cycle"):
        _ours({"@context": {"a": "b:x", "b": "a:y"}})
    with pytest.raises(ContextError, match="redefines the keyword"):
        _ours({"@context": {"@id": "http://x.test/"}})
    with pytest.raises(ContextError, match="no @vocab"):
        _ours({"@context": {"term": {"@type": "@id"}}})
    with pytest.raises(ContextError, match="not a JSON-LD context"):
        process_context(ActiveContext.initial(DOC_URL), "http://ctx.test/x", {"http://ctx.test/x": {"a": 1}})
    with pytest.raises(ContextError, match="includes itself"):
        process_context(
            ActiveContext.initial(DOC_URL),
            "http://ctx.test/self",
            {"http://ctx.test/self": {"@context": "http://ctx.test/self"}},
        )


def test_references_are_found_everywhere_in_a_document():
    document = {
        "@context": ["a.jsonld", {"@import": "/b.jsonld", "t": {"@id": "http://x.test/t", "@context": "c.jsonld"}}],
        "member": [{"@context": "http://other.test/d.jsonld"}],
    }
    assert sorted(document_refs(document, DOC_URL)) == [
        "http://api.test/b.jsonld",
        "http://api.test/entities/a.jsonld",
        "http://api.test/entities/c.jsonld",
        "http://other.test/d.jsonld",
    ]
    assert list(context_refs(None, DOC_URL)) == []


async def test_loader_refuses_the_network_unless_allowed():
    loader = ContextLoader({"http://local.test/ctx": {"@context": {}}}, fetch=None)
    await loader.resolve(["http://local.test/ctx"], DOC_URL)
    with pytest.raises(ContextError) as info:
        await loader.resolve(["http://remote.test/ctx.jsonld"], DOC_URL)
    assert "http://remote.test/ctx.jsonld" in str(info.value) and "--allow-remote-contexts" in str(info.value)
    assert "--context-map" in str(info.value)

    fetched: list[str] = []

    async def fetch(url: str) -> Any:
        fetched.append(url)
        return {"@context": "http://remote.test/nested.jsonld"} if url.endswith("ctx.jsonld") else {"@context": {}}

    loader = ContextLoader({}, fetch=fetch)
    await loader.resolve(["http://remote.test/ctx.jsonld"], DOC_URL)
    await loader.resolve(["http://remote.test/ctx.jsonld"], DOC_URL)
    assert fetched == ["http://remote.test/ctx.jsonld", "http://remote.test/nested.jsonld"]
