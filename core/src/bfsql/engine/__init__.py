"""The traversal engine: BFS, intersection, budgets and result assembly.

``bfs_query`` and ``intersect_subgraphs`` load on first use (:func:`bfsql.lazy_names`): a tool that does not walk,
or walks one way, does not import the other walks.
"""

from typing import TYPE_CHECKING

from bfsql.budgets import TraversalLimits
from bfsql.lazy import lazy_names

if TYPE_CHECKING:
    from bfsql.engine.bfs import bfs_query
    from bfsql.engine.intersect import intersect_subgraphs

__all__ = ["TraversalLimits", "bfs_query", "intersect_subgraphs"]

__getattr__ = lazy_names(__name__, {"bfs_query": ".bfs", "intersect_subgraphs": ".intersect"})
