"""Every note of every tool, read as each client family reads it: part of the conformance suite.

For every tool and every kind of note an answer can carry (a page that goes on, a cut to the
budget, named and bare stubs, clipped values, unknown ids or edges, no match, the
``max_tokens`` floor, a traversal bound) the checks call the tool through an in-process
official MCP client and read the result through each :data:`~bfsql.testing.profiles.CLIENT_PROFILES`
profile: the answer must parse as one JSON document, and the note must be in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from bfsql.backend import GraphBackend
from bfsql.server.answers import notes_in
from bfsql.testing.idmap import IdMap
from bfsql.testing.profiles import CLIENT_PROFILES, ClientProfile, read_as
from bfsql.testing.standard_graph import (
    ASPIRIN,
    LFS,
    MDM2,
    MDM2_INHIBITS_TP53,
    NUTLIN,
    STANDARD_IDS,
    TP53,
    UNKNOWN,
)

__all__ = ["NOTE_CASES", "ClientProfileChecks", "NoteCase"]


def _reasons(*reasons: str) -> Callable[[Any, IdMap], bool]:
    def said(answer: Any, _ids: IdMap) -> bool:
        return set(reasons) <= {note.get("reason") for note in notes_in(answer)}
    return said


def _next_page(answer: Any, _ids: IdMap) -> bool:
    """The page says where it stands, and where the next one starts when more match."""
    page: dict[str, Any] = answer.get("page", {})
    more = page.get("total", 0) > page.get("returned", 0)
    return bool(page.get("returned") == len(answer["items"])
                and page.get("next_offset") == (page["returned"] if more else None))


def _unknown_id(answer: Any, ids: IdMap) -> bool:
    return ids.to_backend(UNKNOWN) in answer.get("unknown_ids", [])


def _unknown_edge(answer: Any, ids: IdMap) -> bool:
    return [ids.to_backend(UNKNOWN), "INHIBITS", ids.to_backend(TP53)] in answer.get("unknown_edges", [])


def _no_match(answer: Any, _ids: IdMap) -> bool:
    return bool(answer.get("items") == [] and answer.get("page", {}).get("total") == 0)


def _whole(key: str) -> Callable[[Any, IdMap], bool]:
    def present(answer: Any, _ids: IdMap) -> bool:
        return isinstance(answer, dict) and key in answer
    return present


def _error(words: str) -> Callable[[Any, IdMap], bool]:
    def said(answer: Any, _ids: IdMap) -> bool:
        return isinstance(answer, str) and words in answer
    return said


@dataclass(frozen=True)
class NoteCase:
    """One call whose answer must say something, and how to tell that it does."""

    name: str
    tool: str
    arguments: Callable[[IdMap], dict[str, Any]]
    said: Callable[[Any, IdMap], bool]
    """Whether the parsed answer (a document, or an error's text) says what it must."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Server settings of the call (``bare_stubs``, ``max_edges_per_node``)."""
    budgets: tuple[int, ...] = ()
    """``max_tokens`` values tried in turn until the answer carries the note: which degradation a budget gives
    depends on the lengths of a backend's ids and values, so the case looks for the budget that gives it."""


def _seed(ids: IdMap, *entities: str) -> list[str]:
    return [ids.to_backend(e) for e in entities]


DEGRADING = tuple(range(300, 1500, 50))
"""Budgets under which the standard graph's 2-hop answer from TP53 gives up detail, smallest first."""

NOTE_CASES: tuple[NoteCase, ...] = (
    NoteCase("page continues", "search_entities", lambda ids: {"query": "p53", "limit": 1}, _next_page),
    NoteCase("no match", "search_entities", lambda ids: {"query": "qqxzqv"}, _no_match),
    NoteCase("list cut to budget", "describe_entities",
             lambda ids: {"ids": _seed(ids, *STANDARD_IDS), "max_tokens": 200}, _reasons("max_tokens")),
    NoteCase("unknown ids", "describe_entities", lambda ids: {"ids": _seed(ids, TP53, UNKNOWN)}, _unknown_id),
    NoteCase("unknown edges", "describe_edges", lambda ids: {"edges": [
        list(ids.edge(MDM2_INHIBITS_TP53)), [ids.to_backend(UNKNOWN), "INHIBITS", ids.to_backend(TP53)]]},
        _unknown_edge),
    NoteCase("traversal cut to budget", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 2},
             _reasons("named_stubs", "max_tokens"), budgets=DEGRADING),
    NoteCase("clipped values", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 2},
             _reasons("clipped_values"), budgets=DEGRADING),
    NoteCase("bare stubs", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 2},
             _reasons("bare_stubs"), {"bare_stubs": True}, budgets=DEGRADING),
    NoteCase("max_tokens floor", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 2, "max_tokens": 50},
             _reasons("max_tokens_floor")),
    NoteCase("floor of a record", "describe_entity", lambda ids: {"id": ids.to_backend(TP53), "max_tokens": 50},
             _reasons("max_tokens_floor")),
    NoteCase("traversal bound", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 1},
             _reasons("max_edges_per_node"), {"max_edges_per_node": 1}),
    NoteCase("intersection cut", "intersect_subgraphs",
             lambda ids: {"seeds": _seed(ids, LFS, ASPIRIN), "k": 2, "max_tokens": 250}, _reasons("max_tokens")),
    NoteCase("path answer", "path_query", lambda ids: {"query": f"@{ids.to_backend(NUTLIN)} -[*]->"},
             _whole("results")),
    NoteCase("path cut", "path_query", lambda ids: {"query": f"@{ids.to_backend(MDM2)} -[*]-> -[*]->",
                                                    "max_tokens": 200}, _reasons("max_tokens")),
    NoteCase("schema", "describe_schema", lambda ids: {}, _whole("entity_types")),
    NoteCase("error", "bfs_query", lambda ids: {"seeds": _seed(ids, TP53), "max_hops": 1, "bogus": 1},
             _error("Unknown argument 'bogus'")),
)
"""A call for every tool and every kind of note."""


class ClientProfileChecks:
    """The client-profile checks of the conformance suite; mixed into BackendConformance."""

    async def _client(self, backend: GraphBackend, max_edges_per_node: int | None = None, **settings: Any) -> Any:
        raise NotImplementedError  # BackendConformance provides it

    @pytest.fixture(params=CLIENT_PROFILES, ids=lambda p: p.name)
    def client_profile(self, request: pytest.FixtureRequest) -> ClientProfile:
        """Each client family in turn (:data:`~bfsql.testing.profiles.CLIENT_PROFILES`)."""
        profile: ClientProfile = request.param
        return profile

    async def test_every_note_is_seen_by_every_client(
        self, backend: GraphBackend, ids: IdMap, client_profile: ClientProfile
    ) -> None:
        """Every tool's answer parses as one JSON document in the profile, and carries the note its call must
        carry; the notes a program reads are the notes the model reads."""
        by_settings: dict[tuple[tuple[str, Any], ...], list[NoteCase]] = {}
        for case in NOTE_CASES:
            by_settings.setdefault(tuple(sorted(case.settings.items())), []).append(case)
        for settings, cases in by_settings.items():
            async with await self._client(backend, **dict(settings)) as client:
                for case in cases:
                    result = await self._answer_saying(client, case, ids)
                    seen = read_as(client_profile, result)
                    assert case.said(seen, ids), f"{case.name} ({case.tool}), {client_profile.name}: {seen!r:.600}"
                    if not result.is_error:
                        program = read_as(CLIENT_PROFILES[-1], result)
                        assert notes_in(seen) == notes_in(program), f"{case.name}: {client_profile.name} reads " \
                            "other notes than a program does"

    @staticmethod
    async def _answer_saying(client: Any, case: NoteCase, ids: IdMap) -> Any:
        """The case's answer; for a case with budgets, the first whose program reading says the note (else the
        last, which the check then refuses)."""
        result = None
        for budget in case.budgets or (None,):
            extra = {} if budget is None else {"max_tokens": budget}
            result = await client.call_tool(case.tool, {**case.arguments(ids), **extra})
            if case.said(read_as(CLIENT_PROFILES[-1], result), ids):
                break
        return result
