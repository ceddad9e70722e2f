"""Server settings and configuration files: every default written once.

:class:`ServerSettings` holds everything ``bfsql serve`` (and ``query``, ``path``,
``explore``) takes besides the graph itself. The command-line flags (``--max-tokens``),
their environment variables (``BFSQL_MAX_TOKENS``) and the ``[server]`` table of a
configuration file are all made from its fields. Precedence: flag, then environment, then
file, then the field's default.

A configuration file (``--config FILE.toml``) names the graphs one server serves::

    [server]
    max_tokens = 20000

    [graphs.famplex]            # no db: the bundled demo
    backend = "sqlite"
    description = "FamPlex demo"

    [graphs.hpo]
    backend = "postgres"
    dsn = { env = "HPO_DSN" }   # a value may come from an environment variable
    max_tokens = 8000           # settings marked per-graph may differ per graph

Each graph's other keys are its backend's options. A mistake in the file is one
:class:`ConfigError` naming the file, the line and the key, raised before anything starts.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import click
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from bfsql.backend_config import option_names
from bfsql.budgets import DEFAULT_LIMITS, DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS, TraversalLimits
from bfsql.errors import BfsqlError, clip, plain_problem
from bfsql.options import field_option
from bfsql.plugins import FIRST_PARTY, install_hint

__all__ = [
    "DEFAULT_MAX_HEAVY_CALLS",
    "GRAPH_COMMANDS",
    "MAKE_TOKEN",
    "MAX_GRAPHS",
    "MIN_TOKEN_LENGTH",
    "MIN_TOKEN_SYMBOLS",
    "SECRET_SETTINGS",
    "ConfigError",
    "ConfigFile",
    "ConfiguredGraph",
    "GraphPlan",
    "ServerSettings",
    "config_text",
    "given_settings",
    "graph_name_error",
    "nearest",
    "problem",
    "read_config",
    "settings_options",
    "shown_value",
    "weak_token",
]

GRAPH_COMMANDS = ("serve", "query", "path", "explore")
"""The commands that open graphs and take the graph-level settings."""

MAX_GRAPHS = 64
"""Most graphs one configuration file may serve: each costs a backend, a cache and its store's indexes."""

DEFAULT_MAX_HEAVY_CALLS = 4
"""Traversals computed at once by default: enough to keep a database busy, few enough that cheap calls stay fast."""

_SERVE = ("serve",)
_WEB = ("serve", "explore")


MIN_TOKEN_LENGTH = 16
"""Shortest accepted auth token (with at least :data:`MIN_TOKEN_SYMBOLS` different characters)."""
MIN_TOKEN_SYMBOLS = 8
MAKE_TOKEN = "openssl rand -hex 32"
"""How the docs and errors say to make a token."""


def weak_token(token: str) -> str | None:
    """Why ``token`` may not guard a server (blank, spaces, short or repetitive), or None when it may."""
    if not token.strip():
        return f"the auth token is blank. Make one with: {MAKE_TOKEN}"
    if any(c.isspace() or not c.isprintable() for c in token):
        return f"the auth token contains spaces or control characters. Make one with: {MAKE_TOKEN}"
    if len(token) < MIN_TOKEN_LENGTH or len(set(token)) < MIN_TOKEN_SYMBOLS:
        return (f"the auth token is too weak: use at least {MIN_TOKEN_LENGTH} characters, "
                f"{MIN_TOKEN_SYMBOLS} of them different. Make one with: {MAKE_TOKEN}")
    return None


RATE = re.compile(r"^\s*[1-9][0-9]{0,8}\s*(/|per)\s*([1-9][0-9]{0,5}\s*)?(second|minute|hour|day)s?\s*$")
"""A rate limit as the ``limits`` library reads it: ``120/minute``, ``10 per second``, ``1000/2 hours``."""


def _setting(default: Any, help: str, *, commands: tuple[str, ...] = GRAPH_COMMANDS, per_graph: bool = False,
             **constraints: Any) -> Any:
    """A settings field: its help, the commands that take it as a flag, and whether a graph may override it."""
    return Field(default, description=help, json_schema_extra={"commands": list(commands), "per_graph": per_graph},
                 **constraints)


class ServerSettings(BaseModel):
    """Everything a served graph is answered with, and how the server listens.

    Its validator is built when a value is first validated (about 15 ms): :meth:`given` makes the settings of a
    command given no setting without it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    max_tokens: int = _setting(DEFAULT_MAX_TOKENS, "Size budget of every tool answer, in estimated tokens.",
                               per_graph=True, ge=MIN_MAX_TOKENS)
    timeout: float = _setting(60.0, "Seconds a tool call may take.", per_graph=True, gt=0)
    primitive_timeout: float = _setting(30.0, "Seconds one backend call may take; the error names the primitive.",
                                        per_graph=True, gt=0)
    start_timeout: float = _setting(15.0, "Seconds each graph of a configuration file may take to open at start-up "
                                    "(the graphs open at once); one that takes longer is served as unavailable.",
                                    per_graph=True, gt=0)
    max_nodes: int = _setting(DEFAULT_LIMITS.max_nodes, "Traversal budget: nodes one answer lists at most (the "
                              "counts are never cut by it).", per_graph=True, ge=1)
    max_edges_per_node: int = _setting(DEFAULT_LIMITS.max_edges_per_node,
                                       "Traversal budget: edges followed from one (hub) node.", per_graph=True, ge=1)
    max_walk_nodes: int = _setting(DEFAULT_LIMITS.max_walk_nodes, "Safety bound: nodes a walk taken hop by hop in the "
                                   "server may visit (stores that walk themselves have none).", per_graph=True, ge=1)
    bare_stubs: bool = _setting(False, "Stubs without names: exactly Appendix A's {id, entity_type}.",
                                per_graph=True)
    embedder: str = _setting("auto", "Embedder for vector search and path queries (must match a store's "
                             "entity vectors); auto: the store's own, else the preferred one installed "
                             "(wordllama-256, then minilm-int8), else hashing.", per_graph=True)
    max_heavy_calls: int = _setting(DEFAULT_MAX_HEAVY_CALLS, "Traversals (bfs_query, intersect_subgraphs, "
                                    "path_query) computed at once; more wait their turn, cheap calls never wait.",
                                    commands=_WEB, ge=1)
    transport: Literal["stdio", "http"] = _setting("stdio", "stdio for desktop clients; http for streamable HTTP.",
                                                   commands=_SERVE)
    host: str = _setting("127.0.0.1", "HTTP bind address (0.0.0.0 or :: for every interface: needs a token).",
                         commands=_WEB)
    port: int = _setting(8000, "HTTP port.", commands=_SERVE, ge=0, le=65535)
    auth_token: str | None = _setting(None, "Bearer token required on every HTTP request (required off loopback).",
                                      commands=_WEB)
    session_idle_timeout: float = _setting(600.0, "Seconds an idle HTTP session is kept before it is closed (a "
                                           "client then opens a new one).", commands=_SERVE, gt=0)
    max_sessions: int = _setting(1000, "Most HTTP sessions open at once; beyond it the idle-longest session of the "
                                 "client holding most is closed for a newcomer (503 only when all are busy).",
                                 commands=_SERVE, ge=1)
    max_sessions_per_client: int = _setting(64, "Most HTTP sessions one client holds (the token's user under OAuth, "
                                            "else its address); beyond it the client's own idle-longest session is "
                                            "closed.", commands=_SERVE, ge=1)
    allowed_hosts: tuple[str, ...] = _setting((), "Extra Host header value accepted over HTTP (e.g. a reverse "
                                              "proxy's name); repeat for several.", commands=_WEB)
    # Serving a team (docs/deploying.md): OAuth, metrics, traces, rate limits, audit log. HTTP only.
    oauth_issuer: str | None = _setting(None, "OAuth 2.1 authorization server (its issuer URL) whose JWT access "
                                        "tokens the HTTP server accepts; needs --oauth-resource and bfsql[team].",
                                        commands=_SERVE)
    oauth_resource: str | None = _setting(None, "This server's public MCP URL (e.g. https://kg.example.org/mcp): "
                                          "the audience tokens must be issued for (RFC 8707).", commands=_SERVE)
    oauth_jwks_url: str | None = _setting(None, "Where the issuer publishes its signing keys; default: the "
                                          "jwks_uri of its metadata.", commands=_SERVE)
    oauth_scope_prefix: str = _setting("graph:", "A token's scope PREFIX+NAME grants graph NAME; PREFIX+* grants "
                                       "every graph.", commands=_SERVE, min_length=1)
    oauth_scope_claim: str = _setting("scope", "The token claim holding its scopes (a space-separated string or a "
                                      "list).", commands=_SERVE, min_length=1)
    oauth_scopes_supported: tuple[str, ...] = _setting((), "A scope MCP clients are told to ask for (the OAuth "
                                                       "metadata's scopes_supported); repeat for several. None by "
                                                       "default: clients ask for no scope, and the provider's token "
                                                       "carries the user's graphs.", commands=_SERVE)
    oauth_metrics_scope: str = _setting("bfsql:metrics", "With OAuth, the scope a token must carry to read /metrics "
                                        "(auth_token, when set, is accepted there too).", commands=_SERVE,
                                        min_length=1)
    metrics: bool = _setting(False, "Serve Prometheus metrics at /metrics (needs bfsql[team]; who may read them: "
                             "docs/deploying.md#metrics).", commands=_SERVE)
    otlp_endpoint: str | None = _setting(None, "Send OpenTelemetry traces to this OTLP/HTTP endpoint (e.g. "
                                         "http://127.0.0.1:4318/v1/traces; needs bfsql[otel]).", commands=_SERVE)
    otlp_sample_ratio: float = _setting(1.0, "Share of tool calls traced when the caller sends no sampled "
                                        "traceparent (a caller's sampled trace is always continued).",
                                        commands=_SERVE, ge=0, le=1)
    rate_limit: str | None = _setting(None, "Tool calls one principal (token subject, or client address) may make "
                                      "to a graph, e.g. 120/minute; beyond it HTTP answers 429 (needs bfsql[team]).",
                                      commands=_SERVE, per_graph=True)
    heavy_rate_limit: str | None = _setting(None, "Traversals (heavy calls) one principal may make to a graph, e.g. "
                                            "20/minute.", commands=_SERVE, per_graph=True)
    rate_limit_storage: str = _setting("memory://", "Where rate-limit counters live: memory:// (per process) or a "
                                       "limits storage URI shared by replicas (redis://HOST:6379).", commands=_SERVE)
    audit_log: str | None = _setting(None, "Append one JSON line per tool call to this file (time, principal, graph, "
                                     "tool, arguments' hash, outcome, duration, answer size), rotated.",
                                     commands=_SERVE)
    audit_log_max_mb: float = _setting(100.0, "Size at which the audit log is rotated, in MB.", commands=_SERVE, gt=0)
    audit_log_backups: int = _setting(5, "Rotated audit logs kept (at least 1: with none, the log would never be "
                                      "rotated).", commands=_SERVE, ge=1)

    @field_validator("auth_token")
    @classmethod
    def _strong_token(cls, token: str | None) -> str | None:
        if token == "":  # an empty variable is an unset one
            return None
        if token is not None and (problem := weak_token(token)):
            raise ValueError(problem)
        return token

    @field_validator("rate_limit", "heavy_rate_limit")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None and not RATE.match(value):
            raise ValueError(f"a rate is COUNT/PERIOD, e.g. 120/minute or 10/second; got {clip(value, 60)!r}")
        return value

    @classmethod
    def given(cls, values: Mapping[str, Any]) -> ServerSettings:
        """The settings with ``values`` validated, the defaults elsewhere; no values: the defaults as they are (valid
        by construction, and ``tests/test_cli.py`` checks they equal the validated ones)."""
        return cls.model_validate(values) if values else cls.model_construct()

    @classmethod
    def per_graph_fields(cls) -> list[str]:
        """The settings a graph of a configuration file may set for itself."""
        return [name for name, field in cls.model_fields.items() if _extra(field)["per_graph"]]

    def for_graph(self, overrides: Mapping[str, Any]) -> ServerSettings:
        """The settings of one graph: these, with the graph's own values of the per-graph settings."""
        return self.model_copy(update=dict(overrides)) if overrides else self

    @property
    def limits(self) -> TraversalLimits:
        """The traversal limits: ``max_nodes``, ``max_edges_per_node`` and ``max_walk_nodes``."""
        return TraversalLimits(max_nodes=self.max_nodes, max_edges_per_node=self.max_edges_per_node,
                               max_walk_nodes=self.max_walk_nodes)

    @property
    def named_stubs(self) -> bool:
        """Whether stubs carry the entity's name (not ``bare_stubs``)."""
        return not self.bare_stubs


def _extra(field: Any) -> dict[str, Any]:
    extra: dict[str, Any] = field.json_schema_extra
    return extra


def env_var(name: str) -> str:
    """The environment variable of a settings field."""
    return f"BFSQL_{name.upper()}"


def settings_options(command: str) -> list[click.Option]:
    """One click option per settings field ``command`` takes, with the field's default and environment variable.

    Only values whose source is the command line or the environment override a configuration
    file (see :func:`given_settings`).
    """
    return [
        field_option(name, field.annotation, help=field.description or "", default=field.default, envvar=env_var(name))
        for name, field in ServerSettings.model_fields.items()
        if command in _extra(field)["commands"]
    ]


def given_settings(ctx: click.Context) -> dict[str, Any]:
    """The settings a command was given on its command line or through ``BFSQL_*`` variables (not defaults)."""
    from click.core import ParameterSource

    given = {}
    for name in ServerSettings.model_fields:
        if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            given[name] = ctx.params[name]
    return given


def nearest(word: str, choices: list[str]) -> str:
    """`` Did you mean 'x'?`` for the closest of ``choices``, or an empty string."""
    if len(word) > 200:  # no name is that long; comparing it would cost seconds
        return ""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def graph_name_error(name: str, served: list[str]) -> str:
    """The message for a tool call naming a graph this server does not serve."""
    return f"Unknown graph {clip(name)!r}.{nearest(name, served)} This server's graphs: {', '.join(served)}."


class ConfigError(BfsqlError):
    """A mistake in a configuration file: the file, the line and the key."""

    code = "invalid_config"

    def __init__(self, path: Path, line: int | None, key: str, problem: str, hint: str = "") -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}", hint)


@dataclass(frozen=True)
class GraphPlan:
    """One graph to serve: its name, backend, the backend's validated config and its settings."""

    name: str
    spec: Any
    """The :class:`~bfsql.plugins.BackendSpec` of its backend."""
    config: BaseModel
    settings: ServerSettings
    """Its settings (the server's, with its own per-graph values)."""
    description: str | None = None


@dataclass(frozen=True)
class ConfiguredGraph:
    """One ``[graphs.NAME]`` table, checked."""

    name: str
    backend: str
    description: str | None
    overrides: dict[str, Any]
    """Its own values of the per-graph settings."""
    config: BaseModel
    """Its backend's config, validated."""


@dataclass(frozen=True)
class ConfigFile:
    """A configuration file, checked: the ``[server]`` values and the graphs (the default one first)."""

    path: Path
    server: dict[str, Any]
    graphs: list[ConfiguredGraph]


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+?)\s*=")
GRAPH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SECTION_KEYS = ("backend", "description", "default")


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each table and key of a TOML text is written, by its dotted path."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.match(line):
            table = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            for depth in range(1, len(table) + 1):
                lines.setdefault(table[:depth], number)
        elif key := _KEY.match(line):
            path = table + tuple(part.strip().strip("\"'") for part in key.group(1).split("."))
            lines.setdefault(path, number)
    return lines


def problem(error: Any, value: Any, shown: str | None = None) -> str:
    """A validation error of a setting or a backend option in plain words: what the value must be, and what it was.

    ``shown`` replaces the value where it must not be printed (a secret, or a value read from an
    environment variable); values are clipped to a line.
    """
    return plain_problem(error, shown if shown is not None else clip(repr(value), 80))


SECRET_SETTINGS = frozenset({"auth_token"})
"""Settings whose values errors never print."""


def shown_value(name: str, value: Any, env: str | None = None) -> str | None:
    """How an error names a setting's value: None to print it, else words that do not reveal it."""
    if env is not None:
        return f"the value of environment variable {env} (not shown)"
    return "(not shown)" if name in SECRET_SETTINGS else None


class _Reader:
    """Checks one parsed file, with the line of every key for its errors."""

    def __init__(self, path: Path, text: str, embedders: Collection[str]) -> None:
        self.path = path
        self.lines = _key_lines(text)
        self.embedders = sorted(embedders)

    def error(self, keys: tuple[str, ...], problem: str, hint: str = "", table: bool = False) -> ConfigError:
        """The error at ``keys`` (a key, or a whole table when ``table``), on the line that writes it."""
        line = next((self.lines[keys[:n]] for n in range(len(keys), 0, -1) if keys[:n] in self.lines), None)
        if table or len(keys) == 1:
            label = f"[{'.'.join(keys)}]" if keys else ""
        else:
            label = f"[{'.'.join(keys[:-1])}] {keys[-1]}"
        return ConfigError(self.path, line, label, problem, hint)

    def resolve_env(self, keys: tuple[str, ...], value: Any) -> Any:
        """``{env = "VAR"}`` replaced by the variable's value."""
        if isinstance(value, dict) and set(value) == {"env"}:
            var = value["env"]
            if not isinstance(var, str) or var not in os.environ:
                raise self.error(keys, f"environment variable {var!r} is not set.",
                                 "Set it, or write the value in the file.")
            return os.environ[var]
        return value

    def settings(self, table: tuple[str, ...], values: Mapping[str, Any], allowed: list[str]) -> dict[str, Any]:
        """``values`` checked as settings fields (only ``allowed`` ones), with their own errors."""
        checked: dict[str, Any] = {}
        for key, raw in values.items():
            if key not in allowed:
                raise self.error((*table, key), "unknown setting.",
                                 f"{nearest(key, allowed).strip()} Settings here: {', '.join(allowed)}.".strip())
            value = self.resolve_env((*table, key), raw)
            try:
                ServerSettings.model_validate({key: value})
            except ValidationError as exc:
                shown = shown_value(key, value, raw["env"] if value is not raw else None)
                raise self.error((*table, key), problem(exc.errors(include_url=False)[0], value, shown)) from None
            if key == "embedder" and value != "auto" and value not in self.embedders:
                hint = install_hint(value) or nearest(value, sorted({*self.embedders, *FIRST_PARTY}))
                raise self.error((*table, key), f"embedder {value!r} is not installed.",
                                 f"{hint.strip()} Installed: {', '.join(self.embedders)}; see 'bfsql plugins'.".strip())
            checked[key] = value
        return checked

    def backend_options(self, table: tuple[str, ...], spec: Any, values: Mapping[str, Any]) -> BaseModel:
        """The backend's config model from the graph's remaining keys."""
        fields = list(spec.config_model.model_fields)
        names = option_names(spec.config_model)  # the fields, and old names still taken (with a warning)
        for key in values:
            if key in ServerSettings.model_fields:
                raise self.error((*table, key), "a server setting, the same for every graph.", "Set it in [server].")
            if key not in names:
                takes = ", ".join(dict.fromkeys([*_SECTION_KEYS, *ServerSettings.per_graph_fields(), *fields]))
                raise self.error((*table, key), f"not an option of backend {spec.name!r}.",
                                 f"{nearest(key, fields).strip()} A {spec.name} graph takes: {takes}.".strip())
        resolved = {key: self.resolve_env((*table, key), value) for key, value in values.items()}
        try:
            return spec.config_model.model_validate(resolved)  # type: ignore[no-any-return]
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            key = str(err["loc"][0]) if err["loc"] else ""
            if not key:
                raise self.error(table, f"{err['msg']}.", table=True) from None
            raw = values.get(key)
            shown = shown_value(key, resolved.get(key), raw["env"] if isinstance(raw, dict) and "env" in raw else None)
            raise self.error((*table, key), problem(err, resolved.get(key), shown)) from None


def _parse_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and its TOML tables; :class:`ConfigError` when it cannot be read or parsed."""
    import tomllib  # here: a command without --config does not read TOML

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, "", f"cannot read the configuration file ({exc}).") from None
    try:
        return text, tomllib.loads(text)
    except RecursionError:
        raise ConfigError(path, None, "", "tables or arrays nested too deeply to read.",
                          "A configuration file needs two levels: [server] and [graphs.NAME].") from None
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\s*\(at line (\d+), column \d+\)", str(exc))
        problem = str(exc)[: where.start()] if where else str(exc)
        raise ConfigError(path, int(where.group(1)) if where else None, "", f"not valid TOML: {problem}.") from None


def _server_table(reader: _Reader, data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[server]`` settings, after refusing any top-level table but ``server`` and ``graphs``."""
    for key in data:
        if key not in ("server", "graphs"):
            raise reader.error((key,), "unknown table.", "A configuration file has [server] and [graphs.NAME] "
                               "tables.")
    server_table = data.get("server", {})
    if not isinstance(server_table, dict):
        raise reader.error(("server",), "must be a table: [server].", table=True)
    return reader.settings(("server",), server_table, list(ServerSettings.model_fields))


def _graphs_table(reader: _Reader, data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[graphs]`` table: at least one graph, at most :data:`MAX_GRAPHS`."""
    graphs_table = data.get("graphs")
    if not isinstance(graphs_table, dict) or not graphs_table:
        raise reader.error(("graphs",) if "graphs" in data else (), "no graphs: add at least one [graphs.NAME] "
                           "table with a backend.", 'Example: [graphs.demo] then backend = "sqlite".', table=True)
    if len(graphs_table) > MAX_GRAPHS:
        raise reader.error(("graphs",), f"{len(graphs_table)} graphs; one server serves at most {MAX_GRAPHS}.",
                           "Split them over several servers (each keeps every graph's indexes in memory).",
                           table=True)
    return graphs_table


def _graph_backend(reader: _Reader, table: tuple[str, ...], section: Any, backends: Mapping[str, Any]) -> str:
    """The installed backend a ``[graphs.NAME]`` table names, after checking the table's shape and name."""
    if not isinstance(section, dict):
        raise reader.error(table, 'must be a table: [graphs.NAME] with backend = "...".', table=True)
    if not GRAPH_NAME.match(table[-1]):
        raise reader.error(table, "a graph name is letters, digits, '.', '_' or '-' (64 at most).", table=True)
    if "backend" not in section:
        installed = ", ".join(sorted(backends))
        raise reader.error(table, "no backend.", f'Add backend = "NAME"; installed: {installed}.', table=True)
    backend = section["backend"]
    if not isinstance(backend, str) or backend not in backends:
        hint = install_hint(str(backend)) or nearest(str(backend), sorted({*backends, *FIRST_PARTY}))
        raise reader.error((*table, "backend"), f"backend {backend!r} is not installed.",
                           f"{hint.strip()} Installed: {', '.join(sorted(backends))}; see 'bfsql plugins'.".strip())
    return backend


def _graph(reader: _Reader, name: str, section: Any, backends: Mapping[str, Any]) -> ConfiguredGraph:
    """One ``[graphs.NAME]`` table checked: its backend, description, per-graph settings and backend options."""
    table = ("graphs", name)
    backend = _graph_backend(reader, table, section, backends)
    description = section.get("description")
    if description is not None and not isinstance(description, str):
        raise reader.error((*table, "description"), "must be a string.")
    if not isinstance(section.get("default", False), bool):
        raise reader.error((*table, "default"), "must be true or false.")
    per_graph = ServerSettings.per_graph_fields()
    overrides = reader.settings(table, {k: v for k, v in section.items() if k in per_graph}, per_graph)
    rest = {k: v for k, v in section.items() if k not in per_graph and k not in _SECTION_KEYS}
    config = reader.backend_options(table, backends[backend], rest)
    return ConfiguredGraph(name, backend, description, overrides, config)


def _default_first(reader: _Reader, graphs: list[ConfiguredGraph], defaults: list[str]) -> list[ConfiguredGraph]:
    """``graphs`` with the one marked ``default = true`` (at most one may be) first."""
    if len(defaults) > 1:
        raise reader.error(("graphs", defaults[1], "default"), f"more than one default graph ({', '.join(defaults)}).",
                           "Mark one graph default = true.")
    if defaults:
        graphs.sort(key=lambda graph: graph.name != defaults[0])
    return graphs


def read_config(path: Path, backends: Mapping[str, Any], embedders: Collection[str]) -> ConfigFile:
    """Read and check a configuration file against the installed backends and embedders; :class:`ConfigError`."""
    text, data = _parse_toml(path)
    reader = _Reader(path, text, embedders)
    server = _server_table(reader, data)
    graphs = [_graph(reader, name, section, backends) for name, section in _graphs_table(reader, data).items()]
    defaults = [name for name, section in data["graphs"].items() if section.get("default")]
    return ConfigFile(path, server, _default_first(reader, graphs, defaults))


def _toml_value(value: Any) -> str:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def config_text(graphs: Mapping[str, tuple[str, BaseModel]], server: Mapping[str, Any] | None = None) -> str:
    """A configuration file serving ``graphs`` (name -> (backend, its config)) with ``server`` settings.

    Tests use it to serve a backend with the very config object they build it from.
    """
    lines = []
    if server:
        lines += ["[server]", *(f"{key} = {_toml_value(value)}" for key, value in server.items()), ""]
    for name, (backend, config) in graphs.items():
        lines += [f"[graphs.{json.dumps(name)}]", f"backend = {_toml_value(backend)}"]
        for key, value in config.model_dump(exclude_none=True).items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)
