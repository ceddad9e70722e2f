"""Exact answers through the MCP tools: the contract a program reading our answers relies on.

Part of the conformance suite (:class:`~bfsql.testing.BackendConformance` inherits these
checks): lists hold only their items, with their notes beside them; paging through a search
returns each match once with one score, in every mode the backend has; the path grammar
refuses what it does not support, and a variable-length edge walks the same closure on every
backend; describe_edges takes the edges bfs_query answers; unknown
ids are said, not dropped; filter values match the schema ignoring case; ``min_mentions``
keeps what is not below it; the ``max_tokens`` floor is said and never exceeded; the seeds
keep their detail; an intersection names its seeds and path nodes; arguments are strictly
typed (JSON text of the declared type is read); ``rrf`` fuses a graph ranker. Every call
goes through an in-process official MCP client (docs/protocol.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfsql.backend import GraphBackend
from bfsql.budgets import CHARS_PER_TOKEN, MIN_MAX_TOKENS
from bfsql.engine.search import available_modes
from bfsql.graph import Graph
from bfsql.server.answers import notes_in
from bfsql.testing.applicability import requires
from bfsql.testing.idmap import IdMap
from bfsql.testing.standard_graph import (
    ASPIRIN,
    CTNNB1,
    GASTRIC,
    LFS,
    MDM2,
    MDM2_INHIBITS_TP53,
    NUTLIN,
    PMC001,
    PMC002,
    TP53,
    UNKNOWN,
)

__all__ = ["PAGED_QUERIES", "ExactAnswerChecks"]

PAGED_QUERIES = ("TP53", "p53", "gastric cancer", "syndrome", "nutlin inhibits", "MDM2 p53")
"""Search queries paged through in every mode (some match one entity, some several, some none)."""


def _items(result: Any, what: str) -> list[Any]:
    """A list answer's items, after checking that the list holds nothing else and that the answer is one document,
    the same as structured content and as text."""
    assert not result.is_error, f"{what} failed: {result.content[0].text}"
    assert len(result.content) == 1, f"{what}: the answer must be one text block, the document"
    answer = json.loads(result.content[0].text)
    assert result.structured_content == answer, f"{what}: structuredContent differs from the text"
    assert isinstance(answer, dict) and isinstance(answer.get("items"), list), f"{what} must answer a list document"
    for item in answer["items"]:
        assert isinstance(item, dict) and ("id" in item or "subject" in item), f"{what}: {item!r} is not an item"
        assert "truncated" not in item and "reason" not in item, f"{what}: a note inside the list: {item!r}"
    items: list[Any] = answer["items"]
    return items


def _notes(result: Any) -> list[dict[str, Any]]:
    """The notes of an answer's document (what was cut, the budget floor)."""
    return notes_in(json.loads(result.content[0].text))


def _document(result: Any) -> dict[str, Any]:
    """An answer's document."""
    answer: dict[str, Any] = json.loads(result.content[0].text)
    return answer


def _size(result: Any) -> int:
    return sum(len(block.text) for block in result.content)


class ExactAnswerChecks:
    """The exact-answer checks of the conformance suite; mixed into BackendConformance."""

    async def _client(self, backend: GraphBackend, max_edges_per_node: int | None = None, **settings: Any) -> Any:
        raise NotImplementedError  # BackendConformance provides it

    async def _call(self, backend: GraphBackend, tool: str, arguments: dict[str, Any]) -> Any:
        async with await self._client(backend) as client:
            return await client.call_tool(tool, arguments)

    # 1. lists hold only their items ----------------------------------------------------------------------

    async def test_list_answers_hold_only_their_items(self, backend: GraphBackend, ids: IdMap) -> None:
        """search_entities, describe_entities and describe_edges answer documents whose ``items`` hold only items of
        their type; a page that goes on, a cut and unknown ids are said beside the items in the same document."""
        asked = [ids.to_backend(i) for i in (TP53, MDM2, LFS, GASTRIC, NUTLIN, ASPIRIN)] + ["NOPE:404"]
        async with await self._client(backend) as client:
            cut = await client.call_tool("describe_entities", {"ids": asked, "max_tokens": MIN_MAX_TOKENS})
            items = _items(cut, "describe_entities")
            assert [n["reason"] for n in _notes(cut)] == ["max_tokens"], _notes(cut)
            assert _document(cut)["unknown_ids"] == ["NOPE:404"]
            assert all("metadata" in item for item in items)
            for query in ("p53", "TP53", "gastric cancer"):
                page = await client.call_tool("search_entities", {"query": query, "limit": 1})
                assert len(_items(page, "search_entities")) <= 1
                assert _document(page)["page"]["returned"] == len(_items(page, "search_entities"))
            edges = [list(ids.edge(MDM2_INHIBITS_TP53))] * 2 + [["NOPE:1", "X", "NOPE:2"]]
            described = await client.call_tool("describe_edges", {"edges": edges})
            assert len(_items(described, "describe_edges")) == 1

    # 2. one ranking per query, whatever the page ------------------------------------------------------------

    @settings(max_examples=12, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors])
    @given(data=st.data())
    async def test_paging_returns_each_match_once_with_one_score(
        self, backend: GraphBackend, data: st.DataObject
    ) -> None:
        """Paging through a query with random page sizes, in a random mode the backend has, returns each match of
        the whole ranking once, in its order, with the score it has there."""
        async with await self._client(backend) as client:
            mode = data.draw(st.sampled_from(available_modes(Graph(backend))), label="mode")
            query = data.draw(st.sampled_from(PAGED_QUERIES), label="query")
            whole = _items(await client.call_tool(
                "search_entities", {"query": query, "mode": mode, "limit": 100}), "search_entities")
            paged: list[Any] = []
            offset = 0
            while True:
                limit = data.draw(st.integers(1, 4), label="limit")
                page = await client.call_tool("search_entities",
                                              {"query": query, "mode": mode, "limit": limit, "offset": offset})
                paged += _items(page, "search_entities")
                where = _document(page)["page"]
                assert where["offset"] == offset and where["total"] == len(whole), where
                if where.get("next_offset") is None:
                    break
                assert where["next_offset"] == offset + limit
                offset += limit
            assert [(h["id"], h["score"]) for h in paged] == [(h["id"], h["score"]) for h in whole]

    # 3. the grammar refuses what it does not support -------------------------------------------------------

    @pytest.mark.parametrize("edge, words", [
        ("-[!INHIBITS]->", "negation"),
        ("-[*2..4]->", "takes no quantifier"),
        ("-[INHIBITS]->?", "optional edges"),
    ])
    async def test_reserved_path_syntax_is_refused(
        self, backend: GraphBackend, ids: IdMap, edge: str, words: str
    ) -> None:
        """Seed 002's future extensions are syntax errors that say so, never another query."""
        result = await self._call(backend, "path_query", {"query": f"@{ids.to_backend(MDM2)} {edge}"})
        assert result.is_error and words in result.content[0].text, result.content[0].text

    @pytest.mark.parametrize("start, edge, expected", [
        # out of nutlin-3: through the MDM2/TP53 2-cycle and MDM2's self-loop, past the dangling edge, to the triangle
        (NUTLIN, "-[INHIBITS, REGULATES, INTERACTS_WITH, ASSOCIATED_WITH*]->",
         {MDM2: 1, TP53: 1, LFS: 2, GASTRIC: 2, CTNNB1: 2}),
        # into 胃癌: the merged TP53-OLD stays invisible, PMC001's MENTIONS is not walked
        (GASTRIC, "<-[ASSOCIATED_WITH, INTERACTS_WITH, REGULATES, INHIBITS, TREATS*]-",
         {ASPIRIN: 1, TP53: 1, CTNNB1: 1, MDM2: 2, NUTLIN: 2}),
        (NUTLIN, "-[INHIBITS, REGULATES, INTERACTS_WITH, ASSOCIATED_WITH*2]->", {LFS: 2, GASTRIC: 2, CTNNB1: 2}),
    ])
    async def test_a_closure_is_walked_the_same_everywhere(
        self, backend: GraphBackend, ids: IdMap, start: str, edge: str, expected: dict[str, int]
    ) -> None:
        """A variable-length edge reaches each entity once, at its least depth, on every backend (worked by hand)."""
        start_id = json.dumps(ids.to_backend(start), ensure_ascii=False)
        result = await self._call(backend, "path_query", {"query": f"@{start_id} {edge}", "max_results": 50})
        answer = json.loads(result.content[0].text)
        assert not result.is_error, answer
        assert {ids.to_standard(r["entity"]["id"]): r["depth"] for r in answer["results"]} == expected
        assert answer["metadata"]["total_results"] == len(expected)
        assert [r["depth"] for r in answer["results"]] == sorted(r["depth"] for r in answer["results"])

    # 4. describe_edges takes what bfs_query answers ----------------------------------------------------------

    async def test_describe_edges_takes_the_edges_bfs_query_answers(self, backend: GraphBackend, ids: IdMap) -> None:
        """Edge objects from a bfs_query answer (metadata and all) describe the same edges as their triples; a
        malformed edge gets one plain sentence."""
        async with await self._client(backend) as client:
            survey = json.loads((await client.call_tool(
                "bfs_query", {"seeds": [ids.to_backend(NUTLIN)], "max_hops": 1})).content[0].text)
            objects = survey["edges"]
            triples = [[e["subject"], e["predicate"], e["object"]] for e in objects]
            by_object = _items(await client.call_tool("describe_edges", {"edges": objects}), "describe_edges")
            by_triple = _items(await client.call_tool("describe_edges", {"edges": triples}), "describe_edges")
            assert by_object == by_triple and len(by_object) == len(objects) == 2
            for bad in ([["A", "B"]], [["A", "B", "C", "D"]], [{"subject": "A"}], ["A B C"]):
                result = await client.call_tool("describe_edges", {"edges": bad})
                text = result.content[0].text
                assert result.is_error and "edges[0] must be" in text and "pydantic" not in text, text

    # 5. unknown ids are said ---------------------------------------------------------------------------------

    async def test_unknown_ids_are_said_not_dropped(self, backend: GraphBackend, ids: IdMap) -> None:
        """describe_entities and describe_edges name what the graph does not know beside the answer."""
        async with await self._client(backend) as client:
            unknown = ids.to_backend(UNKNOWN)
            found = await client.call_tool("describe_entities", {"ids": [ids.to_backend(TP53), unknown]})
            assert [ids.to_standard(n["id"]) for n in _items(found, "describe_entities")] == [TP53]
            assert _document(found)["unknown_ids"] == [unknown]
            edges = [list(ids.edge(MDM2_INHIBITS_TP53)), [ids.to_backend(UNKNOWN), "INHIBITS", ids.to_backend(TP53)]]
            described = await client.call_tool("describe_edges", {"edges": edges})
            assert len(_items(described, "describe_edges")) == 1
            assert _document(described)["unknown_edges"] == [edges[1]]

    # 6. one case rule for filters ----------------------------------------------------------------------------

    async def test_filter_values_match_the_schema_ignoring_case(self, backend: GraphBackend, ids: IdMap) -> None:
        """exclude_node_types=["paper"] excludes Paper nodes (Appendix A's own example); node_types and
        predicates match the same way, without a warning; so does search's node_types."""
        seed = [ids.to_backend(TP53)]
        async with await self._client(backend) as client:
            exact = json.loads((await client.call_tool(
                "bfs_query", {"seeds": seed, "max_hops": 1, "exclude_node_types": ["Paper"]})).content[0].text)
            folded = json.loads((await client.call_tool(
                "bfs_query", {"seeds": seed, "max_hops": 1, "exclude_node_types": ["paper"]})).content[0].text)
            assert folded == exact
            assert {ids.to_standard(n["id"]) for n in folded["nodes"]}.isdisjoint({PMC001, PMC002})
            typed = json.loads((await client.call_tool("bfs_query", {
                "seeds": seed, "max_hops": 1, "node_types": ["GENE"], "predicates": ["inhibits"]})).content[0].text)
            assert not typed.get("warnings"), typed.get("warnings")
            assert all(("metadata" in n) == (n["entity_type"] == "Gene") for n in typed["nodes"]), typed["nodes"]
            inhibits = [e for e in typed["edges"] if e["predicate"] == "INHIBITS"]
            assert inhibits and all("metadata" in e for e in inhibits)
            assert all("metadata" not in e for e in typed["edges"] if e["predicate"] != "INHIBITS")
            for spelling in ("Disease", "disease", "DISEASE"):
                hits = _items(await client.call_tool(
                    "search_entities", {"query": "LFS", "node_types": [spelling]}), "search_entities")
                assert LFS in {ids.to_standard(h["id"]) for h in hits}, (spelling, hits)

    # 7. min_mentions -----------------------------------------------------------------------------------------

    async def test_min_mentions_keeps_what_is_not_below_it(self, backend: GraphBackend, ids: IdMap) -> None:
        """An explicit threshold removes exactly the nodes below it (Nutlin-3 has 1 mention: kept at 1, removed at
        2); nodes without total_mentions (papers) stay; omitted, nothing is removed."""
        seed = [ids.to_backend(TP53)]
        async with await self._client(backend) as client:
            async def reached(**extra: Any) -> set[str]:
                answer = json.loads((await client.call_tool(
                    "bfs_query", {"seeds": seed, "max_hops": 1, "topology_only": True, **extra})).content[0].text)
                return {ids.to_standard(n["id"]) for n in answer["nodes"]}

            everything = await reached()
            assert NUTLIN in everything and {PMC001, PMC002} <= everything
            assert await reached(min_mentions=1) == everything
            assert await reached(min_mentions=2) == everything - {NUTLIN}

    # 8. the max_tokens floor ---------------------------------------------------------------------------------

    @pytest.mark.parametrize("tokens", [1, 100, MIN_MAX_TOKENS])
    async def test_an_answer_never_exceeds_the_budget_it_reports(
        self, backend: GraphBackend, ids: IdMap, tokens: int
    ) -> None:
        """Below the floor (or below what the smallest answer takes) the answer says what budget it was given, and
        is within it; within the budget it says nothing of it."""
        calls: list[tuple[str, dict[str, Any]]] = [
            ("bfs_query", {"seeds": [ids.to_backend(TP53)], "max_hops": 2}),
            ("intersect_subgraphs", {"seeds": [ids.to_backend(LFS), ids.to_backend(ASPIRIN)], "k": 2}),
            ("describe_entity", {"id": ids.to_backend(TP53)}),
            ("describe_entities", {"ids": [ids.to_backend(TP53), ids.to_backend(MDM2)]}),
            ("path_query", {"query": f"@{ids.to_backend(NUTLIN)} -[*]-> -[*]->"}),
        ]
        async with await self._client(backend) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, {**arguments, "max_tokens": tokens})
                assert not result.is_error, result.content[0].text
                floors = [n for n in _notes(result) if n["reason"] == "max_tokens_floor"]
                budget = tokens
                if floors:
                    budget = int(floors[0]["detail"].split("answered within ")[1].split()[0])
                    assert budget >= MIN_MAX_TOKENS and f"max_tokens={tokens}" in floors[0]["detail"]
                else:
                    assert tokens >= MIN_MAX_TOKENS, f"{tool}: max_tokens={tokens} raised without a note"
                assert _size(result) <= budget * CHARS_PER_TOKEN, (tool, _size(result), budget)
            for bad in (0, -5):
                refused = await client.call_tool("describe_entity", {"id": ids.to_backend(TP53), "max_tokens": bad})
                assert refused.is_error and "max_tokens must be a positive" in refused.content[0].text

    # 9. the seeds keep their detail longest ----------------------------------------------------------------------

    @pytest.mark.parametrize("tokens", [MIN_MAX_TOKENS, 300, 500, 700, 900])
    async def test_the_seed_keeps_detail_while_others_lose_it(
        self, backend: GraphBackend, ids: IdMap, tokens: int
    ) -> None:
        """Under a tight budget the seed is the last node to lose its metadata: no other node keeps metadata the
        seed lost, and from 700 tokens (room for several stubs) the seed keeps it."""
        answer = json.loads((await self._call(
            backend, "bfs_query", {"seeds": [ids.to_backend(TP53)], "max_hops": 2, "max_tokens": tokens}
        )).content[0].text)
        first, *others = answer["nodes"]
        assert ids.to_standard(first["id"]) == TP53
        if any("metadata" in n for n in others) or tokens >= 700:
            assert "metadata" in first, answer

    # 10. an intersection names its seeds and path nodes --------------------------------------------------------

    async def test_an_intersection_names_its_seeds_and_path_nodes(self, backend: GraphBackend, ids: IdMap) -> None:
        """Every id of an intersect_subgraphs answer (seeds, path nodes) has a type and a name in it."""
        seeds = [ids.to_backend(LFS), ids.to_backend(ASPIRIN)]
        answer = json.loads((await self._call(
            backend, "intersect_subgraphs", {"seeds": seeds, "k": 2})).content[0].text)
        named = {n["id"]: n for n in [*answer["nodes"], *answer.get("context", [])]}
        assert set(seeds) <= set(named), answer.get("context")
        for path in answer.get("paths") or []:
            for subject, _, obj in path["edges"]:
                assert subject in named and obj in named, (path, sorted(named))
        for node in answer.get("context", []):
            assert node["entity_type"] and node.get("name"), node
        assert answer["node_count"] == len(answer["nodes"])  # context nodes are not counted

    # 11. argument types -------------------------------------------------------------------------------------

    async def test_json_text_of_the_declared_type_is_read_and_other_types_refused(
        self, backend: GraphBackend, ids: IdMap
    ) -> None:
        """A list or number sent as JSON text is read (what MCP Inspector sends); true is not 1, "yes" is not
        true, and each mismatch gets one plain sentence."""
        seed = [ids.to_backend(TP53)]
        async with await self._client(backend) as client:
            plain = await client.call_tool("bfs_query", {"seeds": seed, "max_hops": 1, "node_types": ["Gene"]})
            texted = await client.call_tool("bfs_query", {"seeds": json.dumps(seed), "max_hops": "1",
                                                          "node_types": '["Gene"]'})
            assert not texted.is_error and texted.content[0].text == plain.content[0].text
            for arguments, words in (
                ({"max_hops": True}, "max_hops must be an integer"),
                ({"max_hops": 1, "topology_only": "yes"}, "topology_only must be true or false"),
                ({"max_hops": 1, "node_types": "Gene"}, "node_types must be a list"),
                ({"max_hops": 1.5}, "max_hops must be an integer"),
            ):
                result = await client.call_tool("bfs_query", {"seeds": seed, **arguments})
                assert result.is_error and words in result.content[0].text, (arguments, result.content[0].text)
                assert "pydantic" not in result.content[0].text and "\n" not in result.content[0].text

    # 12. the graph ranker -------------------------------------------------------------------------------------

    @requires(lexical_search=True)
    async def test_rrf_fuses_a_graph_ranker(self, backend: GraphBackend, ids: IdMap) -> None:
        """"nutlin inhibits": Nutlin-3 is named, MDM2 is what it INHIBITS; the graph ranker finds it, with its own
        rank and score; the neighbours of what a query names are no answer to the name alone."""
        async with await self._client(backend) as client:
            hits = _items(await client.call_tool(
                "search_entities", {"query": "nutlin inhibits", "mode": "rrf"}), "search_entities")
            by_id = {ids.to_standard(h["id"]): h for h in hits}
            assert MDM2 in by_id and "graph" in by_id[MDM2]["rankers"], hits
            assert by_id[MDM2]["graph_score"] == 1.0
            assert TP53 not in by_id or "graph" not in by_id[TP53]["rankers"]  # REGULATES explains no word
            alone = _items(await client.call_tool(
                "search_entities", {"query": "nutlin", "mode": "rrf"}), "search_entities")
            assert all("graph" not in h["rankers"] for h in alone), alone
