"""The two budgets a call is held to, each with its own name, and their defaults (written once).

* :class:`TraversalLimits` bound what a traversal may visit (nodes, a hub's edges): the
  engine's concern. Whatever they cut is reported in the answer.
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
    """Bounds on one traversal. Anything cut because of them is reported in the result."""

    max_nodes: int = 100_000
    """Nodes a traversal may visit; the hop that would exceed it is cut (by id order). Visiting is
    cheap (ids and types only): what an answer shows is bounded by the answer budget, not by this."""
    max_edges_per_node: int = 20_000
    """Edges taken from one node; a hub's further edges are skipped (by edge order)."""

    def __post_init__(self) -> None:
        if self.max_nodes < 1 or self.max_edges_per_node < 1:
            raise ValueError("traversal limits must be at least 1")


DEFAULT_LIMITS = TraversalLimits()
"""The limits used when none are given."""
