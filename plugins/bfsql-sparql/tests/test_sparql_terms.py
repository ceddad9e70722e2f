"""Terms in query text: IRI checks, compact ids, string literals — and that both real servers read them back exactly."""

from __future__ import annotations

import pytest
from sparql_servers import SparqlServer, sparql_json

from bfsql_sparql.search import bif_expression
from bfsql_sparql.terms import (
    InvalidTerm,
    PrefixMap,
    check_iri,
    check_language,
    string_expression,
    string_literal,
)

NASTY_TEXTS = [
    "plain",
    'quote " inside',
    "apostrophe ' inside",
    "back\\slash",
    "ends with backslash \\",
    "\\u0022 looks like an escape",
    "\\U0001F600 too",
    "\\\\u005C double",
    "new\nline",
    "carriage\rreturn",
    "tab\there",
    "} ; DROP ALL ; SELECT * {",
    '" } ; INSERT DATA { <a:b> <a:b> "x" } #',
    "# comment",
    "<http://example.org/iri>",
    "'''triple single'''",
    '"""triple double"""',
    "unicode: 胃癌 β-catenin é 😀",
    "\b backspace \f formfeed",
]


@pytest.mark.parametrize("text", NASTY_TEXTS)
def test_string_expression_never_contains_a_codepoint_escape(text: str) -> None:
    written = string_expression(text)
    assert "\\u" not in written.replace("\\\\", "") and "\\U" not in written.replace("\\\\", "")
    assert "\n" not in written and "\r" not in written


@pytest.mark.parametrize("text", ["nul \x00", "bell \x07", "escape \x1b", "del \x7f", "surrogate \ud800"])
def test_control_characters_are_refused(text: str) -> None:
    with pytest.raises(InvalidTerm):
        string_expression(text)


def test_literal_refuses_what_only_an_expression_can_write() -> None:
    with pytest.raises(InvalidTerm):
        string_literal("\\u0022")
    assert string_expression("\\u0022") == 'CONCAT("\\\\", "u0022")'


async def test_servers_read_every_text_back_exactly(server: SparqlServer) -> None:
    """The real parsers see exactly the text we meant, however hostile (no codepoint-escape surprise)."""
    binds = " ".join(f"BIND({string_expression(text)} AS ?v{i})" for i, text in enumerate(NASTY_TEXTS))
    query = f"SELECT * WHERE {{ {binds} }}"
    row = sparql_json(server.endpoint, query)["results"]["bindings"][0]
    for i, text in enumerate(NASTY_TEXTS):
        assert row[f"v{i}"]["value"] == text, f"{server.name} read {row[f'v{i}']['value']!r} for {text!r}"


@pytest.mark.parametrize(
    "iri",
    [
        "http://x/a>b",
        "http://x/a<b",
        'http://x/a"b',
        "http://x/a{b",
        "http://x/a}b",
        "http://x/a|b",
        "http://x/a^b",
        "http://x/a`b",
        "http://x/a\\b",
        "http://x/a b",
        "http://x/a\nb",
        "http://x/a\tb",
        "http://x/a\x00b",
        "http://x/a\x85b",
        "no-scheme",
        "_:blank",
        "",
        "http://x/> } ; DROP ALL ; SELECT * { <http://x/",
    ],
)
def test_unsafe_iris_are_refused(iri: str) -> None:
    with pytest.raises(InvalidTerm):
        check_iri(iri)


@pytest.mark.parametrize(
    "iri", ["http://x/a'b#c;d(e)*f", "urn:isbn:123", "GENE:β-catenin", "http://x/胃癌", "mailto:a@b"]
)
def test_valid_iris_pass_unchanged(iri: str) -> None:
    assert check_iri(iri) == iri


def test_prefix_map_round_trips_and_prefers_the_longest_namespace() -> None:
    prefixes = PrefixMap.parse(["=http://v/", "ex=http://ex.org/", "exa=http://ex.org/a/"])
    cases = {
        "http://v/Gene": "Gene",
        "http://v/a:b": "http://v/a:b",  # a bare name cannot hold ':'
        "http://ex.org/x": "ex:x",
        "http://ex.org/a/y": "exa:y",
        "http://other.org/z": "http://other.org/z",
        "http://www.w3.org/2000/01/rdf-schema#label": "rdfs:label",
    }
    for iri, compact in cases.items():
        assert prefixes.compact(iri) == compact
        assert prefixes.expand(compact) == iri


def test_prefix_map_refuses_bad_configuration() -> None:
    for specs in (["ex"], ["1ex=http://x/"], ["http=http://x/"], ["ex=http://x/", "ex=http://y/"], ["ex=not an iri"]):
        with pytest.raises(InvalidTerm):
            PrefixMap.parse(specs)


def test_expand_explains_an_unknown_prefix() -> None:
    prefixes = PrefixMap.parse(["ex=http://ex.org/"])
    with pytest.raises(InvalidTerm, match="known prefixes: ex, rdf"):
        prefixes.expand("nope")


def test_language_tags() -> None:
    assert check_language("pt-BR") == "pt-BR"
    for bad in ('en"', "en fr", "e" * 9):
        with pytest.raises(InvalidTerm):
            check_language(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Nutlin-3", '"\\"nutlin*\\" AND \\"3\\""'),
        ('x" OR "y', '"\\"x\\" AND \\"or\\" AND \\"y\\""'),
        ("} ; {", None),
        ("β-catenin", '"\\"β\\" AND \\"catenin*\\""'),
    ],
)
def test_bif_expression_quotes_words_only(text: str, expected: str | None) -> None:
    assert bif_expression(text) == expected
