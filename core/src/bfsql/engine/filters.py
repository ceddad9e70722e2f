"""The filter arguments of a traversal, matched to the graph's schema by one rule.

A type or predicate named in ``node_types``, ``exclude_node_types`` or ``predicates`` (and a
path query's ``type:``) names every type or predicate of the graph's schema
(``describe_schema``) it equals ignoring case: ``exclude_node_types=["paper"]`` excludes
``Paper`` nodes. A value the schema does not hold is kept as given (a sampled schema may not
list every type) and, when the schema is comprehensive, warned about.
"""

from __future__ import annotations

from dataclasses import dataclass

from bfsql.backend import gather_or_cancel
from bfsql.engine.answer import Detail
from bfsql.engine.arguments import type_set
from bfsql.errors import clip
from bfsql.graph import Graph

__all__ = ["Filters", "match_names", "read_filters"]


@dataclass(frozen=True)
class Filters:
    """A traversal's filters, in the graph's own spelling."""

    detail: Detail
    """Which nodes and edges keep their metadata (node_types, predicates, topology_only)."""
    excluded: frozenset[str] = frozenset()
    """Types neither kept nor expanded (exclude_node_types)."""
    warnings: tuple[str, ...] = ()
    """Values the graph's comprehensive schema does not hold."""


_UNFILTERED = {topology: Filters(Detail(topology_only=topology)) for topology in (False, True)}
"""The filters of a call that gives none, by ``topology_only`` (most calls: made once, not per call)."""


def match_names(values: frozenset[str], known: list[str]) -> tuple[frozenset[str], list[str]]:
    """``values`` in the spelling of ``known`` (each value: every known name equal to it ignoring case), and the
    values no known name matches (kept as given)."""
    by_fold: dict[str, list[str]] = {}
    for name in known:
        by_fold.setdefault(name.casefold(), []).append(name)
    matched: set[str] = set()
    unknown = []
    for value in sorted(values):
        spellings = by_fold.get(value.casefold())
        if spellings:
            matched.update(spellings)
        else:
            matched.add(value)
            unknown.append(value)
    return frozenset(matched), unknown


async def read_filters(
    graph: Graph,
    node_types: list[str] | None,
    predicates: list[str] | None,
    exclude_node_types: list[str] | None,
    topology_only: bool,
) -> Filters:
    """The filter arguments checked (:class:`~bfsql.errors.InvalidArgument` for a wrong shape) and matched to
    the graph's schema (see the module)."""
    if node_types is None and predicates is None and exclude_node_types is None:
        return _UNFILTERED[bool(topology_only)]
    given = {
        "node_types": type_set(node_types, "node_types"),
        "predicates": type_set(predicates, "predicates"),
        "exclude_node_types": type_set(exclude_node_types, "exclude_node_types"),
    }
    if not any(given.values()):
        return Filters(Detail(given["node_types"], given["predicates"], bool(topology_only)))
    types, preds = await gather_or_cancel(graph.entity_types(), graph.predicates())
    matched: dict[str, frozenset[str] | None] = {}
    warnings = []
    for name, values in given.items():
        if not values:
            matched[name] = values
            continue
        known = preds if name == "predicates" else types
        matched[name], unknown = match_names(values, known)
        if unknown and graph.capabilities.comprehensive_schema:
            kind = "predicates" if name == "predicates" else "entity types"
            warnings.append(
                f"{name}: {', '.join(repr(clip(v)) for v in unknown[:10])} {'is' if len(unknown) == 1 else 'are'} "
                f"not among this graph's {kind} ({', '.join(known[:30]) + (' …' if len(known) > 30 else '')}); "
                "names match ignoring case."
            )
    return Filters(
        Detail(matched["node_types"], matched["predicates"], bool(topology_only)),
        matched["exclude_node_types"] or frozenset(),
        tuple(warnings),
    )
