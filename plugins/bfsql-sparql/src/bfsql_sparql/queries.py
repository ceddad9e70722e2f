"""Every SPARQL query the backend sends, as pure functions of already-checked terms.

Arguments named ``iris`` are full IRIs; they are checked again here by
:func:`~bfsql_sparql.terms.iri_ref` as they are written, so no caller can slip an
unchecked id into a query. Text arguments arrive as literals or expressions built by
:mod:`bfsql_sparql.terms`. All queries are SELECT or ASK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from bfsql_sparql.terms import OWL, PROV, RDF, iri_ref, string_literal

__all__ = [
    "Direction",
    "annotations_query",
    "count_query",
    "edge_predicates_query",
    "ends_query",
    "fetch_query",
    "hop_count_query",
    "hop_query",
    "identities_query",
    "language_filter",
    "live",
    "node_statements_query",
    "predicates_query",
    "provenance_query",
    "search_bif_query",
    "search_contains_query",
    "search_exact_query",
    "statement_query",
    "types_query",
    "untyped_query",
]

Direction = Literal["out", "in", "literal"]
"""Which statements of an entity ``?e``: IRI objects, IRI subjects, or literal objects."""


_LIVE = f'FILTER NOT EXISTS {{ ?{{v}} <{OWL}deprecated> ?_d{{v}} FILTER(STR(?_d{{v}}) IN ("true", "1")) }}'
"""Template: the IRI in ``?{v}`` is not marked ``owl:deprecated true`` (hidden like kgraph's merged entities)."""


def live(variable: str) -> str:
    """A filter keeping ``?variable`` only when it is not deprecated."""
    return _LIVE.replace("{v}", variable)


_EXISTS = f"FILTER(EXISTS {{ ?e ?_p0 ?_o0 }}) {live('e')}"
"""An IRI is an entity when it is the subject of a statement and not deprecated."""


def _values(variable: str, iris: Sequence[str]) -> str:
    return f"VALUES ?{variable} {{ {' '.join(iri_ref(iri) for iri in iris)} }}"


def language_filter(variable: str, languages: Sequence[str]) -> str:
    """``&& (...)`` keeping untagged literals and those in the configured languages; empty when none are set."""
    if not languages:
        return ""
    listed = ", ".join(string_literal(tag.lower()) for tag in languages)
    return f' && (LANG(?{variable}) = "" || LCASE(LANG(?{variable})) IN ({listed}))'


def _pattern(direction: Direction, languages: Sequence[str], type_predicate: str) -> str:
    if direction == "out":
        return f"?e ?p ?o FILTER(isIRI(?o) && ?p != {iri_ref(type_predicate)}) {live('o')}"
    if direction == "in":
        return f"?o ?p ?e FILTER(isIRI(?o) && ?p != {iri_ref(type_predicate)}) {live('o')}"
    return f"?e ?p ?o FILTER(isLiteral(?o){language_filter('o', languages)})"


def count_query(
    iris: Sequence[str], direction: Direction, languages: Sequence[str] = (), *, type_predicate: str
) -> str:
    """``?e ?n``: for every id that is an entity, its number of distinct statements in ``direction`` (maybe 0)."""
    values = _values("e", iris)
    pattern = _pattern(direction, languages, type_predicate)
    return (
        "SELECT ?e (COUNT(?o) AS ?n) WHERE {\n"
        f"  {{ SELECT DISTINCT ?e ?p ?o WHERE {{ {values} {pattern} {_EXISTS} }} }}\n"
        f"  UNION\n  {{ {values} {_EXISTS} }}\n"
        "} GROUP BY ?e"
    )


def fetch_query(
    iris: Sequence[str],
    direction: Direction,
    languages: Sequence[str] = (),
    limit: int | None = None,
    offset: int = 0,
    *,
    type_predicate: str,
) -> str:
    """``?e ?p ?o``: the distinct statements of ``iris`` in ``direction``; ordered and paged when ``limit`` is set."""
    query = (
        f"SELECT DISTINCT ?e ?p ?o WHERE {{ {_values('e', iris)} {_pattern(direction, languages, type_predicate)} }}"
    )
    if limit is not None:
        query += f" ORDER BY ?p ?o LIMIT {int(limit)}" + (f" OFFSET {int(offset)}" if offset else "")
    return query


def hop_query(
    iris: Sequence[str],
    label_predicates: Sequence[str],
    languages: Sequence[str],
    limit: int,
    *,
    type_predicate: str,
    with_ends: bool = True,
    literals: bool = False,
) -> str:
    """One BFS hop of every entity among ``iris``: its edges both ways, with what is known of their ends or not.

    Edge rows: ``?e ?p`` and ``?out`` (an outgoing edge's object) or ``?in`` (an incoming
    edge's subject). Ids that are not entities and deprecated entities give no rows; nor
    do literal and blank-node ends and type statements. At most ``limit`` rows.

    With ``with_ends`` (a few ids: a traversal's seeds) each edge row carries its other
    end ``?o``: its IRI types ``?t`` and labels ``?lp ?l`` (one row per combination, so an
    end with two types and two labels repeats each edge four times), ``?dangling`` bound
    when an object is the subject of nothing (no entity); edges to deprecated ends give
    no rows; and each asked entity has rows of its own identity (``?o`` bound, ``?e``
    not). Without it the caller asks :func:`ends_query` about the distinct ends it met and
    the asked ids (which of them are entities): in a large frontier many edges share an
    end, and each end is then looked up once.
    With ``literals`` (a traversal that will show node metadata) ``?lp ?l`` are every
    literal statement of the end, not only its labels, and its types and literals come
    as rows of their own (a union, not a product): the node statements of
    :func:`node_statements_query`, read in the same pass. They come once per distinct end,
    apart from the edge rows (which then carry ``?o`` and ``?dangling`` only): an end's
    dozen literals repeated with each edge to it, with the edge's columns, made the answer
    several times larger (Oxigraph, a disease's 1-hop hop with literals on the HPO: 23 ms
    joined, 18 ms apart).
    """
    if with_ends and literals:
        return _ends_apart_query(iris, languages, limit, type_predicate)
    if not with_ends:
        not_type = f"?p != {iri_ref(type_predicate)}"
        return (
            f"SELECT ?e ?p ?out ?in WHERE {{ {{ {_anchor('e', iris)} }} {{ ?e ?p ?out FILTER(isIRI(?out) && "
            f"{not_type}) }} UNION {{ ?in ?p ?e FILTER(isIRI(?in) && {not_type}) }} }} LIMIT {int(limit)}"
        )
    pattern = _joined_pattern(iris, label_predicates, languages, type_predicate, literals)
    asked = f"{_anchor('o', iris)} {_naming('o', label_predicates, languages, type_predicate, literals)}"
    return (
        f"SELECT ?e ?p ?out ?in ?o ?t ?lp ?l ?dangling WHERE {{ {{ {pattern} }} UNION {{ {asked} }} }} "
        f"LIMIT {int(limit)}"
    )


def ends_query(
    iris: Sequence[str],
    label_predicates: Sequence[str],
    languages: Sequence[str],
    *,
    type_predicate: str,
    literals: bool = False,
    limit: int | None = None,
) -> str:
    """The end rows of :func:`hop_query` (``?o ?t ?lp ?l ?dangling ?hidden``) for the given other ends."""
    query = (
        f"SELECT ?o ?t ?lp ?l ?dangling ?hidden WHERE {{ {_values('o', iris)} "
        f"{_end_identity('o', label_predicates, languages, type_predicate, literals)} }}"
    )
    return query if limit is None else f"{query} LIMIT {int(limit)}"


def _anchor(variable: str, iris: Sequence[str]) -> str:
    """``?variable`` over ``iris``, kept when it is an entity: the subject of a statement, not deprecated."""
    return f"{_values(variable, iris)} FILTER(EXISTS {{ ?{variable} ?_pa ?_oa }}) {live(variable)}"


def _end_identity(
    variable: str, label_predicates: Sequence[str], languages: Sequence[str], type_predicate: str, literals: bool
) -> str:
    deprecated = f'?{variable} <{OWL}deprecated> ?_dh FILTER(STR(?_dh) IN ("true", "1"))'
    # COALESCE() is an error, which leaves the variable unbound. The BINDs come before the OPTIONALs:
    # Virtuoso loses the OPTIONALs' bindings of a row when a BIND follows them.
    return (
        f'BIND(IF(NOT EXISTS {{ ?{variable} ?_p1 ?_o1 }}, "dangling", COALESCE()) AS ?dangling) '
        f'BIND(IF(EXISTS {{ {deprecated} }}, "hidden", COALESCE()) AS ?hidden) '
        f"{_naming(variable, label_predicates, languages, type_predicate, literals)}"
    )


def _naming(
    variable: str, label_predicates: Sequence[str], languages: Sequence[str], type_predicate: str, literals: bool
) -> str:
    """Types and labels of ``?variable`` (a row per combination), or types and every literal (a row each)."""
    if not literals:
        return f"{_type_of(variable, type_predicate)} {_labels_of(variable, label_predicates, languages)}"
    return (
        f"OPTIONAL {{ {{ ?{variable} {iri_ref(type_predicate)} ?t FILTER(isIRI(?t)) }} UNION "
        f"{{ ?{variable} ?lp ?l FILTER(isLiteral(?l){language_filter('l', languages)}) }} }}"
    )


def hop_count_query(
    iris: Sequence[str], label_predicates: Sequence[str], languages: Sequence[str], *, type_predicate: str
) -> str:
    """``?e ?n``: for each entity among ``iris`` that has edges, its edges times its other ends' type and label rows.

    The rows :func:`hop_query` with ends gives it, less its own identity's; at least half
    of those it gives without (its edge rows, and its ends' rows counted once per edge).
    """
    pattern = _joined_pattern(iris, label_predicates, languages, type_predicate)
    return f"SELECT ?e (COUNT(*) AS ?n) WHERE {{ {pattern} }} GROUP BY ?e"


def _joined_pattern(
    iris: Sequence[str],
    label_predicates: Sequence[str],
    languages: Sequence[str],
    type_predicate: str,
    literals: bool = False,
) -> str:
    not_type = f"?p != {iri_ref(type_predicate)}"
    # COALESCE() is an error, which leaves ?dangling unbound: only dangling rows carry it. (Virtuoso loses
    # the OPTIONALs' bindings of a row when a BIND follows them, hence the test here, in the branch.)
    outgoing = (
        f"?e ?p ?out FILTER(isIRI(?out) && {not_type}) BIND(?out AS ?o) "
        'BIND(IF(NOT EXISTS { ?out ?_p1 ?_o1 }, "dangling", COALESCE()) AS ?dangling)'
    )
    incoming = f"?in ?p ?e FILTER(isIRI(?in) && {not_type}) BIND(?in AS ?o)"
    return (
        f"{{ {_values('e', iris)} {_EXISTS} }} {{ {outgoing} }} UNION {{ {incoming} }} {live('o')} "
        f"{_naming('o', label_predicates, languages, type_predicate, literals)}"
    )


def _ends_apart_query(iris: Sequence[str], languages: Sequence[str], limit: int, type_predicate: str) -> str:
    """:func:`hop_query` with ends and literals: edge rows, then each distinct live end's statements, then the asked."""
    not_type = f"?p != {iri_ref(type_predicate)}"
    edges = (
        f"{{ {_values('e', iris)} {_EXISTS} }} {{ ?e ?p ?out FILTER(isIRI(?out) && {not_type}) BIND(?out AS ?o) "
        'BIND(IF(NOT EXISTS { ?out ?_p1 ?_o1 }, "dangling", COALESCE()) AS ?dangling) } UNION '
        f"{{ ?in ?p ?e FILTER(isIRI(?in) && {not_type}) BIND(?in AS ?o) }} {live('o')}"
    )
    ends = (
        f"{{ SELECT DISTINCT ?o WHERE {{ {{ {_values('e', iris)} {_EXISTS} }} "
        f"{{ ?e ?_pe ?o FILTER(isIRI(?o) && ?_pe != {iri_ref(type_predicate)}) }} UNION "
        f"{{ ?o ?_pe ?e FILTER(isIRI(?o) && ?_pe != {iri_ref(type_predicate)}) }} }} }} {live('o')} "
        f"{_naming('o', (), languages, type_predicate, True)}"
    )
    asked = f"{_anchor('o', iris)} {_naming('o', (), languages, type_predicate, True)}"
    return (
        f"SELECT ?e ?p ?out ?in ?o ?t ?lp ?l ?dangling WHERE "
        f"{{ {{ {edges} }} UNION {{ {ends} }} UNION {{ {asked} }} }} LIMIT {int(limit)}"
    )


def _type_of(variable: str, type_predicate: str) -> str:
    return f"OPTIONAL {{ ?{variable} {iri_ref(type_predicate)} ?t FILTER(isIRI(?t)) }}"


def _labels_of(variable: str, predicates: Sequence[str], languages: Sequence[str]) -> str:
    if not predicates:
        return ""
    return (
        f"OPTIONAL {{ {_values('lp', predicates)} ?{variable} ?lp ?l "
        f"FILTER(isLiteral(?l){language_filter('l', languages)}) }}"
    )


def identities_query(
    iris: Sequence[str], predicates: Sequence[str], languages: Sequence[str] = (), *, type_predicate: str
) -> str:
    """``?e`` for every id that is an entity, with each of its IRI types ``?t`` and its ``?lp ?l`` literals.

    One row per type and per literal of ``predicates`` (labels, synonyms), or a bare ``?e`` row.
    """
    parts = [f"{{ ?e {iri_ref(type_predicate)} ?t FILTER(isIRI(?t)) }}"]
    if predicates:
        parts.append(
            f"{{ {_values('lp', predicates)} ?e ?lp ?l FILTER(isLiteral(?l){language_filter('l', languages)}) }}"
        )
    return (
        f"SELECT ?e ?t ?lp ?l WHERE {{ {{ {_values('e', iris)} {_EXISTS} }} OPTIONAL {{ {' UNION '.join(parts)} }} }}"
    )


def node_statements_query(iris: Sequence[str], languages: Sequence[str], limit: int, *, type_predicate: str) -> str:
    """``?e`` for every id that is an entity, with its IRI types ``?t`` and its literal statements ``?p ?v``.

    One row per type and per literal, or a bare ``?e`` row; at most ``limit`` rows.
    """
    return (
        f"SELECT ?e ?t ?p ?v WHERE {{ {{ {_values('e', iris)} {_EXISTS} }} OPTIONAL {{ "
        f"{{ ?e {iri_ref(type_predicate)} ?t FILTER(isIRI(?t)) }} UNION "
        f"{{ ?e ?p ?v FILTER(isLiteral(?v){language_filter('v', languages)}) }} }} }} LIMIT {int(limit)}"
    )


def _candidate_filter(type_iris: Sequence[str], untyped: bool, type_predicate: str) -> str:
    """Keep live entities, of the given types (or untyped) when a restriction is asked for."""
    tests = []
    if type_iris:
        listed = ", ".join(iri_ref(iri) for iri in type_iris)
        tests.append(f"EXISTS {{ ?e {iri_ref(type_predicate)} ?_t FILTER(?_t IN ({listed})) }}")
    if untyped:
        tests.append(f"NOT EXISTS {{ ?e {iri_ref(type_predicate)} ?_u FILTER(isIRI(?_u)) }}")
    return f" {live('e')}" + (f" FILTER({' || '.join(tests)})" if tests else "")


def search_contains_query(
    needle: str,
    label_predicates: Sequence[str],
    languages: Sequence[str],
    limit: int,
    type_iris: Sequence[str] = (),
    untyped: bool = False,
    *,
    type_predicate: str,
) -> str:
    """Labels containing ``needle`` (a lower-cased string expression), best first: exact, prefix, shorter."""
    text = "LCASE(STR(?label))"
    return (
        f"SELECT ?e ?label WHERE {{ {_values('lp', label_predicates)} ?e ?lp ?label "
        f"FILTER(isIRI(?e) && isLiteral(?label){language_filter('label', languages)} && CONTAINS({text}, {needle}))"
        f"{_candidate_filter(type_iris, untyped, type_predicate)} }} "
        f"ORDER BY (IF({text} = {needle}, 0, IF(STRSTARTS({text}, {needle}), 1, 2))) STRLEN(STR(?label)) ?e "
        f"LIMIT {int(limit)}"
    )


def search_bif_query(
    expression: str,
    label_predicates: Sequence[str],
    languages: Sequence[str],
    limit: int,
    type_iris: Sequence[str] = (),
    untyped: bool = False,
    *,
    type_predicate: str,
) -> str:
    """Virtuoso full text: labels matching a ``bif:contains`` expression (a string literal), shorter first."""
    return (
        f"SELECT ?e ?label WHERE {{ {_values('lp', label_predicates)} ?e ?lp ?label . "
        f"?label bif:contains {expression} "
        f"FILTER(isIRI(?e){language_filter('label', languages)})"
        f"{_candidate_filter(type_iris, untyped, type_predicate)} }} "
        f"ORDER BY STRLEN(STR(?label)) ?e LIMIT {int(limit)}"
    )


def search_exact_query(
    literals: Sequence[str],
    label_predicates: Sequence[str],
    limit: int,
    type_iris: Sequence[str] = (),
    untyped: bool = False,
    *,
    type_predicate: str,
) -> str:
    """Labels equal to one of ``literals`` (written terms such as ``"BRAF"@en``): index lookups only."""
    return (
        f"SELECT ?e ?label WHERE {{ VALUES ?label {{ {' '.join(literals)} }} {_values('lp', label_predicates)} "
        f"?e ?lp ?label FILTER(isIRI(?e)){_candidate_filter(type_iris, untyped, type_predicate)} }} LIMIT {int(limit)}"
    )


def types_query(limit: int, *, type_predicate: str) -> str:
    """``?t``: the distinct IRI types of live IRI subjects, sorted (distinct types first: cheap on every store)."""
    return (
        f"SELECT ?t WHERE {{ {{ SELECT DISTINCT ?t WHERE {{ ?_s {iri_ref(type_predicate)} ?t }} }} FILTER(isIRI(?t)) "
        f"FILTER EXISTS {{ ?s {iri_ref(type_predicate)} ?t FILTER(isIRI(?s)) {live('s')} }} }} "
        f"ORDER BY ?t LIMIT {int(limit)}"
    )


def untyped_query(*, type_predicate: str) -> str:
    """ASK whether some live entity has no IRI type (its type is then ``Entity``)."""
    deprecated = f'?e <{OWL}deprecated> ?_d FILTER(STR(?_d) IN ("true", "1"))'
    return (
        f"ASK {{ ?e ?p ?o FILTER(isIRI(?e)) MINUS {{ ?e {iri_ref(type_predicate)} ?t FILTER(isIRI(?t)) }} "
        f"MINUS {{ {deprecated} }} }}"
    )


def predicates_query(limit: int) -> str:
    """``?p``: the distinct predicates of the graph, sorted (edge or not: see :func:`edge_predicates_query`)."""
    return f"SELECT ?p WHERE {{ {{ SELECT DISTINCT ?p WHERE {{ ?s ?p ?o }} }} }} ORDER BY ?p LIMIT {int(limit)}"


def edge_predicates_query(predicates: Sequence[str], *, type_predicate: str) -> str:
    """``?p``: those of ``predicates`` that link two IRIs somewhere (rdf:type excluded)."""
    return (
        f"SELECT ?p WHERE {{ {_values('p', predicates)} FILTER(?p != {iri_ref(type_predicate)}) "
        "FILTER EXISTS { ?s ?p ?o FILTER(isIRI(?s) && isIRI(?o)) } }"
    )


def _triples(triples: Sequence[tuple[str, str, str]]) -> str:
    rows = " ".join(f"({iri_ref(s)} {iri_ref(p)} {iri_ref(o)})" for s, p, o in triples)
    return f"VALUES (?s ?p ?o) {{ {rows} }}"


_STATEMENT = f"?st <{RDF}subject> ?s ; <{RDF}predicate> ?p ; <{RDF}object> ?o"
"""A reified statement (``rdf:Statement``) about the triple ``?s ?p ?o``."""


def statement_query(triples: Sequence[tuple[str, str, str]], annotations: bool = True) -> str:
    """``?s ?p ?o`` once for each triple between live entities, and with each ``?k ?v`` of its reified statements.

    A triple touching a deprecated (merged) entity is invisible like the entity: its properties
    count only with its bare row. (Read with OPTIONAL, Oxigraph reads every reified statement of
    the store before the join: two seconds for 47 edges of the HPO.) Without ``annotations``
    (a store that has no reified statements) only the bare rows are asked for.
    """
    exists = f"{{ ?s ?p ?o {live('s')} {live('o')} }}"
    if not annotations:
        return f"SELECT ?s ?p ?o WHERE {{ {_triples(triples)} {exists} }}"
    skipped = ", ".join(f"<{RDF}{name}>" for name in ("subject", "predicate", "object", "type"))
    return (
        f"SELECT ?s ?p ?o ?k ?v WHERE {{ {_triples(triples)} {exists} UNION "
        f"{{ {_STATEMENT} ; ?k ?v FILTER(?k NOT IN ({skipped}) && !isBlank(?v)) }} }}"
    )


def annotations_query() -> str:
    """ASK whether the store holds any reified statement (``rdf:subject``): whether edges can have metadata."""
    return f"ASK {{ ?_st <{RDF}subject> ?_s }}"


def provenance_query(triples: Sequence[tuple[str, str, str]]) -> str:
    """``?s ?p ?o ?ev ?k ?v``: literal properties of the evidence (``prov:wasDerivedFrom``) of reified statements.

    Only for triples that exist between live entities, like :func:`statement_query`.
    """
    return (
        f"SELECT ?s ?p ?o ?ev ?k ?v WHERE {{ {_triples(triples)} ?s ?p ?o {live('s')} {live('o')} "
        f"{_STATEMENT} ; <{PROV}wasDerivedFrom> ?ev . ?ev ?k ?v FILTER(isLiteral(?v)) }}"
    )
