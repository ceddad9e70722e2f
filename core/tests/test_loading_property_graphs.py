"""KGX, Neo4j import CSV and GraphML readers on small files whose records are worked out by hand.

The KGX files are the examples of the KGX specification (docs/kgx_format.md of the kgx package); the
Neo4j ones those of the Neo4j operations manual's import tutorial (movies, actors, roles), as no
package ships Neo4j import files. Real files: tests/test_load_formats.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bfsql.loading.errors import BadRow, RowErrors
from bfsql.loading.readers import read_records
from bfsql.loading.records import EntityRecord, RelationshipRecord


def records(path: Path, fmt: str | None = None, **options: Any) -> tuple[list[EntityRecord], list[RelationshipRecord]]:
    entities: list[EntityRecord] = []
    relationships: list[RelationshipRecord] = []
    for _, record in read_records(path, fmt, **options):
        (entities if isinstance(record, EntityRecord) else relationships).append(record)  # type: ignore[arg-type]
    return entities, relationships


KGX_NODES = (
    "id\tcategory\tname\tprovided_by\n"
    "HGNC:11603\tbiolink:NamedThing|biolink:BiologicalEntity|biolink:Gene\tTBX4\tinfores:gwascatalog\n"
    "MONDO:0005002\tbiolink:NamedThing|biolink:BiologicalEntity|biolink:DiseaseOrPhenotypicFeature|biolink:Disease"
    "\tchronic obstructive pulmonary disease\tinfores:gwascatalog\n"
)
KGX_EDGES = (
    "id\tsubject\tpredicate\tobject\trelation\tprimary_knowledge_source\tcategory\tpublications\n"
    "urn:uuid:5b06e86f-d768-4cd9-ac27-abe31e95ab1e\tHGNC:11603\tbiolink:contributes_to\tMONDO:0005002\tRO:0003304"
    "\tinfores:gwascatalog\tbiolink:GeneToDiseaseAssociation\tPMID:26634245|PMID:26634244\n"
)


def test_kgx_tsv_nodes_and_edges_of_the_specification(tmp_path: Path) -> None:
    (tmp_path / "nodes.tsv").write_text(KGX_NODES, encoding="utf-8")
    (tmp_path / "edges.tsv").write_text(KGX_EDGES, encoding="utf-8")
    entities, _ = records(tmp_path / "nodes.tsv", "kgx")
    _, relationships = records(tmp_path / "edges.tsv", "kgx")
    assert [(e.id, e.entity_type, e.name) for e in entities] == [
        ("HGNC:11603", "Gene", "TBX4"), ("MONDO:0005002", "Disease", "chronic obstructive pulmonary disease")]
    assert entities[0].properties == {
        "category": ["biolink:NamedThing", "biolink:BiologicalEntity", "biolink:Gene"],
        "provided_by": ["infores:gwascatalog"],
    }
    (edge,) = relationships
    assert (edge.subject, edge.predicate, edge.object) == ("HGNC:11603", "contributes_to", "MONDO:0005002")
    assert edge.source_documents == ["PMID:26634245", "PMID:26634244"]
    assert edge.properties == {
        "id": "urn:uuid:5b06e86f-d768-4cd9-ac27-abe31e95ab1e", "relation": "RO:0003304",
        "primary_knowledge_source": "infores:gwascatalog", "category": ["biolink:GeneToDiseaseAssociation"],
    }


def test_kgx_json_lines(tmp_path: Path) -> None:
    nodes = [
        {"id": "HGNC:11603", "category": ["biolink:Gene"], "name": "TBX4", "synonym": ["T-box 4"],
         "xref": ["ENSEMBL:ENSG00000121075"], "iri": "http://identifiers.org/hgnc/11603"},
        {"id": "CHEBI:1", "category": ["biolink:ChemicalEntity", "biolink:NamedThing"], "name": "a|b",
         "deprecated": True},
        {"id": "X:1", "category": []},
    ]
    (tmp_path / "g_nodes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in nodes), encoding="utf-8")
    entities, _ = records(tmp_path / "g_nodes.jsonl", "kgx")
    assert [(e.id, e.entity_type, e.name, e.synonyms, e.status, e.canonical_url) for e in entities] == [
        ("HGNC:11603", "Gene", "TBX4", ["T-box 4"], None, "http://identifiers.org/hgnc/11603"),
        ("CHEBI:1", "ChemicalEntity", "a|b", [], "merged", None),  # the root NamedThing is no type; '|' kept
        ("X:1", "Entity", None, [], None, None),
    ]


def test_kgx_bad_rows_are_reported(tmp_path: Path) -> None:
    source = tmp_path / "edges.tsv"
    source.write_text("subject\tpredicate\tobject\nA:1\tbiolink:related_to\nA:1\tp\tB:1\textra\n", encoding="utf-8")
    errors = RowErrors(10)
    _, relationships = records(source, "kgx", errors=errors)
    assert relationships == []
    assert [(e.line, e.message) for e in errors.rows] == [(2, "object: Field required"),
                                                          (3, "expected 3 columns, got 4")]
    other = tmp_path / "other.tsv"
    other.write_text("name\tcolour\nx\ty\n", encoding="utf-8")
    with pytest.raises(BadRow, match="a KGX table starts with a header naming id"):
        records(other, "kgx")


MOVIES = 'movieId:ID,title,year:int,:LABEL\ntt0133093,"The Matrix",1999,Movie\ntt0234215,"The Matrix Reloaded",' \
    '2003,Movie;Sequel\ntt0242653,"The Matrix Revolutions",2003,Movie;Sequel\n'
ACTORS = 'personId:ID,name,:LABEL\nkeanu,"Keanu Reeves",Actor\nlaurence,"Laurence Fishburne",Actor\n' \
    'carrieanne,"Carrie-Anne Moss",Actor\n'
ROLES = ':START_ID,role,:END_ID,:TYPE\nkeanu,"Neo",tt0133093,ACTED_IN\nkeanu,"Neo",tt0234215,ACTED_IN\n' \
    'keanu,"Neo",tt0242653,ACTED_IN\nlaurence,"Morpheus",tt0133093,ACTED_IN\nlaurence,"Morpheus",tt0234215,ACTED_IN\n' \
    'laurence,"Morpheus",tt0242653,ACTED_IN\ncarrieanne,"Trinity",tt0133093,ACTED_IN\n' \
    'carrieanne,"Trinity",tt0234215,ACTED_IN\ncarrieanne,"Trinity",tt0242653,ACTED_IN\n'


def test_neo4j_import_files_of_the_manual(tmp_path: Path) -> None:
    for name, text in (("movies.csv", MOVIES), ("actors.csv", ACTORS), ("roles.csv", ROLES)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    movies, _ = records(tmp_path / "movies.csv")  # told from the header
    actors, _ = records(tmp_path / "actors.csv")
    _, roles = records(tmp_path / "roles.csv")
    assert [(m.id, m.entity_type, m.name, m.properties) for m in movies] == [
        ("tt0133093", "Movie", "The Matrix", {"movieId": "tt0133093", "year": 1999, "labels": ["Movie"]}),
        ("tt0234215", "Movie", "The Matrix Reloaded",
         {"movieId": "tt0234215", "year": 2003, "labels": ["Movie", "Sequel"]}),
        ("tt0242653", "Movie", "The Matrix Revolutions",
         {"movieId": "tt0242653", "year": 2003, "labels": ["Movie", "Sequel"]}),
    ]
    assert [(a.id, a.entity_type, a.name) for a in actors] == [
        ("keanu", "Actor", "Keanu Reeves"), ("laurence", "Actor", "Laurence Fishburne"),
        ("carrieanne", "Actor", "Carrie-Anne Moss")]
    assert len(roles) == 9 and {r.predicate for r in roles} == {"ACTED_IN"}
    assert (roles[3].subject, roles[3].object, roles[3].properties) == ("laurence", "tt0133093", {"role": "Morpheus"})


def test_neo4j_id_spaces_types_and_bad_cells(tmp_path: Path) -> None:
    nodes = tmp_path / "people.csv"
    nodes.write_text("id:ID(Person),name,age:int,scores:float[],active:boolean,note:IGNORE\n"
                     "1,Ann,41,1.5;2,true,x\n2,Bob,old,,false,\n", encoding="utf-8")
    rels = tmp_path / "knows.csv"
    rels.write_text(":START_ID(Person),:END_ID(Person),since:long\n1,2,2001\n", encoding="utf-8")
    errors = RowErrors(10)
    people, _ = records(nodes, "neo4j", errors=errors)
    assert [(p.id, p.entity_type, p.name, p.properties) for p in people] == [
        ("Person:1", "Person", "Ann", {"id": "1", "age": 41, "scores": [1.5, 2.0], "active": True})]
    assert [(e.line, e.message) for e in errors.rows] == [(3, "age: 'old' is not a int")]
    with pytest.raises(BadRow, match="a relationship without a :TYPE"):
        records(rels, "neo4j")


GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:y="http://www.yworks.com/xml/graphml">
  <key id="t" for="node" attr.name="entity_type" attr.type="string"/>
  <key id="n" for="node" attr.name="name" attr.type="string"/>
  <key id="w" for="edge" attr.name="weight" attr.type="double"><default>1.0</default></key>
  <key id="p" for="edge" attr.name="predicate" attr.type="string"/>
  <key id="g" for="node" yfiles.type="nodegraphics"/>
  <graph id="G" edgedefault="directed">
    <node id="a"><data key="t">Gene</data><data key="n">BRAF</data></node>
    <node id="b" labels=":Family:Group"/>
    <node id="c"><data key="g"><y:ShapeNode><y:NodeLabel>  yEd
      label </y:NodeLabel></y:ShapeNode></data></node>
    <edge id="e1" source="a" target="b"><data key="p">isa</data></edge>
    <edge source="b" target="c" label="CONTAINS" directed="false"><data key="w">2.5</data></edge>
  </graph>
</graphml>
"""


def test_graphml_nodes_edges_keys_and_defaults(tmp_path: Path) -> None:
    source = tmp_path / "g.graphml"
    source.write_text(GRAPHML, encoding="utf-8")
    entities, relationships = records(source)
    assert [(e.id, e.entity_type, e.name, e.properties) for e in entities] == [
        ("a", "Gene", "BRAF", {}),
        ("b", "Family", None, {"labels": ["Family", "Group"]}),  # Neo4j APOC's labels attribute
        ("c", "Entity", "yEd label", {}),
    ]
    assert [(r.subject, r.predicate, r.object, r.properties) for r in relationships] == [
        ("a", "isa", "b", {"id": "e1", "weight": 1.0}),
        ("b", "CONTAINS", "c", {"weight": 2.5, "directed": False}),
    ]


def test_graphml_that_is_not_well_formed_names_its_line(tmp_path: Path) -> None:
    source = tmp_path / "g.graphml"
    source.write_text(GRAPHML.replace('<node id="b" labels=":Family:Group"/>', '<node id="b">'), encoding="utf-8")
    with pytest.raises(BadRow, match=r"g\.graphml:15: not well-formed GraphML: mismatched tag"):
        records(source)


def test_graphml_an_edge_without_ends_is_a_bad_row(tmp_path: Path) -> None:
    source = tmp_path / "g.graphml"
    source.write_text(GRAPHML.replace('source="a" ', ""), encoding="utf-8")
    errors = RowErrors(10)
    _, relationships = records(source, errors=errors)
    assert len(relationships) == 1
    assert [(e.line, e.message) for e in errors.rows] == [(13, "subject: Field required")]


def test_limits_hold_in_kgx_neo4j_and_obo_rows(tmp_path: Path) -> None:
    from bfsql.loading.limits import LoadLimits

    limits = LoadLimits(name_chars=10)
    kgx = tmp_path / "nodes.tsv"
    kgx.write_text("id\tname\nA:1\tshort\nA:2\tfar too long a name\n", encoding="utf-8")
    neo4j = tmp_path / "people.csv"
    neo4j.write_text(":ID,name\n1,Ann\n2,B\x00b\n", encoding="utf-8")
    obo = tmp_path / "t.obo"
    obo.write_text("[Term]\nid: A:1\nname: far too long a name\n", encoding="utf-8")
    for path, fmt, message in ((kgx, "kgx", "name: 19 characters, more than the limit name_chars = 10"),
                               (neo4j, "neo4j", "name: contains a NUL character"),
                               (obo, "obo", "name: 19 characters, more than the limit name_chars = 10")):
        errors = RowErrors(10)
        entities, _ = records(path, fmt, limits=limits, errors=errors)
        assert len(entities) == (1 if fmt != "obo" else 0)
        assert len(errors.rows) == 1 and errors.rows[0].message.startswith(message), errors.rows
