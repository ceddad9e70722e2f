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
   detail, then ``process_result`` edits the typed answer
   (:func:`~bfsql.server.answers.postprocess`).
5. **The document** (:mod:`bfsql.server.answers`): the answer fitted to its budget, as one JSON
   object that carries every note, serialised once.

A call ends as a :class:`ToolAnswer` (the document and its text, or an error's text), which the
MCP server sends as a tool result (:mod:`bfsql.server.app`) and ``bfsql query`` prints: nothing
here imports the MCP SDK.

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
from dataclasses import dataclass
from typing import Any

from bfsql.budgets import MIN_MAX_TOKENS
from bfsql.errors import AccessDenied, BackendFailure, BfsqlError, InvalidArgument, clip
from bfsql.graph import Graph
from bfsql.models import GraphListing
from bfsql.pacing import light_call
from bfsql.server.allocator import give_back_freed_memory
from bfsql.server.answers import (
    ERROR_CHARS,
    AnswerBudget,
    compact_json,
    document,
    postprocess,
    was_cut,
)
from bfsql.server.tool_spec import MAX_TOKENS_ARGUMENT, ToolContext, ToolSpec, validate
from bfsql.settings import ServerSettings

__all__ = [
    "HTTP_REFUSALS",
    "OUTCOMES",
    "REFUSALS",
    "CallRecord",
    "ToolAnswer",
    "answer_budget",
    "failed",
    "run_tool",
]

logger = logging.getLogger("bfsql.server")

@dataclass(frozen=True)
class ToolAnswer:
    """How a call ended: its document and the document's wire text, or (``document`` None) an error's text."""

    text: str
    document: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        """Whether the call ended in a tool error."""
        return self.document is None


def failed(text: str, max_chars: int = ERROR_CHARS) -> ToolAnswer:
    """A tool error the model reads, clipped to ``max_chars`` (echoed input counts against the budget)."""
    return ToolAnswer(clip(text, max_chars))


# -- the pipeline ----------------------------------------------------------------------


HTTP_REFUSALS = ("unauthenticated", "forbidden")
"""How a request refused over HTTP for its credentials ends, before the MCP server sees it: no valid credential
(401); a valid token granting none of the server's graphs (403)."""

REFUSALS = ("rate_limited", "unknown_tool", "unknown_graph", "not_granted", "unavailable", *HTTP_REFUSALS)
"""How a call refused before it ran ends: over its principal's rate limit; naming a tool the server does not have;
naming a graph it does not serve; naming a graph the caller's token does not grant (the caller is told it is
unknown); naming a graph that could not be opened at start-up; and :data:`HTTP_REFUSALS`."""

OUTCOMES = ("ok", "invalid", "denied", "backend_error", "timeout", "busy", "cancelled", "internal_error", *REFUSALS)
"""How a call can end: answered; refused as the caller's mistake (arguments, unknown ids); refused by the store for
the caller's identity (:class:`~bfsql.errors.AccessDenied`: no role mapped, or the role may not read); the store
failed; it ran out of time; it timed out waiting for a heavy-call slot; cancelled (or interrupted by another's
cancellation); a bug; or refused before it ran (:data:`REFUSALS`)."""


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


@dataclass
class _Ending:
    """How a call is ending, filled in as it runs: what its :class:`CallRecord` and log line say."""

    waiting: bool
    """Whether it still waits for a heavy-call slot (a timeout then says the server is busy)."""
    kind: str = "internal_error"
    """One of :data:`OUTCOMES`."""
    outcome: str = "error"
    """The log line's words."""
    chars: int = 0
    cut: bool = False


async def _answer(
    spec: ToolSpec, graph: Graph, call: dict[str, Any], budget: AnswerBudget, about: dict[str, Any] | None,
    slots: asyncio.Semaphore | None, ending: _Ending, settings: ServerSettings,
) -> tuple[dict[str, Any], str]:
    """The fitted answer of one call and its text: a heavy tool in one of ``slots``, fitted in a worker thread; a
    heavy tool's call that its arguments bound runs as a cheap call does (no slot, the store's cheap-call lane)."""
    if spec.heavy:
        bounded = not spec.needs_slot(call, settings)
        async with contextlib.nullcontext() if bounded or slots is None else slots:
            ending.waiting = False
            with light_call() if bounded else contextlib.nullcontext():
                result = await _invoke(spec.fn, call)
        postprocess(graph, result, spec.name)
        return await asyncio.to_thread(_fitted_then_trimmed, result, budget, about)
    with light_call():
        result = await _invoke(spec.fn, call)
        postprocess(graph, result, spec.name)
        return document(result, budget, about)  # small: a thread would cost more than it saves


def _fitted_then_trimmed(result: Any, budget: AnswerBudget, about: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    """A heavy call's answer fitted, then what its walk freed handed back to the system
    (:mod:`bfsql.server.allocator`): in a worker thread, off the event loop."""
    try:
        return document(result, budget, about)
    finally:
        give_back_freed_memory()


async def _run(
    spec: ToolSpec, raw: dict[str, Any], graph: Graph, settings: ServerSettings,
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    graphs: list[GraphListing] | None, slots: asyncio.Semaphore | None, about: dict[str, Any] | None,
    ending: _Ending,
) -> ToolAnswer:
    """Validate the call, run it within the timeout and fit its answer (exceptions are :func:`run_tool`'s)."""
    arguments = validate(spec, raw)
    budget = answer_budget(spec, settings, arguments)
    call = dict(arguments)
    if spec.graph_param:
        call[spec.graph_param] = graph
    if spec.context_param:
        call[spec.context_param] = ToolContext(graph, settings, budget, report, graphs)
    fitted, text = await asyncio.wait_for(_answer(spec, graph, call, budget, about, slots, ending, settings),
                                  settings.timeout)
    ending.kind, ending.chars, ending.cut = "ok", len(text), was_cut(fitted)
    ending.outcome = f"{len(text)} chars" + (", cut" if ending.cut else "")
    return ToolAnswer(text, fitted)


def _refused(exc: BfsqlError, graph: Graph, settings: ServerSettings, ending: _Ending) -> ToolAnswer:
    """The tool error of a call bfsql refused (bad arguments, access denied, a store failure), with its hint."""
    ending.kind = "backend_error" if isinstance(exc, BackendFailure) else "denied" if isinstance(
        exc, AccessDenied) else "invalid"
    ending.outcome = f"error: {clip(exc.message, 200)}"
    most = min(ERROR_CHARS, AnswerBudget(settings.max_tokens).chars)
    return failed(f"{exc.message} {graph.examples.say(exc.hint)}".strip(), most)


def _timed_out(spec: ToolSpec, settings: ServerSettings, ending: _Ending) -> ToolAnswer:
    """The tool error of a call that ran out of time, waiting for a heavy-call slot or running."""
    if ending.waiting:
        ending.kind, ending.outcome = "busy", "timed out waiting for a heavy-call slot"
        return failed(
            f"{spec.name} timed out after {settings.timeout:g}s waiting for its turn: the server is busy with "
            "other traversals. Try again shortly, or narrow the query."
        )
    ending.kind, ending.outcome = "timeout", "timed out"
    return failed(
        f"{spec.name} timed out after {settings.timeout:g}s. "
        "Narrow the query (fewer hops or seeds, exclude_node_types, named relations instead of [*]) or try again."
    )


def _internal_error(spec: ToolSpec, exc: Exception) -> ToolAnswer:
    """The tool error of a bug (in bfsql or a plugin), logged with its traceback."""
    logger.error("%s: internal error", spec.name, exc_info=True)
    return failed(
        f"bfsql (or one of its plugins) hit an internal error in {spec.name}: {type(exc).__name__}: "
        f"{clip(str(exc), 300)}. This is a bug, not a problem with your arguments or the graph's store; "
        "please report it."
    )


async def run_tool(
    spec: ToolSpec,
    raw: dict[str, Any],
    graph: Graph,
    settings: ServerSettings,
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    graphs: list[GraphListing] | None = None,
    slots: asyncio.Semaphore | None = None,
    observe: Observer | None = None,
    about: dict[str, Any] | None = None,
) -> ToolAnswer:
    """Run one call of ``spec`` through every stage; an answer or a tool error, never an exception.

    A heavy tool first waits for one of the server's ``slots``; the timeout covers the wait, the
    tool and the fitting. Fitting and serialising run in a worker thread, so that a large answer
    does not hold the event loop. ``observe`` gets the call's :class:`CallRecord` once it ends. ``about`` is what
    the answer's document says of the call besides the answer (which graph answered).
    """
    started = time.perf_counter()
    ending = _Ending(waiting=slots is not None and spec.heavy)
    try:
        return await _run(spec, raw, graph, settings, report, graphs, slots, about, ending)
    except BfsqlError as exc:
        return _refused(exc, graph, settings, ending)
    except TimeoutError:
        return _timed_out(spec, settings, ending)
    except asyncio.CancelledError:
        ending.kind = "cancelled"
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            ending.outcome = "cancelled"
            raise  # this call was cancelled (client or timeout): it ends, and only it
        logger.warning("%s: a shared backend call was cancelled under it", spec.name)
        return failed(f"{spec.name} was interrupted by another call's cancellation; try again.")
    except Exception as exc:
        return _internal_error(spec, exc)
    finally:
        seconds = time.perf_counter() - started
        logger.info(
            "tool %s graph=%s (%s): %s in %.0f ms",
            spec.name, graph.name, _summary(raw if isinstance(raw, dict) else {}), ending.outcome, seconds * 1000,
        )
        if observe is not None:
            observe(CallRecord(spec.name, graph.name, raw, ending.kind, seconds, ending.chars, ending.cut))


async def _invoke(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    result = fn(**arguments)
    if inspect.isawaitable(result):
        result = await result
    return result
