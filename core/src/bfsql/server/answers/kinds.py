"""The kinds of answer a tool gives, in one table: what post-processing edits and how each is fitted.

A tool returns a typed answer (:mod:`bfsql.engine.answer`, a protocol model, or plain data).
Its :class:`AnswerKind` says which entity and edge metadata the post-processing hooks get,
and how the answer becomes its **document**: the one JSON object the client receives, fitted
to the budget, with every note the model must read inside it (docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bfsql.engine.answer import EdgeRecords, EntityRecords, Listing, Traversal
from bfsql.errors import clip
from bfsql.graph import Graph
from bfsql.models import PathQueryResult, SchemaDescription, Truncation, to_output
from bfsql.server.answers.fitting import (
    AnswerBudget,
    fit_list,
    fit_paths,
    fit_record,
    fit_schema,
    fit_traversal,
)

__all__ = ["KINDS", "UNKNOWN_SHOWN", "AnswerKind", "kind_of", "postprocess"]

NodeDetail = dict[str, dict[str, Any]]
EdgeDetail = dict[tuple[str, str, str], dict[str, Any]]


@dataclass(frozen=True)
class AnswerKind:
    """How one kind of answer is post-processed and fitted."""

    detail: Callable[[Any], tuple[NodeDetail, EdgeDetail]]
    """The metadata ``process_nodes`` and ``process_edges`` edit in place: of the items shown with detail."""
    fit: Callable[[Any, AnswerBudget], dict[str, Any]]
    """The answer's document within the budget."""
    notes_at: tuple[str, ...] = ("truncated",)
    """Where the document keeps its notes (a note of the pipeline's own, the budget floor, goes there too)."""
    restore: Callable[[Any, NodeDetail], None] | None = None
    """Puts back records the hooks replaced (rather than edited in place), for answers that hold models."""


UNKNOWN_SHOWN = 100
"""Most unknown ids (or edges) an answer lists; a note counts the rest."""


def _unknown(what: str, missing: list[Any], field: str) -> tuple[dict[str, Any], list[Truncation]]:
    """The unknown ids or edges, for beside a list, and the note counting those not listed."""
    if not missing:
        return {}, []
    notes = []
    if len(missing) > UNKNOWN_SHOWN:
        notes.append(Truncation(
            reason="unknown_ids",
            detail=f"{len(missing)} of the {what} asked for are not in the graph; the first {UNKNOWN_SHOWN} are "
            f"in {field}.",
            hint="Check the ids (search_entities finds canonical ones); the list holds the others.",
            count=len(missing),
        ))
    return {field: missing[:UNKNOWN_SHOWN]}, notes


def _fit_entities(answer: EntityRecords, budget: AnswerBudget) -> dict[str, Any]:
    if answer.single:
        entity_id = answer.ids[0]
        return fit_record({**answer.metadata[entity_id], "id": entity_id, "entity_type": answer.types[entity_id]},
                          budget)
    items = [{"id": i, "entity_type": answer.types[i], "metadata": answer.metadata[i]} for i in answer.ids]
    beside, notes = _unknown("ids", [clip(m) for m in answer.missing], "unknown_ids")
    return fit_list(items, budget, what="entities", notes=notes, beside=beside)


def _fit_edges(answer: EdgeRecords, budget: AnswerBudget) -> dict[str, Any]:
    items = [{"subject": s, "predicate": p, "object": o, "metadata": answer.metadata[(s, p, o)]}
             for s, p, o in answer.edges]
    missing = [[clip(s), clip(p), clip(o)] for s, p, o in answer.missing]
    beside, notes = _unknown("edges", missing, "unknown_edges")
    return fit_list(items, budget, what="edges", id_key="subject", notes=notes, beside=beside)


def _fit_listing(answer: Listing, budget: AnswerBudget) -> dict[str, Any]:
    items = [to_output(i) if isinstance(i, BaseModel) else i for i in answer.items]
    page = None if answer.offset is None else (answer.offset, answer.total or answer.offset + len(items))
    return fit_list(items, budget, what="items", notes=answer.notes, page=page)


def _path_detail(answer: PathQueryResult) -> tuple[NodeDetail, EdgeDetail]:
    return {r.entity.id: r.entity.metadata for r in answer.results if r.entity.metadata is not None}, {}


def _path_restore(answer: PathQueryResult, nodes: NodeDetail) -> None:
    for result in answer.results:
        if result.entity.id in nodes:
            result.entity.metadata = nodes[result.entity.id]


def _no_detail(_answer: Any) -> tuple[NodeDetail, EdgeDetail]:
    return {}, {}


def _fit_plain(answer: Any, budget: AnswerBudget) -> dict[str, Any]:
    """A plugin's answer of no known kind: a model or dict as a record, a list as a list, anything else whole."""
    if isinstance(answer, BaseModel):
        answer = to_output(answer)
    if isinstance(answer, list):
        return fit_list([to_output(i) if isinstance(i, BaseModel) else i for i in answer], budget, what="items")
    if isinstance(answer, dict):
        return fit_record(answer, budget)
    return {"result": answer}


KINDS: tuple[tuple[type, AnswerKind], ...] = (
    (Traversal, AnswerKind(lambda a: (a.node_metadata, a.edge_metadata), fit_traversal)),
    (EntityRecords, AnswerKind(lambda a: (a.metadata, {}), _fit_entities)),
    (EdgeRecords, AnswerKind(lambda a: ({}, a.metadata), _fit_edges)),
    (Listing, AnswerKind(_no_detail, _fit_listing)),
    (PathQueryResult, AnswerKind(_path_detail, lambda a, b: fit_paths(to_output(a), b), ("metadata", "truncated"),
                                 _path_restore)),
    (SchemaDescription, AnswerKind(_no_detail, lambda a, b: fit_schema(to_output(a), b))),
)
"""Every kind of answer the built-in tools give, most specific first."""

PLAIN = AnswerKind(_no_detail, _fit_plain)
"""Whatever else a plugin's tool returns."""

RECORD_NOTES = ("_truncated",)
"""Where a flat record (describe_entity, a plugin's dict) keeps its notes: beside its fields, marked as
``_clipped`` is."""


def kind_of(answer: Any) -> AnswerKind:
    """The kind of ``answer``."""
    for answer_type, kind in KINDS:
        if isinstance(answer, answer_type):
            if isinstance(answer, EntityRecords) and answer.single:
                return AnswerKind(kind.detail, kind.fit, RECORD_NOTES)
            return kind
    if isinstance(answer, dict | BaseModel) and not isinstance(answer, list):
        return AnswerKind(PLAIN.detail, PLAIN.fit, RECORD_NOTES)
    return PLAIN


def postprocess(graph: Graph, answer: Any, tool: str) -> None:
    """Run the post-processing hooks over one answer, once each.

    ``process_nodes`` gets the metadata of every entity the answer shows with detail,
    ``process_edges`` every edge's, then ``process_result`` the whole typed answer.
    """
    kind = kind_of(answer)
    nodes, edges = kind.detail(answer)
    graph.process_nodes(nodes, tool)
    graph.process_edges(edges, tool)
    if kind.restore is not None:  # the hooks may have replaced a record: put it back
        kind.restore(answer, nodes)
    graph.process_result(answer, tool)
