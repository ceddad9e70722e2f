"""How ``bfsql load`` tells a source's format: extension, then the start of .rdf/.xml files; errors that
name what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from bfsql.loading.errors import LoadError
from bfsql.loading.formats import check_format, detect_format


@pytest.mark.parametrize(("name", "text", "fmt"), [
    ("g.jsonl", "", "jsonl"),
    ("g.obo", "", "obo"),
    ("g.owl", "", "owl"),
    ("biolink_model.owl.ttl", "", "owl"),
    ("g.ttl", "", "ttl"),
    ("g.csv", "subject,predicate,object\n", "csv"),
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
    with pytest.raises(LoadError, match=r"name it with --format \(jsonl, .*owl\) \(its root element"):
        detect_format(source)


def test_unknown_format_names_list_them_all() -> None:
    with pytest.raises(LoadError, match="use one of jsonl, csv, tsv, nt, ttl, rdfxml, obo, owl"):
        check_format("gml")
