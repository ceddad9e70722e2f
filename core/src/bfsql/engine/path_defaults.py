"""Path queries' defaults and bounds, apart from :mod:`bfsql.engine.paths` (which re-exports them), so that the
tools' signatures and the traversals' time share name them without loading the path engine: a process that asks
no path query (one ``bfsql query``) never imports it."""

from __future__ import annotations

__all__ = ["DEFAULT_K", "DEFAULT_MAX_RESULTS", "DEFAULT_THRESHOLD", "MAX_K", "MAX_RESULTS", "WALK_TIME_SHARE"]

DEFAULT_K = 3
DEFAULT_THRESHOLD = 0.5
DEFAULT_MAX_RESULTS = 20
MAX_K = 50
MAX_RESULTS = 200
WALK_TIME_SHARE = 0.5
"""Share of a call's timeout the variable-length edges of a query may walk (a server passes it as ``time_limit``):
a walk still going then stops and says so, leaving the rest of the time to answer."""
