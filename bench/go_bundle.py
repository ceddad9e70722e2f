"""The Gene Ontology as a bfsql bundle, read from the SQLite file of Debian's ``r-bioc-go.db``.

``apt-get install r-bioc-go.db`` installs Bioconductor's GO.db, whose data is one SQLite file
(``dpkg -L r-bioc-go.db | grep GO.sqlite``: GO release 2022-07-01, 43,559 terms). This module
reads it directly (no R, no network):

* ``go_term`` → one entity per term: id ``GO:…``, type by sub-ontology (``BiologicalProcess``,
  ``MolecularFunction``, ``CellularComponent``), the term as name, its definition;
* ``go_synonym`` → the term's synonyms (GO.db keeps no scope, so exact, related, narrow and broad
  synonyms come together); rows that are secondary GO ids (``like_go_id = 1``) are left out;
* ``go_bp_parents``, ``go_mf_parents``, ``go_cc_parents`` → one relationship per child and parent:
  ``isa``, ``part_of``, ``regulates``, ``positively_regulates``, ``negatively_regulates``
  (85,716 in all).

Run ``python bench/go_bundle.py OUT.jsonl`` to write the bundle (then ``bfsql load --db go.sqlite
OUT.jsonl``); ``bench_search.py`` imports :func:`go_rows` and :func:`go_synonyms`.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GO_SQLITE = Path("/usr/lib/R/site-library/GO.db/extdata/GO.sqlite")
"""Where Debian's r-bioc-go.db puts the GO.db SQLite file."""
GO_TYPES = {"BP": "BiologicalProcess", "MF": "MolecularFunction", "CC": "CellularComponent"}
"""Entity type of a term, by its sub-ontology."""
GO_PARENT_TABLES = ("go_bp_parents", "go_mf_parents", "go_cc_parents")


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: apt-get install r-bioc-go.db (Debian's GO.db)")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def go_synonyms(path: Path = GO_SQLITE) -> dict[str, list[str]]:
    """Each term's synonyms (GO id → synonyms, in the file's order), secondary ids and the
    term's own name left out."""
    with _connect(path) as db:
        rows = db.execute(
            "SELECT t.go_id, t.term, s.synonym FROM go_synonym s JOIN go_term t USING (_id) "
            "WHERE s.like_go_id = 0 ORDER BY s.rowid"
        ).fetchall()
    found: dict[str, list[str]] = {}
    for go_id, term, synonym in rows:
        if synonym and synonym.casefold() != term.casefold() and not synonym.startswith("GO:"):
            found.setdefault(go_id, [])
            if synonym not in found[go_id]:
                found[go_id].append(synonym)
    return found


def go_rows(path: Path = GO_SQLITE, leave_out: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """The GO as bundle rows: entities, then relationships (child → parent). ``leave_out`` maps a
    GO id to one synonym to drop from its entity (a held-out query for a paraphrase benchmark)."""
    synonyms = go_synonyms(path)
    leave_out = leave_out or {}
    with _connect(path) as db:
        terms = db.execute("SELECT _id, go_id, term, ontology, definition FROM go_term ORDER BY _id").fetchall()
        ids = {}
        for key, go_id, term, ontology, definition in terms:
            ids[key] = go_id
            if ontology not in GO_TYPES:
                continue  # the root "all"
            row: dict[str, Any] = {
                "kind": "entity", "id": go_id, "entity_type": GO_TYPES[ontology], "name": term,
                "synonyms": [s for s in synonyms.get(go_id, []) if s != leave_out.get(go_id)],
                "source": "GO",
                "canonical_url": f"https://amigo.geneontology.org/amigo/term/{go_id}",
            }
            if definition:
                row["properties"] = {"definition": definition}
            yield row
        for table in GO_PARENT_TABLES:
            for child, parent, relation in db.execute(f"SELECT _id, _parent_id, relationship_type FROM {table}"):
                if child in ids and parent in ids and ids[parent] != "all":
                    yield {"kind": "relationship", "subject": ids[child], "predicate": relation.replace(" ", "_"),
                           "object": ids[parent]}


def write_go_bundle(out: Path, path: Path = GO_SQLITE, leave_out: dict[str, str] | None = None) -> Path:
    """Write :func:`go_rows` as a JSONL bundle to ``out``."""
    with open(out, "w", encoding="utf-8") as handle:
        for row in go_rows(path, leave_out):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python bench/go_bundle.py OUT.jsonl")
    print(write_go_bundle(Path(sys.argv[1])))
