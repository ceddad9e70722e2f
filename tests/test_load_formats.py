"""Loading real ontology and property-graph files that public packages ship (bfsql_testsupport.shipped_files).

Every expected count and value was checked by hand against the file (grep, or rdflib for the OWL
counts), not taken from the loader.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bfsql.loading.sqlite_loader import load_sqlite
from bfsql_testsupport.shipped_files import hp_obo, igraph_graphml, kgx_resources

_SCRIPT = Path(sys.executable).with_name("bfsql")
BFSQL = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "bfsql"]


def entity(db: Path, entity_id: str) -> dict[str, Any]:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT entity_type, name, synonyms, properties, status, canonical_url FROM entity WHERE entity_id = ?",
            (entity_id,),
        ).fetchone()
    conn.close()
    return {"type": row[0], "name": row[1], "synonyms": json.loads(row[2]), "properties": json.loads(row[3]),
            "status": row[4], "canonical_url": row[5]}


def edges_from(db: Path, subject: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT predicate, object_id FROM relationship WHERE subject_id = ? ORDER BY 1, 2",
                            (subject,)).fetchall()
    conn.close()
    return [tuple(row) for row in rows]


def counts(db: Path, sql: str) -> Counter[str]:
    with sqlite3.connect(db) as conn:
        found = Counter(dict(conn.execute(sql).fetchall()))
    conn.close()
    return found


def test_the_hpo_obo_loads_with_the_command(tmp_path: Path) -> None:
    db = tmp_path / "hp.sqlite"
    done = subprocess.run([*BFSQL, "load", "--db", str(db), "--embedder", "none", "--term-type", "Phenotype",
                           str(hp_obo())], capture_output=True, text=True, timeout=600, env=os.environ)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["entities"], report["relationships"]) == (19484, 23392)  # [Term] and is_a lines
    assert counts(db, "SELECT status, count(*) FROM entity GROUP BY status") == {None: 19034, "merged": 450}
    assert counts(db, "SELECT entity_type, count(*) FROM entity GROUP BY 1") == {"Phenotype": 19484}
    seizure = entity(db, "HP:0001250")
    assert seizure["name"] == "Seizure"
    assert seizure["synonyms"] == ["Epilepsy", "Epileptic seizure", "Seizures"]
    assert seizure["properties"]["definition"].startswith("A seizure is an intermittent abnormality")
    assert seizure["properties"]["definition_xrefs"] == ["https://orcid.org/0000-0002-0736-9199", "PMID:15816939"]
    assert len(seizure["properties"]["alt_id"]) == 19 and len(seizure["properties"]["xrefs"]) == 7
    assert seizure["canonical_url"] == "http://purl.obolibrary.org/obo/HP_0001250"
    assert edges_from(db, "HP:0001250") == [("is_a", "HP:0012638")]
    with sqlite3.connect(db) as conn:
        (children,) = conn.execute("SELECT count(*) FROM relationship WHERE object_id = 'HP:0001250'").fetchone()
    conn.close()
    assert children == 12
    obsolete = entity(db, "HP:0000057")
    assert obsolete["status"] == "merged"
    assert obsolete["properties"] == {"obsolete": True, "replaced_by": "HP:0008665"}


def test_go_slim_in_owl_rdf_xml(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    db = tmp_path / "go.sqlite"
    report = load_sqlite(db, [kgx_resources() / "goslim_generic.owl"], embedder=None)
    # 147 named classes; 146 named superclasses and 56 existential restrictions under rdfs:subClassOf
    # (4 more restrictions sit in owl:equivalentClass and are not relationships).
    assert (report.entities, report.relationships) == (147, 202)
    assert counts(db, "SELECT predicate, count(*) FROM relationship GROUP BY 1") == {
        "subClassOf": 146, "part_of": 47, "has_part": 4, "occurs_in": 4, "regulates": 1}
    envelope = entity(db, "GO:0005635")
    assert (envelope["type"], envelope["name"]) == ("cellular_component", "nuclear envelope")
    assert envelope["properties"]["alt_id"] == "GO:0005636"
    assert envelope["properties"]["xrefs"] == ["Wikipedia:Nuclear_envelope"]
    assert envelope["properties"]["definition_xrefs"] == ["ISBN:0198547684"]
    assert edges_from(db, "GO:0005635") == [("part_of", "GO:0005634"), ("subClassOf", "GO:0005575")]


def test_an_obo_ontology_in_owl_turtle(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    db = tmp_path / "mody.sqlite"
    report = load_sqlite(db, [kgx_resources() / "mody.ttl"], fmt="owl", embedder=None)
    # 234 named classes, 33 of them owl:deprecated; 177 named superclasses and 108 restrictions.
    assert (report.entities, report.relationships) == (234, 285)
    assert counts(db, "SELECT status, count(*) FROM entity GROUP BY status") == {None: 201, "merged": 33}


def test_kgx_tsv_directory_and_json_lines(tmp_path: Path) -> None:
    resources = kgx_resources()
    graph = tmp_path / "graph"
    graph.mkdir()
    for name in ("graph_nodes.tsv", "graph_edges.tsv"):
        (graph / name).write_bytes((resources / name).read_bytes())
    db = tmp_path / "kgx.sqlite"
    report = load_sqlite(db, [graph], fmt="kgx", embedder=None)
    # 534 node rows of 512 ids (a repeated id: the later row wins), 539 edge rows of 531 triples.
    assert (report.files, report.entities, report.relationships) == (2, 534, 539)
    assert counts(db, "SELECT entity_type, count(*) FROM entity GROUP BY 1") == {
        "Gene": 178, "BiologicalProcess": 143, "PhenotypicFeature": 112, "Pathway": 22, "Disease": 21,
        "AnatomicalEntity": 20, "CellularComponent": 8, "MolecularActivity": 8}
    assert sum(counts(db, "SELECT predicate, count(*) FROM relationship GROUP BY 1").values()) == 531
    shh = entity(db, "HGNC:10848")
    assert (shh["type"], shh["name"], shh["properties"]["taxon"]) == ("Gene", "SHH (human)", "NCBITaxon:9606")
    assert ("interacts_with", "NCBIGene:6469") in edges_from(db, "HGNC:10848")
    lines = tmp_path / "lines.sqlite"
    report = load_sqlite(lines, [resources / "valid_nodes.jsonl", resources / "valid_edges.jsonl"], fmt="kgx",
                         embedder=None)
    assert (report.entities, report.relationships) == (7, 5)
    chemical = entity(lines, "PUBCHEM.COMPOUND:10429502")
    assert (chemical["type"], chemical["name"]) == ("ChemicalEntity", "16|A-Methyl Prednisolone")


def test_igraphs_graphml_example(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    report = load_sqlite(db, [igraph_graphml()], embedder=None)
    assert (report.entities, report.relationships) == (6, 7)
    assert entity(db, "n0")["properties"] == {"color": "green", "unused": "incorrect", "gender": True}
    assert entity(db, "n1")["properties"] == {"color": "yellow", "gender": True}  # the keys' defaults
    assert entity(db, "n3")["properties"] == {"color": 'red "with entities"', "gender": True}
    assert entity(db, "n5")["properties"] == {"color": "turquoise", "gender": False}  # "fAlSe"
    with sqlite3.connect(db) as conn:
        weights = dict(conn.execute("SELECT json_extract(properties, '$.id'), json_extract(properties, '$.weight') "
                                    "FROM relationship"))
    conn.close()
    assert weights == {"e0": 1.0, "e1": 1.0, "e2": 2.0, "e3": None, "e4": None, "e5": None, "e6": 1.1}
    assert edges_from(db, "n3") == [("related_to", "n2"), ("related_to", "n5")]  # undirected: stored as written
