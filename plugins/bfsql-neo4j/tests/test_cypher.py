"""String-level tests of the statements the backend sends (Neo4j 5 dialect; no server needed)."""

from __future__ import annotations

import re

import pytest

from bfsql_neo4j.cypher import Statements, quote_identifier
from bfsql_neo4j.dialect import FALKORDB, NEO4J5, falkordb_escape, falkordb_literal_size
from bfsql_neo4j.fulltext import LUCENE_SPECIAL, MAX_QUERY_CHARS, escape_lucene, escape_redisearch, fulltext_query
from bfsql_neo4j.indexes import Neo4jSetupError, check_fulltext, choose_id_property, read_indexes

NEO4J = Statements(NEO4J5, "Entity", "entity_id", "name", "synonyms")
WRITES = re.compile(r"\b(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|LOAD|FOREACH)\b", re.IGNORECASE)


def all_reads(statements: Statements) -> list[str]:
    return [
        statements.hop(),
        statements.hop(with_properties=True),
        statements.nodes(),
        statements.node_properties(),
        statements.edge_properties(),
        statements.edge_provenance(),
        statements.search(False),
        statements.search(True),
        statements.labels(),
        statements.relationship_types(),
        statements.indexes(),
    ]


def test_hop_is_one_anchored_unwind_in_both_directions() -> None:
    assert NEO4J.hop() == (
        "UNWIND $ids AS id MATCH (n:`Entity` {`entity_id`: id}) OPTIONAL MATCH (n)-[r]-(m) "
        "RETURN id,type(r),startNode(r)=n,m.`entity_id`,labels(m),m.`name`,labels(n),n.`name`"
    ), "the asked node's own labels and name too, also for a node without relationships"
    assert NEO4J.hop(with_properties=True) == (
        f"{NEO4J.hop()},elementId(r),[k IN keys(r) WHERE NOT k IN $drop | [k, r[k]]]"
    ), "in a full traversal the relationship's id and properties (minus dropped keys) come with the hop"


def test_nodes_and_metadata_statements() -> None:
    assert NEO4J.nodes() == (
        "UNWIND $ids AS id MATCH (n:`Entity` {`entity_id`: id}) RETURN id, labels(n) AS labels, n.`name` AS name"
    )
    assert NEO4J.node_properties() == (
        "UNWIND $ids AS id MATCH (n:`Entity` {`entity_id`: id}) "
        "RETURN id, [k IN keys(n) WHERE NOT k IN $drop | [k, n[k]]] AS props"
    )


def test_edge_statements_order_parallel_relationships_by_element_id() -> None:
    assert NEO4J.edge_properties() == (
        "UNWIND $edges AS e MATCH (s:`Entity` {`entity_id`: e[0]})-[r]->(o) "
        "WHERE o.`entity_id` = e[1] AND type(r) = e[2] "
        "RETURN e, [k IN keys(r) WHERE NOT k IN $drop | [k, r[k]]] AS props ORDER BY elementId(r)"
    )
    assert NEO4J.edge_provenance() == (
        "UNWIND $edges AS e MATCH (s:`Entity` {`entity_id`: e[0]})-[r]->(o) "
        "WHERE o.`entity_id` = e[1] AND type(r) = e[2] AND r.`provenance` IS NOT NULL "
        "RETURN e, r.`provenance` AS provenance ORDER BY elementId(r)"
    )
    falkor = Statements(FALKORDB, "Entity", "entity_id", "name", "synonyms")
    assert falkor.edge_properties().endswith("ORDER BY id(r)")
    assert falkor.edge_provenance().endswith("ORDER BY id(r)")


def test_search_uses_the_neo4j_fulltext_procedure() -> None:
    assert NEO4J.search(False) == (
        "CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score "
        "WHERE node:`Entity` AND node.`entity_id` IS NOT NULL "
        "RETURN node.`entity_id` AS id, labels(node) AS labels, node.`name` AS name, node.`synonyms` AS synonyms, "
        "score ORDER BY score DESC LIMIT $limit"
    )
    assert "AND any(label IN labels(node) WHERE label IN $types)" in NEO4J.search(True)
    falkor = Statements(FALKORDB, "Entity", "entity_id", "name", "synonyms")
    assert falkor.search(False).startswith("CALL db.idx.fulltext.queryNodes($index, $query) YIELD node, score")


def test_schema_statements() -> None:
    assert NEO4J.labels() == "CALL db.labels() YIELD label RETURN label ORDER BY label"
    assert NEO4J.relationship_types() == (
        "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType"
    )
    assert NEO4J.indexes().startswith("SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, state")


@pytest.mark.parametrize("statements", [NEO4J, Statements(FALKORDB, "Entity", "id", "name", "synonyms")])
def test_every_statement_reads_and_starts_from_an_index(statements: Statements) -> None:
    for statement in all_reads(statements):
        assert not WRITES.search(re.sub(r"\$\w+", "$p", statement)), statement
        # Every node pattern that is matched by id carries the label: no unlabelled scan.
        for match in re.findall(r"(?<!OPTIONAL )MATCH \((\w+)([^)]*)\)", statement):
            variable, rest = match
            if variable in ("n", "s"):
                assert rest.startswith(":`"), statement
    for statement in all_reads(statements):
        assert "'" not in statement and '"' not in statement, f"a literal in {statement}"


def test_identifiers_are_quoted_and_escaped() -> None:
    weird = Statements(NEO4J5, "My `Label`", "the id", "name", "syn")
    assert "(n:`My ``Label```" in weird.nodes()
    assert "{`the id`: id}" in weird.nodes()
    assert quote_identifier("a`b", NEO4J5) == "`a``b`"
    with pytest.raises(ValueError, match="backtick"):
        quote_identifier("a`b", FALKORDB)
    for bad in ("", "  ", "a\x00b"):
        with pytest.raises(ValueError):
            quote_identifier(bad, NEO4J5)


def test_create_statements_shown_in_start_up_errors() -> None:
    assert NEO4J.create_id_index() == (
        "CREATE CONSTRAINT `Entity_entity_id_unique` IF NOT EXISTS FOR (n:`Entity`) REQUIRE n.`entity_id` IS UNIQUE"
    )
    assert NEO4J.create_fulltext_index("entity_names") == (
        "CREATE FULLTEXT INDEX `entity_names` IF NOT EXISTS FOR (n:`Entity`) ON EACH [n.`name`, n.`synonyms`]"
    )
    falkor = Statements(FALKORDB, "Entity", "entity_id", "name", "synonyms")
    assert falkor.create_id_index() == "CREATE INDEX FOR (n:`Entity`) ON (n.`entity_id`)"
    assert falkor.create_fulltext_index("x") == "CREATE FULLTEXT INDEX FOR (n:`Entity`) ON (n.`name`, n.`synonyms`)"


# --- full-text queries ----------------------------------------------------------------


def test_every_lucene_special_character_is_escaped() -> None:
    text = '+ - && || ! ( ) { } [ ] ^ " ~ * ? : \\ /'
    escaped = escape_lucene(text)
    unescaped = re.sub(r"\\.", "", escaped)
    assert not set(unescaped) & LUCENE_SPECIAL, escaped
    assert escape_lucene("a+b") == "a\\+b"
    assert escape_lucene("x\\y") == "x\\\\y"
    assert escape_lucene("a&&b||c") == "a\\&\\&b\\|\\|c"


def test_lucene_query_is_built_from_escaped_lowercase_terms() -> None:
    assert fulltext_query("TP53", NEO4J5) == '"tp53"^4 OR (tp53)^2 OR (tp53*)'
    assert fulltext_query("Li-Fraumeni syndrome", NEO4J5) == (
        '"li\\-fraumeni syndrome"^4 OR (li\\-fraumeni AND syndrome)^2 OR (li\\-fraumeni AND syndrome*)'
    )
    # An operator typed by a user is a (lowercased) term, a wildcard is escaped, no prefix on a non-word.
    assert fulltext_query("NOT p53*", NEO4J5) == '"not p53\\*"^4 OR (not AND p53\\*)^2'
    assert fulltext_query('a" OR x:1', NEO4J5).startswith('"a\\" or x\\:1"^4')


def test_redisearch_query_uses_word_terms_only() -> None:
    assert fulltext_query("TP53", FALKORDB) == "(tp53) | (tp53*)"
    assert fulltext_query("Li-Fraumeni syndrome", FALKORDB) == "(li fraumeni syndrome) | (li fraumeni syndrome*)"
    assert fulltext_query("-p53 | @name:x (", FALKORDB) == "p53 name x"
    assert fulltext_query("a", FALKORDB) == "a"
    assert escape_redisearch("a-b@c") == "a\\-b\\@c"


@pytest.mark.parametrize("text", ["", "   ", "\x00", "()", "!!!"])
def test_nothing_to_search(text: str) -> None:
    assert fulltext_query(text, FALKORDB) == ""
    if text.strip("\x00 "):
        assert fulltext_query(text, NEO4J5) != ""  # escaped punctuation: Lucene's analyser drops it
    else:
        assert fulltext_query(text, NEO4J5) == ""


def test_search_text_is_capped() -> None:
    assert len(fulltext_query("a" * 10_000, NEO4J5)) < 4 * MAX_QUERY_CHARS


# --- FalkorDB parameters --------------------------------------------------------------


def test_falkordb_escape_makes_its_spliced_literals_safe() -> None:
    assert falkordb_escape("O'Brien") == "O\\'Brien"
    assert falkordb_escape("a\\b") == "a\\\\b"
    assert falkordb_escape(["x'", {"k": "\\'"}]) == ["x\\'", {"k": "\\\\\\'"}]
    assert falkordb_escape(3) == 3
    assert NEO4J5.encode({"ids": ["O'Brien"]}) == {"ids": ["O'Brien"]}


def test_falkordb_chunks_fit_the_message_budget() -> None:
    query = NEO4J.nodes()
    items = [f"ID:{i:05d}-{'x' * 40}" for i in range(500)]
    chunks, too_big = FALKORDB.chunks(query, "ids", items, {}, max_items=10_000)
    assert not too_big and [i for chunk in chunks for i in chunk] == items and len(chunks) > 1
    for chunk in chunks:
        assert FALKORDB.rendered_size(query, {"ids": chunk}) <= FALKORDB.message_budget
    huge = "y" * 5000
    chunks, too_big = FALKORDB.chunks(query, "ids", ["a", huge, "b"], {}, max_items=10)
    assert chunks == [["a", "b"]] and too_big == [huge]
    assert NEO4J5.chunks(query, "ids", items, {}, max_items=200)[0] == [items[:200], items[200:400], items[400:]]


def test_falkordb_literal_size_matches_its_rendering() -> None:
    assert falkordb_literal_size("abc") == len("'abc'")
    assert falkordb_literal_size(["a", "b"]) >= len("['a', 'b']")
    assert falkordb_literal_size({"i": 1, "s": "x"}) >= len("{i: 1, s: 'x'}")
    assert falkordb_literal_size("é") == 4


# --- start-up checks ------------------------------------------------------------------


NEO4J_INDEXES = [
    {"name": "ix_id", "type": "RANGE", "entityType": "NODE", "labelsOrTypes": ["Entity"], "properties": ["id"],
     "state": "ONLINE"},
    {"name": "entity_names", "type": "FULLTEXT", "entityType": "NODE", "labelsOrTypes": ["Entity"],
     "properties": ["name", "synonyms"], "state": "ONLINE"},
    {"name": "lookup", "type": "LOOKUP", "entityType": "NODE", "labelsOrTypes": None, "properties": None,
     "state": "ONLINE"},
    {"name": "other", "type": "RANGE", "entityType": "NODE", "labelsOrTypes": ["Person"], "properties": ["entity_id"],
     "state": "ONLINE"},
]  # fmt: skip


def test_id_property_falls_back_to_the_first_indexed_candidate() -> None:
    report = read_indexes(NEO4J_INDEXES, NEO4J)
    assert report.equality == {"id"}
    assert choose_id_property(report, None, ["entity_id", "id", "uri", "name"], NEO4J) == "id"
    assert check_fulltext(report, "entity_names", NEO4J) == "entity_names"


def test_missing_indexes_fail_with_the_statement_to_run() -> None:
    report = read_indexes(NEO4J_INDEXES[2:], NEO4J)
    with pytest.raises(Neo4jSetupError) as info:
        choose_id_property(report, "entity_id", [], NEO4J)
    assert "CREATE CONSTRAINT `Entity_entity_id_unique` IF NOT EXISTS" in str(info.value)
    with pytest.raises(Neo4jSetupError) as info:
        check_fulltext(report, "entity_names", NEO4J)
    assert "CREATE FULLTEXT INDEX `entity_names` IF NOT EXISTS FOR (n:`Entity`)" in str(info.value)


def test_an_index_still_populating_is_reported() -> None:
    populating = [dict(NEO4J_INDEXES[0], state="POPULATING")]
    with pytest.raises(Neo4jSetupError, match="still being built: ix_id"):
        choose_id_property(read_indexes(populating, NEO4J), None, ["id"], NEO4J)
