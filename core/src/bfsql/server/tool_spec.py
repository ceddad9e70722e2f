"""A tool as the pipeline runs it: its spec, made from a function, and the call's arguments checked against it.

A tool is a function whose parameters are its arguments (their annotations, descriptions and
examples make the input schema) and whose return annotation is its answer's type. Two
parameters are not arguments: a first parameter named ``graph`` receives the open
:class:`~bfsql.graph.Graph`, and one annotated :class:`ToolContext` receives the call's
context. Whether a call may set its own answer budget (``max_tokens``) is part of the spec,
not of the function: the pipeline adds that argument and reads it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from bfsql.errors import InvalidArgument, clip, plain_problem
from bfsql.examples import DEMO, Examples
from bfsql.graph import Graph
from bfsql.models import GraphListing, ListAnswer
from bfsql.server.answers import AnswerBudget, compact_json
from bfsql.settings import ServerSettings

__all__ = ["MAX_TOKENS_ARGUMENT", "ToolContext", "ToolSpec", "argument_error", "tool_spec", "validate"]

MAX_TOKENS_ARGUMENT = "max_tokens"
"""The argument a tool registered with ``max_tokens=True`` takes: the call's own answer budget."""

_MaxTokens = Annotated[
    int | None,
    Field(description="Answer budget for this call, in tokens (default and most: the server's).", examples=[8000]),
]


@dataclass
class ToolContext:
    """What a tool function may ask for besides its arguments (a parameter annotated ``ToolContext``)."""

    graph: Graph
    settings: ServerSettings
    """The settings of the graph answering (traversal limits in ``settings.limits``)."""
    answer_budget: AnswerBudget
    """This answer's budget: the pipeline fits the answer to it; the engine may ask it where detail still fits."""
    report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    graphs: list[GraphListing] | None = None
    """The server's graphs, when it serves several and the call named none (describe_schema lists them)."""

    async def progress(self, done: float, total: float | None, message: str) -> None:
        """Tell the client how far a long call is (MCP progress notifications), when it asked."""
        if self.report is not None:
            await self.report(done, total, message)


Bounded = Callable[[Mapping[str, Any], ServerSettings], bool]
"""Whether a heavy tool's call, by its arguments under the server's settings, is bounded to a cheap call's work."""


@dataclass
class ToolSpec:
    """A tool as the pipeline runs it."""

    name: str
    description: str
    fn: Callable[..., Any]
    argument_fields: dict[str, Any]
    """Each argument's annotation and default (``...``: required), the fields of :attr:`arguments`."""
    output: Any = None
    """The answer's model, for the tool's output schema (None: no schema)."""
    injects_schema: bool = False
    """The description lists the graph's types and predicates when they are few (see instructions.py)."""
    heavy: bool = False
    """A traversal that may compute for seconds: it waits for one of its graph's heavy-call slots."""
    bounded: Bounded | None = None
    """For a heavy tool: whether a call's arguments (validated) bound its work, under the server's settings, to a
    cheap call's; such a call runs without waiting for a slot."""
    max_tokens: bool = False
    """A call may ask for a smaller answer budget than the server's (the ``max_tokens`` argument)."""
    graph_param: str | None = None
    context_param: str | None = None
    plugin: str = "bfsql"
    """Who registered it: ``bfsql`` for the built-in tools, else the plugin's name."""
    examples: Examples = DEMO
    """The words its schema's examples and its argument errors' examples are said in (the served graph's)."""

    @functools.cached_property
    def arguments(self) -> type[BaseModel]:
        """The arguments' model: the function's parameters (but ``graph`` and the ToolContext), extra forbidden,
        plus ``max_tokens`` when the tool takes a per-call budget. Built when first used (about 1 ms a tool): one
        call from the terminal checks one tool's arguments."""
        model: type[BaseModel] = create_model(
            f"{''.join(part.title() for part in self.name.split('_'))}Arguments",
            __config__=ConfigDict(extra="forbid"),
            **self.argument_fields,
        )
        return model

    def needs_slot(self, arguments: Mapping[str, Any], settings: ServerSettings) -> bool:
        """Whether this call waits for one of its graph's heavy-call slots: a heavy tool's, unless ``bounded``
        says its arguments make it cheap."""
        return self.heavy and not (self.bounded is not None and self.bounded(arguments, settings))

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a copy of its own: the caller may change it)."""
        return copy.deepcopy(self._input_schema)

    @functools.cached_property
    def _input_schema(self) -> dict[str, Any]:
        # Made once: pydantic takes about 1 ms per schema, and every tools/list (each client's first
        # request) asks for all of them.
        schema: dict[str, Any] = self.examples.say_all(self.arguments.model_json_schema())
        return schema

    @functools.cached_property
    def text_free_arguments(self) -> frozenset[str]:
        """Arguments whose type admits no string: a string sent for one is read as JSON text (see :func:`validate`)."""
        schema = self.input_schema()
        definitions = schema.get("$defs", {})
        return frozenset(name for name, prop in schema.get("properties", {}).items()
                         if not _admits(prop, definitions, "string"))

    @functools.cached_property
    def integer_arguments(self) -> frozenset[str]:
        """Arguments that take an integer and no other number: JSON's 2.0 is the integer 2 for them."""
        schema = self.input_schema()
        definitions = schema.get("$defs", {})
        return frozenset(name for name, prop in schema.get("properties", {}).items()
                         if _admits(prop, definitions, "integer") and not _admits(prop, definitions, "number"))

    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the answer's document (docs/protocol.md): a list answer is a
        :class:`~bfsql.models.ListAnswer` of its items, any other value that is not an object ``{"result": value}``.

        A copy of its own: the caller may change it.
        """
        return copy.deepcopy(self._output_schema)

    @functools.cached_property
    def _output_schema(self) -> dict[str, Any] | None:
        if self.output is None:
            return None
        if typing.get_origin(self.output) is list:
            (item,) = typing.get_args(self.output) or (Any,)
            listed: dict[str, Any] = ListAnswer[item].model_json_schema()  # type: ignore[valid-type]
            return listed
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
    max_tokens: bool = False,
    plugin: str = "bfsql",
    bounded: Bounded | None = None,
) -> ToolSpec:
    """A :class:`ToolSpec` from a function: its parameters become the arguments' model (see the module)."""
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
    if max_tokens:
        if MAX_TOKENS_ARGUMENT in fields:
            raise ValueError(f"{fn.__name__} declares max_tokens itself; register it with max_tokens=True instead")
        fields[MAX_TOKENS_ARGUMENT] = (_MaxTokens, None)
    if output is None and "return" in hints and hints["return"] is not Any:
        output = hints["return"]
    return ToolSpec(
        name=name or fn.__name__,
        description=description or inspect.cleandoc(fn.__doc__ or ""),
        fn=fn,
        argument_fields=fields,
        output=output,
        injects_schema=injects_schema,
        heavy=heavy,
        bounded=bounded,
        max_tokens=max_tokens,
        graph_param=graph_param,
        context_param=context_param,
        plugin=plugin,
    )


def _example(spec: ToolSpec, name: str) -> str:
    field = spec.arguments.model_fields.get(name)
    examples = field.examples if field is not None else None
    if examples:
        return f" Example: {name}={compact_json(spec.examples.say_all(examples[0]))}."
    return ""


def argument_error(spec: ToolSpec, exc: ValidationError) -> InvalidArgument:
    """One plain sentence per problem, with an example where the tool gives one; no library links."""
    accepted = ", ".join(spec.arguments.model_fields) or "no arguments"
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        location = [str(part) for part in error["loc"]]
        name = location[0] if location else "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"Unknown argument {clip(name)!r}: {spec.name} takes {accepted}.")
        elif error["type"] == "missing":
            problems.append(f"Missing argument {name!r}.{_example(spec, name)}")
        else:
            where = ".".join(location) or "arguments"
            got = clip(compact_json(error.get("input")), 60)
            problems.append(f"{where} {plain_problem(error, got)}{_example(spec, name)}")
    return InvalidArgument(" ".join(dict.fromkeys(problems)), f"See the {spec.name} tool's input schema.")


_ENUM_KINDS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _admits(schema: dict[str, Any], definitions: dict[str, Any], kind: str) -> bool:
    """Whether a JSON schema admits values of the JSON type ``kind`` (a schema without a type admits anything)."""
    if "$ref" in schema:
        return _admits(definitions.get(schema["$ref"].rsplit("/", 1)[-1], {}), definitions, kind)
    if "anyOf" in schema or "oneOf" in schema:
        return any(_admits(part, definitions, kind) for part in schema.get("anyOf", schema.get("oneOf", [])))
    declared = schema.get("type")
    if declared is None:
        return "enum" not in schema or any(_ENUM_KINDS.get(type(v)) == kind for v in schema["enum"])
    return kind in (declared if isinstance(declared, list) else [declared])


def _read_json_texts(spec: ToolSpec, raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with each string sent for a text-free argument read as JSON text, where it is JSON, and whole
    numbers such as ``2.0`` sent for an integer argument taken as integers (JSON has one number type).

    Some clients send list and number arguments as JSON text (``node_types='["Animal"]'``); the value
    it parses to must still be of the declared type.
    """
    read = dict(raw)
    for name in spec.text_free_arguments & raw.keys():
        if isinstance(read[name], str):
            try:
                read[name] = json.loads(read[name])
            except ValueError:
                pass
    for name in spec.integer_arguments & raw.keys():
        if isinstance(read[name], float) and read[name].is_integer():
            read[name] = int(read[name])
    return read


def validate(spec: ToolSpec, raw: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments, validated strictly as JSON: a value of another type is refused (``true`` is not 1,
    ``"yes"`` is not true), except that a string sent for an argument that takes no string is read as JSON
    text; :class:`InvalidArgument` in plain words otherwise."""
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{spec.name} takes an object of named arguments.", "Example: {\"seeds\": [\"X\"]}.")
    try:
        text = json.dumps(_read_json_texts(spec, raw), default=_not_json)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{spec.name}'s arguments must be JSON values: {exc}.", "Send strings, numbers, "
                              "true/false, null, lists and objects.") from None
    try:
        model = spec.arguments.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise argument_error(spec, exc) from None
    return {name: getattr(model, name) for name in spec.arguments.model_fields}


def _not_json(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")
