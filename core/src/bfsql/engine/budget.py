"""Traversal budgets: the bounds that keep a hub from exploding a query."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_BUDGET", "MAX_HOPS", "MAX_SEEDS", "TraversalBudget"]

MAX_HOPS = 5
"""Largest accepted max_hops / k."""

MAX_SEEDS = 100
"""Most seeds accepted in one call."""


@dataclass(frozen=True)
class TraversalBudget:
    """Bounds on one traversal. Anything cut because of them is reported in the result."""

    max_nodes: int = 100_000
    """Nodes a traversal may visit; the hop that would exceed it is cut (by id order). Visiting is
    cheap (ids and types only): what an answer shows is bounded by its own budget, not by this."""
    max_edges_per_node: int = 20_000
    """Edges taken from one node; a hub's further edges are skipped (by edge order)."""

    def __post_init__(self) -> None:
        if self.max_nodes < 1 or self.max_edges_per_node < 1:
            raise ValueError("traversal budget bounds must be at least 1")


DEFAULT_BUDGET = TraversalBudget()
"""The budget used when none is given."""
