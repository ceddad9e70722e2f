"""How ``bfsql load`` tells a source's format: extension, then the start of .rdf/.xml and CSV files; KGX
directories; errors that name what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from bfsql.loading.errors import LoadError
from bfsql.loading.formats import check_format, detect_format, expand_sources


@pytest.mark.parametrize(("name", "text", "fmt"), [
    ("g.jsonl", "", "jsonl"),
    ("g.obo", "", "obo"),
    ("g.owl", "", "owl"),
    ("biolink_model.owl.ttl", "", "owl"),
    ("g.ttl", "", "ttl"),
    ("g.graphml", "", "graphml"),
    ("g.csv", "subject,predicate,object\n", "csv"),
    ("movies.csv", "movieId:ID,title,:LABEL\n", "neo4j"),
    ("roles.tsv", ":START_ID\t:END_ID\t:TYPE\n", "neo4j"),
    ("g.xml", '<?xml version="1.0"?>\n<!-- x -->\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">', "graphml"),
    ("g.rdf", '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description/>', "rdfxml"),
    ("g.rdf", '<rdf:RDF xmlns:owl="http://www.w3.org/2002/07/owl#"><owl:Ontology rdf:about="x"/>', "owl"),
])
def test_formats_by_extension_and_start(tmp_path: Path, name: str, text: str, fmt: str) -> None:
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    assert detect_format(source) == fmt


def test_an_xml_file_of_another_kind_names_the_format_option(tmp_path: Path) -> None:
    source = tmp_path / "pom.xml"
    source.write_text("<project/>", encoding="utf-8")
    with pytest.raises(LoadError, match=r"name it with --format \(jsonl, .*graphml\) \(its root element"):
        detect_format(source)


def test_unknown_format_names_list_them_all() -> None:
    with pytest.raises(LoadError, match="use one of jsonl, csv, tsv, nt, ttl, rdfxml, obo, owl, kgx, neo4j, graphml"):
        check_format("gml")


def test_a_kgx_directory_gives_its_node_files_first(tmp_path: Path) -> None:
    for name in ("monarch_edges.tsv", "monarch_nodes.tsv", "README.md", "extra-nodes.jsonl"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert expand_sources([tmp_path], "kgx") == [
        (tmp_path / "extra-nodes.jsonl", "kgx"), (tmp_path / "monarch_nodes.tsv", "kgx"),
        (tmp_path / "monarch_edges.tsv", "kgx")]
    with pytest.raises(LoadError, match="is a directory of KGX node and edge files: load it with --format kgx"):
        expand_sources([tmp_path], None)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LoadError, match="is a directory; bfsql load reads files"):
        expand_sources([empty], "kgx")


def test_kgx_files_read_as_tables_or_bundles_point_to_the_kgx_format(tmp_path: Path) -> None:
    from bfsql.loading.errors import BadRow
    from bfsql.loading.readers import read_records

    edges = tmp_path / "edges.tsv"
    edges.write_text("subject\tpredicate\tobject\trelation\nA:1\tbiolink:related_to\tB:1\tRO:1\n", encoding="utf-8")
    with pytest.raises(BadRow, match=r"edges\.tsv:1: unknown column\(s\) \['relation'\].*--format kgx"):
        list(read_records(edges))
    nodes = tmp_path / "nodes.jsonl"
    nodes.write_text('{"id": "A:1", "name": "a", "category": ["biolink:Gene"]}\n', encoding="utf-8")
    with pytest.raises(BadRow, match=r"nodes\.jsonl:1: missing field 'kind'.*load it with --format kgx"):
        list(read_records(nodes))
