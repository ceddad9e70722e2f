"""The backend conformance suite: subclass :class:`BackendConformance` and provide a ``backend``.

::

    from bfsql.testing import BackendConformance

    class TestMyBackend(BackendConformance):
        capabilities = MyBackend.capabilities   # optional: decide applicability at collection

        @pytest.fixture
        async def backend(self, standard_bundle):
            backend = await MyBackend.open(standard_bundle)
            yield backend
            await backend.aclose()

The suite checks every primitive against the contract and the hand-computed answers
of :mod:`bfsql.testing.standard_graph`, the batch primitives against the single ones,
the traversal tools end to end (through the engine and through the MCP tool layer),
and parity with the memory backend. See docs/writing-a-backend.md.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bfsql import postprocess
from bfsql.backend import PROVENANCE_KEYS, Capabilities, GraphBackend, GraphDbInterface, has_vector_search
from bfsql.backends.memory import MemoryBackend
from bfsql.budgets import TraversalLimits
from bfsql.embedders import Embedder, HashingEmbedder
from bfsql.engine import bfs_query, intersect_subgraphs
from bfsql.engine.answer import tally
from bfsql.errors import UnknownEntity
from bfsql.graph import Graph
from bfsql.hookspecs import hookimpl
from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord
from bfsql.models import EntityStub
from bfsql.primitives import PRIMITIVES, Primitives
from bfsql.rows import Edge
from bfsql.testing.answers import (
    backend_arguments,
    check_edge_metadata,
    check_node_metadata,
    check_provenance,
    check_traversal,
    run_traversal,
)
from bfsql.testing.applicability import requires, skip, unmet
from bfsql.testing.closure_checks import ClosureChecks
from bfsql.testing.exact_answers import ExactAnswerChecks
from bfsql.testing.idmap import IdMap, IdMapLike
from bfsql.testing.parity import assert_parity
from bfsql.testing.profile_checks import ClientProfileChecks
from bfsql.testing.random_graphs import TYPES, random_records
from bfsql.testing.reference_walk import Counts, ReferenceGraph
from bfsql.testing.standard_graph import (
    ALL_EDGES,
    ALL_IDS,
    ASPIRIN,
    CTNNB1,
    DESCRIBE_ENTITIES_IDS,
    EMPTY_SEARCHES,
    ERROR_CALLS,
    EXPECTED_DESCRIBE_ENTITIES,
    EXPECTED_EDGE_METADATA,
    EXPECTED_EDGES_FROM,
    EXPECTED_EDGES_TO,
    EXPECTED_ENTITY_TYPE_COUNTS,
    EXPECTED_ENTITY_TYPES,
    EXPECTED_HUBS,
    EXPECTED_NODE_METADATA,
    EXPECTED_PREDICATE_COUNTS,
    EXPECTED_PREDICATES,
    EXPECTED_PROVENANCE,
    GASTRIC,
    INVISIBLE_IDS,
    LFS,
    MDM2,
    MDM2_DANGLING,
    MDM2_SELF_LOOP,
    MERGED,
    MERGED_MDM2,
    NODE_TYPES,
    NUTLIN,
    ORPHAN,
    RANKED_SEARCHES,
    STANDARD_IDS,
    TP53,
    TRAVERSALS,
    UNKNOWN,
    UNKNOWN_EDGE,
    SearchCase,
    TraversalCase,
    Triple,
    standard_records,
    write_standard_bundle,
)

__all__ = ["BackendConformance"]

SEARCH_LIMIT = 20
VECTOR_QUERIES = (("Aspirin", ASPIRIN), ("Nutlin-3", NUTLIN), ("β-catenin", CTNNB1), ("胃癌", GASTRIC))
"""Entity names whose own embedding must find the entity first."""
BATCH_METHODS = tuple(name for name, spec in PRIMITIVES.items() if spec.keys is not None and not spec.optional)
"""The required batch primitives (the ones GraphDbInterface derives from single-id calls)."""


def _xfailed(value: object) -> bool:
    """Whether a test function carries ``@pytest.mark.xfail(reason=...)`` with a non-empty reason."""
    return any(mark.name == "xfail" and mark.kwargs.get("reason") for mark in getattr(value, "pytestmark", []))


def _refusal(owner: str, name: str, override: object) -> Callable[..., Any]:
    """A stand-in for a standard test overridden without xfail: it fails, naming the rule."""
    message = (
        f"{owner}.{name} overrides a standard conformance test without @pytest.mark.xfail(reason=...). "
        "A backend that cannot pass a standard check must say so: mark the override xfail with the reason."
    )

    async def refused(*args: Any, **kwargs: Any) -> None:
        pytest.fail(message, pytrace=False)

    if not callable(override):  # the standard test was replaced by a non-test, e.g. None
        refused.__name__ = name
        return refused
    stand_in = functools.wraps(override)(refused)  # the override's fixtures and parameters, so it collects
    # Only the marks collection needs: a skip or a reason-less xfail must not hide the failure.
    marks = getattr(override, "pytestmark", [])
    stand_in.pytestmark = [m for m in marks if m.name in ("parametrize", "usefixtures")]  # type: ignore[attr-defined]
    return stand_in


def _triples(edges: Iterable[Edge], ids: IdMap) -> list[Triple]:
    """Backend edges as sorted standard triples (duplicates kept, so they show)."""
    edges = list(edges)
    for edge in edges:
        assert isinstance(edge, Edge), f"expected Edge records, got {type(edge).__name__}"
    return sorted(ids.triple(e.subject, e.predicate, e.object) for e in edges)


def _payload(result: Any, what: str) -> Any:
    assert not result.is_error, f"{what} failed: {result.content[0].text}"
    return json.loads(result.content[0].text)


class BackendConformance(ExactAnswerChecks, ClientProfileChecks, ClosureChecks):
    """The standard tests of a bfsql backend. Subclass it (``class TestMine(BackendConformance)``).

    Provide the ``backend`` fixture: a :class:`~bfsql.GraphBackend` (or
    :class:`~bfsql.GraphDbInterface`) loaded with the
    standard graph (use the ``standard_bundle`` fixture or
    :func:`~bfsql.testing.standard_graph.standard_records`), sync or async, closed by
    the fixture itself. Optionally override ``id_map`` (standard id -> backend id) and
    set the class attribute ``capabilities``.

    Overriding a standard test is allowed only with ``@pytest.mark.xfail(reason=...)``;
    an override without it fails.
    """

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]
    """Every standard test is async; the mark makes them run in pytest-asyncio's strict mode too."""

    capabilities: ClassVar[Capabilities | None] = None
    """The capabilities the suite tests. None: read ``backend.capabilities`` at run time
    and skip (reporting) checks that do not apply. Declared: checks that do not apply
    are not collected (and reported), and a test asserts the declaration equals the
    backend's own flags."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        standard = {name for name in dir(BackendConformance) if name.startswith("test_")}
        for name in sorted(standard & set(vars(cls))):
            override = vars(cls)[name]
            if not _xfailed(override):
                setattr(cls, name, _refusal(cls.__name__, name, override))

    # --- fixtures ------------------------------------------------------------

    @pytest.fixture
    def backend(self) -> GraphBackend:
        """The backend under test, loaded with the standard graph. Subclasses must provide it."""
        pytest.fail(
            f"{type(self).__name__} must define a `backend` fixture returning a bfsql.GraphBackend (or a "
            "GraphDbInterface) loaded with the standard graph (see the `standard_bundle` fixture).",
            pytrace=False,
        )

    @pytest.fixture
    def standard_bundle(self, tmp_path: Path) -> Path:
        """The standard graph as a JSONL bundle file in ``tmp_path``, for the ``backend`` fixture to load."""
        return write_standard_bundle(tmp_path)

    @pytest.fixture
    def id_map(self) -> IdMapLike:
        """Standard id -> backend id: a dict, a function or an IdMap; None (the default) is identity."""
        return None

    @pytest.fixture
    def ids(self, id_map: IdMapLike) -> IdMap:
        """The id map, two-way."""
        return IdMap.of(id_map)

    @pytest.fixture
    def tested_capabilities(self, backend: GraphBackend) -> Capabilities:
        """The capabilities the suite tests: the class's declaration, else the backend's."""
        declared = type(self).capabilities
        return backend.capabilities if declared is None else declared

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The embedder of vector-search checks; override it to match the one the store's vectors came from."""
        return HashingEmbedder()

    @pytest.fixture
    def graph(self, backend: GraphBackend) -> Graph:
        """The backend behind a Graph without cache, with only the built-in post-processing."""
        return Graph(backend, plugins=[postprocess], cache=None)

    @pytest.fixture(autouse=True)
    def _applicability(self, request: pytest.FixtureRequest, tested_capabilities: Capabilities) -> None:
        why = unmet(request.function, tested_capabilities)
        if why is not None:
            skip(request, why)

    @staticmethod
    def _needs_order(request: pytest.FixtureRequest, case: TraversalCase, ids: IdMap) -> None:
        if case.order_sensitive and not ids.preserves_order:
            skip(request, "the id map does not preserve id order, on which this answer depends")

    @staticmethod
    def _needs_vector_primitive(request: pytest.FixtureRequest, backend: GraphBackend) -> None:
        if not has_vector_search(backend):
            skip(request, "vector_search is declared for search_entities, which embeds the query itself; "
                 "the vector_search primitive is not implemented")

    # --- capabilities and schema -------------------------------------------

    async def test_capabilities_declared_are_the_backends(self, backend: GraphBackend) -> None:
        """The flags are a Capabilities; a class-level declaration must equal the backend's own."""
        assert isinstance(backend.capabilities, Capabilities), "backend.capabilities must be a bfsql.Capabilities"
        declared = type(self).capabilities
        if declared is not None:
            assert declared == backend.capabilities, (
                f"{type(self).__name__}.capabilities declares {declared.as_dict()}, but the backend declares "
                f"{backend.capabilities.as_dict()}; the suite would not test what the backend claims"
            )

    async def test_methods_take_the_parameters_of_the_primitive_table(self, backend: GraphBackend) -> None:
        """Every primitive the backend implements takes the table's parameters, in order, with its defaults.

        The table (:class:`bfsql.primitives.Primitives`) is the one place a primitive's signature is
        written; a backend's method that drifted from it would be called with arguments it does not
        take. (Seed 000's single-id ``search_entities`` without ``limit`` is the one allowed
        difference: the graph cuts such a backend's answer itself.)
        """
        for spec in PRIMITIVES.values():
            method = getattr(type(backend), spec.name)
            if method is getattr(Primitives, spec.name):
                continue  # an optional primitive left at its default
            params = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
            names = tuple(p.name for p in params)
            defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
            expected_names, expected_defaults = spec.params, spec.defaults
            if spec.name == "search_entities" and isinstance(backend, GraphDbInterface) and "limit" not in names:
                expected_names = tuple(n for n in spec.params if n != "limit")
                expected_defaults = {k: v for k, v in spec.defaults.items() if k != "limit"}
            assert (names, defaults) == (expected_names, expected_defaults), (
                f"{type(backend).__name__}.{spec.name} takes {names} with defaults {defaults}; the primitive table "
                f"says {expected_names} with defaults {expected_defaults}"
            )

    async def test_entity_types_sorted_and_stable(self, graph: Graph) -> None:
        """Sorted, without duplicates, the same on every call, and only types of the graph."""
        first, second = await graph.entity_types(), await graph.entity_types()
        assert first == sorted(set(first)), f"entity_types must be sorted and unique: {first}"
        assert first == second, "entity_types changed between two calls"
        assert set(first) <= set(EXPECTED_ENTITY_TYPES), f"unexpected types: {set(first) - set(EXPECTED_ENTITY_TYPES)}"

    @requires(comprehensive_schema=True)
    async def test_entity_types_complete(self, graph: Graph) -> None:
        """A comprehensive schema lists exactly the types of visible entities."""
        assert await graph.entity_types() == list(EXPECTED_ENTITY_TYPES)

    async def test_predicates_sorted_and_stable(self, graph: Graph) -> None:
        """Sorted, without duplicates, the same on every call, and only predicates of the graph."""
        first, second = await graph.predicates(), await graph.predicates()
        assert first == sorted(set(first)), f"predicates must be sorted and unique: {first}"
        assert first == second, "predicates changed between two calls"
        assert set(first) <= set(EXPECTED_PREDICATES), f"unexpected predicates: {set(first) - set(EXPECTED_PREDICATES)}"

    @requires(comprehensive_schema=True)
    async def test_predicates_complete(self, graph: Graph) -> None:
        """A comprehensive schema lists exactly the graph's predicates."""
        assert await graph.predicates() == list(EXPECTED_PREDICATES)

    # --- identity and metadata (single-id calls, derived by the graph from the batch primitives) ---

    @pytest.mark.parametrize("entity_id", STANDARD_IDS)
    async def test_get_node(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """The node's id and type."""
        node = await graph.get_node(ids.to_backend(entity_id))
        assert (ids.to_standard(node.id), node.entity_type) == (entity_id, NODE_TYPES[entity_id])

    @pytest.mark.parametrize("entity_id", INVISIBLE_IDS)
    async def test_get_node_refuses_invisible_ids(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """KeyError for unknown ids, merged entities and the target of a dangling edge."""
        with pytest.raises(KeyError):
            await graph.get_node(ids.to_backend(entity_id))

    @pytest.mark.parametrize("entity_id", STANDARD_IDS)
    async def test_metadata_for_node(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """Name, synonyms, properties (total_mentions …) and the standard fields, all present."""
        metadata = await graph.metadata_for_node(ids.to_backend(entity_id))
        assert isinstance(metadata, dict), f"metadata_for_nodes must give dicts, got {type(metadata).__name__}"
        check_node_metadata(metadata, EXPECTED_NODE_METADATA[entity_id], f"metadata_for_node({entity_id!r})")

    @pytest.mark.parametrize("entity_id", INVISIBLE_IDS)
    async def test_metadata_for_node_refuses_invisible_ids(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """KeyError for unknown ids, merged entities and the target of a dangling edge."""
        with pytest.raises(KeyError):
            await graph.metadata_for_node(ids.to_backend(entity_id))

    # --- edges ---------------------------------------------------------------

    @pytest.mark.parametrize("entity_id", STANDARD_IDS)
    async def test_edges_from(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """All outgoing edges, no more, no fewer ([] for a node without any)."""
        got = _triples(await graph.edges_from(ids.to_backend(entity_id)), ids)
        assert got == sorted(EXPECTED_EDGES_FROM[entity_id]), f"edges_from({entity_id!r})"

    @pytest.mark.parametrize("entity_id", STANDARD_IDS)
    async def test_edges_to(self, graph: Graph, ids: IdMap, entity_id: str) -> None:
        """All incoming edges, no more, no fewer ([] for a node without any)."""
        got = _triples(await graph.edges_to(ids.to_backend(entity_id)), ids)
        assert got == sorted(EXPECTED_EDGES_TO[entity_id]), f"edges_to({entity_id!r})"

    @pytest.mark.parametrize("direction", ["edges_from", "edges_to"])
    @pytest.mark.parametrize("entity_id", INVISIBLE_IDS)
    async def test_edges_refuse_invisible_ids(self, graph: Graph, ids: IdMap, entity_id: str, direction: str) -> None:
        """KeyError, not [], for unknown ids, merged entities and the target of a dangling edge."""
        with pytest.raises(KeyError):
            await getattr(graph, direction)(ids.to_backend(entity_id))

    async def test_isolated_node_has_no_edges(self, graph: Graph, ids: IdMap) -> None:
        """An existing node without edges answers [] both ways."""
        assert await graph.edges_from(ids.to_backend(ORPHAN)) == []
        assert await graph.edges_to(ids.to_backend(ORPHAN)) == []

    async def test_self_loop_is_outgoing_and_incoming(self, graph: Graph, ids: IdMap) -> None:
        """A self-loop is in the node's outgoing and in its incoming edges."""
        assert MDM2_SELF_LOOP in _triples(await graph.edges_from(ids.to_backend(MDM2)), ids)
        assert MDM2_SELF_LOOP in _triples(await graph.edges_to(ids.to_backend(MDM2)), ids)

    async def test_dangling_edge_is_returned(self, graph: Graph, ids: IdMap) -> None:
        """An edge to an id that is no entity is still an edge of its subject (the engine reports it)."""
        assert MDM2_DANGLING in _triples(await graph.edges_from(ids.to_backend(MDM2)), ids)

    async def test_merged_entity_is_invisible(self, graph: Graph, ids: IdMap) -> None:
        """A merged entity is absent from get_node, search and its neighbours' edges."""
        merged = ids.to_backend(MERGED)
        with pytest.raises(KeyError):
            await graph.get_node(merged)
        assert MERGED_MDM2 not in _triples(await graph.edges_to(ids.to_backend(MDM2)), ids)
        for query in ("TP53", "p53"):
            assert merged not in [s.id for s in await graph.search_entities(query)], f"search {query!r}"

    async def test_an_edge_touching_a_merged_node_has_no_metadata(self, graph: Graph, ids: IdMap) -> None:
        """An edge touching a merged entity is invisible like the entity: ``{}``, as for an unknown edge."""
        edge = ids.edge(MERGED_MDM2)
        assert await graph.metadata_for_edge(edge) == {}
        assert (await graph.metadata_for_edges([edge])).get(edge, {}) == {}

    # --- the hop primitive ------------------------------------------------------

    @pytest.mark.parametrize("entity_id", STANDARD_IDS)
    async def test_hop_gives_both_directions_with_the_other_ends(
        self, graph: Graph, ids: IdMap, entity_id: str
    ) -> None:
        """The entity itself (its type and name) and every edge of it, out and in, each once, with its other end's
        type and name (None: dangling)."""
        backend_id = ids.to_backend(entity_id)
        found = (await graph.hop([backend_id]))[backend_id]
        assert found.node.entity_type == NODE_TYPES[entity_id], f"hop([{entity_id!r}]).node"
        assert found.node.name in (None, EXPECTED_NODE_METADATA[entity_id]["name"]), f"hop([{entity_id!r}]).node.name"
        rows = found.edges
        triples = _triples((Edge(*row[:3]) for row in rows), ids)
        expected = sorted(set(EXPECTED_EDGES_FROM[entity_id]) | set(EXPECTED_EDGES_TO[entity_id]))
        assert triples == expected, f"hop([{entity_id!r}]) edges"
        for row in rows:
            subject, _, obj, other_type, other_name = row
            assert len(row) == 5, f"hop rows are (subject, predicate, object, other_type, other_name); got {row!r}"
            other = ids.to_standard(obj if ids.to_standard(subject) == entity_id else subject)
            if other in NODE_TYPES:
                assert other_type == NODE_TYPES[other], f"hop([{entity_id!r}]): {other!r} has type {other_type!r}"
                assert other_name in (None, EXPECTED_NODE_METADATA[other]["name"]), f"hop: name of {other!r}"
            else:
                assert other_type is None, f"hop([{entity_id!r}]): {other!r} is no entity, yet has type {other_type!r}"

    async def test_hop_of_many_ids_equals_hop_of_each(self, graph: Graph, ids: IdMap) -> None:
        """One call for every id (repeats and invisible ids included) answers as one call per id."""
        asked = [ids.to_backend(i) for i in (*ALL_IDS, TP53)]
        batch = await graph.hop(asked)
        visible = {ids.to_backend(i) for i in STANDARD_IDS}
        assert set(batch) == visible, f"hop answers exactly the visible ids asked: {sorted(set(batch) ^ visible)}"
        for backend_id in visible:
            single = (await graph.hop([backend_id]))[backend_id]
            assert batch[backend_id].node == single.node, f"hop[{backend_id!r}].node"
            assert sorted(batch[backend_id].edges) == sorted(single.edges), f"hop[{backend_id!r}].edges"

    async def test_hop_hides_merged_ends_and_keeps_self_loops_once(self, graph: Graph, ids: IdMap) -> None:
        """No edge touching a merged entity; a self-loop appears once, its other end the entity itself."""
        mdm2 = ids.to_backend(MDM2)
        rows = (await graph.hop([mdm2]))[mdm2].edges
        triples = [ids.triple(*row[:3]) for row in rows]
        assert MERGED_MDM2 not in triples, "hop shows an edge from a merged entity"
        assert triples.count(MDM2_SELF_LOOP) == 1, f"the self-loop must appear once: {triples}"
        loop = next(row for row in rows if ids.triple(*row[:3]) == MDM2_SELF_LOOP)
        assert loop[3] == NODE_TYPES[MDM2], f"a self-loop's other end is the entity itself: {loop!r}"
        assert ids.to_backend(MERGED) not in await graph.hop([ids.to_backend(MERGED)]), "hop of a merged entity"

    async def test_get_nodes_names_match_the_metadata(self, graph: Graph, ids: IdMap) -> None:
        """get_nodes gives each visible entity's type and, where it gives a name, the metadata's name."""
        found = await graph.get_nodes([ids.to_backend(i) for i in ALL_IDS])
        assert sorted(found) == sorted(ids.to_backend(i) for i in STANDARD_IDS), "get_nodes keys"
        for backend_id, info in found.items():
            entity_id = ids.to_standard(backend_id)
            assert info.entity_type == NODE_TYPES[entity_id], f"get_nodes[{entity_id!r}]"
            assert info.name in (None, EXPECTED_NODE_METADATA[entity_id]["name"]), f"get_nodes[{entity_id!r}].name"

    # --- edge metadata -----------------------------------------------------

    @pytest.mark.parametrize("triple", ALL_EDGES)
    async def test_metadata_for_edge(self, graph: Graph, ids: IdMap, triple: Triple) -> None:
        """Confidence, source documents and properties of every edge, the dangling one included."""
        metadata = await graph.metadata_for_edge(ids.edge(triple))
        assert isinstance(metadata, dict), f"metadata_for_edges must give dicts, got {type(metadata).__name__}"
        check_edge_metadata(metadata, EXPECTED_EDGE_METADATA[triple], f"metadata_for_edge({triple})")

    async def test_metadata_for_edges_leaves_provenance_out(self, graph: Graph, ids: IdMap) -> None:
        """Traversals fetch edge metadata without provenance: that is provenance_for_edges' job."""
        edges = [ids.edge(t) for t in ALL_EDGES]
        for edge, metadata in (await graph.metadata_for_edges(edges)).items():
            leaked = sorted(set(metadata) & PROVENANCE_KEYS)
            assert not leaked, f"metadata_for_edges({edge}) holds provenance keys {leaked}"

    @requires(provenance=True)
    @pytest.mark.parametrize("triple", ALL_EDGES)
    async def test_provenance_for_edges(self, graph: Graph, ids: IdMap, triple: Triple) -> None:
        """Every evidence record of the edge (none for the others)."""
        edge = ids.edge(triple)
        found = (await graph.provenance_for_edges([edge])).get(edge) or []
        expected = EXPECTED_PROVENANCE.get(triple, ())
        check_provenance({"provenance": found}, expected, f"provenance_for_edges({triple})")

    async def test_metadata_for_unknown_edge_is_empty(self, graph: Graph, ids: IdMap) -> None:
        """An edge the graph does not have has no metadata: ``{}``, not an error."""
        assert await graph.metadata_for_edge(ids.edge(UNKNOWN_EDGE)) == {}

    async def test_full_answer_metadata_is_the_metadata_primitives(self, graph: Graph, ids: IdMap) -> None:
        """A full bfs_query's node and edge metadata equal metadata_for_nodes / _edges asked outside any traversal.

        Inside a traversal a backend may answer them from what its hops read (:mod:`bfsql.hop_memo`):
        the answer must be the same either way.
        """
        seeds = [ids.to_backend(i) for i in STANDARD_IDS]
        answer = await bfs_query(graph, seeds, 1, limits=TraversalLimits(max_nodes=1000, max_edges_per_node=1000))
        edges = [Edge(*triple) for triple in answer.triples]
        assert edges, "the standard graph's 1-hop answer from every entity has edges"
        direct = await graph.metadata_for_edges(edges)
        for edge in edges:
            expected = dict(direct.get(edge) or {})
            assert answer.edge_metadata.get(edge) == expected, f"edge metadata of {edge} in a full bfs_query"
        nodes = await graph.metadata_for_nodes(answer.node_ids)
        for node_id in answer.node_ids:
            assert answer.node_metadata.get(node_id) == nodes[node_id], f"metadata of {node_id} in a full bfs_query"

    # --- search --------------------------------------------------------------

    @pytest.mark.parametrize("case", RANKED_SEARCHES + EMPTY_SEARCHES, ids=lambda c: c.label)
    async def test_search_answers_are_well_formed(self, graph: Graph, ids: IdMap, case: SearchCase) -> None:
        """At most 20 stubs of visible entities with their true types, within node_types."""
        stubs = await graph.search_entities(case.query, case.node_types)
        assert isinstance(stubs, list) and len(stubs) <= SEARCH_LIMIT, f"search {case.label!r}: {stubs!r}"
        for stub in stubs:
            assert isinstance(stub, EntityStub), f"search must return EntityStub records, got {type(stub).__name__}"
            entity_id = ids.to_standard(stub.id)
            assert entity_id in NODE_TYPES, f"search {case.label!r} returned {stub.id!r}, not a visible entity"
            assert stub.entity_type == NODE_TYPES[entity_id], f"search {case.label!r}: wrong type in {stub!r}"
            if case.node_types is not None:
                assert stub.entity_type in case.node_types, f"search {case.label!r} ignored node_types: {stub!r}"
            if stub.name is not None:
                assert stub.name == EXPECTED_NODE_METADATA[entity_id]["name"], f"search {case.label!r}: {stub!r}"
        assert len({s.id for s in stubs}) == len(stubs), f"search {case.label!r} returned duplicates"
        returned = {ids.to_standard(s.id) for s in stubs}
        assert not returned & set(case.absent), f"search {case.label!r} returned {sorted(returned & set(case.absent))}"

    @requires(lexical_search=True)
    @pytest.mark.parametrize("case", RANKED_SEARCHES, ids=lambda c: c.label)
    async def test_search_ranks_exact_match_first(self, graph: Graph, ids: IdMap, case: SearchCase) -> None:
        """An exact name or synonym match comes first."""
        stubs = await graph.search_entities(case.query, case.node_types)
        got = [ids.to_standard(s.id) for s in stubs]
        if case.first is not None:
            assert got[:1] == [case.first], f"search {case.label!r}: expected {case.first!r} first, got {got}"

    @requires(lexical_search=True)
    @pytest.mark.parametrize("case", EMPTY_SEARCHES, ids=lambda c: c.label)
    async def test_search_without_match_is_empty(
        self,
        request: pytest.FixtureRequest,
        backend: GraphBackend,
        graph: Graph,
        tested_capabilities: Capabilities,
        case: SearchCase,
    ) -> None:
        """Nothing matches: ``[]``, not an error."""
        if tested_capabilities.vector_search and not has_vector_search(backend):
            skip(request, "search_entities ranks by embeddings, so every query has neighbours")
        assert await graph.search_entities(case.query, case.node_types) == []

    async def test_search_scores_rank_best_first(self, graph: Graph) -> None:
        """Scores, where given, are numbers, higher is better, so they never rise down the list."""
        for case in RANKED_SEARCHES:
            scores = [s.score for s in await graph.search_entities(case.query, case.node_types)]
            given = [score for score in scores if score is not None]
            assert given == sorted(given, reverse=True), f"search {case.label!r}: scores rise down the list {scores}"

    # --- honest search: the engine's search_entities over this backend ------

    NONSENSE_QUERIES: ClassVar[tuple[str, ...]] = ("xyzzy nonsense query", "zzqqq", "qwzx vbnmk plorf")
    """Queries that mean nothing in any graph: every search mode answers ``[]``."""

    def _search_graph(self, backend: GraphBackend, embedder: Embedder) -> Graph:
        return Graph(backend, plugins=[postprocess], cache=None, embedder=embedder)

    @requires(lexical_search=True)
    @pytest.mark.parametrize("query", NONSENSE_QUERIES)
    async def test_engine_search_of_nonsense_is_empty_in_every_mode(
        self,
        request: pytest.FixtureRequest,
        backend: GraphBackend,
        tested_capabilities: Capabilities,
        embedder: Embedder,
        query: str,
    ) -> None:
        """Nothing relevant, nothing returned: no mode pads the answer with the nearest vectors."""
        from bfsql.engine.search import available_modes, search_entities

        if tested_capabilities.vector_search and not has_vector_search(backend):
            skip(request, "search_entities ranks by embeddings, so every query has neighbours")
        graph = self._search_graph(backend, embedder)
        for mode in [None, *available_modes(graph)]:
            got = await search_entities(graph, query, mode=mode)
            assert got == [], f"search_entities({query!r}, mode={mode!r}) returned {[s.id for s in got]}, not []"

    @requires(lexical_search=True)
    @pytest.mark.parametrize("case", RANKED_SEARCHES, ids=lambda c: c.label)
    async def test_engine_search_puts_exact_matches_first_with_score_one(
        self, backend: GraphBackend, ids: IdMap, embedder: Embedder, case: SearchCase
    ) -> None:
        """In the default mode an exact name or synonym match comes first, scored 1.0, by the lexical ranker."""
        from bfsql.engine.search import labels_of, lexical_score, search_entities

        if case.first is None:
            return
        expected = EXPECTED_NODE_METADATA[case.first]
        if lexical_score(case.query, case.first, labels_of(case.first, expected)) < 1.0:
            return
        got = await search_entities(self._search_graph(backend, embedder), case.query, case.node_types)
        assert got, f"search_entities({case.query!r}) found nothing; expected {case.first!r}"
        first = got[0]
        assert (ids.to_standard(first.id), first.score, first.lexical_score) == (case.first, 1.0, 1.0), (
            f"search_entities({case.query!r}): expected {case.first!r} first with score 1.0, got {first!r}"
        )
        assert "lexical" in (first.rankers or []), f"search_entities({case.query!r}): {first!r}"

    @pytest.mark.parametrize("query", ["!!!", "\x00", "\x00\x00", "-- ..."])
    async def test_engine_search_refuses_junk_queries(
        self, backend: GraphBackend, embedder: Embedder, query: str
    ) -> None:
        """A query with no letter or digit is an invalid argument on every backend, never a list of hits."""
        from bfsql.engine.search import search_entities
        from bfsql.errors import InvalidArgument

        with pytest.raises(InvalidArgument, match="no letter or digit"):
            await search_entities(self._search_graph(backend, embedder), query)

    # --- vector search (optional primitive) ----------------------------------

    @requires(vector_search=True)
    @pytest.mark.parametrize(("name", "entity_id"), VECTOR_QUERIES, ids=[q[0] for q in VECTOR_QUERIES])
    async def test_vector_search_ranks_nearest_first(
        self,
        request: pytest.FixtureRequest,
        backend: GraphBackend,
        ids: IdMap,
        embedder: Embedder,
        name: str,
        entity_id: str,
    ) -> None:
        """The embedding of an entity's own name finds it first; scores are cosines, best first."""
        self._needs_vector_primitive(request, backend)
        await backend.bind_embedder(embedder)
        (vector,) = await embedder.embed([name])
        stubs = await backend.vector_search(vector, None, 5)
        assert 0 < len(stubs) <= 5, f"vector_search({name!r}, limit=5) returned {len(stubs)} stubs"
        got = [ids.to_standard(s.id) for s in stubs]
        assert got[0] == entity_id, f"vector_search({name!r}): expected {entity_id!r} first, got {got}"
        invisible = set(got) - set(NODE_TYPES)
        assert not invisible, f"vector_search({name!r}) returned ids of no visible entity: {invisible}"
        assert all(s.score is not None for s in stubs), f"vector_search({name!r}): hits without a score"
        scores = [float(s.score or 0.0) for s in stubs]
        assert all(-1.0 <= s <= 1.0 for s in scores), f"vector_search({name!r}): scores are not cosines: {scores}"
        assert scores == sorted(scores, reverse=True), f"vector_search({name!r}): scores not descending {scores}"

    @requires(vector_search=True)
    async def test_vector_search_respects_node_types(
        self, request: pytest.FixtureRequest, backend: GraphBackend, ids: IdMap, embedder: Embedder
    ) -> None:
        """Only the requested types, at most ``limit``; ``[]`` asks for nothing."""
        self._needs_vector_primitive(request, backend)
        await backend.bind_embedder(embedder)
        (vector,) = await embedder.embed(["Aspirin"])
        assert len(await backend.vector_search(vector, None, 2)) == 2
        drugs = await backend.vector_search(vector, ["Drug"], 20)
        assert drugs and all(NODE_TYPES[ids.to_standard(s.id)] == "Drug" for s in drugs), drugs
        assert await backend.vector_search(vector, [], 20) == []

    # --- batch primitives ---------------------------------------------------

    async def test_batch_metadata_agrees_with_one_id_at_a_time(self, graph: Graph, ids: IdMap) -> None:
        """``metadata_for_nodes`` of many ids equals the calls of one id each; invisible ids are left out."""
        batch = await graph.metadata_for_nodes([ids.to_backend(i) for i in ALL_IDS])
        assert sorted(batch) == sorted(ids.to_backend(i) for i in STANDARD_IDS), "metadata_for_nodes keys"
        for backend_id, metadata in batch.items():
            assert metadata == await graph.metadata_for_node(backend_id), f"metadata_for_nodes[{backend_id!r}]"
        edges = [ids.edge(t) for t in (*ALL_EDGES, UNKNOWN_EDGE)]
        many = await graph.metadata_for_edges(edges)
        for edge in edges[:-1]:
            assert many.get(edge) == (await graph.metadata_for_edges([edge])).get(edge), f"metadata_for_edges[{edge}]"
        assert many.get(edges[-1], {}) == {}, "metadata_for_edges: an unknown edge must be absent or {}"

    @requires(batch_primitives=True)
    async def test_batch_primitives_are_answered_natively(self, backend: GraphBackend) -> None:
        """A backend declaring batch_primitives answers hop itself, not through the single-id fan-out."""
        derived = [m for m in BATCH_METHODS if getattr(type(backend), m, None) is getattr(GraphDbInterface, m)]
        assert not derived, f"batch_primitives is declared but these are derived from single-id calls: {derived}"

    # --- tools through the engine -------------------------------------------

    @pytest.mark.parametrize("case", TRAVERSALS, ids=lambda c: c.name)
    async def test_traversal(
        self, request: pytest.FixtureRequest, graph: Graph, ids: IdMap, case: TraversalCase
    ) -> None:
        """bfs_query / intersect_subgraphs answers equal the hand-computed ones."""
        self._needs_order(request, case, ids)
        answer = await run_traversal(graph, case.tool, case.arguments, ids, case.max_edges_per_node)
        check_traversal(case, answer, ids)

    @pytest.mark.parametrize("case", TRAVERSALS, ids=lambda c: c.name)
    async def test_counts_are_those_of_the_whole_traversal(
        self, graph: Graph, ids: IdMap, case: TraversalCase
    ) -> None:
        """schema_summary's counts add up to node_count and edge_count, and are the types of the nodes and the
        predicates of the edges of the whole traversal (the same call without paging, counted here). (A document
        that lists every node and edge leaves them out: its lists are the counts.)"""
        answer = await run_traversal(graph, case.tool, case.arguments, ids, case.max_edges_per_node)
        whole = {k: v for k, v in case.arguments.items() if k not in ("limit", "offset")}
        full = await run_traversal(graph, case.tool, whole, ids, case.max_edges_per_node)
        summary = answer["schema_summary"]
        types = summary.get("entity_type_counts") or tally(n["entity_type"] for n in answer["nodes"])
        predicates = summary.get("predicate_counts") or tally(e["predicate"] for e in answer["edges"])
        counts = (answer["node_count"], answer["edge_count"])
        assert (sum(types.values()), sum(predicates.values())) == counts, f"{case.name}: {summary} against {counts}"
        assert types == Counter(n["entity_type"] for n in full["nodes"]), f"{case.name}: {summary}"
        assert predicates == Counter(e["predicate"] for e in full["edges"]), f"{case.name}: {summary}"
        assert list(types) == sorted(types) and list(predicates) == sorted(predicates), f"{case.name}: unsorted"

    @pytest.mark.parametrize("case", TRAVERSALS, ids=lambda c: c.name)
    async def test_limit_zero_answers_the_counts_alone(
        self, backend: GraphBackend, ids: IdMap, case: TraversalCase
    ) -> None:
        """limit=0 answers the whole traversal's counts, schema summary, cuts and warnings, and no node, edge,
        path or context; without min_mentions (which needs every node's metadata) it reads no metadata."""
        graph = Graph(backend, plugins=[postprocess], cache=None)
        asked = {k: v for k, v in case.arguments.items() if k != "offset"} | {"limit": 0}
        answer = await run_traversal(graph, case.tool, asked, ids, case.max_edges_per_node)
        where = f"{case.name} with limit=0"
        assert (answer["nodes"], answer["edges"]) == ([], []), f"{where}: {answer}"
        assert "paths" not in answer and "context" not in answer, f"{where}: {answer}"
        assert (answer["node_count"], answer["edge_count"]) == (case.node_count, case.edge_count), f"{where}"
        assert answer["schema_summary"] == {
            "entity_types_found": list(case.entity_types_found), "predicates_found": list(case.predicates_found),
            "entity_type_counts": dict(case.entity_type_counts), "predicate_counts": dict(case.predicate_counts),
        }, f"{where}: {answer['schema_summary']}"
        reasons = [t["reason"] for t in answer.get("truncated") or []]
        assert reasons == [r for r in case.truncated if r != "page"], f"{where}: {answer.get('truncated')}"
        assert len(answer.get("warnings") or []) == case.warnings, f"{where}: {answer.get('warnings')}"
        if "min_mentions" not in case.arguments:
            read = {name: graph.stats.calls.get(name, 0) for name in ("metadata_for_nodes", "metadata_for_edges")}
            assert read == {"metadata_for_nodes": 0, "metadata_for_edges": 0}, f"{where} read metadata: {read}"

    @requires(statistics=True)
    async def test_statistics_count_the_standard_graph(self, graph: Graph, ids: IdMap) -> None:
        """The entities by type, the edges by predicate and the best-connected entities (most edges first, ties
        by id): exactly, when the backend says they are exact; else estimates of the graph's types and predicates."""
        counted = await graph.statistics()
        assert counted is not None, "capabilities.statistics is declared, but statistics() answered None"
        hubs = [(ids.to_standard(h.id), h.entity_type, h.degree) for h in counted.hubs or []]
        expected_hubs = [(i, NODE_TYPES[i], degree) for i, degree in EXPECTED_HUBS]
        if not ids.preserves_order:  # ties are broken by the backend's ids
            hubs.sort(key=lambda hub: (-hub[2], hub[0]))
        if not counted.exact:
            assert set(counted.entity_type_counts or {}) <= set(EXPECTED_ENTITY_TYPE_COUNTS), counted
            assert set(counted.predicate_counts or {}) <= set(EXPECTED_PREDICATE_COUNTS), counted
            assert all(hub[:2] in {h[:2] for h in expected_hubs} for hub in hubs), hubs
            return
        assert counted.entity_type_counts == EXPECTED_ENTITY_TYPE_COUNTS, counted
        assert counted.predicate_counts == EXPECTED_PREDICATE_COUNTS, counted
        assert hubs == expected_hubs, hubs
        three = await graph.statistics(3)
        assert three is not None and [ids.to_standard(h.id) for h in three.hubs or []] == [TP53, MDM2, GASTRIC]

    @pytest.mark.parametrize("call", ERROR_CALLS, ids=lambda c: f"{c[0]}-{'-'.join(c[1]['seeds'])}")
    async def test_traversal_unknown_seeds_fail(
        self, graph: Graph, ids: IdMap, call: tuple[str, dict[str, Any]]
    ) -> None:
        """Unknown or merged seeds are an unknown-entity error (for bfs_query: when no seed is known)."""
        tool, arguments = call
        with pytest.raises(UnknownEntity):
            await run_traversal(graph, tool, arguments, ids)

    async def test_parity_with_memory_backend(self, graph: Graph, ids: IdMap) -> None:
        """The canned calls of bfsql.testing.parity answer as on the memory backend (the reference)."""
        reference = Graph(MemoryBackend(standard_records()), plugins=[postprocess], cache=None)
        assert await assert_parity(reference, graph, None, ids) > 0

    # --- the walk in the store (the traverse primitive) --------------------------

    @pytest.fixture
    def load_records(self) -> Callable[[list[Record]], Awaitable[GraphBackend]] | None:
        """Optional: builds a backend from records (the suite closes it), for the checks on random graphs."""
        return None

    @pytest.fixture
    def as_stored(self) -> Callable[[list[Record]], list[Record]] | None:
        """Optional: a random graph's records as the store can hold them, for the exact-count check: ids spelled
        its way (:func:`bfsql.testing.random_graphs.respelled`; a SPARQL store's IRIs) and what its data model
        cannot say left out. ``load_records`` gets these, and the independent walk reads them. None: as they are."""
        return None

    @requires(traversal=True)
    async def test_the_store_walk_answers_as_the_hop_walk(self, backend: GraphBackend, ids: IdMap) -> None:
        """bfs_query answers the same whether the store walks (traverse) or the engine walks hop by hop.

        Every seed of the standard graph, 1 to 3 hops, tight and default limits, with and without
        an excluded type, whole, paged and counted alone (limit 0): counts, the page's nodes and
        edges, the schema with its counts, the cuts and the warnings.
        """
        await _compare_walks(backend, [ids.to_backend(i) for i in (*STANDARD_IDS, MERGED)], [NODE_TYPES[TP53]])

    @requires(traversal=True)
    async def test_the_store_intersection_answers_as_the_hop_walk(self, backend: GraphBackend, ids: IdMap) -> None:
        """intersect_subgraphs answers the same whether the store walks (intersect) or the engine walks hop by
        hop: every pair of standard seeds (and one triple), k 1 to 3, tight and default limits, with and without
        an excluded type, with and without a limit (1, and 0: the counts alone): counts, nodes, edges, schema with
        its counts, cuts, paths and warnings."""
        await _compare_intersections(backend, [ids.to_backend(i) for i in STANDARD_IDS], [NODE_TYPES[TP53]])

    @requires(traversal=True)
    async def test_the_store_walk_answers_as_the_hop_walk_on_random_graphs(
        self, request: pytest.FixtureRequest, load_records: Callable[[list[Record]], Awaitable[GraphBackend]] | None
    ) -> None:
        """The same comparison on random graphs (hubs, self-loops, dangling and merged ends), loaded by
        the ``load_records`` fixture."""
        if load_records is None:
            skip(request, "the test class gives no load_records fixture to build a backend from random records")
            return
        for number in range(RANDOM_GRAPHS):
            rng = random.Random(number)
            records = random_records(rng)
            backend = await load_records(records)
            try:
                ids = [r.id for r in records if isinstance(r, EntityRecord)]
                await _compare_walks(backend, rng.sample(ids, k=4), list(TYPES[:1]), rng)
                if type(backend).intersect is not Primitives.intersect:
                    await _compare_intersections(backend, rng.sample(ids, k=4), list(TYPES[:1]), rng)
                    await _compare_intersections(backend, rng.sample(ids, k=min(len(ids), 12)), list(TYPES[:1]), rng,
                                                 whole=True)
            finally:
                await backend.aclose()

    async def test_counts_are_exact_past_max_nodes_on_random_graphs(
        self, request: pytest.FixtureRequest, load_records: Callable[[list[Record]], Awaitable[GraphBackend]] | None,
        as_stored: Callable[[list[Record]], list[Record]] | None,
    ) -> None:
        """bfs_query and intersect_subgraphs count what an independent breadth-first search counts
        (:mod:`bfsql.testing.reference_walk`) on random graphs, at the default bounds but ``max_nodes`` of
        :data:`LISTED`: they list at most that many nodes and say so (a ``page`` note; an intersection, a
        ``max_nodes`` note), and their counts, by type and predicate too, are the whole walk's, whether the store
        walks or the engine walks hop by hop."""
        if load_records is None:
            skip(request, "the test class gives no load_records fixture to build a backend from random records")
            return
        for number in range(EXACT_GRAPHS):
            rng = random.Random(1000 + number)
            records = random_records(rng)
            if as_stored is not None:
                records = as_stored(records)
            backend = await load_records(records)
            try:
                ids, reference = [r.id for r in records if isinstance(r, EntityRecord)], ReferenceGraph(records)
                for plugins in ([], [_HopByHop()]):
                    await _check_exact_counts(Graph(backend, plugins=list(plugins), cache=None), reference, ids, rng)
            finally:
                await backend.aclose()

    # --- the MCP tool layer -------------------------------------------------

    async def _client(self, backend: GraphBackend, max_edges_per_node: int | None = None, **options: Any) -> Any:
        from mcp import Client

        from bfsql.server import build_server
        from bfsql.settings import ServerSettings

        settings = ServerSettings(**options)
        if max_edges_per_node is not None:
            settings = settings.for_graph({"max_edges_per_node": max_edges_per_node})
        return Client(await build_server(Graph(backend, plugins=[postprocess]), settings))

    @pytest.mark.parametrize("case", TRAVERSALS, ids=lambda c: c.name)
    async def test_mcp_traversal(
        self, request: pytest.FixtureRequest, backend: GraphBackend, ids: IdMap, case: TraversalCase
    ) -> None:
        """The same answers through the real MCP tools (an in-process client, cache on)."""
        self._needs_order(request, case, ids)
        async with await self._client(backend, case.max_edges_per_node) as client:
            result = await client.call_tool(case.tool, backend_arguments(case.arguments, ids))
            check_traversal(case, _payload(result, case.name), ids)

    async def test_mcp_entity_tools(
        self, backend: GraphBackend, ids: IdMap, tested_capabilities: Capabilities
    ) -> None:
        """describe_schema, search_entities, describe_entity and describe_entities through MCP."""
        async with await self._client(backend) as client:
            schema = _payload(await client.call_tool("describe_schema", {}), "describe_schema")
            assert schema["comprehensive"] == tested_capabilities.comprehensive_schema
            if tested_capabilities.comprehensive_schema:
                assert schema["entity_types"] == list(EXPECTED_ENTITY_TYPES)
                assert schema["predicates"] == list(EXPECTED_PREDICATES)
            _check_schema_counts(schema, tested_capabilities, ids)

            query = {"query": "LFS", "node_types": ["Disease"], "mode": "lexical"}
            hits = _payload(await client.call_tool("search_entities", query), "search_entities")["items"]
            assert all(hit["entity_type"] == "Disease" for hit in hits), hits
            if tested_capabilities.lexical_search:
                assert ids.to_standard(hits[0]["id"]) == LFS, hits

            flat = _payload(await client.call_tool("describe_entity", {"id": ids.to_backend(TP53)}), "describe_entity")
            assert (ids.to_standard(flat["id"]), flat["entity_type"]) == (TP53, "Gene")
            check_node_metadata(flat, EXPECTED_NODE_METADATA[TP53], "describe_entity")

            asked = [ids.to_backend(i) for i in DESCRIBE_ENTITIES_IDS]
            many = _payload(await client.call_tool("describe_entities", {"ids": asked}), "describe_entities")["items"]
            assert [ids.to_standard(n["id"]) for n in many] == list(EXPECTED_DESCRIBE_ENTITIES)
            for node in many:
                check_node_metadata(node["metadata"], EXPECTED_NODE_METADATA[ids.to_standard(node["id"])], "describe")

            for missing in (UNKNOWN, MERGED):
                result = await client.call_tool("describe_entity", {"id": ids.to_backend(missing)})
                assert result.is_error, f"describe_entity({missing!r}) must be an error"


    async def test_mcp_counts_alone(self, backend: GraphBackend, ids: IdMap) -> None:
        """bfs_query and intersect_subgraphs with limit=0 through MCP: the counts, with empty node and edge lists."""
        async with await self._client(backend) as client:
            for case in (TRAVERSALS[1], TRAVERSALS[-1]):  # bfs_two_hops, intersect_k2_exclude_node_types
                arguments = backend_arguments({**case.arguments, "limit": 0}, ids)
                answer = _payload(await client.call_tool(case.tool, arguments), case.name)
                assert (answer["nodes"], answer["edges"]) == ([], []), answer
                assert (answer["node_count"], answer["edge_count"]) == (case.node_count, case.edge_count), answer
                summary = answer["schema_summary"]
                assert summary["entity_type_counts"] == dict(case.entity_type_counts), summary
                assert summary["predicate_counts"] == dict(case.predicate_counts), summary


def _check_schema_counts(schema: dict[str, Any], capabilities: Capabilities, ids: IdMap) -> None:
    """describe_schema's counts: there, and exact where the backend says they are, when it declares statistics;
    absent otherwise."""
    if not capabilities.statistics:
        assert "counts_exact" not in schema and "hubs" not in schema, schema
        return
    assert isinstance(schema.get("counts_exact"), bool), schema
    if schema["counts_exact"]:
        assert schema["entity_type_counts"] == EXPECTED_ENTITY_TYPE_COUNTS, schema
        assert schema["predicate_counts"] == EXPECTED_PREDICATE_COUNTS, schema
        hubs = sorted((-h["degree"], ids.to_standard(h["id"])) for h in schema["hubs"])
        assert hubs == sorted((-degree, i) for i, degree in EXPECTED_HUBS), schema["hubs"]


RANDOM_GRAPHS = 12
"""Random graphs the store walk is compared on."""


EXACT_GRAPHS = 4
"""Random graphs the counts are checked on against the reference walk."""

LISTED = 3
"""``max_nodes`` of the exact-count checks: far fewer nodes than the random graphs' walks reach."""


def _counted(answer: Any) -> Counts:
    return Counts(answer.node_count, answer.edge_count, answer.entity_type_counts, answer.predicate_counts)


async def _check_exact_counts(graph: Graph, reference: ReferenceGraph, ids: list[str], rng: random.Random) -> None:
    """Every seed choice, hop count and exclusion of one random graph: counts exact, at most :data:`LISTED` listed."""
    limits = TraversalLimits(max_nodes=LISTED)
    for seeds, hops, excluded in itertools.product(
        ([rng.choice(ids)], rng.sample(ids, k=3)), (1, 2, 3), ([], [TYPES[0]])
    ):
        where = (seeds, hops, excluded)
        expected = reference.bfs(seeds, hops, excluded)
        arguments: dict[str, Any] = {"topology_only": True, "limits": limits, "exclude_node_types": excluded or None}
        if not expected.node_count:
            with pytest.raises(UnknownEntity):
                await bfs_query(graph, seeds, hops, **arguments)
        else:
            answer = await bfs_query(graph, seeds, hops, **arguments)
            assert _counted(answer) == expected, where
            assert len(answer.node_ids) == min(expected.node_count, LISTED), where
            assert [t.reason for t in answer.truncated] == (["page"] if expected.node_count > LISTED else []), where
        pair = seeds[:2] if len(seeds) > 1 else [*seeds, rng.choice(ids)]
        if len(set(pair)) < 2 or not all(s in reference.types for s in pair):
            continue
        shared = reference.intersection(pair, hops, excluded)
        answer = await intersect_subgraphs(graph, pair, hops, **arguments)
        assert _counted(answer) == shared, (pair, hops, excluded)
        assert len(answer.node_ids) == min(shared.node_count, LISTED), (pair, hops, excluded)
        cut = ["max_nodes"] if shared.node_count > LISTED else []
        assert [t.reason for t in answer.truncated] == cut, (pair, hops, excluded, answer.truncated)


class _HopByHop:
    """A ``hop`` wrapper that changes nothing: a graph with it walks hop by hop (the engine's own walk)."""

    @hookimpl(wrapper=True)
    def hop(self, entity_ids: list[str]) -> Any:
        return (yield)


def _walked(answer: Any) -> tuple[Any, ...]:
    return (
        answer.node_count, answer.edge_count, answer.node_ids, sorted(map(tuple, answer.triples)),
        answer.schema_summary, [(t.reason, t.detail, t.next_offset, t.capped_nodes) for t in answer.truncated],
        answer.warnings, {i: answer.distance[i] for i in answer.node_ids},
    )


async def _compare_walks(
    backend: GraphBackend, seeds: list[str], excluded: list[str], rng: random.Random | None = None
) -> None:
    store = Graph(backend, plugins=[], cache=None)
    hop_by_hop = Graph(backend, plugins=[_HopByHop()], cache=None)
    assert store.walks_in_store("traverse") and not hop_by_hop.walks_in_store("traverse")
    cases = [(seed,) for seed in seeds] + [tuple(seeds[:3])]
    for chosen in cases:
        for hops, limits, exclude, limit, offset in itertools.product(
            (1, 2, 3), (TraversalLimits(), TraversalLimits(max_nodes=4, max_edges_per_node=2)), (None, excluded),
            (None, 3, 0), (0, 2),
        ):
            if rng is not None and rng.random() < 0.5:
                continue  # random graphs: half the combinations, a different half each
            arguments: dict[str, Any] = {"topology_only": True, "limits": limits, "exclude_node_types": exclude,
                                         "limit": limit, "offset": offset}
            try:
                walked = await bfs_query(hop_by_hop, list(chosen), hops, **arguments)
            except UnknownEntity:
                with pytest.raises(UnknownEntity):
                    await bfs_query(store, list(chosen), hops, **arguments)
                continue
            surveyed = await bfs_query(store, list(chosen), hops, **arguments)
            assert _walked(surveyed) == _walked(walked), (chosen, hops, limits, exclude, limit, offset)


def _intersected(answer: Any) -> tuple[Any, ...]:
    return (*_walked(answer), [(p.seed, p.node, [tuple(e) for e in p.edges]) for p in answer.paths])


async def _compare_intersections(
    backend: GraphBackend, seeds: list[str], excluded: list[str], rng: random.Random | None = None,
    whole: bool = False,
) -> None:
    """Compare the store's intersections with the engine's: of every pair of ``seeds`` and its first three, or
    (``whole``) of all of them at once (a dozen seeds: more than a byte of seed bits a node)."""
    if type(backend).intersect is Primitives.intersect:
        return  # the backend walks whole traversals in the store, but intersects hop by hop
    store = Graph(backend, plugins=[], cache=None)
    hop_by_hop = Graph(backend, plugins=[_HopByHop()], cache=None)
    assert store.walks_in_store("intersect") and not hop_by_hop.walks_in_store("intersect")
    cases = [tuple(seeds)] if whole else [tuple(pair) for pair in itertools.combinations(seeds, 2)] + [
        tuple(seeds[:3])]
    for chosen in cases:
        for k, limits, exclude, limit in itertools.product(
            (1, 2, 3), (TraversalLimits(), TraversalLimits(max_nodes=4, max_edges_per_node=2)), (None, excluded),
            (None, 1, 0),
        ):
            if rng is not None and rng.random() < 0.5:
                continue
            arguments: dict[str, Any] = {"topology_only": True, "limits": limits, "exclude_node_types": exclude,
                                         "limit": limit}
            try:
                walked = await intersect_subgraphs(hop_by_hop, list(chosen), k, **arguments)
            except UnknownEntity:
                with pytest.raises(UnknownEntity):
                    await intersect_subgraphs(store, list(chosen), k, **arguments)
                continue
            intersected = await intersect_subgraphs(store, list(chosen), k, **arguments)
            assert _intersected(intersected) == _intersected(walked), (chosen, k, limits, exclude, limit)
