"""The standard graph every backend is tested on, and its expected answers.

The graph ships as ``standard_graph.jsonl`` (a JSONL bundle) next to this module.
Eleven entities of four types (Disease, Drug, Gene, Paper) and fifteen relationships::

    DRUG:aspirin   ──TREATS──────────► DISEASE:胃癌
    DRUG:nutlin-3  ──INHIBITS────────► GENE:MDM2
    DRUG:nutlin-3  ──REGULATES───────► GENE:TP53
    GENE:MDM2      ──INHIBITS────────► GENE:TP53      ┐ a 2-cycle
    GENE:TP53      ──REGULATES───────► GENE:MDM2      ┘
    GENE:MDM2      ──REGULATES───────► GENE:MDM2        self-loop
    GENE:MDM2      ──INTERACTS_WITH──► GENE:MISSING     dangling: no such entity
    GENE:TP53      ──ASSOCIATED_WITH─► DISEASE:LFS
    GENE:TP53      ──ASSOCIATED_WITH─► DISEASE:胃癌    ┐
    GENE:TP53      ──INTERACTS_WITH──► GENE:β-catenin  │ a triangle
    GENE:β-catenin ──ASSOCIATED_WITH─► DISEASE:胃癌    ┘
    PAPER:PMC001   ──MENTIONS────────► GENE:MDM2
    PAPER:PMC001   ──MENTIONS────────► GENE:TP53
    PAPER:PMC002   ──MENTIONS────────► GENE:TP53
    GENE:TP53-OLD  ──INTERACTS_WITH──► GENE:MDM2        TP53-OLD has status "merged": invisible
    GENE:ORPHAN                                         isolated: no edges

``GENE:TP53`` is the hub: 8 edges, where every other node has at most 6. Mentions
(``total_mentions``): TP53 40, MDM2 12, 胃癌 8, LFS 5, β-catenin 3, aspirin 2,
nutlin-3 1; papers and ORPHAN have none. Every expected answer below was worked out
by hand from this table and is written as literal data; nothing here is computed by
the engine or a backend.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, Literal

from bfsql.loading.bundle import Record, read_bundle

__all__ = [
    "ALL_EDGES",
    "ALL_IDS",
    "ASPIRIN",
    "ASPIRIN_GASTRIC",
    "BUNDLE_NAME",
    "CTNNB1",
    "CTNNB1_GASTRIC",
    "DESCRIBE_ENTITIES_IDS",
    "EMPTY_SEARCHES",
    "ERROR_CALLS",
    "EXPECTED_DESCRIBE_ENTITIES",
    "EXPECTED_EDGES_FROM",
    "EXPECTED_EDGES_TO",
    "EXPECTED_EDGE_METADATA",
    "EXPECTED_ENTITY_TYPES",
    "EXPECTED_ENTITY_TYPE_COUNTS",
    "EXPECTED_HUBS",
    "EXPECTED_NODE_METADATA",
    "EXPECTED_PREDICATES",
    "EXPECTED_PREDICATE_COUNTS",
    "EXPECTED_PROVENANCE",
    "GASTRIC",
    "INVISIBLE_IDS",
    "LFS",
    "MDM2",
    "MDM2_DANGLING",
    "MDM2_INHIBITS_TP53",
    "MDM2_SELF_LOOP",
    "MERGED",
    "MERGED_MDM2",
    "MISSING",
    "NODE_TYPES",
    "NUTLIN",
    "NUTLIN_MDM2",
    "NUTLIN_TP53",
    "ORPHAN",
    "PMC001",
    "PMC001_MDM2",
    "PMC001_TP53",
    "PMC002",
    "PMC002_TP53",
    "RANKED_SEARCHES",
    "STANDARD_IDS",
    "TP53",
    "TP53_CTNNB1",
    "TP53_GASTRIC",
    "TP53_LFS",
    "TP53_REGULATES_MDM2",
    "TRAVERSALS",
    "UNKNOWN",
    "UNKNOWN_EDGE",
    "SearchCase",
    "TraversalCase",
    "Triple",
    "standard_records",
    "write_standard_bundle",
]

BUNDLE_NAME = "standard_graph.jsonl"
"""File name of the shipped bundle."""

Triple = tuple[str, str, str]
"""An edge as ``(subject, predicate, object)``."""

# --- ids -------------------------------------------------------------------

TP53 = "GENE:TP53"
"""The hub."""
MDM2 = "GENE:MDM2"
"""Has a self-loop and a dangling edge; the merged entity points at it."""
CTNNB1 = "GENE:β-catenin"
"""A non-ASCII id."""
ORPHAN = "GENE:ORPHAN"
"""Isolated: no edges."""
LFS = "DISEASE:LFS"
GASTRIC = "DISEASE:胃癌"
"""A CJK id and name."""
NUTLIN = "DRUG:nutlin-3"
ASPIRIN = "DRUG:aspirin"
PMC001 = "PAPER:PMC001"
PMC002 = "PAPER:PMC002"
MERGED = "GENE:TP53-OLD"
"""Status "merged": invisible everywhere."""
MISSING = "GENE:MISSING"
"""The object of a dangling edge; not an entity."""
UNKNOWN = "NOPE:unknown"
"""An id the graph has never heard of."""

STANDARD_IDS: tuple[str, ...] = (LFS, GASTRIC, ASPIRIN, NUTLIN, MDM2, ORPHAN, TP53, CTNNB1, PMC001, PMC002)
"""Every visible entity, sorted."""

INVISIBLE_IDS: tuple[str, ...] = (MERGED, MISSING, UNKNOWN)
"""Ids that get_node, metadata_for_node, edges_from and edges_to must refuse with KeyError."""

ALL_IDS: tuple[str, ...] = (*STANDARD_IDS, MERGED, MISSING, UNKNOWN)
"""Every id a test may send to a backend (what an id map must cover)."""

NODE_TYPES: dict[str, str] = {
    LFS: "Disease",
    GASTRIC: "Disease",
    ASPIRIN: "Drug",
    NUTLIN: "Drug",
    MDM2: "Gene",
    ORPHAN: "Gene",
    TP53: "Gene",
    CTNNB1: "Gene",
    PMC001: "Paper",
    PMC002: "Paper",
}
"""Entity type of every visible entity."""

EXPECTED_ENTITY_TYPES: tuple[str, ...] = ("Disease", "Drug", "Gene", "Paper")
EXPECTED_PREDICATES: tuple[str, ...] = (
    "ASSOCIATED_WITH",
    "INHIBITS",
    "INTERACTS_WITH",
    "MENTIONS",
    "REGULATES",
    "TREATS",
)

EXPECTED_ENTITY_TYPE_COUNTS: dict[str, int] = {"Disease": 2, "Drug": 2, "Gene": 4, "Paper": 2}
"""Visible entities by type (the merged TP53-OLD is not one): the ``statistics`` primitive's answer."""

# --- edges -----------------------------------------------------------------

TP53_REGULATES_MDM2: Triple = (TP53, "REGULATES", MDM2)
MDM2_INHIBITS_TP53: Triple = (MDM2, "INHIBITS", TP53)
TP53_LFS: Triple = (TP53, "ASSOCIATED_WITH", LFS)
TP53_GASTRIC: Triple = (TP53, "ASSOCIATED_WITH", GASTRIC)
TP53_CTNNB1: Triple = (TP53, "INTERACTS_WITH", CTNNB1)
PMC001_TP53: Triple = (PMC001, "MENTIONS", TP53)
PMC002_TP53: Triple = (PMC002, "MENTIONS", TP53)
NUTLIN_TP53: Triple = (NUTLIN, "REGULATES", TP53)
NUTLIN_MDM2: Triple = (NUTLIN, "INHIBITS", MDM2)
ASPIRIN_GASTRIC: Triple = (ASPIRIN, "TREATS", GASTRIC)
CTNNB1_GASTRIC: Triple = (CTNNB1, "ASSOCIATED_WITH", GASTRIC)
PMC001_MDM2: Triple = (PMC001, "MENTIONS", MDM2)
MDM2_SELF_LOOP: Triple = (MDM2, "REGULATES", MDM2)
MDM2_DANGLING: Triple = (MDM2, "INTERACTS_WITH", MISSING)
MERGED_MDM2: Triple = (MERGED, "INTERACTS_WITH", MDM2)
"""Touches the merged entity: never returned."""

ALL_EDGES: tuple[Triple, ...] = (
    ASPIRIN_GASTRIC,
    NUTLIN_MDM2,
    NUTLIN_TP53,
    MDM2_INHIBITS_TP53,
    MDM2_DANGLING,
    MDM2_SELF_LOOP,
    TP53_LFS,
    TP53_GASTRIC,
    TP53_CTNNB1,
    TP53_REGULATES_MDM2,
    CTNNB1_GASTRIC,
    PMC001_MDM2,
    PMC001_TP53,
    PMC002_TP53,
)
"""Every edge a backend returns (the dangling one included), sorted."""

EXPECTED_PREDICATE_COUNTS: dict[str, int] = {
    "ASSOCIATED_WITH": 3, "INHIBITS": 2, "INTERACTS_WITH": 2, "MENTIONS": 3, "REGULATES": 3, "TREATS": 1,
}
"""Edges of ALL_EDGES by predicate (the dangling one counts, the merged one's not)."""

EXPECTED_HUBS: tuple[tuple[str, int], ...] = (
    (TP53, 8), (MDM2, 6), (GASTRIC, 3), (NUTLIN, 2), (CTNNB1, 2), (PMC001, 2), (LFS, 1), (ASPIRIN, 1), (PMC002, 1),
)
"""Every entity with an edge and its degree (its edges both ways, the self-loop once, the dangling edge
counted), most first, ties by id: the ``statistics`` primitive's hubs. ORPHAN has none."""

UNKNOWN_EDGE: Triple = (TP53, "TREATS", LFS)
"""Not in the graph: metadata_for_edge answers ``{}``."""

EXPECTED_EDGES_FROM: dict[str, tuple[Triple, ...]] = {
    LFS: (),
    GASTRIC: (),
    ASPIRIN: (ASPIRIN_GASTRIC,),
    NUTLIN: (NUTLIN_MDM2, NUTLIN_TP53),
    MDM2: (MDM2_INHIBITS_TP53, MDM2_DANGLING, MDM2_SELF_LOOP),
    ORPHAN: (),
    TP53: (TP53_LFS, TP53_GASTRIC, TP53_CTNNB1, TP53_REGULATES_MDM2),
    CTNNB1: (CTNNB1_GASTRIC,),
    PMC001: (PMC001_MDM2, PMC001_TP53),
    PMC002: (PMC002_TP53,),
}
"""Complete outgoing edges of every visible entity, sorted."""

EXPECTED_EDGES_TO: dict[str, tuple[Triple, ...]] = {
    LFS: (TP53_LFS,),
    GASTRIC: (ASPIRIN_GASTRIC, TP53_GASTRIC, CTNNB1_GASTRIC),
    ASPIRIN: (),
    NUTLIN: (),
    MDM2: (NUTLIN_MDM2, MDM2_SELF_LOOP, TP53_REGULATES_MDM2, PMC001_MDM2),
    ORPHAN: (),
    TP53: (NUTLIN_TP53, MDM2_INHIBITS_TP53, PMC001_TP53, PMC002_TP53),
    CTNNB1: (TP53_CTNNB1,),
    PMC001: (),
    PMC002: (),
}
"""Complete incoming edges of every visible entity, sorted (no edge of the merged entity)."""

# --- metadata --------------------------------------------------------------

EXPECTED_NODE_METADATA: dict[str, dict[str, Any]] = {
    LFS: {"name": "Li-Fraumeni syndrome", "synonyms": ["LFS", "SBLA syndrome"], "total_mentions": 5},
    GASTRIC: {
        "name": "胃癌",
        "synonyms": ["gastric cancer", "stomach cancer"],
        "total_mentions": 8,
        "label_en": "Gastric cancer",
    },
    ASPIRIN: {"name": "Aspirin", "synonyms": ["acetylsalicylic acid"], "total_mentions": 2},
    NUTLIN: {"name": "Nutlin-3", "synonyms": ["nutlin"], "total_mentions": 1, "confidence": 0.9},
    MDM2: {"name": "MDM2", "synonyms": ["HDM2"], "total_mentions": 12, "chromosome": "12q15", "source": "HGNC"},
    ORPHAN: {"name": "Orphan gene", "description": "A gene with no relationships."},
    TP53: {
        "name": "TP53",
        "synonyms": ["p53", "tumor protein p53"],
        "total_mentions": 40,
        "chromosome": "17p13.1",
        "source": "HGNC",
        "canonical_url": "https://www.genenames.org/data/gene-symbol-report/#!/hgnc_id/HGNC:11998",
    },
    CTNNB1: {"name": "β-catenin", "synonyms": ["CTNNB1", "beta-catenin"], "total_mentions": 3},
    PMC001: {"name": "MDM2 restrains p53 activity", "year": 1997, "canonical_url": "https://example.org/papers/PMC001"},
    PMC002: {"name": "Germline TP53 mutations in Li-Fraumeni families", "year": 1990},
}
"""Keys every backend's metadata_for_node must include (synonyms compare as sets)."""

EXPECTED_EDGE_METADATA: dict[Triple, dict[str, Any]] = {
    ASPIRIN_GASTRIC: {"confidence": 0.4, "source_documents": ["PMC005"]},
    NUTLIN_MDM2: {"confidence": 0.9, "source_documents": ["PMC004"]},
    NUTLIN_TP53: {"confidence": 0.8, "source_documents": ["PMC004"]},
    MDM2_INHIBITS_TP53: {"confidence": 0.97, "source_documents": ["PMC001"]},
    MDM2_DANGLING: {"confidence": 0.5, "source_documents": []},
    MDM2_SELF_LOOP: {"confidence": 0.85, "source_documents": ["PMC001"], "mechanism": "autoubiquitination"},
    TP53_LFS: {"confidence": 0.99, "source_documents": ["PMC002"]},
    TP53_GASTRIC: {"confidence": 0.7, "source_documents": []},
    TP53_CTNNB1: {"confidence": 0.6, "source_documents": ["PMC003"], "method": "co-immunoprecipitation"},
    TP53_REGULATES_MDM2: {"confidence": 0.95, "source_documents": ["PMC001"]},
    CTNNB1_GASTRIC: {"confidence": 0.75, "source_documents": ["PMC005"]},
    PMC001_MDM2: {"source_documents": []},
    PMC001_TP53: {"source_documents": []},
    PMC002_TP53: {"source_documents": []},
}
"""Keys every backend's metadata_for_edge must include; ``source_documents: []`` may also be absent."""

EXPECTED_PROVENANCE: dict[Triple, tuple[dict[str, Any], ...]] = {
    TP53_REGULATES_MDM2: (
        {"document_id": "PMC001", "section": "results", "text_span": "p53 induces transcription of MDM2",
         "confidence": 0.9},
    ),
    MDM2_INHIBITS_TP53: (
        {"document_id": "PMC001", "section": "abstract", "text_span": "MDM2 binds the p53 transactivation domain",
         "confidence": 0.95},
        {"document_id": "PMC001", "section": "results", "text_span": "MDM2 targets p53 for degradation",
         "confidence": 0.85},
    ),
    TP53_LFS: (
        {"document_id": "PMC002", "section": "abstract",
         "text_span": "Germline TP53 mutations cause Li-Fraumeni syndrome"},
    ),
    NUTLIN_MDM2: (
        {"document_id": "PMC004", "section": "results", "text_span": "Nutlin-3 displaces p53 from MDM2",
         "confidence": 0.8},
    ),
}
"""The ``provenance`` list of every edge that has evidence (any order); other edges have none."""

# --- search ----------------------------------------------------------------


@dataclass(frozen=True)
class SearchCase:
    """A search_entities call and what its answer must satisfy."""

    query: str
    node_types: list[str] | None = None
    first: str | None = None
    """The id ranked first (an exact name or synonym match)."""
    absent: tuple[str, ...] = ()
    """Ids that must not be returned."""

    @property
    def label(self) -> str:
        """A readable test id."""
        return self.query + (f" [{','.join(self.node_types)}]" if self.node_types else "")


RANKED_SEARCHES: tuple[SearchCase, ...] = (
    SearchCase("TP53", first=TP53, absent=(MERGED,)),
    SearchCase("p53", first=TP53, absent=(MERGED,)),
    SearchCase("HDM2", first=MDM2),
    SearchCase("β-catenin", first=CTNNB1),
    SearchCase("CTNNB1", first=CTNNB1),
    SearchCase("胃癌", first=GASTRIC),
    SearchCase("gastric cancer", first=GASTRIC),
    SearchCase("Li-Fraumeni syndrome", first=LFS),
    SearchCase("LFS", node_types=["Disease"], first=LFS),
    SearchCase("Nutlin-3", node_types=["Drug", "Gene"], first=NUTLIN),
    SearchCase("TP53", node_types=["Paper"], absent=(TP53, MERGED)),
)
"""Queries with an exact name or synonym match (ranked first), for lexical search."""

EMPTY_SEARCHES: tuple[SearchCase, ...] = (
    SearchCase("zzxq-no-such-entity-42"),
    SearchCase("LFS", node_types=["Gene"]),
)
"""Queries that match nothing: the answer is ``[]``, not an error."""

# --- tool calls ------------------------------------------------------------

_ALL_TYPES = EXPECTED_ENTITY_TYPES
_ONE_HOP_PREDICATES = ("ASSOCIATED_WITH", "INHIBITS", "INTERACTS_WITH", "MENTIONS", "REGULATES")
_ONE_HOP_NODES = (TP53, LFS, GASTRIC, NUTLIN, MDM2, CTNNB1, PMC001, PMC002)
_ONE_HOP_EDGES = (
    NUTLIN_TP53,
    MDM2_INHIBITS_TP53,
    TP53_LFS,
    TP53_GASTRIC,
    TP53_CTNNB1,
    TP53_REGULATES_MDM2,
    PMC001_TP53,
    PMC002_TP53,
)
_TRIANGLE_NODES = (GASTRIC, TP53, CTNNB1)
_TRIANGLE_EDGES = (TP53_GASTRIC, TP53_CTNNB1, CTNNB1_GASTRIC)
_MDM2_TP53_EDGES = (MDM2_INHIBITS_TP53, MDM2_SELF_LOOP, TP53_REGULATES_MDM2)
_ONE_HOP_COUNTS: dict[str, Any] = {
    "entity_type_counts": {"Disease": 2, "Drug": 1, "Gene": 3, "Paper": 2},  # LFS 胃癌, nutlin, TP53 MDM2 β-catenin
    "predicate_counts": {"ASSOCIATED_WITH": 2, "INHIBITS": 1, "INTERACTS_WITH": 1, "MENTIONS": 2, "REGULATES": 2},
}
_TRIANGLE_COUNTS: dict[str, Any] = {
    "entity_type_counts": {"Disease": 1, "Gene": 2}, "predicate_counts": {"ASSOCIATED_WITH": 2, "INTERACTS_WITH": 1},
}
_MDM2_TP53_COUNTS: dict[str, Any] = {
    "entity_type_counts": {"Gene": 2}, "predicate_counts": {"INHIBITS": 1, "REGULATES": 2},
}


@dataclass(frozen=True)
class TraversalCase:
    """A bfs_query or intersect_subgraphs call (in standard ids) and its whole expected answer."""

    name: str
    tool: Literal["bfs_query", "intersect_subgraphs"]
    arguments: Mapping[str, Any]
    nodes: tuple[str, ...]
    """Node ids in answer order: (distance, id)."""
    edges: tuple[Triple, ...]
    """Edge triples, sorted."""
    node_count: int
    edge_count: int
    entity_types_found: tuple[str, ...]
    predicates_found: tuple[str, ...]
    entity_type_counts: Mapping[str, int]
    """``schema_summary.entity_type_counts``: the counted nodes by type (no type seen only among excluded ones)."""
    predicate_counts: Mapping[str, int]
    """``schema_summary.predicate_counts``: the counted edges by predicate."""
    stub_nodes: frozenset[str] = frozenset()
    """Nodes returned without metadata; the others are full."""
    bare_edges: frozenset[Triple] = frozenset()
    """Edges returned without metadata; the others are full."""
    truncated: tuple[str, ...] = ()
    """Reasons of the ``truncated`` entries, in order."""
    next_offset: int | None = None
    capped_nodes: tuple[str, ...] = ()
    warnings: int = 0
    max_edges_per_node: int | None = None
    """Traversal budget of the call (None: the default budget)."""
    order_sensitive: bool = False
    """The answer depends on the order of ids (pages, hub caps): needs an order-preserving id map."""


TRAVERSALS: tuple[TraversalCase, ...] = (
    TraversalCase(
        "bfs_one_hop", "bfs_query", {"seeds": [TP53], "max_hops": 1},
        nodes=_ONE_HOP_NODES, edges=_ONE_HOP_EDGES, node_count=8, edge_count=8,
        entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES, **_ONE_HOP_COUNTS,
    ),
    TraversalCase(
        "bfs_two_hops", "bfs_query", {"seeds": [TP53], "max_hops": 2},
        nodes=(*_ONE_HOP_NODES, ASPIRIN),
        edges=(
            ASPIRIN_GASTRIC, NUTLIN_MDM2, NUTLIN_TP53, MDM2_INHIBITS_TP53, MDM2_SELF_LOOP, TP53_LFS, TP53_GASTRIC,
            TP53_CTNNB1, TP53_REGULATES_MDM2, CTNNB1_GASTRIC, PMC001_MDM2, PMC001_TP53, PMC002_TP53,
        ),
        node_count=9, edge_count=13, entity_types_found=_ALL_TYPES, predicates_found=EXPECTED_PREDICATES,
        entity_type_counts={"Disease": 2, "Drug": 2, "Gene": 3, "Paper": 2},
        predicate_counts={"ASSOCIATED_WITH": 3, "INHIBITS": 2, "INTERACTS_WITH": 1, "MENTIONS": 3, "REGULATES": 3,
                          "TREATS": 1},
        warnings=1,  # the dangling edge of MDM2
    ),
    TraversalCase(
        "bfs_node_types", "bfs_query", {"seeds": [TP53], "max_hops": 1, "node_types": ["Gene"]},
        nodes=_ONE_HOP_NODES, edges=_ONE_HOP_EDGES, node_count=8, edge_count=8,
        entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES, **_ONE_HOP_COUNTS,
        stub_nodes=frozenset({LFS, GASTRIC, NUTLIN, PMC001, PMC002}),
    ),
    TraversalCase(
        "bfs_predicates", "bfs_query", {"seeds": [TP53], "max_hops": 1, "predicates": ["REGULATES", "INHIBITS"]},
        nodes=_ONE_HOP_NODES, edges=_ONE_HOP_EDGES, node_count=8, edge_count=8,
        entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES, **_ONE_HOP_COUNTS,
        bare_edges=frozenset({TP53_LFS, TP53_GASTRIC, TP53_CTNNB1, PMC001_TP53, PMC002_TP53}),
    ),
    TraversalCase(
        "bfs_topology_only", "bfs_query",
        {"seeds": [TP53], "max_hops": 1, "topology_only": True, "node_types": ["Gene"], "predicates": ["REGULATES"]},
        nodes=_ONE_HOP_NODES, edges=_ONE_HOP_EDGES, node_count=8, edge_count=8,
        entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES, **_ONE_HOP_COUNTS,
        stub_nodes=frozenset(_ONE_HOP_NODES), bare_edges=frozenset(_ONE_HOP_EDGES),
    ),
    TraversalCase(
        "bfs_exclude_node_types", "bfs_query", {"seeds": [TP53], "max_hops": 2, "exclude_node_types": ["Paper"]},
        nodes=(TP53, LFS, GASTRIC, NUTLIN, MDM2, CTNNB1, ASPIRIN),
        edges=(
            ASPIRIN_GASTRIC, NUTLIN_MDM2, NUTLIN_TP53, MDM2_INHIBITS_TP53, MDM2_SELF_LOOP, TP53_LFS, TP53_GASTRIC,
            TP53_CTNNB1, TP53_REGULATES_MDM2, CTNNB1_GASTRIC,
        ),
        node_count=7, edge_count=10,
        # The summary names what the traversal met, the excluded Paper type and MENTIONS included.
        entity_types_found=_ALL_TYPES, predicates_found=EXPECTED_PREDICATES,
        # ... but counts only what the answer counts: no Paper, no MENTIONS.
        entity_type_counts={"Disease": 2, "Drug": 2, "Gene": 3},
        predicate_counts={"ASSOCIATED_WITH": 3, "INHIBITS": 2, "INTERACTS_WITH": 1, "REGULATES": 3, "TREATS": 1},
        warnings=1,
    ),
    TraversalCase(
        "bfs_exclude_keeps_seed", "bfs_query", {"seeds": [PMC002], "max_hops": 1, "exclude_node_types": ["Paper"]},
        nodes=(PMC002, TP53), edges=(PMC002_TP53,), node_count=2, edge_count=1,
        entity_types_found=("Gene", "Paper"), predicates_found=("MENTIONS",),
        entity_type_counts={"Gene": 1, "Paper": 1}, predicate_counts={"MENTIONS": 1},
    ),
    TraversalCase(
        "bfs_min_mentions", "bfs_query", {"seeds": [TP53], "max_hops": 1, "min_mentions": 5},
        nodes=(TP53, LFS, GASTRIC, MDM2, PMC001, PMC002),
        edges=(MDM2_INHIBITS_TP53, TP53_LFS, TP53_GASTRIC, TP53_REGULATES_MDM2, PMC001_TP53, PMC002_TP53),
        node_count=6, edge_count=6,
        # Nutlin-3 (1) and β-catenin (3) are dropped; the summary is of the traversal, before the filter,
        # but its counts are of what node_count and edge_count count, after it.
        entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES,
        entity_type_counts={"Disease": 2, "Gene": 2, "Paper": 2},
        predicate_counts={"ASSOCIATED_WITH": 2, "INHIBITS": 1, "MENTIONS": 2, "REGULATES": 1},
    ),
    TraversalCase(
        "bfs_min_mentions_keeps_seed", "bfs_query", {"seeds": [NUTLIN], "max_hops": 1, "min_mentions": 5},
        nodes=(NUTLIN, MDM2, TP53), edges=(NUTLIN_MDM2, NUTLIN_TP53), node_count=3, edge_count=2,
        entity_types_found=("Drug", "Gene"), predicates_found=("INHIBITS", "REGULATES"),
        entity_type_counts={"Drug": 1, "Gene": 2}, predicate_counts={"INHIBITS": 1, "REGULATES": 1},
    ),
    TraversalCase(
        "bfs_page", "bfs_query", {"seeds": [TP53], "max_hops": 1, "limit": 3, "offset": 2},
        nodes=(GASTRIC, NUTLIN, MDM2),
        edges=(NUTLIN_TP53, MDM2_INHIBITS_TP53, TP53_GASTRIC, TP53_REGULATES_MDM2),
        node_count=8, edge_count=8, entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES,
        **_ONE_HOP_COUNTS, truncated=("page",), next_offset=5, order_sensitive=True,
    ),
    TraversalCase(
        "bfs_last_page", "bfs_query", {"seeds": [TP53], "max_hops": 1, "limit": 10, "offset": 5},
        nodes=(CTNNB1, PMC001, PMC002), edges=(TP53_CTNNB1, PMC001_TP53, PMC002_TP53),
        node_count=8, edge_count=8, entity_types_found=_ALL_TYPES, predicates_found=_ONE_HOP_PREDICATES,
        **_ONE_HOP_COUNTS, order_sensitive=True,
    ),
    TraversalCase(
        "bfs_multi_seed", "bfs_query", {"seeds": [LFS, ASPIRIN], "max_hops": 1},
        # TP53 and 胃癌 are both at distance 1 and not expanded, so the edge between them is not examined.
        nodes=(LFS, ASPIRIN, GASTRIC, TP53), edges=(ASPIRIN_GASTRIC, TP53_LFS), node_count=4, edge_count=2,
        entity_types_found=("Disease", "Drug", "Gene"), predicates_found=("ASSOCIATED_WITH", "TREATS"),
        entity_type_counts={"Disease": 2, "Drug": 1, "Gene": 1}, predicate_counts={"ASSOCIATED_WITH": 1, "TREATS": 1},
    ),
    TraversalCase(
        "bfs_hub_budget", "bfs_query", {"seeds": [TP53], "max_hops": 1},
        nodes=(TP53, LFS, NUTLIN, MDM2), edges=(NUTLIN_TP53, MDM2_INHIBITS_TP53, TP53_LFS),
        node_count=4, edge_count=3,
        entity_types_found=("Disease", "Drug", "Gene"), predicates_found=("ASSOCIATED_WITH", "INHIBITS", "REGULATES"),
        entity_type_counts={"Disease": 1, "Drug": 1, "Gene": 2},
        predicate_counts={"ASSOCIATED_WITH": 1, "INHIBITS": 1, "REGULATES": 1},
        truncated=("max_edges_per_node",), capped_nodes=(TP53,), max_edges_per_node=3, order_sensitive=True,
    ),
    TraversalCase(
        "bfs_self_loop_dangling_merged", "bfs_query", {"seeds": [MDM2], "max_hops": 1},
        nodes=(MDM2, NUTLIN, TP53, PMC001),
        edges=(NUTLIN_MDM2, MDM2_INHIBITS_TP53, MDM2_SELF_LOOP, TP53_REGULATES_MDM2, PMC001_MDM2),
        node_count=4, edge_count=5,
        entity_types_found=("Drug", "Gene", "Paper"), predicates_found=("INHIBITS", "MENTIONS", "REGULATES"),
        entity_type_counts={"Drug": 1, "Gene": 2, "Paper": 1},
        predicate_counts={"INHIBITS": 2, "MENTIONS": 1, "REGULATES": 2},
        warnings=1,
    ),
    TraversalCase(
        "bfs_isolated_and_unknown_seed", "bfs_query", {"seeds": [ORPHAN, UNKNOWN], "max_hops": 2},
        nodes=(ORPHAN,), edges=(), node_count=1, edge_count=0,
        entity_types_found=("Gene",), predicates_found=(), entity_type_counts={"Gene": 1}, predicate_counts={},
        warnings=1,
    ),
    TraversalCase(
        "intersect_k1", "intersect_subgraphs", {"seeds": [NUTLIN, PMC001], "k": 1},
        nodes=(MDM2, TP53), edges=_MDM2_TP53_EDGES, node_count=2, edge_count=3,
        entity_types_found=("Gene",), predicates_found=("INHIBITS", "REGULATES"), **_MDM2_TP53_COUNTS,
    ),
    TraversalCase(
        "intersect_k1_topology_only", "intersect_subgraphs", {"seeds": [NUTLIN, PMC001], "k": 1, "topology_only": True},
        nodes=(MDM2, TP53), edges=_MDM2_TP53_EDGES, node_count=2, edge_count=3,
        entity_types_found=("Gene",), predicates_found=("INHIBITS", "REGULATES"), **_MDM2_TP53_COUNTS,
        stub_nodes=frozenset({MDM2, TP53}), bare_edges=frozenset(_MDM2_TP53_EDGES),
    ),
    TraversalCase(
        "intersect_k1_empty", "intersect_subgraphs", {"seeds": [LFS, ASPIRIN], "k": 1},
        nodes=(), edges=(), node_count=0, edge_count=0, entity_types_found=(), predicates_found=(),
        entity_type_counts={}, predicate_counts={},
    ),
    TraversalCase(
        "intersect_k2", "intersect_subgraphs", {"seeds": [LFS, ASPIRIN], "k": 2},
        nodes=_TRIANGLE_NODES, edges=_TRIANGLE_EDGES, node_count=3, edge_count=3,
        entity_types_found=("Disease", "Gene"), predicates_found=("ASSOCIATED_WITH", "INTERACTS_WITH"),
        **_TRIANGLE_COUNTS,
    ),
    TraversalCase(
        "intersect_k2_filters", "intersect_subgraphs",
        {"seeds": [LFS, ASPIRIN], "k": 2, "node_types": ["Gene"], "predicates": ["ASSOCIATED_WITH"]},
        nodes=_TRIANGLE_NODES, edges=_TRIANGLE_EDGES, node_count=3, edge_count=3,
        entity_types_found=("Disease", "Gene"), predicates_found=("ASSOCIATED_WITH", "INTERACTS_WITH"),
        **_TRIANGLE_COUNTS, stub_nodes=frozenset({GASTRIC}), bare_edges=frozenset({TP53_CTNNB1}),
    ),
    TraversalCase(
        "intersect_k2_min_mentions", "intersect_subgraphs", {"seeds": [LFS, ASPIRIN], "k": 2, "min_mentions": 5},
        nodes=(GASTRIC, TP53), edges=(TP53_GASTRIC,), node_count=2, edge_count=1,
        entity_types_found=("Disease", "Gene"), predicates_found=("ASSOCIATED_WITH", "INTERACTS_WITH"),
        entity_type_counts={"Disease": 1, "Gene": 1}, predicate_counts={"ASSOCIATED_WITH": 1},
    ),
    TraversalCase(
        "intersect_k2_exclude_node_types", "intersect_subgraphs",
        {"seeds": [NUTLIN, PMC001], "k": 2, "exclude_node_types": ["Disease"]},
        # Each seed reaches the other at distance 2; distances are the larger of the two expansions'.
        nodes=(MDM2, TP53, NUTLIN, CTNNB1, PMC001, PMC002),
        edges=(
            NUTLIN_MDM2, NUTLIN_TP53, MDM2_INHIBITS_TP53, MDM2_SELF_LOOP, TP53_CTNNB1, TP53_REGULATES_MDM2,
            PMC001_MDM2, PMC001_TP53, PMC002_TP53,
        ),
        node_count=6, edge_count=9,
        entity_types_found=("Drug", "Gene", "Paper"),
        predicates_found=("INHIBITS", "INTERACTS_WITH", "MENTIONS", "REGULATES"),
        entity_type_counts={"Drug": 1, "Gene": 3, "Paper": 2},
        predicate_counts={"INHIBITS": 2, "INTERACTS_WITH": 1, "MENTIONS": 3, "REGULATES": 3},
        warnings=1,  # one warning counting the dangling edge met by both expansions
    ),
)
"""Every traversal call of the suite with its hand-computed answer."""

ERROR_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("bfs_query", {"seeds": [UNKNOWN], "max_hops": 1}),
    ("bfs_query", {"seeds": [MERGED], "max_hops": 1}),
    ("intersect_subgraphs", {"seeds": [TP53, UNKNOWN], "k": 1}),
    ("intersect_subgraphs", {"seeds": [TP53, MERGED], "k": 1}),
)
"""Traversal calls that must fail with an unknown-entity error (seeds in standard ids)."""

DESCRIBE_ENTITIES_IDS: tuple[str, ...] = (TP53, UNKNOWN, GASTRIC, MERGED, TP53)
EXPECTED_DESCRIBE_ENTITIES: tuple[str, ...] = (TP53, GASTRIC)
"""describe_entities keeps the order asked, drops duplicates and silently omits unknown and merged ids."""


def _bundle_resource() -> Any:
    return files("bfsql.testing").joinpath(BUNDLE_NAME)


def standard_records() -> list[Record]:
    """Every record of the standard graph, in bundle order."""
    with as_file(_bundle_resource()) as path:
        return [record for _, record in read_bundle(path)]


def write_standard_bundle(directory: str | Path) -> Path:
    """Copy the standard bundle into ``directory``; returns the file's path."""
    target = Path(directory) / BUNDLE_NAME
    with as_file(_bundle_resource()) as path:
        shutil.copyfile(path, target)
    return target
