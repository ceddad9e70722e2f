"""The traversal engine: BFS, intersection, budgets and result assembly."""

from bfsql.budgets import TraversalLimits
from bfsql.engine.bfs import bfs_query
from bfsql.engine.intersect import intersect_subgraphs

__all__ = ["TraversalLimits", "bfs_query", "intersect_subgraphs"]
