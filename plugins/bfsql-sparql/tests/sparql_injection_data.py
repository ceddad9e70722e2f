"""The injection corpus: hostile ids and search strings, and a small graph in which some of them exist exactly."""

from __future__ import annotations

from pathlib import Path

from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.namespace import RDF, RDFS

INJ = Namespace("http://bfsql.test/inj/")
PREFIX = f"inj={INJ}"

HOSTILE_LABELS = [
    "} ; DROP ALL ; SELECT * {",
    '" } ; INSERT DATA { <a:b> <a:b> "x" } #',
    "x' } UNION { ?s ?p ?o } #",
    "close > angle",
    "brace } brace",
    'quote " quote',
    "single ' quote",
    "line\nbreak",
    "hash # comment",
    "back \\ slash",
    "\\u0022 escaped quote",
    "\\U0000007D escaped brace",
    "胃癌 unicode β 😀",
    "SELECT ASK CONSTRUCT DESCRIBE",
    'bif "x" OR "y" NEAR z*',
    "regex .* (a|b) [c]",
    "percent %20 and +plus",
]
"""Each is the exact label of one entity ``inj:label{i}``: searching for it must find that entity first."""

ODD_IDS = ["inj:O'Brien", "inj:a#b", "inj:semi;colon", "inj:paren(1)", "inj:star*", "inj:胃癌", "inj:SELECT", "inj:%7D"]
"""Valid compact ids with characters that are legal in IRIs but meaningful elsewhere; all exist."""

INVALID_IDS = [
    "inj:a>b",
    "inj:}",
    'inj:"',
    "inj:a b",
    "inj:a\nb",
    "inj:\\",
    "inj:\\u003E",
    "inj:a{b",
    "inj:a|b",
    "inj:a^b",
    "inj:a`b",
    "inj:x\x00y",
    "http://bfsql.test/inj/x> } ; DROP ALL ; SELECT * { <x",
    "} ; DROP ALL ; SELECT * {",
    "'",
    "#",
    "_:b0",
    "",
    " ",
    "nope:x y",
    "http://bfsql.test/inj/O'Brien",  # a valid IRI, but not the canonical spelling (inj:O'Brien)
]
"""Ids that must be refused with a clear error before any query is built."""

UNKNOWN_IDS = ["inj:nope", "http://elsewhere.example/x", "urn:x:y", "inj:label999"]
"""Valid ids that name nothing: KeyError, like any unknown id."""


POLYGLOT = "inj:polyglot"
"""An entity with labels and a note in several languages, for the language preference."""
POLYGLOT_LABELS = [
    ("gastric cancer", None),
    ("stomach cancer", "en"),
    ("Magenkrebs", "de"),
    ("cancer de l'estomac", "fr"),
]
POLYGLOT_NOTES = [("Hello", "en"), ("Hallo", "de"), ("Bonjour", "fr")]


WIKI_ITEM = "inj:q42"
"""Typed the Wikidata way: ``inj:instanceOf inj:Human`` (and ``rdf:type inj:Item``), for --type-predicate."""


def odd_iri(compact: str) -> str:
    """The IRI of an ``inj:`` id."""
    return str(INJ) + compact.removeprefix("inj:")


def write_injection_ntriples(path: Path) -> Path:
    """The injection graph: labelled entities and a ring of odd-id entities."""
    graph = Graph()
    for i, label in enumerate(HOSTILE_LABELS):
        node = INJ[f"label{i}"]
        graph.add((node, RDF.type, INJ.Labelled))
        graph.add((node, RDFS.label, Literal(label)))
    odd = [URIRef(odd_iri(compact)) for compact in ODD_IDS]
    for here, there in zip(odd, odd[1:] + odd[:1], strict=True):
        graph.add((here, RDF.type, INJ.Odd))
        graph.add((here, RDFS.label, Literal(str(here).removeprefix(str(INJ)))))
        graph.add((here, INJ.next, there))
    polyglot = INJ.polyglot
    graph.add((polyglot, RDF.type, INJ.Polyglot))
    for text, language in POLYGLOT_LABELS:
        graph.add((polyglot, RDFS.label, Literal(text, lang=language)))
    for text, language in POLYGLOT_NOTES:
        graph.add((polyglot, INJ.note, Literal(text, lang=language)))
    item = INJ.q42
    graph.add((item, INJ.instanceOf, INJ.Human))
    graph.add((item, RDF.type, INJ.Item))
    graph.add((item, RDFS.label, Literal("Douglas Adams")))
    graph.add((INJ.Human, RDFS.label, Literal("human")))
    path.write_text(graph.serialize(format="nt", encoding=None) or "", encoding="utf-8")
    return path
