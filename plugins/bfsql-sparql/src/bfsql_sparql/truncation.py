"""Edge lists cut at ``--edge-limit``: logged when they happen and reported in every answer they touch.

Core has no channel from a primitive to the answer, so each open backend keeps a
log of its cuts, and this package's ``process_result`` hook adds a ``truncated``
entry (reason ``sparql_edge_limit``) to any bfs_query / intersect_subgraphs answer
that contains a node whose edges were cut, cached answers included. The hook cannot
tell which graph an answer comes from: with two SPARQL backends open in one process,
an entity id cut by one would also be flagged in the other's answers.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Any

from bfsql.hookspecs import hookimpl
from bfsql.models import Truncation
from bfsql_sparql.fetch import Cut

__all__ = ["REASON", "CutLog", "process_result"]

logger = logging.getLogger("bfsql.sparql")

REASON = "sparql_edge_limit"
MAX_REMEMBERED = 10_000
"""Cut entities remembered per backend (oldest forgotten first)."""

_LOGS: weakref.WeakSet[CutLog] = weakref.WeakSet()


class CutLog:
    """The entities whose edges a backend could not return in full, keyed by compact id."""

    def __init__(self, edge_limit: int) -> None:
        self.edge_limit = edge_limit
        self._cuts: OrderedDict[tuple[str, str], Cut] = OrderedDict()
        _LOGS.add(self)

    def record(self, entity_id: str, cut: Cut) -> None:
        """Remember a cut (logging a warning the first time it is seen)."""
        key = (entity_id, cut.direction)
        if key not in self._cuts:
            logger.warning(
                "sparql: %s has %d %s statements; only %d were read (--edge-limit %d or an endpoint row cap)",
                entity_id,
                cut.total,
                "outgoing" if cut.direction == "out" else "incoming" if cut.direction == "in" else "literal",
                cut.returned,
                self.edge_limit,
            )
        self._cuts[key] = cut
        self._cuts.move_to_end(key)
        while len(self._cuts) > MAX_REMEMBERED:
            self._cuts.popitem(last=False)

    def close(self) -> None:
        """Stop reporting: the backend is closed (its cuts must not annotate another backend's answers)."""
        _LOGS.discard(self)
        self._cuts.clear()

    def cuts_for(self, entity_ids: set[str]) -> list[tuple[str, Cut]]:
        """The recorded edge cuts (not literal ones) of these entities, sorted by id."""
        return sorted(
            (
                (entity_id, cut)
                for (entity_id, direction), cut in self._cuts.items()
                if entity_id in entity_ids and direction != "literal"
            ),
            key=lambda item: (item[0], item[1].direction),
        )


def truncation_for(cuts: list[tuple[str, Cut]], edge_limit: int) -> Truncation:
    """The ``truncated`` entry describing these cuts."""
    shown = "; ".join(
        f"{entity_id}: {cut.returned} of {cut.total} {'outgoing' if cut.direction == 'out' else 'incoming'}"
        for entity_id, cut in cuts[:10]
    )
    more = f" and {len(cuts) - 10} more" if len(cuts) > 10 else ""
    return Truncation(
        reason=REASON,
        detail=f"The SPARQL backend read at most {edge_limit} edges per entity and direction: {shown}{more}.",
        hint="The missing edges were never seen by the traversal. Raise --edge-limit on the server, "
        "or explore from a less connected entity.",
        capped_nodes=sorted({entity_id for entity_id, _ in cuts}),
    )


@hookimpl
def process_result(result: Any, tool: str) -> None:
    """Add a ``sparql_edge_limit`` truncation to traversal answers that include cut entities."""
    nodes = getattr(result, "nodes", None)
    if not nodes or not hasattr(result, "truncated"):
        return
    ids = {node.id for node in nodes}
    for log in list(_LOGS):
        cuts = log.cuts_for(ids)
        if cuts:
            result.truncated = [*(result.truncated or []), truncation_for(cuts, log.edge_limit)]
