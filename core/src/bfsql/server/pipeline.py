"""The one tool pipeline: every tool call, built-in or from a plugin, passes the same stages.

1. **Arguments** are validated against the tool's spec (:mod:`bfsql.server.tool_spec`): an
   unknown argument is refused by name, a wrong type is explained in one plain sentence with
   an example. The call's own ``max_tokens``, for a tool that takes one, sets its answer
   budget (never more than the server's, never less than :data:`~bfsql.budgets.MIN_MAX_TOKENS`).
2. **Timeout**: the call ends after the graph's ``timeout`` (a heavy call's wait for one of
   its graph's slots included).
3. **Errors** are mapped: a caller's mistake (:class:`~bfsql.errors.BfsqlError`, an
   unknown id) is a tool error with a hint; a backend that failed is reported as such (the
   graph's terminal wraps everything a backend raises); anything else is reported as an
   internal error of bfsql or a plugin, never blamed on the backend.
4. **Post-processing**, once per answer and only here: the ``process_nodes`` and
   ``process_edges`` hooks edit the metadata of the entities and edges the answer shows with
   detail, then ``process_result`` edits the typed answer (:func:`postprocess`).
5. **Fitting** (:mod:`bfsql.server.fitting`) holds the answer to its budget and serialises it
   once.

Every call, whatever its end, is logged and handed as one :class:`CallRecord` to the server's
observer (metrics, audit log, trace attributes: set up by :mod:`bfsql.server.team`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from bfsql.budgets import CHARS_PER_TOKEN, MIN_MAX_TOKENS
from bfsql.engine.answer import EdgeRecords, EntityRecords, Listing, Traversal
from bfsql.errors import BackendFailure, BfsqlError, InvalidArgument, clip
from bfsql.graph import Graph
from bfsql.models import GraphListing, PathQueryResult, SchemaDescription, Truncation, to_output
from bfsql.pacing import light_call
from bfsql.server.fitting import (
    AnswerBudget,
    answer_limit,
    compact_json,
    fit_list,
    fit_paths,
    fit_record,
    fit_schema,
    fit_traversal,
    hold_texts,
    note_text,
)
from bfsql.server.tool_spec import MAX_TOKENS_ARGUMENT, ToolContext, ToolSpec, validate
from bfsql.settings import ServerSettings

__all__ = [
    "NOTES_KEY",
    "OUTCOMES",
    "READ_ONLY",
    "CallRecord",
    "answer_budget",
    "answer_text",
    "error_result",
    "fit",
    "fit_and_serialise",
    "notes_of",
    "postprocess",
    "result_of",
    "run_tool",
]

logger = logging.getLogger("bfsql.server")

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False)
"""Every tool is read-only and idempotent."""


# -- stages 4 and 5: post-processing and fitting -----------------------------------------


def postprocess(graph: Graph, answer: Any, tool: str) -> None:
    """Run the post-processing hooks over one answer, once each (stage 4).

    ``process_nodes`` gets the metadata of every entity the answer shows with detail,
    ``process_edges`` every edge's, then ``process_result`` the whole typed answer.
    """
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    if isinstance(answer, Traversal):
        nodes, edges = answer.node_metadata, answer.edge_metadata
    elif isinstance(answer, EntityRecords):
        nodes = answer.metadata
    elif isinstance(answer, EdgeRecords):
        edges = answer.metadata
    elif isinstance(answer, PathQueryResult):
        nodes = {r.entity.id: r.entity.metadata for r in answer.results if r.entity.metadata is not None}
    graph.process_nodes(nodes, tool)
    graph.process_edges(edges, tool)
    if isinstance(answer, PathQueryResult):  # the hooks may have replaced a record: put it back
        for result in answer.results:
            if result.entity.id in nodes:
                result.entity.metadata = nodes[result.entity.id]
    graph.process_result(answer, tool)


Notes = list[dict[str, Any]]
"""What is said beside a list answer (see :func:`result_of`)."""

NOTES_KEY = "bfsql/notes"
"""The key of a result's ``_meta`` under which a list answer's notes lie, for programs (docs/protocol.md)."""


def _unknown(what: str, missing: list[str]) -> list[Truncation]:
    if not missing:
        return []
    return [Truncation(
        reason="unknown_ids",
        detail=f"{len(missing)} of the {what} asked for are not in the graph: "
        f"{', '.join(clip(m) for m in missing[:20])}{' …' if len(missing) > 20 else ''}.",
        hint="Check the ids (search_entities finds canonical ones); the list holds the others.",
        count=len(missing),
    )]


def _entity_records(answer: EntityRecords, budget: AnswerBudget) -> tuple[Any, Notes]:
    if answer.single:
        entity_id = answer.ids[0]
        return fit_record({**answer.metadata[entity_id], "id": entity_id, "entity_type": answer.types[entity_id]},
                          budget), []
    items = [{"id": i, "entity_type": answer.types[i], "metadata": answer.metadata[i]} for i in answer.ids]
    return fit_list(items, budget, what="entities", notes=_unknown("ids", answer.missing))


def _edge_records(answer: EdgeRecords, budget: AnswerBudget) -> tuple[Any, Notes]:
    items = [{"subject": s, "predicate": p, "object": o, "metadata": answer.metadata[(s, p, o)]}
             for s, p, o in answer.edges]
    missing = [f"[{s}, {p}, {o}]" for s, p, o in answer.missing]
    return fit_list(items, budget, what="edges", id_key="subject", notes=_unknown("edges", missing))


def fit(answer: Any, budget: AnswerBudget) -> tuple[Any, Notes]:
    """The answer as plain data within ``budget``, by its kind, and the notes said beside a list answer."""
    if isinstance(answer, Traversal):
        return fit_traversal(answer, budget), []
    if isinstance(answer, EntityRecords):
        return _entity_records(answer, budget)
    if isinstance(answer, EdgeRecords):
        return _edge_records(answer, budget)
    if isinstance(answer, Listing):
        items = [to_output(i) if isinstance(i, BaseModel) else i for i in answer.items]
        return fit_list(items, budget, what="items", notes=answer.notes, offset=answer.offset)
    if isinstance(answer, PathQueryResult):
        return fit_paths(to_output(answer), budget), []
    if isinstance(answer, SchemaDescription):
        return fit_schema(to_output(answer), budget), []
    if isinstance(answer, BaseModel):
        answer = to_output(answer)
    if isinstance(answer, list):
        return fit_list([to_output(i) if isinstance(i, BaseModel) else i for i in answer], budget, what="items")
    if isinstance(answer, dict):
        return fit_record(answer, budget), []
    return answer, []


def result_of(data: Any, text: str | None = None, notes: Notes | None = None) -> CallToolResult:
    """A tool result: the answer as compact JSON text (``text``, when already made) and as structured content.

    A list holds only its items (Appendix A types them so); its notes (a page that goes on, a cut,
    unknown ids) follow in a second text block, where the model reads them, and in the result's
    ``_meta`` under :data:`NOTES_KEY`, where a program finds them without parsing prose.
    """
    structured = {"result": data} if isinstance(data, list) else data
    content: list[Any] = [TextContent(type="text", text=compact_json(data) if text is None else text)]
    if notes:
        content.append(TextContent(type="text", text="\n".join(map(note_text, notes))))
    return CallToolResult.model_validate({
        "content": content,
        "structuredContent": structured if isinstance(structured, dict) else None,
        "_meta": {NOTES_KEY: notes} if notes else None,
    })


ERROR_CHARS = 2000
"""Longest error text: an error says what to do in a few sentences, whatever the arguments echoed."""


def error_result(text: str, max_chars: int = ERROR_CHARS) -> CallToolResult:
    """A tool error the model reads, clipped to ``max_chars`` (echoed input counts against the budget)."""
    return CallToolResult(content=[TextContent(type="text", text=clip(text, max_chars))], is_error=True)


# -- the pipeline ----------------------------------------------------------------------


OUTCOMES = ("ok", "invalid", "backend_error", "timeout", "busy", "rate_limited", "cancelled", "internal_error")
"""How a call can end: answered; refused as the caller's mistake (arguments, unknown ids or graph); the store
failed; it ran out of time; it timed out waiting for a heavy-call slot; over its principal's rate limit; cancelled
(or interrupted by another's cancellation); a bug."""


@dataclass(frozen=True)
class CallRecord:
    """One tool call as it ended, for the server's observer."""

    tool: str
    graph: str
    arguments: Any
    """The arguments as the client sent them."""
    outcome: str
    """One of :data:`OUTCOMES`."""
    seconds: float
    chars: int = 0
    """Characters of the answer (or error) text."""
    cut: bool = False
    """Whether the answer says something was left out."""


Observer = Callable[[CallRecord], None]


def answer_budget(spec: ToolSpec, settings: ServerSettings, arguments: dict[str, Any]) -> AnswerBudget:
    """The call's answer budget: the server's, or the call's own ``max_tokens`` (taken out of ``arguments``)."""
    asked = arguments.pop(MAX_TOKENS_ARGUMENT, None) if spec.max_tokens else None
    if asked is None:
        return AnswerBudget(settings.max_tokens, settings.named_stubs)
    if asked < 1:
        raise InvalidArgument(
            f"max_tokens must be a positive number of tokens; got {asked}.",
            f"Omit it for the server's budget ({settings.max_tokens}), or ask for {MIN_MAX_TOKENS} or more.",
        )
    tokens = max(min(asked, settings.max_tokens), MIN_MAX_TOKENS)
    return AnswerBudget(tokens, settings.named_stubs, asked if asked < MIN_MAX_TOKENS else None)


def _summary(arguments: dict[str, Any]) -> str:
    return clip(", ".join(f"{k}={compact_json(v)}" for k, v in arguments.items() if v not in (None, [], {})), 200)


async def run_tool(
    spec: ToolSpec,
    raw: dict[str, Any],
    graph: Graph,
    settings: ServerSettings,
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    graphs: list[GraphListing] | None = None,
    slots: asyncio.Semaphore | None = None,
    observe: Observer | None = None,
) -> CallToolResult:
    """Run one call of ``spec`` through every stage; an answer or a tool error, never an exception.

    A heavy tool first waits for one of the server's ``slots``; the timeout covers the wait, the
    tool and the fitting. Fitting and serialising run in a worker thread, so that a large answer
    does not hold the event loop. ``observe`` gets the call's :class:`CallRecord` once it ends.
    """
    started = time.perf_counter()
    outcome = "error"
    kind, chars, cut = "internal_error", 0, False
    waiting = slots is not None and spec.heavy
    most = min(ERROR_CHARS, AnswerBudget(settings.max_tokens).chars)

    async def answer(call: dict[str, Any], budget: AnswerBudget) -> tuple[Any, str, Notes]:
        nonlocal waiting
        if spec.heavy:
            async with slots or contextlib.nullcontext():
                waiting = False
                result = await _invoke(spec.fn, call)
            postprocess(graph, result, spec.name)
            return await asyncio.to_thread(fit_and_serialise, result, budget)
        with light_call():
            result = await _invoke(spec.fn, call)
            postprocess(graph, result, spec.name)
            return fit_and_serialise(result, budget)  # small: a thread would cost more than it saves

    try:
        arguments = validate(spec, raw)
        budget = answer_budget(spec, settings, arguments)
        call = dict(arguments)
        if spec.graph_param:
            call[spec.graph_param] = graph
        if spec.context_param:
            call[spec.context_param] = ToolContext(graph, settings, budget, report, graphs)
        fitted, text, notes = await asyncio.wait_for(answer(call, budget), settings.timeout)
        kind, chars, cut = "ok", len(text), _was_cut(fitted, notes)
        outcome = f"{len(text)} chars" + (", cut" if cut else "")
        return result_of(fitted, text, notes)
    except BfsqlError as exc:
        kind = "backend_error" if isinstance(exc, BackendFailure) else "invalid"
        outcome = f"error: {clip(exc.message, 200)}"
        return error_result(str(exc), most)
    except TimeoutError:
        if waiting:
            kind, outcome = "busy", "timed out waiting for a heavy-call slot"
            return error_result(
                f"{spec.name} timed out after {settings.timeout:g}s waiting for its turn: the server is busy with "
                "other traversals. Try again shortly, or narrow the query."
            )
        kind, outcome = "timeout", "timed out"
        return error_result(
            f"{spec.name} timed out after {settings.timeout:g}s. "
            "Narrow the query (fewer hops or seeds, exclude_node_types, named relations instead of [*]) or try again."
        )
    except asyncio.CancelledError:
        kind = "cancelled"
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            outcome = "cancelled"
            raise  # this call was cancelled (client or timeout): it ends, and only it
        logger.warning("%s: a shared backend call was cancelled under it", spec.name)
        return error_result(f"{spec.name} was interrupted by another call's cancellation; try again.")
    except Exception as exc:
        logger.error("%s: internal error", spec.name, exc_info=True)
        return error_result(
            f"bfsql (or one of its plugins) hit an internal error in {spec.name}: {type(exc).__name__}: "
            f"{clip(str(exc), 300)}. This is a bug, not a problem with your arguments or the graph's store; "
            "please report it."
        )
    finally:
        seconds = time.perf_counter() - started
        logger.info(
            "tool %s graph=%s (%s): %s in %.0f ms",
            spec.name, graph.name, _summary(raw if isinstance(raw, dict) else {}), outcome, seconds * 1000,
        )
        if observe is not None:
            observe(CallRecord(spec.name, graph.name, raw, kind, seconds, chars, cut))


def fit_and_serialise(answer: Any, budget: AnswerBudget) -> tuple[Any, str, Notes]:
    """The answer fitted to ``budget``, its wire text, and the notes beside it (stage 5, as the pipeline runs it)."""
    for _ in range(3):
        data, notes = fit(answer, budget)
        data, text = hold_texts(data, budget)
        floor = budget.floor_note()
        notes = [floor, *notes] if floor else notes
        size = len(text) + sum(len(note_text(n)) + 1 for n in notes)
        if size <= answer_limit(budget.max_tokens):
            break
        # Even the smallest answer (one node, the counts, the notes) is more than the budget: give it what it
        # takes, and say so, rather than report a budget the answer exceeds.
        budget = replace(budget, max_tokens=-(-size // CHARS_PER_TOKEN) + 10, asked=budget.asked or budget.max_tokens)
    return data, text, notes


def _was_cut(data: Any, notes: Notes) -> bool:
    """Whether a fitted answer says something was left out (a truncation note)."""
    if isinstance(data, dict):
        return bool(data.get("truncated")) or bool((data.get("metadata") or {}).get("truncated"))
    return any(n.get("reason") in ("max_tokens", "page") for n in notes)


async def _invoke(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    result = fn(**arguments)
    if inspect.isawaitable(result):
        result = await result
    return result


def answer_text(result: CallToolResult) -> str:
    """The answer (or error) of a tool result: its first text block (a second one holds a list's notes)."""
    first = result.content[0] if result.content else None
    return getattr(first, "text", "") if first is not None else ""


def notes_of(result: CallToolResult) -> Notes:
    """The notes beside a list answer (empty for other answers and errors)."""
    notes: Notes = (result.meta or {}).get(NOTES_KEY) or []
    return notes
