"""OBO and OWL readers on small hand-written ontologies whose records are worked out by hand.

The real files (the HPO's hp.obo, GO slim in OWL) are loaded in tests/test_load_formats.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bfsql.loading.errors import BadRow, LoadError, RowErrors
from bfsql.loading.obo import obo_value, quoted_text
from bfsql.loading.readers import read_records
from bfsql.loading.records import EntityRecord, RelationshipRecord

# A GO-like fragment in OBO 1.4, with what real files hold: comments, modifiers, escapes,
# relationship lines, an obsolete term with replaced_by, a Typedef.
OBO = r"""format-version: 1.4
default-namespace: gene_ontology
! a comment line

[Term]
id: GO:0005634
name: nucleus
namespace: cellular_component
def: "A membrane-bounded organelle \"of eukaryotic cells\"." [GOC:go_curators, PMID:123]
synonym: "cell nucleus" EXACT []
synonym: "horsetail nucleus" NARROW [GOC:al] {source="x"}
xref: NIF_Subcellular:sao1702920020 "nucleus"
xref: Wikipedia:Cell_nucleus
is_a: GO:0043231 ! intracellular membrane-bounded organelle
relationship: part_of GO:0005622 {source="GOC:x"} ! intracellular anatomical structure
alt_id: GO:0005635
comment: Note that \! is not a comment here.

[Term]
id: GO:0043231
name: intracellular membrane-bounded organelle
subset: goslim_pir
subset: goslim_plant

[Term]
id: GO:0000001
name: obsolete mitochondrion inheritance
is_obsolete: true
replaced_by: GO:0048308
consider: GO:0048311

[Term]
id: GO:0000002
name: no namespace given

[Typedef]
id: part_of
name: part of
"""


def records(path: Path, fmt: str | None = None, **options: Any) -> tuple[list[EntityRecord], list[RelationshipRecord]]:
    entities: list[EntityRecord] = []
    relationships: list[RelationshipRecord] = []
    for _, record in read_records(path, fmt, **options):
        (entities if isinstance(record, EntityRecord) else relationships).append(record)  # type: ignore[arg-type]
    return entities, relationships


def test_obo_terms_become_entities_and_is_a_and_relationship_lines_relationships(tmp_path: Path) -> None:
    source = tmp_path / "go.obo"
    source.write_text(OBO, encoding="utf-8")
    entities, relationships = records(source)
    by_id = {e.id: e for e in entities}
    assert list(by_id) == ["GO:0005634", "GO:0043231", "GO:0000001", "GO:0000002"]  # no Typedef
    nucleus = by_id["GO:0005634"]
    assert nucleus.entity_type == "cellular_component"
    assert nucleus.name == "nucleus"
    assert nucleus.synonyms == ["cell nucleus", "horsetail nucleus"]
    assert nucleus.canonical_url == "http://purl.obolibrary.org/obo/GO_0005634"
    assert nucleus.properties == {
        "definition": 'A membrane-bounded organelle "of eukaryotic cells".',
        "definition_xrefs": ["GOC:go_curators", "PMID:123"],
        "xrefs": ["NIF_Subcellular:sao1702920020", "Wikipedia:Cell_nucleus"],
        "alt_id": "GO:0005635",
        "comment": "Note that ! is not a comment here.",
    }
    assert by_id["GO:0043231"].entity_type == "gene_ontology"  # the header's default-namespace
    assert by_id["GO:0043231"].properties == {"subset": ["goslim_pir", "goslim_plant"]}
    obsolete = by_id["GO:0000001"]
    assert obsolete.status == "merged" and obsolete.merged
    assert obsolete.properties == {"obsolete": True, "replaced_by": "GO:0048308", "consider": "GO:0048311"}
    assert [(r.subject, r.predicate, r.object) for r in relationships] == [
        ("GO:0005634", "is_a", "GO:0043231"),
        ("GO:0005634", "part_of", "GO:0005622"),
    ]


def test_obo_term_type_replaces_the_namespace(tmp_path: Path) -> None:
    source = tmp_path / "go.obo"
    source.write_text(OBO, encoding="utf-8")
    entities, _ = records(source, term_type="GO term")
    assert {e.entity_type for e in entities} == {"GO term"}


def test_obo_without_namespaces_gives_terms(tmp_path: Path) -> None:
    source = tmp_path / "tiny.obo"
    source.write_text("[Term]\nid: X:1\nname: one\n", encoding="utf-8")
    entities, _ = records(source)
    assert [(e.id, e.entity_type, e.name) for e in entities] == [("X:1", "Term", "one")]


def test_obo_bad_lines_are_all_reported_with_their_lines(tmp_path: Path) -> None:
    source = tmp_path / "bad.obo"
    source.write_text(
        "[Term]\nid: A:1\nname: fine\n\n[Term]\nname: no id\n\n[Term]\nid: A:2\nthis line has no tag\n"
        'synonym: "never closed EXACT []\n\n[Term]\nid: A:3\nname: caf\xe9\n',
        encoding="latin-1",
    )
    errors = RowErrors(10)
    entities, _ = records(source, errors=errors)
    assert [e.id for e in entities] == ["A:1", "A:3"]  # A:3's bad line is skipped, the term kept
    found = [(e.line, e.message.split(":")[0]) for e in errors.rows]
    assert found == [(5, "a [Term] without an id"), (10, "expected 'tag"),
                     (11, "a quoted text is never closed (a missing closing quote?)"), (15, "invalid UTF-8")]
    with pytest.raises(BadRow, match=r"bad\.obo:5: a \[Term\] without an id"):
        records(source)


@pytest.mark.parametrize(("raw", "value"), [
    ("GO:1 ! a comment", "GO:1"),
    ("GO:1 {source=\"x\"} ! a comment", "GO:1"),
    ('"a { not a modifier" EXACT []', '"a { not a modifier" EXACT []'),
    ('"quoted ! not a comment" EXACT [] ! but this is', '"quoted ! not a comment" EXACT []'),
    (r"escaped \! bang", r"escaped \! bang"),
    ("  plain  ", "plain"),
])
def test_obo_values_lose_comments_and_modifiers(raw: str, value: str) -> None:
    assert obo_value(raw) == value


def test_obo_quoted_text_unescapes() -> None:
    assert quoted_text(r'"a \"b\" \n c\W" EXACT [X:1]', "f", 1) == ('a "b" \n c ', "EXACT [X:1]")


OWL_XML = """<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xmlns:owl="http://www.w3.org/2002/07/owl#"
         xmlns:obo="http://purl.obolibrary.org/obo/"
         xmlns:oboInOwl="http://www.geneontology.org/formats/oboInOwl#">
  <owl:Ontology rdf:about="http://purl.obolibrary.org/obo/go.owl"/>
  <owl:ObjectProperty rdf:about="http://purl.obolibrary.org/obo/BFO_0000050">
    <oboInOwl:shorthand>part_of</oboInOwl:shorthand>
    <rdfs:label>part of</rdfs:label>
  </owl:ObjectProperty>
  <owl:ObjectProperty rdf:about="http://purl.obolibrary.org/obo/RO_0002211">
    <rdfs:label>regulates</rdfs:label>
  </owl:ObjectProperty>
  <owl:Class rdf:about="http://purl.obolibrary.org/obo/GO_0005634">
    <rdfs:label xml:lang="fr">noyau</rdfs:label>
    <rdfs:label>nucleus</rdfs:label>
    <rdfs:subClassOf rdf:resource="http://purl.obolibrary.org/obo/GO_0043231"/>
    <rdfs:subClassOf>
      <owl:Restriction>
        <owl:onProperty rdf:resource="http://purl.obolibrary.org/obo/BFO_0000050"/>
        <owl:someValuesFrom rdf:resource="http://purl.obolibrary.org/obo/GO_0005622"/>
      </owl:Restriction>
    </rdfs:subClassOf>
    <rdfs:subClassOf>
      <owl:Restriction>
        <owl:onProperty rdf:resource="http://purl.obolibrary.org/obo/RO_0002211"/>
        <owl:someValuesFrom rdf:resource="http://example.org/other#Thing"/>
      </owl:Restriction>
    </rdfs:subClassOf>
    <obo:IAO_0000115>A membrane-bounded organelle.</obo:IAO_0000115>
    <oboInOwl:hasExactSynonym>cell nucleus</oboInOwl:hasExactSynonym>
    <oboInOwl:hasDbXref>Wikipedia:Cell_nucleus</oboInOwl:hasDbXref>
    <oboInOwl:hasOBONamespace>cellular_component</oboInOwl:hasOBONamespace>
    <oboInOwl:id>GO:0005634</oboInOwl:id>
    <oboInOwl:inSubset rdf:resource="http://purl.obolibrary.org/obo/go#goslim_generic"/>
  </owl:Class>
  <owl:Axiom>
    <owl:annotatedSource rdf:resource="http://purl.obolibrary.org/obo/GO_0005634"/>
    <owl:annotatedProperty rdf:resource="http://purl.obolibrary.org/obo/IAO_0000115"/>
    <owl:annotatedTarget>A membrane-bounded organelle.</owl:annotatedTarget>
    <oboInOwl:hasDbXref>GOC:go_curators</oboInOwl:hasDbXref>
  </owl:Axiom>
  <owl:Class rdf:about="http://purl.obolibrary.org/obo/GO_0000001">
    <rdfs:label>obsolete mitochondrion inheritance</rdfs:label>
    <owl:deprecated rdf:datatype="http://www.w3.org/2001/XMLSchema#boolean">true</owl:deprecated>
    <obo:IAO_0100001 rdf:resource="http://purl.obolibrary.org/obo/GO_0048308"/>
  </owl:Class>
  <owl:Class rdf:about="http://example.org/other#Thing"/>
</rdf:RDF>
"""

OWL_TURTLE = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://example.org/pizza#> .

ex:Pizza a owl:Class ; skos:prefLabel "Pizza"@en ; rdfs:label "Pizza (label)" ; skos:altLabel "pie" .
ex:Margherita a owl:Class ; rdfs:subClassOf ex:Pizza , owl:Thing ; skos:definition "Tomato and mozzarella." .
ex:hasTopping a owl:ObjectProperty .
"""


def test_owl_classes_in_rdf_xml(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "go.owl"
    source.write_text(OWL_XML, encoding="utf-8")
    entities, relationships = records(source)
    by_id = {e.id: e for e in entities}
    assert sorted(by_id) == ["GO:0000001", "GO:0005634", "http://example.org/other#Thing"]  # no properties
    nucleus = by_id["GO:0005634"]
    assert (nucleus.entity_type, nucleus.name, nucleus.synonyms) == ("cellular_component", "nucleus",
                                                                     ["noyau", "cell nucleus"])
    assert nucleus.canonical_url == "http://purl.obolibrary.org/obo/GO_0005634"
    assert nucleus.properties == {"definition": "A membrane-bounded organelle.",
                                  "definition_xrefs": ["GOC:go_curators"],
                                  "xrefs": ["Wikipedia:Cell_nucleus"], "subset": "goslim_generic"}
    obsolete = by_id["GO:0000001"]
    assert obsolete.status == "merged" and obsolete.entity_type == "Term"
    assert obsolete.properties == {"obsolete": True, "replaced_by": "GO:0048308"}
    assert by_id["http://example.org/other#Thing"].name == "Thing"
    assert sorted((r.subject, r.predicate, r.object) for r in relationships) == [
        ("GO:0005634", "part_of", "GO:0005622"),  # the property's OBO shorthand
        ("GO:0005634", "regulates", "http://example.org/other#Thing"),  # else its label
        ("GO:0005634", "subClassOf", "GO:0043231"),
    ]


def test_owl_in_turtle_and_the_term_type(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "pizza.owl.ttl"
    source.write_text(OWL_TURTLE, encoding="utf-8")
    entities, relationships = records(source, term_type="Dish")
    assert [(e.id, e.entity_type, e.name, e.synonyms) for e in entities] == [
        ("http://example.org/pizza#Margherita", "Dish", "Margherita", []),
        ("http://example.org/pizza#Pizza", "Dish", "Pizza", ["Pizza (label)", "pie"]),
    ]
    assert entities[0].properties == {"definition": "Tomato and mozzarella."}
    assert [(r.subject, r.predicate, r.object) for r in relationships] == [
        ("http://example.org/pizza#Margherita", "subClassOf", "http://example.org/pizza#Pizza"),  # not owl:Thing
    ]


@pytest.mark.parametrize(("text", "says"), [
    ('<?xml version="1.0"?>\n<Ontology xmlns="http://www.w3.org/2002/07/owl#"/>\n', "OWL/XML"),
    ("Prefix(:=<http://x/>)\nOntology(<http://x/o>)\n", "OWL functional syntax"),
    ("Prefix: : <http://x/>\nOntology: <http://x/o>\n", "Manchester syntax"),
])
def test_owl_syntaxes_that_are_not_rdf_are_refused_with_a_way_out(tmp_path: Path, text: str, says: str) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "o.owl"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(LoadError, match=says) as caught:
        records(source)
    assert "robot convert" in str(caught.value)


def test_owl_syntax_errors_name_their_line(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "broken.owl"
    source.write_text(OWL_XML.replace("<rdfs:label>nucleus</rdfs:label>", "<rdfs:label>nucleus</rdfs:lab>"))
    with pytest.raises(BadRow, match=r"broken\.owl:17: cannot parse RDF/XML: mismatched tag$"):
        records(source)
