"""The one tool pipeline: every tool call, built-in or from a plugin, passes the same stages.

1. **Arguments** are validated against a model made from the tool function's signature:
   an unknown argument is refused by name, a wrong type is explained in one plain sentence
   with an example.
2. **Timeout**: the call ends after the server's ``timeout``.
3. **Errors** are mapped: a caller's mistake (:class:`~bfsql.errors.BfsqlError`, an
   unknown id) is a tool error with a hint; a backend that failed is reported as such (the
   graph's terminal wraps everything a backend raises); anything else is reported as an
   internal error of bfsql or a plugin, never blamed on the backend.
4. The ``process_result`` hooks edit the typed answer.
5. **Fitting** (:mod:`bfsql.server.fitting`) holds the answer to its budget: the server's
   ``max_tokens``, or the call's own ``max_tokens`` when a tool takes one (never more than
   the server's). The answer is serialised once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from bfsql.engine.answer import Traversal
from bfsql.engine.budget import TraversalBudget
from bfsql.errors import BfsqlError, InvalidArgument, UnknownEntity, clip
from bfsql.graph import Graph
from bfsql.models import GraphListing, PathQueryResult, SchemaDescription, Truncation, to_output
from bfsql.pacing import light_call
from bfsql.server.fitting import (
    Budget,
    answer_limit,
    compact_json,
    fit_list,
    fit_paths,
    fit_record,
    fit_schema,
    fit_traversal,
    hold_texts,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "READ_ONLY",
    "ServeSettings",
    "ToolContext",
    "ToolSpec",
    "fit_and_serialise",
    "run_tool",
    "tool_spec",
]

logger = logging.getLogger("bfsql.server")

DEFAULT_MAX_TOKENS = 20_000
"""Below Claude Code's 25k-token cap on a tool answer, with room for the estimate's error."""

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False)
"""Every tool is read-only and idempotent."""


@dataclass
class ServeSettings:
    """How the server answers: size budget, timeouts and traversal bounds."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout: float = 60.0
    """Seconds a tool call may take before it fails with a timeout error."""
    primitive_timeout: float | None = 30.0
    """Seconds one backend call may take; the error names the primitive (used by the graph's opener)."""
    start_timeout: float = 15.0
    """Seconds the graph may take to open and read its schema when it is one of several."""
    budget: TraversalBudget = field(default_factory=TraversalBudget)
    name: str = "bfsql"
    embedder: Any = None
    """The embedder (or its registered name) for vector search and path queries; None keeps the graph's."""
    named_stubs: bool = True
    """Stubs carry the entity's name; False gives Appendix A's bare stubs (``--bare-stubs``)."""


@dataclass
class ToolContext:
    """What a tool function may ask for besides its arguments (a parameter annotated ``ToolContext``)."""

    graph: Graph
    settings: ServeSettings
    budget: Budget
    """The answer's budget: fitting holds the answer to it; the engine asks it where detail still fits."""
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    graphs: list[GraphListing] | None = None
    """The server's graphs, when it serves several and the call named none (describe_schema lists them)."""

    async def progress(self, done: float, total: float | None, message: str) -> None:
        """Tell the client how far a long call is (MCP progress notifications), when it asked."""
        if self.report is not None:
            await self.report(done, total, message)


@dataclass
class ToolSpec:
    """A tool as the pipeline runs it."""

    name: str
    description: str
    fn: Callable[..., Any]
    arguments: type[BaseModel]
    """The arguments' model: the function's parameters (but ``graph`` and the ToolContext), extra forbidden."""
    output: Any = None
    """The answer's model, for the tool's output schema (None: no schema)."""
    injects_schema: bool = False
    """The description lists the graph's types and predicates when they are few (see instructions.py)."""
    heavy: bool = False
    """A traversal that may compute for seconds: it waits for one of the server's heavy-call slots."""
    graph_param: str | None = None
    context_param: str | None = None
    plugin: str = "bfsql"
    """Who registered it: ``bfsql`` for the built-in tools, else the plugin's name."""

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.arguments.model_json_schema()

    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the answer (lists are wrapped as ``{"result": [...]}``, as MCP wants objects)."""
        if self.output is None:
            return None
        from pydantic import TypeAdapter

        schema = TypeAdapter(self.output).json_schema()
        if schema.get("type") != "object":
            schema = {"type": "object", "properties": {"result": schema}, "required": ["result"], "$defs": schema.pop(
                "$defs", {})}
            if not schema["$defs"]:
                del schema["$defs"]
        return schema


def tool_spec(
    fn: Callable[..., Any],
    name: str | None = None,
    description: str | None = None,
    output: Any = None,
    injects_schema: bool = False,
    heavy: bool = False,
    plugin: str = "bfsql",
) -> ToolSpec:
    """A :class:`ToolSpec` from a function: its parameters become the arguments' model.

    A first parameter named ``graph`` receives the open :class:`~bfsql.graph.Graph`; a parameter
    annotated :class:`ToolContext` receives the call's context. Neither is an argument.
    """
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    graph_param = context_param = None
    for index, param in enumerate(inspect.signature(fn).parameters.values()):
        if index == 0 and param.name == "graph":
            graph_param = param.name
            continue
        if hints.get(param.name) is ToolContext:
            context_param = param.name
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    tool_name = name or fn.__name__
    model = create_model(
        f"{''.join(part.title() for part in tool_name.split('_'))}Arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    if output is None and "return" in hints and hints["return"] is not Any:
        output = hints["return"]
    return ToolSpec(
        name=tool_name,
        description=description or inspect.cleandoc(fn.__doc__ or ""),
        fn=fn,
        arguments=model,
        output=output,
        injects_schema=injects_schema,
        heavy=heavy,
        graph_param=graph_param,
        context_param=context_param,
        plugin=plugin,
    )


# -- stage 1: arguments ---------------------------------------------------------------

_KINDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "list": "a list",
    "dict": "an object",
}


def _expected(error: Any) -> str:
    kind: str = error["type"].split("_")[0]
    message: str = error["msg"]
    return _KINDS.get(kind, message.removeprefix("Input should be ").rstrip("."))


def _example(model: type[BaseModel], name: str) -> str:
    field = model.model_fields.get(name)
    examples = field.examples if field is not None else None
    if examples:
        return f" Example: {name}={compact_json(examples[0])}."
    return ""


def _shown(value: Any) -> str:
    return clip(compact_json(value), 60)


def argument_error(spec: ToolSpec, exc: ValidationError) -> InvalidArgument:
    """One plain sentence per problem, with an example where the tool gives one; no library links."""
    accepted = ", ".join(spec.arguments.model_fields) or "no arguments"
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        location = [str(part) for part in error["loc"]]
        name = location[0] if location else "arguments"
        where = ".".join(location) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"Unknown argument {name!r}: {spec.name} takes {accepted}.")
        elif error["type"] == "missing":
            problems.append(f"Missing argument {name!r}.{_example(spec.arguments, name)}")
        elif len(location) > 1:
            problems.append(
                f"{where} must be {_expected(error)}; got {_shown(error.get('input'))}.{_example(spec.arguments, name)}"
            )
        else:
            problems.append(
                f"{name} must be {_expected(error)}; got {_shown(error.get('input'))}.{_example(spec.arguments, name)}"
            )
    return InvalidArgument(" ".join(dict.fromkeys(problems)), f"See the {spec.name} tool's input schema.")


def validate(spec: ToolSpec, raw: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments, validated; :class:`InvalidArgument` in plain words otherwise."""
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{spec.name} takes an object of named arguments.", "Example: {\"seeds\": [\"X\"]}.")
    try:
        model = spec.arguments.model_validate(raw)
    except ValidationError as exc:
        raise argument_error(spec, exc) from None
    return {name: getattr(model, name) for name in spec.arguments.model_fields}


# -- stages 4 and 5: post-processing and fitting -----------------------------------------


def fit(answer: Any, budget: Budget) -> Any:
    """The answer as plain data within ``budget``, by its kind."""
    if isinstance(answer, Traversal):
        return fit_traversal(answer, budget)
    if isinstance(answer, PathQueryResult):
        return fit_paths(to_output(answer), budget)
    if isinstance(answer, SchemaDescription):
        return fit_schema(to_output(answer), budget)
    if isinstance(answer, BaseModel):
        answer = to_output(answer)
    if isinstance(answer, list):
        note = answer[-1] if answer and isinstance(answer[-1], Truncation) else None
        items = [to_output(i) if isinstance(i, BaseModel) else i for i in (answer[:-1] if note else answer)]
        offset = None if note is None or note.next_offset is None else note.next_offset - len(items)
        return fit_list(items, budget, what="items", note=note, offset=offset)
    if isinstance(answer, dict):
        return fit_record(answer, budget)
    return answer


def result_of(data: Any, text: str | None = None) -> CallToolResult:
    """A tool result: compact JSON text (``text``, when already made), and the same data as structured content."""
    structured = {"result": data} if isinstance(data, list) else data
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(data) if text is None else text)],
        structured_content=structured if isinstance(structured, dict) else None,
    )


ERROR_CHARS = 2000
"""Longest error text: an error says what to do in a few sentences, whatever the arguments echoed."""


def error_result(text: str, max_chars: int = ERROR_CHARS) -> CallToolResult:
    """A tool error the model reads, clipped to ``max_chars`` (echoed input counts against the budget)."""
    return CallToolResult(content=[TextContent(type="text", text=clip(text, max_chars))], is_error=True)


# -- the pipeline ----------------------------------------------------------------------


def _budget(settings: ServeSettings, arguments: dict[str, Any]) -> Budget:
    asked = arguments.pop("max_tokens", None)
    tokens = settings.max_tokens if asked is None else max(min(int(asked), settings.max_tokens), 200)
    return Budget(tokens, settings.named_stubs)


def _summary(arguments: dict[str, Any]) -> str:
    return clip(", ".join(f"{k}={compact_json(v)}" for k, v in arguments.items() if v not in (None, [], {})), 200)


async def run_tool(
    spec: ToolSpec,
    raw: dict[str, Any],
    graph: Graph,
    settings: ServeSettings,
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    graphs: list[GraphListing] | None = None,
    slots: asyncio.Semaphore | None = None,
) -> CallToolResult:
    """Run one call of ``spec`` through every stage; an answer or a tool error, never an exception.

    A heavy tool first waits for one of the server's ``slots``; the timeout covers the wait, the
    tool and the fitting. Fitting and serialising run in a worker thread, so that a large answer
    does not hold the event loop.
    """
    started = time.perf_counter()
    outcome = "error"
    waiting = slots is not None and spec.heavy
    most = min(ERROR_CHARS, answer_limit(settings.max_tokens))

    async def answer(call: dict[str, Any], budget: Budget) -> tuple[Any, str]:
        nonlocal waiting
        if spec.heavy:
            async with slots or contextlib.nullcontext():
                waiting = False
                result = await _invoke(spec.fn, call)
            graph.process_result(result, spec.name)
            return await asyncio.to_thread(fit_and_serialise, result, budget)
        with light_call():
            result = await _invoke(spec.fn, call)
            graph.process_result(result, spec.name)
            return fit_and_serialise(result, budget)  # small: a thread would cost more than it saves

    try:
        arguments = validate(spec, raw)
        budget = _budget(settings, arguments)
        call = dict(arguments)
        if spec.graph_param:
            call[spec.graph_param] = graph
        if spec.context_param:
            call[spec.context_param] = ToolContext(graph, settings, budget, report, graphs)
        fitted, text = await asyncio.wait_for(answer(call, budget), settings.timeout)
        outcome = f"{len(text)} chars" + (", cut" if _was_cut(fitted) else "")
        return result_of(fitted, text)
    except BfsqlError as exc:
        outcome = f"error: {clip(exc.message, 200)}"
        return error_result(str(exc), most)
    except KeyError as exc:
        return error_result(str(UnknownEntity([str(exc.args[0]) if exc.args else "?"])), most)
    except TimeoutError:
        if waiting:
            outcome = "timed out waiting for a heavy-call slot"
            return error_result(
                f"{spec.name} timed out after {settings.timeout:g}s waiting for its turn: the server is busy with "
                "other traversals. Try again shortly, or narrow the query."
            )
        outcome = "timed out"
        return error_result(
            f"{spec.name} timed out after {settings.timeout:g}s. "
            "Narrow the query (fewer hops or seeds, exclude_node_types, named relations instead of [*]) or try again."
        )
    except asyncio.CancelledError:
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
        logger.info(
            "tool %s graph=%s (%s): %s in %.0f ms",
            spec.name, graph.name, _summary(raw if isinstance(raw, dict) else {}), outcome,
            (time.perf_counter() - started) * 1000,
        )


def fit_and_serialise(answer: Any, budget: Budget) -> tuple[Any, str]:
    """The answer fitted to ``budget`` and its wire text (stage 5, as the pipeline runs it)."""
    return hold_texts(fit(answer, budget), budget)


def _was_cut(data: Any) -> bool:
    """Whether a fitted answer says something was left out (a truncation note)."""
    if isinstance(data, dict):
        return bool(data.get("truncated")) or bool((data.get("metadata") or {}).get("truncated"))
    return isinstance(data, list) and bool(data) and isinstance(data[-1], dict) and "truncated" in data[-1]


async def _invoke(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    result = fn(**arguments)
    if inspect.isawaitable(result):
        result = await result
    return result
