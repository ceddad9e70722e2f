"""Reading OWL ontologies (RDF/XML or Turtle) through rdflib: each named class an entity, its named
superclasses and existential restrictions relationships.

Mapping (docs/bundle-format.md#owl), alike to OBO's (:mod:`bfsql.loading.obo`) for ontologies translated
from OBO:

* an ``owl:Class`` (or ``rdfs:Class``) IRI → an entity: id ``PREFIX:LOCAL`` for an OBO PURL
  (:mod:`bfsql.loading.terms`), else the IRI compacted by the load's prefixes;
* ``skos:prefLabel``/``rdfs:label`` → name (English or untagged first), further labels, ``skos:altLabel`` and
  ``oboInOwl:has{Exact,Related,Broad,Narrow}Synonym`` → synonyms;
* ``oboInOwl:hasOBONamespace`` → type (unless ``term_type``; else ``Term``);
* ``IAO:0000115`` and ``skos:definition`` → ``properties.definition`` (the references its axiom annotates:
  ``definition_xrefs``); ``oboInOwl:hasDbXref`` → ``properties.xrefs``;
* ``owl:deprecated true`` → hidden; ``IAO:0100001`` → ``replaced_by``;
* ``rdfs:subClassOf C`` (C named) → relationship ``subClassOf``; ``rdfs:subClassOf [owl:onProperty P;
  owl:someValuesFrom C]`` → relationship named by P's ``oboInOwl:shorthand``, else its label, else its id;
* every other annotation → a property named by its predicate's local name (a list when repeated).

Properties, individuals and other class expressions are not entities. rdflib parses the whole file in
memory first (OWL files state a class's axioms in any order).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bfsql.loading.bundle import Record, parse_record
from bfsql.loading.errors import BadRow, LoadError, RowErrors, report
from bfsql.loading.formats import xml_root
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.lines import ByteCallback
from bfsql.loading.prefixes import PrefixMap
from bfsql.loading.readers import literal_value, local_name, parse_rdf_graph, require_rdflib
from bfsql.loading.terms import DEFAULT_TERM_TYPE, OBO_PURL, curie_of_purl, term_row

__all__ = ["owl_syntax", "read_owl"]

_OBO_IN_OWL = "http://www.geneontology.org/formats/oboInOwl#"
_SKOS = "http://www.w3.org/2004/02/skos/core#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL = "http://www.w3.org/2002/07/owl#"
_DEFINITION = OBO_PURL + "IAO_0000115"
_SYNONYMS = frozenset(
    [f"{_OBO_IN_OWL}has{scope}Synonym" for scope in ("Exact", "Related", "Broad", "Narrow")] + [_SKOS + "altLabel"]
)
_LABELS = (_SKOS + "prefLabel", _RDFS + "label")
_PROPERTY_NAMES = {
    _DEFINITION: "definition",
    _SKOS + "definition": "definition",
    _OBO_IN_OWL + "hasDbXref": "xrefs",
    _OBO_IN_OWL + "hasAlternativeId": "alt_id",
    _OBO_IN_OWL + "inSubset": "subset",
    _OBO_IN_OWL + "consider": "consider",
    OBO_PURL + "IAO_0100001": "replaced_by",
    _OWL + "deprecated": "obsolete",
}
"""Annotations named as the OBO reader names them."""
_SKIPPED = frozenset({_OBO_IN_OWL + "id", _OBO_IN_OWL + "hasOBONamespace", *_LABELS, *_SYNONYMS})


def owl_syntax(path: str | Path) -> str:
    """The rdflib parser of an OWL file (``xml`` or ``turtle``) by its start; :class:`LoadError` for an OWL
    syntax that is not RDF (OWL/XML, functional, Manchester)."""
    root = xml_root(path)
    if root == "RDF":
        return "xml"
    if root is not None:
        kind = "OWL/XML" if root == "Ontology" else f"XML whose root is <{root}>, not rdf:RDF"
    else:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        if not re.match(r"(Prefix|Ontology)\s*[(:]", head):
            return "turtle"
        kind = "OWL functional syntax" if re.match(r"(Prefix|Ontology)\s*\(", head) else "Manchester syntax"
    raise LoadError(
        f"{path} is {kind}, which bfsql load does not read as OWL: convert it to RDF/XML or Turtle first "
        "(e.g. with ROBOT: robot convert --input FILE --output FILE.owl --format owl)"
    )


class _Ontology:
    """Views of one parsed OWL graph: ids, names of object properties, definitions' references."""

    def __init__(self, graph: Any, prefixes: PrefixMap | None) -> None:
        from rdflib import URIRef

        self.graph = graph
        self.uri = URIRef
        """rdflib's IRI class (named nodes), imported with rdflib."""
        self._prefixes = prefixes
        self.definition_refs = self._axiom_references(_DEFINITION)

    def ident(self, iri: Any) -> str:
        """The id of an IRI: ``PREFIX:LOCAL`` for an OBO PURL, else compacted by the prefixes."""
        text = str(iri)
        curie = curie_of_purl(text)
        if curie is not None:
            return curie
        return self._prefixes.compact(text) if self._prefixes is not None else text

    def classes(self) -> list[Any]:
        """The named classes, by IRI."""
        from rdflib.namespace import OWL, RDF, RDFS

        found = set(self.graph.subjects(RDF.type, OWL.Class)) | set(self.graph.subjects(RDF.type, RDFS.Class))
        return sorted((c for c in found if isinstance(c, self.uri) and c != OWL.Thing), key=str)

    def predicate_name(self, prop: Any) -> str:
        """A property's name in a relationship: its OBO shorthand, else its label (``_`` for spaces), else its id."""
        for predicate in (_OBO_IN_OWL + "shorthand", _RDFS + "label"):
            value = self.graph.value(prop, self.uri(predicate))
            if value is not None and str(value).strip():
                return "_".join(str(value).split())
        return self.ident(prop)

    def _axiom_references(self, annotated: str) -> dict[Any, list[str]]:
        """The ``oboInOwl:hasDbXref`` of the axioms annotating ``annotated`` assertions, by class."""
        from rdflib.namespace import OWL

        refs: dict[Any, list[str]] = {}
        xref = self.uri(_OBO_IN_OWL + "hasDbXref")
        for axiom in self.graph.subjects(OWL.annotatedProperty, self.uri(annotated)):
            source = self.graph.value(axiom, OWL.annotatedSource)
            refs.setdefault(source, []).extend(str(ref) for ref in self.graph.objects(axiom, xref))
        return refs


def _annotation(ontology: _Ontology, predicate: str, obj: Any) -> tuple[str, Any]:
    """The property name and value of one annotation of a class."""
    name = _PROPERTY_NAMES.get(predicate) or local_name(predicate)
    if isinstance(obj, ontology.uri):
        return name, local_name(str(obj)) if name == "subset" else ontology.ident(obj)
    return name, literal_value(obj)


def _class_annotations(ontology: _Ontology, cls: Any) -> tuple[list[str], list[str], dict[str, list[Any]]]:
    """A class's labels (best first), synonyms and other annotations by property name."""
    labels: list[tuple[int, bool, str]] = []
    synonyms: list[str] = []
    properties: dict[str, list[Any]] = {}
    for predicate, obj in sorted(ontology.graph.predicate_objects(cls), key=lambda po: (str(po[0]), str(po[1]))):
        iri = str(predicate)
        if iri in _LABELS and not isinstance(obj, ontology.uri):
            labels.append((_LABELS.index(iri), getattr(obj, "language", None) not in (None, "", "en"), str(obj)))
        elif iri in _SYNONYMS:
            synonyms.append(str(obj))
        elif iri not in _SKIPPED and not _is_structural(iri, obj):
            name, value = _annotation(ontology, iri, obj)
            properties.setdefault(name, []).append(value)
    return [text for *_, text in sorted(labels)], synonyms, properties


def _class_entity(ontology: _Ontology, cls: Any, term_type: str | None) -> dict[str, Any]:
    """The entity row of a named class."""
    labels, synonyms, properties = _class_annotations(ontology, cls)
    kept: dict[str, Any] = {k: v if k == "xrefs" or len(v) > 1 else v[0] for k, v in properties.items()}
    if kept.get("obsolete") is not True:
        kept.pop("obsolete", None)
    if ontology.definition_refs.get(cls):
        kept["definition_xrefs"] = ontology.definition_refs[cls]
    namespace = ontology.graph.value(cls, ontology.uri(_OBO_IN_OWL + "hasOBONamespace"))
    term_id = ontology.ident(cls)
    return term_row(term_id, term_type or (str(namespace) if namespace else DEFAULT_TERM_TYPE),
                    labels[0] if labels else local_name(str(cls)), labels[1:] + synonyms, kept,
                    str(cls) if term_id != str(cls) else None)


def _is_structural(predicate: str, obj: Any) -> bool:
    """Whether a triple is part of the class's logic (type, superclasses, blank-node expressions), not an
    annotation."""
    from rdflib import BNode
    from rdflib.namespace import RDF, RDFS

    return predicate in (str(RDF.type), str(RDFS.subClassOf)) or isinstance(obj, BNode)


def _class_relationships(ontology: _Ontology, cls: Any) -> Iterator[dict[str, Any]]:
    """The relationship rows of a class: named superclasses, then existential restrictions."""
    from rdflib import BNode
    from rdflib.namespace import OWL, RDFS

    subject = ontology.ident(cls)
    for parent in sorted(ontology.graph.objects(cls, RDFS.subClassOf), key=str):
        if isinstance(parent, ontology.uri) and parent != OWL.Thing:
            yield {"kind": "relationship", "subject": subject, "predicate": "subClassOf",
                   "object": ontology.ident(parent)}
        elif isinstance(parent, BNode):
            prop = ontology.graph.value(parent, OWL.onProperty)
            target = ontology.graph.value(parent, OWL.someValuesFrom)
            if isinstance(prop, ontology.uri) and isinstance(target, ontology.uri):
                yield {"kind": "relationship", "subject": subject, "predicate": ontology.predicate_name(prop),
                       "object": ontology.ident(target)}


def read_owl(
    path: str | Path,
    *,
    limits: LoadLimits = DEFAULT_LIMITS,
    errors: RowErrors | None = None,
    prefixes: PrefixMap | None = None,
    on_bytes: ByteCallback | None = None,
    term_type: str | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield each named class of an OWL file as an entity, then its relationships (line 0: rdflib tells none).

    ``prefixes`` compacts the ids of IRIs that are not OBO PURLs; ``term_type`` is the type of every
    class (by default its OBO namespace). A bad class raises :class:`BadRow` naming it, or with ``errors``
    is collected there and skipped; a syntax error raises it at its line.
    """
    require_rdflib("owl")
    source = str(path)
    if not Path(path).is_file():
        raise LoadError(f"no such file: {source}")
    ontology = _Ontology(parse_rdf_graph(source, owl_syntax(path), limits, on_bytes), prefixes)
    for cls in ontology.classes():
        rows = [_class_entity(ontology, cls, term_type), *_class_relationships(ontology, cls)]
        for row in rows:
            try:
                yield 0, parse_record(row, source, 0, limits)
            except BadRow as exc:
                report(errors, BadRow(source, 0, f"<{str(cls)[:200]}>: {exc.message}"))
