"""The traversal engine: BFS, intersection, budgets and result assembly."""

from bfsql.engine.bfs import bfs_query
from bfsql.engine.budget import TraversalBudget
from bfsql.engine.intersect import intersect_subgraphs

__all__ = ["TraversalBudget", "bfs_query", "intersect_subgraphs"]
