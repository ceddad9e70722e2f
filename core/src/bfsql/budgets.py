"""The two budgets a call is held to, each with its own name, and their defaults (written once).

* :class:`TraversalLimits` bound what a traversal lists (nodes), follows (a hub's edges) and, where the
  engine walks hop by hop, visits: the engine's concern. Whatever they cut is reported in the answer.
* The **answer budget** bounds what an answer may show, in estimated tokens
  (``max_tokens``): the tool pipeline's concern (:mod:`bfsql.server.answers.fitting`). Only its
  numbers live here, so that settings and fitting share them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_TOKENS",
    "MAX_HOPS",
    "MAX_SEEDS",
    "MIN_MAX_TOKENS",
    "TraversalLimits",
]

MAX_HOPS = 5
"""Largest accepted max_hops / k."""

MAX_SEEDS = 100
"""Most seeds accepted in one call."""

DEFAULT_MAX_TOKENS = 20_000
"""Answer budget of every tool by default: below Claude Code's 25k-token cap, with room for the estimate's error."""

MIN_MAX_TOKENS = 200
"""The smallest answer budget, for the server and for one call: a smaller one is raised to it (and says so)."""

CHARS_PER_TOKEN = 3
"""A deliberately low estimate: JSON full of ids tokenises worse than prose."""


@dataclass(frozen=True)
class TraversalLimits:
    """Bounds on one traversal. Whatever they cut is reported in the result; none of them cuts a count of a walk
    the store runs itself (docs/traversal.md)."""

    max_nodes: int = 100_000
    """Nodes one answer lists at most (a ``bfs_query`` page, the shared nodes ``intersect_subgraphs`` lists):
    what is materialised and shown, not what is counted. The answer budget usually lists far fewer."""
    max_edges_per_node: int = 20_000
    """Edges taken from one node; a hub's further edges are skipped (by edge order). A rule of the traversal, kept
    wherever it walks: the counts are then those of the capped walk, lower bounds of the whole neighbourhood."""
    max_walk_nodes: int = 100_000
    """Nodes a walk taken hop by hop in the engine may visit (every node and edge it meets is then held in the
    server): the hop that would pass it admits the first nodes by id that fit and the walk stops there, its counts
    lower bounds. A safety bound for stores that cannot walk themselves; a walk in the store has none."""

    def __post_init__(self) -> None:
        if min(self.max_nodes, self.max_edges_per_node, self.max_walk_nodes) < 1:
            raise ValueError("traversal limits must be at least 1")


DEFAULT_LIMITS = TraversalLimits()
"""The limits used when none are given."""
