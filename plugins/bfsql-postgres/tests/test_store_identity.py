"""Identity to the store on a real PostgreSQL: each caller's statements run as its role, and row-level security decides.

The standard graph with two caller roles (``bfsql_testsupport.store_identity``): ``genes_diseases``
sees genes and diseases, ``genes_drugs`` genes and drugs, each only the relationships whose both
ends it sees. Alice is mapped by principal, Bob by a value of his token's ``groups`` claim, Carol
by nothing. Calls go through a :class:`~bfsql.Graph` with its cache, as the server's do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bfsql import AccessDenied, CallIdentity, Graph, identified_as
from bfsql.testing.standard_graph import ASPIRIN, CTNNB1, GASTRIC, LFS, MERGED, NUTLIN, PMC001, TP53
from bfsql_postgres import PostgresBackend, PostgresConfig, PostgresStoreError
from bfsql_testsupport.store_identity import LOGIN, prepare_roles

ALICE = CallIdentity("user:alice", {"sub": "alice"})
BOB = CallIdentity("user:bob", {"sub": "bob", "groups": ["staff", "pharmacology"]})
CAROL = CallIdentity("user:carol", {"sub": "carol", "groups": ["staff"]})
ROLES = ["user:alice=genes_diseases", "pharmacology=genes_drugs"]


@pytest.fixture(scope="module")
def login_dsn(standard_dsn_for_roles: str) -> str:
    return asyncio.run(prepare_roles(standard_dsn_for_roles))


@pytest.fixture(scope="module")
def standard_dsn_for_roles(pg_server, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database of its own holding the standard graph (policies are added to it)."""
    from bfsql.testing.standard_graph import write_standard_bundle
    from bfsql_postgres.loader import load_postgres

    bundle = write_standard_bundle(tmp_path_factory.mktemp("roles"))

    async def build() -> str:
        dsn = await pg_server.create_database("roles")
        await load_postgres(dsn, [bundle], embedder="hashing")
        return dsn

    return asyncio.run(build())


@pytest.fixture
async def graph(login_dsn: str) -> AsyncIterator[Graph]:
    """The graph as the server opens it, on a pool of one connection (every call shares it)."""
    backend = await PostgresBackend.create(PostgresConfig(dsn=login_dsn, roles=ROLES, role_claim="groups",
                                                          max_connections=1))
    async with Graph(backend, plugins=[]) as opened:
        yield opened


async def _as(identity: CallIdentity | None, call):
    with identified_as(identity):
        return await call()


async def test_each_role_sees_its_own_rows(graph: Graph):
    for identity, seen, hidden in ((ALICE, LFS, NUTLIN), (BOB, NUTLIN, LFS)):
        found = await _as(identity, lambda: graph.get_nodes([TP53, LFS, NUTLIN, PMC001]))
        assert set(found) == {TP53, seen}, identity.principal
        around = (await _as(identity, lambda: graph.hop([TP53])))[TP53]
        others = {edge[2] if edge[0] == TP53 else edge[0] for edge in around.edges}
        assert seen in others and hidden not in others and PMC001 not in others, (identity.principal, others)
        types = await _as(identity, graph.entity_types)
        assert types == sorted(["Gene", "Disease" if identity is ALICE else "Drug"])
        hits = await _as(identity, lambda: graph.search_entities("nutlin"))
        assert [h.id for h in hits] == ([NUTLIN] if identity is BOB else [])
    everything = await _as(None, lambda: graph.get_nodes([TP53, LFS, NUTLIN, PMC001, MERGED]))
    assert set(everything) == {TP53, LFS, NUTLIN, PMC001}, "the server's own calls run as the login role"


async def test_traversal_in_the_database_and_statistics_follow_the_role(graph: Graph):
    from bfsql import TraversalLimits

    graph.backend.walk_rows = 0  # every walk in one statement in the database
    for identity, kept in ((ALICE, {"Gene", "Disease"}), (BOB, {"Gene", "Drug"})):
        survey = await _as(identity, lambda: graph.traverse([TP53], 2, TraversalLimits(), [], 0, 100))
        assert set(survey.entity_types) == kept, identity.principal
        counted = await _as(identity, lambda: graph.statistics(5))
        assert set(counted.entity_type_counts) == kept


async def test_an_intersection_in_the_database_follows_the_role(graph: Graph, standard_dsn_for_roles: str):
    """As each role, with the loader's saved ends, and with them out of reach (the role not granted them, as a
    deployment granting the tables before they existed): the intersection the hop walk of that role gives."""
    from bfsql import TraversalLimits, hookimpl, intersect_subgraphs

    class HopByHop:
        @hookimpl(wrapper=True)
        def hop(self, entity_ids):
            return (yield)

    walked = Graph(graph.backend, plugins=[HopByHop()], cache=None)
    seeds = [TP53, CTNNB1]

    async def agree() -> None:
        for identity in (ALICE, BOB):
            for k in (1, 2, 3):
                for limits in (TraversalLimits(), TraversalLimits(max_edges_per_node=2)):
                    with identified_as(identity):
                        mine = await intersect_subgraphs(Graph(graph.backend, plugins=[], cache=None), seeds, k,
                                                         limits=limits)
                        hop = await intersect_subgraphs(walked, seeds, k, limits=limits)
                    assert (mine.node_ids, sorted(map(tuple, mine.triples)), mine.truncated) == (
                        hop.node_ids, sorted(map(tuple, hop.triples)), hop.truncated), (identity.principal, k)

    await agree()
    admin = await asyncpg.connect(standard_dsn_for_roles)
    try:
        await admin.execute("REVOKE SELECT ON bfsql_rare_end FROM genes_diseases, genes_drugs")
        await agree()
    finally:
        await admin.execute("GRANT SELECT ON bfsql_rare_end TO genes_diseases, genes_drugs")
        await admin.close()


async def test_the_cache_never_answers_one_role_from_another(graph: Graph):
    """The graph's cache is keyed by role: what Alice read is never Bob's answer, and Alice's repeat is a hit."""
    first = await _as(ALICE, lambda: graph.metadata_for_nodes([TP53, LFS]))
    assert set(first) == {TP53, LFS}
    calls = graph.stats.calls["metadata_for_nodes"]
    assert set(await _as(BOB, lambda: graph.metadata_for_nodes([TP53, LFS]))) == {TP53}
    assert graph.stats.calls["metadata_for_nodes"] == calls + 1, "Bob's call reached the store, TP53 included"
    assert set(await _as(ALICE, lambda: graph.metadata_for_nodes([TP53, LFS]))) == {TP53, LFS}
    assert graph.stats.calls["metadata_for_nodes"] == calls + 1, "Alice's repeat came from the cache"
    assert await _as(BOB, graph.entity_types) == ["Drug", "Gene"]
    assert await _as(ALICE, graph.entity_types) == ["Disease", "Gene"]
    assert set(await _as(None, lambda: graph.metadata_for_nodes([TP53, LFS, NUTLIN]))) == {TP53, LFS, NUTLIN}


async def test_a_pooled_connection_never_carries_a_role_to_the_next_call(graph: Graph):
    """One connection, calls of three identities interleaved (concurrently too): each sees its rows, and afterwards
    the connection is the login role's again."""
    graph.cache.clear()
    asked = [TP53, LFS, NUTLIN, GASTRIC, ASPIRIN]
    expected = {ALICE: {TP53, LFS, GASTRIC}, BOB: {TP53, NUTLIN, ASPIRIN}, None: set(asked)}
    order = [ALICE, BOB, None, BOB, ALICE, None] * 5
    for identity in order:
        assert set(await _as(identity, lambda: graph.backend.get_nodes(asked))) == expected[identity]
    answers = await asyncio.gather(*(_as(i, lambda: graph.backend.get_nodes(asked)) for i in order))
    assert [set(a) for a in answers] == [expected[i] for i in order]
    async with graph.backend.pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == LOGIN


async def test_a_cancelled_call_leaves_no_role_behind(graph: Graph):
    """A call cancelled inside its transaction (after SET LOCAL ROLE) is rolled back with its role."""
    slow = "SELECT pg_sleep(5), current_user"
    task = asyncio.create_task(_as(ALICE, lambda: graph.backend._fetch(slow)))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert set(await graph.backend.get_nodes([LFS, NUTLIN])) == {LFS, NUTLIN}
    async with graph.backend.pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == LOGIN


async def test_a_caller_without_a_role_is_refused(graph: Graph):
    for call in (lambda: graph.get_nodes([TP53]), lambda: graph.backend.get_nodes([TP53]), graph.entity_types):
        with pytest.raises(AccessDenied) as refused:
            await _as(CAROL, call)
        assert "user:carol" in refused.value.message and "'groups'" in refused.value.message
        assert "default_role" in refused.value.hint


async def test_a_default_role_takes_the_unmapped(login_dsn: str):
    backend = await PostgresBackend.create(PostgresConfig(dsn=login_dsn, roles=ROLES, role_claim="groups",
                                                          default_role="genes_drugs"))
    try:
        assert set(await _as(CAROL, lambda: backend.get_nodes([LFS, NUTLIN]))) == {NUTLIN}
        assert set(await _as(ALICE, lambda: backend.get_nodes([LFS, NUTLIN]))) == {LFS}
    finally:
        await backend.aclose()


async def test_a_claim_selects_only_a_role_an_entry_names(graph: Graph):
    """A token claiming a role name the map does not list (here the login role itself) gets no role from it."""
    mallory = CallIdentity("user:mallory", {"groups": [LOGIN, "outsider", "genes_drugs"]})
    with pytest.raises(AccessDenied):
        await _as(mallory, lambda: graph.backend.get_nodes([TP53]))


@pytest.mark.parametrize(("roles", "problem"), [
    (["user:eve=outsider"], "may not SET ROLE to 'outsider'"),
    (["user:eve=nobody_here"], "role 'nobody_here' does not exist"),
    (["user:eve=no_grants"], "role 'no_grants' may not SELECT from"),
])
async def test_roles_the_login_role_cannot_use_stop_the_start(login_dsn: str, roles: list[str], problem: str):
    with pytest.raises(PostgresStoreError) as refused:
        await PostgresBackend.create(PostgresConfig(dsn=login_dsn, roles=roles))
    assert problem in refused.value.message, refused.value.message


async def test_role_names_are_parameters_never_sql(login_dsn: str):
    """A role name shaped like SQL is a name PostgreSQL looks up, not a statement: it does not exist."""
    with pytest.raises(PostgresStoreError) as refused:
        await PostgresBackend.create(PostgresConfig(dsn=login_dsn, roles=['user:eve=x"; DROP TABLE entity; --']))
    assert "does not exist" in refused.value.message


def test_the_role_options_refuse_what_cannot_work():
    from pydantic import ValidationError

    for bad in ({"role_claim": "groups"}, {"roles": ["user:a="]}, {"roles": ["=r"]}, {"default_role": "r" * 64},
                {"roles": ["user:a=r1", "user:a=r2"]}, {"default_role": "a\x00b"}):
        with pytest.raises(ValidationError):
            PostgresConfig(**bad)
    assert PostgresConfig(roles={"user:a": "r1"}).roles == ["user:a=r1"]  # a table in a configuration file
