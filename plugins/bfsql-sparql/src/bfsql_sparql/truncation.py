"""Edge lists cut at ``--edge-limit``: logged when they happen and reported in every answer they touch.

Each backend keeps a log of its own cuts; its ``truncations`` method (part of core's
backend contract) turns the cuts of the entities a traversal reached into a
``truncated`` entry (reason ``sparql_edge_limit``), also when the edges came from the
cache.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from bfsql import Truncation
from bfsql_sparql.fetch import Cut

__all__ = ["REASON", "CutLog", "truncation_for"]

logger = logging.getLogger("bfsql.sparql")

REASON = "sparql_edge_limit"
MAX_REMEMBERED = 10_000
"""Cut entities remembered per backend (oldest forgotten first)."""


class CutLog:
    """The entities whose edges a backend could not return in full, keyed by compact id."""

    def __init__(self, edge_limit: int) -> None:
        self.edge_limit = edge_limit
        self._cuts: OrderedDict[tuple[str, str], Cut] = OrderedDict()

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
