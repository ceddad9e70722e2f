"""Path queries (seed 002): every grammar rule and syntax error, and execution on a small graph.

Execution tests use a tiny bag-of-words embedder, so every similarity is hand-computable:
a text's vector has one dimension per known word it contains, normalised, and the cosine
of two texts is ``shared / sqrt(words_a * words_b)``. ``born`` vs ``born on`` (BORN_ON split)
is 1/sqrt(2) = 0.7071; ``George Washington`` vs ``Washington Irving`` is 1/2.

The graph (seed 002's example, in miniature)::

    P:gw "George Washington" -BORN_ON-> D:1732 <-OCCURRED_ON- E:yorktown "Battle of Yorktown"
                                               <-OCCURRED_ON- E:birthday "Birthday Ball"
    P:gw -LIVED_IN-> PL:mv "Mount Vernon" <-MENTIONS- F:letter "Letter to Congress"
    P:gw -KNOWS-> P:tj "Thomas Jefferson" -KNOWS-> P:gw;  P:tj -KNOWS-> P:wi "Washington Irving"
    P:wi -BORN_ON-> D:1783;  O:cc "Continental Congress" -HAS_MEMBER-> P:gw, P:tj
"""

from __future__ import annotations

import math
import random
import re

import pytest

from bfsql import Graph, postprocess
from bfsql.backends.memory import MemoryBackend
from bfsql.engine.path_syntax import (
    MAX_PATH_HOPS,
    ExactEntity,
    PathSyntaxError,
    SemanticText,
    TypeFilter,
    parse_path_query,
)
from bfsql.engine.paths import path_query
from bfsql.errors import InvalidArgument, UnknownEntity
from bfsql.models import to_output

from conftest import entity, rel

R2 = 1 / math.sqrt(2)

VOCABULARY = (
    "born birth on occurred knows lived in has member mentions george washington irving thomas jefferson "
    "battle of yorktown birthday ball mount vernon letter to congress continental date event"
).split()


class WordEmbedder:
    """Bag of known words, one dimension each, L2-normalised; unknown words are ignored."""

    name = "words"
    dimension = len(VOCABULARY)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = set(re.findall(r"[a-z]+", text.lower()))
            vector = [1.0 if w in words else 0.0 for w in VOCABULARY]
            norm = math.sqrt(sum(vector))
            out.append([x / norm for x in vector] if norm else vector)
        return out


def history_records() -> list:
    return [
        entity("P:gw", "Person", name="George Washington"),
        entity("P:tj", "Person", name="Thomas Jefferson"),
        entity("P:wi", "Person", name="Washington Irving"),
        entity("D:1732", "Date", name="February 22, 1732"),
        entity("D:1783", "Date", name="April 3, 1783"),
        entity("E:yorktown", "Event", name="Battle of Yorktown"),
        entity("E:birthday", "Event", name="Birthday Ball"),
        entity("PL:mv", "Place", name="Mount Vernon"),
        entity("F:letter", "File", name="Letter to Congress"),
        entity("O:cc", "Organization", name="Continental Congress"),
        rel("P:gw", "BORN_ON", "D:1732"),
        rel("P:wi", "BORN_ON", "D:1783"),
        rel("E:yorktown", "OCCURRED_ON", "D:1732"),
        rel("E:birthday", "OCCURRED_ON", "D:1732"),
        rel("P:gw", "LIVED_IN", "PL:mv"),
        rel("F:letter", "MENTIONS", "PL:mv"),
        rel("P:gw", "KNOWS", "P:tj"),
        rel("P:tj", "KNOWS", "P:gw"),
        rel("P:tj", "KNOWS", "P:wi"),
        rel("O:cc", "HAS_MEMBER", "P:gw"),
        rel("O:cc", "HAS_MEMBER", "P:tj"),
    ]


@pytest.fixture
def history() -> Graph:
    return Graph(MemoryBackend(history_records()), plugins=[postprocess], embedder=WordEmbedder())


def ends(result) -> list[tuple[str, float]]:
    return [(r.entity.id, r.score) for r in result.results]


# -- grammar ---------------------------------------------------------------------


def test_semantic_entry_and_exact_entry():
    assert parse_path_query('"George Washington"').entry == SemanticText("George Washington", 0)
    assert parse_path_query("  @george_washington").entry == ExactEntity("george_washington", 2)
    assert parse_path_query('"say \\"hi\\" \\\\ bye"').entry.text == 'say "hi" \\ bye'


@pytest.mark.parametrize(
    "query, expected",
    [
        ("@HGNC:BRAF", "HGNC:BRAF"),
        ("@FPLX:RAF", "FPLX:RAF"),
        ("@a-b.c/d#e+f~g%h", "a-b.c/d#e+f~g%h"),
        ("@arke:01ABC:file_001", "arke:01ABC:file_001"),
        ("@Ünïcode_ид", "Ünïcode_ид"),
        ('@"id with spaces"', "id with spaces"),
        ('@"http://x.org/a?b=c&d"', "http://x.org/a?b=c&d"),
    ],
)
def test_canonical_ids(query, expected):
    assert parse_path_query(query).entry.id == expected


def test_an_id_ends_where_an_edge_begins():
    parsed = parse_path_query("@HGNC:BRAF-[isa]->type:Family<-[isa]-@HGNC:RAF1")
    assert parsed.entry.id == "HGNC:BRAF"
    assert [h.direction for h in parsed.hops] == ["outgoing", "incoming"]
    assert parsed.hops[0].filter == TypeFilter("Family", 18)
    assert parsed.hops[1].filter.id == "HGNC:RAF1"


def test_edges_terms_wildcards_and_filters():
    parsed = parse_path_query(
        '"GW" -[born, birth]-> type:date <-[*]- "historical event" -[ took  place ]-> @x:1 <-[*]-'
    )
    hops = parsed.hops
    assert [h.direction for h in hops] == ["outgoing", "incoming", "outgoing", "incoming"]
    assert hops[0].relation.terms == ("born", "birth") and not hops[0].relation.wildcard
    assert hops[1].relation.wildcard and hops[1].relation.terms == ()
    assert hops[2].relation.terms == ("took place",)
    assert isinstance(hops[0].filter, TypeFilter) and hops[0].filter.type_name == "date"
    assert isinstance(hops[1].filter, SemanticText) and hops[1].filter.text == "historical event"
    assert isinstance(hops[2].filter, ExactEntity) and hops[2].filter.id == "x:1"
    assert hops[3].filter is None
    assert parsed.describe() == '"GW" -[born, birth]-> type:date <-[*]- "historical event" -[took place]-> @x:1 <-[*]-'


def test_quoted_terms_and_types_and_edges_without_filters():
    parsed = parse_path_query('@a -["has|part", is_a]-> -[*]-> type:"Protein Complex"')
    assert parsed.hops[0].relation.terms == ("has|part", "is_a")
    assert parsed.hops[0].filter is None
    assert parsed.hops[1].filter.type_name == "Protein Complex"
    assert parse_path_query("@a -[rdfs:subClassOf]-> type:owl:Class").hops[0].relation.terms == ("rdfs:subClassOf",)


@pytest.mark.parametrize(
    "query, position, fragment",
    [
        ('"George Washington" -[]-> type:date', 22, "empty relation list '[]'"),
        ("", 0, "the query is empty"),
        ("   ", 3, "the query is empty"),
        ("George", 0, "starts with an entry point"),
        ("type:Gene -[isa]->", 0, "cannot start with a type filter"),
        ('""', 0, "empty text"),
        ('"BRAF -[isa]->', 0, "unterminated text"),
        ("@", 1, "expected a canonical id"),
        ("@foo(bar)", 4, "unexpected character '('"),
        ('@a -[isa]-> type:', 17, "expected a type name"),
        ("@a -[isa]-> TYPE:Gene", 12, "lower case"),
        ("@a -[*, isa]->", 6, "'*' must stand alone"),
        ("@a -[isa, *]->", 10, "'*' must stand alone"),
        ("@a -[isa,,partof]->", 9, "empty relation term"),
        ("@a -[isa->", 4, "expected ']'"),
        ("@a -[isa", 4, "expected ']'"),
        ("@a <-[isa]->", 3, "cannot point both ways"),
        ("@a -[isa]- type:Gene", 9, "undirected"),
        ("@a -[isa] type:Gene", 9, "expected '->'"),
        ("@a <-[isa] type:Gene", 10, "expected '-'"),
        ("@a -[isa]-> type:Gene type:Family", 22, "two filters in a row"),
        ('@a "text"', 3, "two filters in a row"),
        ("@a -> type:Gene", 3, "'-[' must open"),
        ("@a -[isa]-> !", 12, "unexpected '!' after an edge"),
        ("@a -[...]->", 5, "no letters or digits"),
        ("@a -[!enemy]->", 5, "negation ('!enemy') is a future extension"),
        ("@a -[isa, !enemy]->", 10, "negation"),
        ("@a -[*2..4]->", 5, "'*' (any relation) takes no quantifier"),
        ("@a -[**]->", 5, "takes no quantifier"),
        ("@a -[ * ..3]->", 6, "takes no quantifier"),
        ("@a -[isa*, partof]->", 8, "a quantifier ends the relation list"),
        ("@a -[isa*2, partof*]->", 8, "a quantifier ends the relation list"),
        ("@a -[isa*0..3]->", 8, "at least one edge"),
        ("@a -[isa*0]->", 8, "at least one edge"),
        ("@a -[isa*4..2]->", 8, "the range *4..2 is empty"),
        ("@a -[isa*51]->", 8, "at most 50 edges deep; got 51"),
        ("@a -[isa*2..51]->", 8, "at most 50 edges deep; got 51"),
        ("@a -[isa*..]->", 8, "'*..' gives no bound"),
        ("@a -[isa*2..4x]->", 13, "unexpected character 'x' after the quantifier"),
        ("@a -[isa**]->", 9, "unexpected character '*' after the quantifier"),
        ("@a -[isa*2...4]->", 12, "unexpected character '.' after the quantifier"),
        ("@a -[isa*-1]->", 9, "after the quantifier"),
        ("@a -[isa*2", 4, "expected ']'"),
        ("@a -[born]->? type:Place", 12, "optional edges ('->?') are a future extension"),
        ("@a -[isa]-> type:Gene{name: 'x'}", 21, "property filters"),
        ("@a -[isa]-> type:Gene as $g", 22, "named captures"),
    ],
)
def test_syntax_errors_give_position_and_hint(query, position, fragment):
    with pytest.raises(PathSyntaxError) as info:
        parse_path_query(query)
    error = info.value
    assert fragment in error.message, error.message
    assert error.position == position, (error.position, error.message)
    assert error.hint.startswith("Hint: ")
    assert isinstance(error, InvalidArgument)
    lines = str(error).splitlines()
    assert lines[1].strip() == query.splitlines()[0].strip() if query.strip() else True
    assert lines[2].index("^") - 4 == position - (query.rfind("\n", 0, position) + 1)


def test_a_quoted_term_is_literal_not_reserved_syntax():
    assert parse_path_query('@a -["!enemy"]->').hops[0].relation.terms == ("!enemy",)


def test_empty_relation_list_hint_says_use_wildcard():
    with pytest.raises(PathSyntaxError) as info:
        parse_path_query('"George Washington" -[]-> type:date')
    assert "Use [*]" in info.value.hint


def test_too_many_hops_and_too_long_queries():
    parse_path_query("@a" + " -[*]->" * MAX_PATH_HOPS)
    with pytest.raises(PathSyntaxError, match="too many edges"):
        parse_path_query("@a" + " -[*]->" * (MAX_PATH_HOPS + 1))
    with pytest.raises(InvalidArgument, match="longer than"):
        parse_path_query('"' + "x" * 3000 + '"')


# -- execution --------------------------------------------------------------------


async def test_simple_attribute_lookup_with_hand_computed_scores(history):
    # entries (k given): P:gw (exact name, 1.0) and P:wi ("Washington Irving": 1 shared word of 2 and 2 -> 0.5)
    result = await path_query(history, '"George Washington" -[born, birth]-> type:Date', k=3)
    assert ends(result) == [("D:1732", pytest.approx(R2, abs=1e-4)), ("D:1783", pytest.approx(0.5 * R2, abs=1e-4))]
    assert [(s.entity, s.score) for s in result.metadata.entry_points] == [("P:gw", 1.0), ("P:wi", 0.5)]
    first = result.results[0]
    assert [s.model_dump(exclude_none=True) for s in first.path] == [
        {"entity": "P:gw", "label": "George Washington", "score": 1.0},
        {"edge": "BORN_ON", "direction": "outgoing", "score": round(R2, 4)},
        {"entity": "D:1732", "label": "February 22, 1732"},
    ]
    assert first.entity.name == "February 22, 1732" and first.entity.entity_type == "Date"
    assert first.entity.metadata is None  # id, type and name by default: the answer stays lean
    meta = result.metadata
    assert (meta.hops, meta.k, meta.threshold, meta.max_results, meta.total_results) == (1, 3, 0.5, 20, 2)
    assert meta.total_candidates_explored > 0 and meta.execution_time_ms >= 0
    higher = await path_query(history, '"George Washington" -[born]-> type:Date', threshold=0.6)
    assert ends(higher) == [("D:1732", pytest.approx(R2, abs=1e-4))]


async def test_exact_predicate_short_circuits_and_types_match_case_insensitively(history):
    result = await path_query(history, "@P:gw -[born_on]-> type:date")
    assert ends(result) == [("D:1732", 1.0)]
    assert result.results[0].path[1].score is None  # an exact match says no score: it is 1


async def test_reverse_lookup_incoming_edges(history):
    result = await path_query(history, "@D:1732 <-[occurred]- type:Event")
    assert ends(result) == [("E:birthday", round(R2, 4)), ("E:yorktown", round(R2, 4))]
    assert result.results[0].path[1].direction == "incoming"
    mentions = await path_query(history, '"Mount Vernon" <-[mentioned, mentions, about]- type:File')
    assert ends(mentions) == [("F:letter", 1.0)]  # MENTIONS is an exact predicate


async def test_multi_hop_scores_multiply(history):
    result = await path_query(
        history, '"George Washington" -[born]-> type:Date <-[happened, occurred, event]- type:Event', threshold=0.6
    )
    assert ends(result) == [("E:birthday", 0.5), ("E:yorktown", 0.5)]  # 1 * 0.7071 * 0.7071
    assert [s.entity or s.edge for s in result.results[1].path] == [
        "P:gw", "BORN_ON", "D:1732", "OCCURRED_ON", "E:yorktown"]
    assert result.metadata.hops == 2


async def test_semantic_filter_keeps_top_k_similar_candidates(history):
    result = await path_query(history, '@D:1732 <-[*]- "birthday"')
    assert ends(result) == [("E:birthday", round(R2, 4))]  # "Birthday Ball" vs "birthday"; others 0
    assert result.results[0].path[-1].score == round(R2, 4)
    assert result.results[0].path[1].score is None  # a wildcard matches with 1, said by no score


async def test_wildcard_and_no_filter_accept_everything(history):
    result = await path_query(history, "@P:gw -[*]->")
    assert [e for e, _ in ends(result)] == ["D:1732", "P:tj", "PL:mv"]
    assert all(score == 1.0 for _, score in ends(result))


async def test_k_limits_relations_per_entity(history):
    # KNOWS is exact (1.0); BORN_ON and LIVED_IN both score 0.7071, the tie goes to the name
    result = await path_query(history, "@P:gw -[born, lived, knows]->", k=2)
    assert ends(result) == [("P:tj", 1.0), ("D:1732", round(R2, 4))]
    everything = await path_query(history, "@P:gw -[born, lived, knows]->", k=3)
    assert {e for e, _ in ends(everything)} == {"P:tj", "D:1732", "PL:mv"}


async def test_cycles_are_skipped_per_path_but_other_paths_may_revisit(history):
    result = await path_query(history, "@P:gw -[knows]-> type:Person -[knows]-> type:Person")
    assert ends(result) == [("P:wi", 1.0)]  # P:tj -KNOWS-> P:gw is skipped: P:gw is on the path
    members = await path_query(history, "@O:cc -[member]-> type:Person -[knows]-> type:Person")
    paths = {r.entity.id: [s.entity for s in r.path if s.entity] for r in members.results}
    assert paths == {
        "P:gw": ["O:cc", "P:tj", "P:gw"],  # reached again by another path
        "P:tj": ["O:cc", "P:gw", "P:tj"],
        "P:wi": ["O:cc", "P:tj", "P:wi"],
    }
    assert all(score == round(R2, 4) for _, score in ends(members))


async def test_ambiguous_entry_merges_and_deduplicates(history):
    result = await path_query(history, '"Washington" -[*]-> type:Date')
    # "Washington" scores 0.7071 against both people (ties keep the search order: the lexical
    # ranker puts the prefix match "Washington Irving" before "George Washington"); each
    # entry point reaches its own birth date
    assert [(s.entity, s.score) for s in result.metadata.entry_points] == [("P:wi", round(R2, 4)),
                                                                         ("P:gw", round(R2, 4))]
    assert ends(result) == [("D:1732", round(R2, 4)), ("D:1783", round(R2, 4))]
    shared = await path_query(history, '"Washington" -[*]-> type:Person', k=3)
    # P:gw -KNOWS-> P:tj only; P:wi has no outgoing person edges: one result, deduplicated
    assert ends(shared) == [("P:tj", round(R2, 4))]


async def test_exact_entity_filter(history):
    assert ends(await path_query(history, "@F:letter -[mentions]-> @PL:mv")) == [("PL:mv", 1.0)]
    with pytest.raises(UnknownEntity, match="nope"):
        await path_query(history, "@F:letter -[mentions]-> @nope")


async def test_entry_point_alone(history):
    result = await path_query(history, '"Mount Vernon"')
    assert ends(result) == [("PL:mv", 1.0)] and result.metadata.hops == 0


async def test_no_entry_point(history):
    result = await path_query(history, '"xyzzy nonsense query" -[*]-> type:Person')
    assert result.results == []
    assert result.metadata.error == "no_entry_point"
    assert result.metadata.message == "Semantic search found no matching entities for 'xyzzy nonsense query'."
    unknown = await path_query(history, "@nobody -[*]->")
    assert unknown.metadata.error == "no_entry_point" and "search_entities" in unknown.metadata.hint


async def test_no_matching_relations_gives_partial_path_and_available_relations(history):
    result = await path_query(history, '"George Washington" -[teleported]-> type:Place', threshold=0.6)
    meta = result.metadata
    assert result.results == []
    assert meta.reason == "no_matching_relations" and meta.stopped_at_hop == 1
    assert [s.model_dump(exclude_none=True) for s in meta.partial_path] == [
        {"entity": "P:gw", "label": "George Washington", "score": 1.0}]
    assert meta.available_relations == ["BORN_ON", "KNOWS", "LIVED_IN"]
    assert "Incoming relations there: HAS_MEMBER, KNOWS" in meta.hint
    second = await path_query(history, "@P:gw -[born]-> type:Date -[teleported]->")
    assert second.metadata.stopped_at_hop == 2
    assert [s.entity or s.edge for s in second.metadata.partial_path] == ["P:gw", "BORN_ON", "D:1732"]
    assert second.metadata.available_relations == []


async def test_no_entities_match_the_type_filter(history):
    result = await path_query(history, '"George Washington" -[born]-> type:Organization', threshold=0.6)
    assert result.results == []
    assert result.metadata.reason == "no_entities_match_filter" and result.metadata.stopped_at_hop == 1
    assert "type Date (1)" in result.metadata.hint


async def test_unknown_type_lists_the_graphs_types(history):
    with pytest.raises(InvalidArgument) as info:
        await path_query(history, "@P:gw -[*]-> type:planet")
    assert "Unknown entity type 'planet'" in info.value.message
    assert "Date, Event, File, Organization, Person, Place" in info.value.hint


async def test_parameters_are_checked(history):
    for kwargs, fragment in [({"k": 0}, "k must be"), ({"threshold": 1.5}, "threshold must be"),
                             ({"max_results": 0}, "max_results must be")]:
        with pytest.raises(InvalidArgument, match=fragment):
            await path_query(history, "@P:gw", **kwargs)


async def test_max_results_cuts_the_lowest_scores(history):
    result = await path_query(history, "@P:gw -[*]->", max_results=2)
    assert [e for e, _ in ends(result)] == ["D:1732", "P:tj"]
    assert result.metadata.total_results == 3
    assert result.metadata.truncated[0].reason == "max_results"


async def test_a_hop_extends_the_best_paths_until_its_work_bound(history, monkeypatch):
    """A hop counts extensions best path first and prunes the rest before building them."""
    import bfsql.engine.paths as paths

    whole = await path_query(history, "@O:cc -[*]-> -[*]->", max_results=200)
    assert whole.metadata.truncated is None
    monkeypatch.setattr(paths, "MAX_EXTENSIONS", 2)
    cut = await path_query(history, "@O:cc -[*]-> -[*]->", max_results=200)
    # O:cc reaches P:gw and P:tj (score 1, P:gw first by id); P:gw's three edges fit the bound alone
    # (the first path is always extended), P:tj's are not counted.
    assert [e for e, _ in ends(cut)] == ["D:1732", "P:tj", "PL:mv"]
    notes = {note.reason: note for note in cut.metadata.truncated}
    assert "1 lower-scoring paths were not extended" in notes["max_extensions"].detail


async def test_a_hop_reads_its_frontier_in_pieces_until_its_work_bound(history, monkeypatch):
    """Issue 36.4: a hop reads the edges of its frontier a piece at a time, best paths first, and stops reading
    once it holds more than MAX_EXTENSIONS of them: the rest would only be pruned (a wildcard hop from 100,000
    paths meets millions of rows). The answer is the one of the whole read."""
    import bfsql.engine.paths as paths

    asked: list[list[str]] = []
    hop = history.hop

    async def recording(ids: list[str]):
        asked.append(list(ids))
        return await hop(ids)

    monkeypatch.setattr(history, "hop", recording)
    monkeypatch.setattr(paths, "FRONTIER_PIECE", 1)
    whole = await path_query(history, "@O:cc -[*]-> -[*]->", max_results=200)
    assert whole.metadata.truncated is None and asked == [["O:cc"], ["P:gw"], ["P:tj"]]
    asked.clear()
    monkeypatch.setattr(paths, "MAX_EXTENSIONS", 2)
    cut = await path_query(history, "@O:cc -[*]-> -[*]->", max_results=200)
    assert asked == [["O:cc"], ["P:gw"]]  # P:gw's three edges are more than the bound: P:tj's are not read
    assert [e for e, _ in ends(cut)] == ["D:1732", "P:tj", "PL:mv"]
    notes = {note.reason: note for note in cut.metadata.truncated}
    assert "1 lower-scoring paths were not extended" in notes["max_extensions"].detail


def test_a_hop_sizes_its_next_piece_by_the_extensions_and_rows_left_at_the_rate_met():
    """Issue 36.4: after a first small piece, a hop reads as many frontier entities as should bring the extensions
    left to MAX_EXTENSIONS, and at most PIECE_ROWS rows, at the rates its earlier pieces brought them: a frontier
    of hubs is not read 2,048 entities at a time past the bound (at R-MAT 20, 708,323 rows in one read)."""
    from bfsql.engine.paths import FIRST_PIECE, FRONTIER_PIECE, MAX_EXTENSIONS, PIECE_ROWS, _next_piece

    assert _next_piece(0, 0) == FIRST_PIECE
    assert _next_piece(FIRST_PIECE, 0) == FRONTIER_PIECE  # nothing matched yet: the largest piece
    assert _next_piece(64, MAX_EXTENSIONS // 2) == 65  # half the bound in 64 entities: about 64 more
    assert _next_piece(64, MAX_EXTENSIONS) == 1
    assert _next_piece(1_000, 1_000) == FRONTIER_PIECE
    assert _next_piece(64, 1_000, rows=2 * PIECE_ROWS) == 33  # 64 hubs brought twice the rows of a read: 33 more
    assert _next_piece(64, 1_000, rows=64) == FRONTIER_PIECE  # one row an entity: the extensions' rate decides


@pytest.mark.parametrize("seed", range(20))
def test_a_hop_keeps_its_best_extensions_in_the_order_of_the_paths_they_make(seed):
    """The extensions a hop keeps (at most max_nodes) are the first in the order of the paths they make (score,
    depth, nodes: _Path.order), then predicate and position; ranked as arrays on the numbers, with ties (a
    wildcard's edges from one path) broken by the entity reached. Against that order spelled out, on random hops
    with many ties: few scores, few depths, repeated nodes."""
    from array import array

    from bfsql.engine.paths import _best_first, _Extensions, _Path

    rng = random.Random(seed)
    entities = [f"E:{i}" for i in range(30)]
    paths = [_Path(("S", *rng.sample(entities, 2)), score=rng.choice([1.0, 0.5, 0.25]), depth=rng.randrange(3))
             for _ in range(40)]
    extensions = _Extensions()
    for _ in range(300):
        extensions.path.append(rng.randrange(len(paths)))
        extensions.predicate.append(rng.choice(["a", "b", "c"]))
        extensions.score.append(rng.choice([1.0, 0.8]))
        extensions.entity.append(rng.choice(entities))
    kept = array("i", sorted(rng.sample(range(300), 200)))
    keys = array("d", [-(paths[extensions.path[p]].score * extensions.score[p]) for p in kept])
    key_of = dict(zip(kept, keys, strict=True))

    def spelled_out(p: int) -> tuple:
        path = paths[extensions.path[p]]
        return key_of[p], path.depth, (*path.nodes, extensions.entity[p]), extensions.predicate[p], p

    for most in (1, 37, 200, 500):
        assert _best_first(paths, extensions, kept, keys, most) == sorted(kept, key=spelled_out)[:most]


async def test_a_variable_length_edge_matches_fuzzy_terms_and_k_at_every_level(history):
    """Closures (test_path_closures.py) match relations like any edge."""
    # KNOWS matches "knows" exactly (1); BORN_ON matches "born" by 1/sqrt(2). From P:gw: P:tj (KNOWS), D:1732
    # (BORN_ON); from P:tj: P:wi (P:gw is the start); from P:wi: D:1783. Scores multiply along the walk.
    result = await path_query(history, "@P:gw -[knows, born*]->")
    assert [(r.entity.id, r.score, r.depth) for r in result.results] == [
        ("P:tj", 1.0, 1), ("P:wi", 1.0, 2), ("D:1732", 0.7071, 1), ("D:1783", 0.7071, 3)]
    # k=1: one predicate per entity, the best: KNOWS where there is one, so D:1732 is not reached
    best_only = await path_query(history, "@P:gw -[knows, born*]->", k=1)
    assert [(r.entity.id, r.depth) for r in best_only.results] == [("P:tj", 1), ("P:wi", 2), ("D:1783", 3)]
    assert [s.score for s in best_only.results[-1].path if s.edge] == [None, None, 0.7071]


async def test_results_carry_metadata_only_when_asked(history):
    """By default a result's entity is id, type and name (sayable); with_metadata=True adds its metadata."""
    lean = await path_query(history, "@D:1732 <-[occurred]- type:Event")
    assert [to_output(r.entity) for r in lean.results] == [
        {"id": "E:birthday", "entity_type": "Event", "name": "Birthday Ball"},
        {"id": "E:yorktown", "entity_type": "Event", "name": "Battle of Yorktown"}]
    full = await path_query(history, "@D:1732 <-[occurred]- type:Event", with_metadata=True)
    stored = await history.metadata_for_nodes(["E:birthday", "E:yorktown"])
    assert [r.entity.metadata for r in full.results] == [stored["E:birthday"], stored["E:yorktown"]]
    assert all(r.entity.metadata for r in full.results)
    assert [(r.entity.id, r.entity.name, r.path) for r in full.results] == [
        (r.entity.id, r.entity.name, r.path) for r in lean.results]


async def test_one_hop_call_per_hop(history):
    await path_query(history, "@O:cc -[member]-> type:Person -[knows]-> type:Person <-[*]-")
    assert history.stats.calls["hop"] == 3


async def test_output_shape_is_json_ready(history):
    out = to_output(await path_query(history, "@D:1732 <-[occurred]- type:Event"))
    assert set(out) == {"results", "metadata"}
    assert set(out["results"][0]) == {"entity", "path", "score"}
    assert {"query", "hops", "k", "threshold", "total_candidates_explored", "execution_time_ms"} <= set(
        out["metadata"])


async def test_default_embedder_on_the_demo_shapes():
    from bfsql.backends.sqlite import SqliteBackend
    from bfsql.demo import demo_store

    async with Graph(SqliteBackend(demo_store("hashing"))) as demo:
        result = await path_query(demo, '"BRAF" -[isa]-> type:Family <-[isa]- type:Gene')
        assert ends(result) == [("HGNC:ARAF", 1.0), ("HGNC:RAF1", 1.0)]
        steps = [s.entity or s.edge for s in result.results[0].path]
        assert steps == ["HGNC:BRAF", "isa", "FPLX:RAF", "isa", "HGNC:ARAF"]
        member = await path_query(demo, "@HGNC:BRAF -[member]-> type:Family")
        assert member.metadata.reason == "no_matching_relations" and member.metadata.available_relations == ["isa"]


# -- an exact name enters there only ------------------------------------------------------------------


def caffeine_records() -> list:
    """caffeine's class has one other member; Caffeine-D3's (a near namesake) has two."""
    return [
        entity("CHEBI:27732", "Drug", name="caffeine", synonyms=["guaranine", "1,3,7-trimethylxanthine"]),
        entity("CHEBI:28946", "Drug", name="theobromine"),
        entity("X:d3", "Drug", name="Caffeine-D3"),
        entity("X:l1", "Drug", name="Labelled one"),
        entity("X:l2", "Drug", name="Labelled two"),
        entity("C:purine", "Class", name="purine alkaloid"),
        entity("C:labelled", "Class", name="labelled compound"),
        rel("CHEBI:27732", "isa", "C:purine"),
        rel("CHEBI:28946", "isa", "C:purine"),
        rel("X:d3", "isa", "C:labelled"),
        rel("X:l1", "isa", "C:labelled"),
        rel("X:l2", "isa", "C:labelled"),
    ]


@pytest.fixture
def caffeine() -> Graph:
    return Graph(MemoryBackend(caffeine_records()), plugins=[postprocess])


async def test_a_name_matching_one_entity_exactly_enters_there_only(caffeine):
    siblings = '"caffeine" -[isa]-> <-[isa]-'
    result = await path_query(caffeine, siblings)
    assert [s.entity for s in result.metadata.entry_points] == ["CHEBI:27732"]
    assert ends(result) == [("CHEBI:28946", 1.0)]
    assert result.metadata.k == 3
    # a synonym, in any case, is as exact as the name
    by_synonym = await path_query(caffeine, '"GUARANINE" -[isa]->')
    assert [s.entity for s in by_synonym.metadata.entry_points] == ["CHEBI:27732"]


async def test_an_explicit_k_keeps_the_near_namesakes(caffeine):
    result = await path_query(caffeine, '"caffeine" -[isa]-> <-[isa]-', k=3, threshold=0.0)
    assert [s.entity for s in result.metadata.entry_points][:2] == ["CHEBI:27732", "X:d3"]
    assert {"CHEBI:28946", "X:l1", "X:l2"} <= {e for e, _ in ends(result)}


async def test_without_an_exact_match_the_best_k_enter(caffeine):
    auto = await path_query(caffeine, '"caffeine labelled"', threshold=0.0)
    explicit = await path_query(caffeine, '"caffeine labelled"', k=3, threshold=0.0)
    assert len(auto.metadata.entry_points) > 1
    assert auto.metadata.entry_points == explicit.metadata.entry_points


async def test_every_exact_match_enters():
    twins = [entity("A:1", "Drug", name="Caffeine"), entity("B:1", "Drug", name="caffeine"),
             entity("C:1", "Drug", name="Caffeine-D3")]
    graph = Graph(MemoryBackend(twins), plugins=[postprocess])
    result = await path_query(graph, '"caffeine"')
    assert {e for e, _ in ends(result)} == {"A:1", "B:1"}


# -- a fitted answer keeps sayable names ------------------------------------------------------------------


def long_answer(name_length: int, results: int, entries: int) -> dict:
    """A path answer whose entities have long names and big metadata."""
    def name(i: int) -> str:
        return (f"entity {i} " + "with a long descriptive name " * 20)[:name_length]

    def entity_of(i: int) -> dict:
        return {"id": f"E:{i}", "entity_type": "T", "name": name(i),
                "metadata": {"name": name(i), "description": "x" * 5000, **{f"k{j}": "y" * 300 for j in range(20)}}}

    return {
        "results": [{"entity": entity_of(i), "score": 1.0,
                     "path": [{"entity": "E:0", "label": name(0)}, {"edge": "isa", "direction": "outgoing"},
                              {"entity": f"E:{i}", "label": name(i)}]} for i in range(1, results + 1)],
        "metadata": {"query": "@E:0 -[isa]->", "hops": 1, "k": 3, "threshold": 0.5, "max_results": 20,
                     "total_results": results, "hint": "h" * 1000,
                     "entry_points": [{"entity": f"E:{i}", "label": name(i)} for i in range(entries)]},
    }


def names_in(value) -> list[str]:
    """Every entity name and step label in ``value``, but not inside an entity's metadata (cut first)."""
    if isinstance(value, dict):
        return [v for k, v in value.items() if k in ("name", "label") and isinstance(v, str)] + [
            n for k, v in value.items() if k not in ("name", "label", "metadata") for n in names_in(v)]
    return [n for v in value for n in names_in(v)] if isinstance(value, list) else []


@pytest.mark.parametrize("tokens, entries", [(20000, 1), (4000, 1), (1500, 1), (200, 3)])
def test_fitting_never_clips_a_name_below_a_sayable_length(tokens, entries):
    from bfsql.server.answers.fitting import SAYABLE_CHARS, AnswerBudget, fit_paths

    answer = long_answer(200, 10, entries)
    fitted = fit_paths(answer, AnswerBudget(tokens))
    assert "truncated" in fitted["metadata"]
    names = names_in(fitted["results"]) + names_in(fitted["metadata"]["entry_points"])
    assert names and all(len(n) >= SAYABLE_CHARS for n in names), sorted(names, key=len)[:1]
    assert all(n.startswith("entity ") for n in names)
    if tokens >= 4000:
        assert fitted["results"] and all(len(r["entity"]["name"]) == 200 for r in fitted["results"])
