"""What the hops of one traversal read, kept for the same tool call's metadata fetch. Optional for a backend.

A traversal that shows metadata (``bfs_query`` or ``intersect_subgraphs`` without
``topology_only``, and not asked for its counts alone with ``limit=0``) walks with ``hop``
and then asks ``metadata_for_nodes`` and ``metadata_for_edges`` once for what it found. Some
stores can hand over part of that metadata with the hop at little cost: a property graph
reads each relationship in the hop anyway, and an RDF store without edge annotations needs
only to know that an edge exists. While such a traversal runs, :func:`hop_memo` returns the
call's :class:`HopMemo`: a backend's ``hop`` may keep there what it read (in a form of its
own choosing), and its metadata primitives then answer from it and read only what it lacks.
Everywhere else (a topology-only or counts-only traversal, ``describe_entity``, a direct
call) :func:`hop_memo` returns None and a backend reads as usual.

A path query (``path_query``) shows only the ends of its best paths and the entities on them,
a small part of what its hops read: its hops keep nothing (:func:`hop_memo` is None there), but
the calls that read no more than such an answer may show, the ``@id`` entry's ``get_nodes`` and
a closure walked in the store (``closure``), may keep the metadata of what they read in the
call's memo (:func:`call_memo`, :func:`remembers_reads`), and ``metadata_for_nodes`` answers
from it as in a traversal.

Scope: one tool call. The memo is a context variable set by the traversal for its own run
(:func:`remembers_hops`), so concurrent calls never see each other's. A backend that ignores
it loses nothing; one that uses it must answer the same either way (the conformance suite
checks it: ``test_full_answer_metadata_is_the_metadata_primitives``). A hop answered from the
graph's cache adds nothing to the memo, so a memo is never needed for a correct answer.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

__all__ = ["HopMemo", "call_memo", "hop_memo", "remembers_hops", "remembers_reads"]

P = ParamSpec("P")
T = TypeVar("T")


class HopMemo:
    """What the hops of one traversal (or the reads of one path query) read, in the backend's own form."""

    def __init__(self, hops: bool = True) -> None:
        self.hops = hops
        """Whether ``hop`` keeps what it reads (a traversal that shows it all); False in a path query."""
        self.edges: dict[tuple[str, str, str], Any] = {}
        """Per edge ``(subject, predicate, object)``: what a hop read about it."""
        self.nodes: dict[str, Any] = {}
        """Per entity id: what a hop read about it."""
        self.metadata = True
        """Whether the call may show or score by the metadata of what it reads; False in a path query that shows
        none and has no semantic filter: names are all it needs, and a closure need bring no more."""


_current: ContextVar[HopMemo | None] = ContextVar("bfsql_hop_memo", default=None)


def hop_memo() -> HopMemo | None:
    """The memo of the traversal running in this context when it will fetch metadata, for ``hop`` to keep what it
    reads; else None (a path query's memo included: see the module)."""
    memo = _current.get()
    return memo if memo is not None and memo.hops else None


def call_memo() -> HopMemo | None:
    """The memo of the call running in this context, a traversal's or a path query's: for the calls that read no
    more than its answer may show (``closure``, ``get_nodes``) to keep the metadata of what they read, and for the
    metadata primitives to answer from; else None."""
    return _current.get()


def remembers_hops(traversal: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Run ``traversal`` (an engine tool taking ``topology_only`` and ``limit``) with a memo of its own, unless
    it shows no metadata (topology-only, or ``limit=0``: the counts alone)."""

    @functools.wraps(traversal)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        memo = None if kwargs.get("topology_only") or kwargs.get("limit") == 0 else HopMemo()
        if memo is None and _current.get() is None:  # nothing to set: a topology-only call outside any traversal
            return await traversal(*args, **kwargs)
        token = _current.set(memo)
        try:
            return await traversal(*args, **kwargs)
        finally:
            _current.reset(token)

    return run


def remembers_reads(query: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Run ``query`` (a path query) with a memo of its own in which hops keep nothing (see the module)."""

    @functools.wraps(query)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        token = _current.set(HopMemo(hops=False))
        try:
            return await query(*args, **kwargs)
        finally:
            _current.reset(token)

    return run
