"""The ``bfsql`` command line: serve, query, path, explore, load, plugins.

Plugins are loaded when the command runs, not when this module is imported; their
``register_commands`` hooks add commands to the same group. Each command imports what it uses
inside its function (the CLI is the top layer: no cycle is involved), so that ``bfsql load``
does not pay for the MCP server nor ``bfsql serve`` for the loaders.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from bfsql.client_config import CLIENTS, merged, server_entry
from bfsql.errors import BfsqlError, clip
from bfsql.version import __version__

__all__ = ["build_cli", "main"]

DEFAULT_BACKEND = "sqlite"


def _configure_logging(verbosity: int) -> None:
    # Logs go to stderr: stdout belongs to the stdio transport. The start-up line is always shown.
    logging.basicConfig(
        stream=sys.stderr,
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("bfsql.startup").setLevel(logging.INFO)


def _fail(exc: BfsqlError) -> None:
    raise click.ClickException(str(exc))


def _report_plugin_errors() -> None:
    from bfsql.plugins import load_errors

    for error in load_errors():
        click.echo(f"warning: plugin {error['name']!r} failed to load: {error['error']}", err=True)


def _unknown(kind: str, name: str, installed: list[str]) -> str:
    """The error for a backend or embedder that is not installed: the nearest name, or how to install it."""
    from bfsql.plugins import FIRST_PARTY, install_hint
    from bfsql.settings import nearest

    hint = install_hint(name) or nearest(name, sorted({*installed, *FIRST_PARTY}))
    return f"unknown {kind} {name!r}.{hint} Installed: {', '.join(installed)} (see 'bfsql plugins')."


def _check_embedder(name: str, where: str) -> None:
    from bfsql.plugins import get_embedders

    installed = sorted(get_embedders())
    if name != "auto" and name not in installed:
        raise click.BadParameter(_unknown("embedder", name, installed), param_hint=where)


def _backend_epilog() -> str:
    from bfsql.plugins import get_backends

    names = ", ".join(sorted(get_backends()))
    return "\n".join([
        "\b", f"Installed backends: {names} (their options are listed by backend above; 'bfsql plugins' says "
        "which plugin provides each).",
        "", "\b", "Several graphs, or settings kept in a file: --config FILE.toml (see docs/cli.md).",
        "Precedence: flag, then BFSQL_* environment variable, then file, then default.",
    ])


class GraphCommand(click.Command):
    """A command that opens graphs: its help lists each installed backend's options in a section of their own."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command's own options and settings, then one section per backend."""
        from bfsql.backend_options import backend_help_sections
        from bfsql.plugins import get_backends

        super().format_options(ctx, formatter)
        for title, rows in backend_help_sections(get_backends()):
            with formatter.section(title):
                formatter.write_dl(rows)


def _graph_command(command: click.Command) -> click.Command:
    """Give a command that opens graphs its settings flags, --config, --backend and every backend's options."""
    from bfsql.backend_options import backend_click_options
    from bfsql.plugins import get_backends
    from bfsql.settings import settings_options

    base = _BASE_PARAMS.setdefault(command.name or "", list(command.params))
    command.params = [
        *base,
        click.Option(["--config", "config"], type=click.Path(dir_okay=False, path_type=Path), envvar="BFSQL_CONFIG",
                     show_envvar=True, help="A TOML file naming the graphs to serve and the server's settings."),
        click.Option(["--backend", "backend"], default=DEFAULT_BACKEND, envvar="BFSQL_BACKEND", show_envvar=True,
                     show_default=True, help="Backend of the one graph served (options by backend below)."),
        *settings_options(command.name or ""),
        *backend_click_options(get_backends(), hidden=True),
    ]
    command.epilog = _backend_epilog()
    return command


_BASE_PARAMS: dict[str, list[click.Parameter]] = {}


def _given_on_command_line(name: str) -> bool:
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(name) is ParameterSource.COMMANDLINE


def _resolve(options: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The server settings and the graphs to open, from a command's options (and its --config file)."""
    from pydantic import ValidationError

    from bfsql.backend_options import resolve_config
    from bfsql.options import flag
    from bfsql.plugins import get_backends, get_embedders
    from bfsql.settings import GraphPlan, ServerSettings, given_settings, problem, read_config, shown_value

    _report_plugin_errors()
    specs = get_backends()
    config_path = options.pop("config")
    backend = options.pop("backend")
    backend_options = _split_backend_options(options)
    for name in ServerSettings.model_fields:
        options.pop(name, None)
    given = given_settings(click.get_current_context())
    try:
        file = read_config(config_path, specs, get_embedders()) if config_path else None
    except BfsqlError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        server = ServerSettings.given({**(file.server if file else {}), **given})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        name = str(err["loc"][0])
        source = f"{flag(name)} (or BFSQL_{name.upper()})" if name in given else f"{config_path}: [server] {name}"
        raise click.BadParameter(problem(err, err.get("input"), shown_value(name, err.get("input"))),
                                 param_hint=source) from None
    per_graph = {k: v for k, v in given.items() if k in ServerSettings.per_graph_fields()}
    if file is None:
        if backend not in specs:
            raise click.BadParameter(_unknown("backend", backend, sorted(specs)), param_hint="--backend")
        _check_embedder(server.embedder, "--embedder")
        try:
            config = resolve_config(specs[backend], backend_options)
        except BfsqlError as exc:
            raise click.ClickException(str(exc)) from None
        return server, [_with_demo(GraphPlan(backend, specs[backend], config, server.for_graph({})))]
    stray = (["--backend"] if _given_on_command_line("backend") else []) + [
        "--" + k.replace("_", "-") for k, v in backend_options.items() if v not in (None, ()) and
        _given_on_command_line(k)]
    if stray:
        raise click.UsageError(
            f"{', '.join(stray)} cannot be combined with --config: each graph's backend and options are set in "
            f"its [graphs.NAME] table of {config_path}."
        )
    plans = []
    if "embedder" in given:
        _check_embedder(server.embedder, "--embedder")
    for graph in file.graphs:
        overrides = {**graph.overrides, **per_graph}
        plans.append(_with_demo(GraphPlan(graph.name, specs[graph.backend], graph.config, server.for_graph(overrides),
                                          graph.description)))
    return server, plans


def _with_demo(plan: Any) -> Any:
    """The plan, serving the bundled demo (the copy for its embedder) when it is a sqlite graph without a db."""
    if plan.spec.name != DEFAULT_BACKEND or getattr(plan.config, "db", None) is not None:
        return plan
    from bfsql.demo import demo_store

    try:
        db = demo_store(plan.settings.embedder)
    except BfsqlError as exc:
        raise click.ClickException(str(exc)) from None
    return dataclasses.replace(plan, config=plan.config.model_copy(update={"db": db}))


def _split_backend_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    from bfsql.backend_config import option_names
    from bfsql.plugins import get_backends

    names = {name for spec in get_backends().values() for name in option_names(spec.config_model)}  # old names too
    return {k: kwargs.pop(k) for k in list(kwargs) if k in names}


class BfsqlGroup(click.Group):
    """The ``bfsql`` group: each command's whole first sentence in the list, and -v named where it goes.

    A command that opens graphs gets its settings and every backend's options when it is first
    asked for (:meth:`get_command`), so that one command does not build the options of all four.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._equipped: set[str] = set()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, with its options when it opens graphs."""
        command = super().get_command(ctx, cmd_name)
        if isinstance(command, GraphCommand) and cmd_name not in self._equipped:
            _graph_command(command)
            self._equipped.add(cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands with the first sentence of their help, never cut with '...' (the formatter wraps it)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.short_help or _first_sentence(command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; ``bfsql serve -v`` is told that -v goes before the command."""
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            if exc.option_name in ("-v", "--verbose") and exc.ctx is not None:
                raise click.UsageError(
                    f"{exc.option_name} goes before the command: bfsql {exc.option_name} {exc.ctx.info_name} …",
                    exc.ctx,
                ) from None
            raise


def _first_sentence(text: str) -> str:
    """The first sentence of a help text (up to its first '. ' or blank line), on one line."""
    paragraph = " ".join(text.split("\n\n")[0].split())
    head, dot, _ = paragraph.partition(". ")
    return head + "." if dot else paragraph


@click.group(cls=BfsqlGroup)
@click.version_option(__version__, prog_name="bfsql")
@click.option("-v", "--verbose", count=True, help="-v: log each tool call and HTTP request (INFO); -vv: debug.")
def cli(verbose: int) -> None:
    """bfsql: explore a knowledge graph from any MCP client with the BFS-QL tools."""
    _configure_logging(verbose)


@click.command(cls=GraphCommand)
def serve(**options: Any) -> None:
    """Serve graphs over MCP (stdio by default). With no options: the FamPlex demo graph.

    \b
      bfsql serve                                   # the demo, for a desktop client
      bfsql serve --db graph.db                     # a store made by 'bfsql load'
      bfsql serve --config graphs.toml              # several graphs (see docs/cli.md)
      BFSQL_AUTH_TOKEN=... bfsql serve --transport http --host 0.0.0.0
    """
    from bfsql.server.allocator import limit_heaps
    from bfsql.server.run import serve_http, serve_stdio

    server, plans = _resolve(options)
    limit_heaps()  # before any thread allocates: a long-lived server keeps less of what heavy calls freed
    try:
        if server.transport == "stdio":
            if sys.stdin.isatty():
                click.echo(f"bfsql: serving {', '.join(p.name for p in plans)} over stdio. This is for MCP clients: "
                           "add 'bfsql serve' to your client's config (see README), or try 'bfsql query'. "
                           "Ctrl-C stops.", err=True)
            asyncio.run(serve_stdio(plans, server))
        else:
            verbose = click.get_current_context().find_root().params.get("verbose", 0) > 0
            asyncio.run(serve_http(plans, server, verbose=verbose))
    except BfsqlError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        pass


def _parse_arguments(arguments: tuple[str, ...], tool: str | None = None) -> dict[str, Any]:
    if len(arguments) == 1 and arguments[0].lstrip().startswith("{"):
        try:
            parsed = json.loads(arguments[0])
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"invalid JSON arguments: {exc}") from None
        if not isinstance(parsed, dict):
            raise click.BadParameter("JSON arguments must be an object")
        return parsed
    result: dict[str, Any] = {}
    for item in arguments:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected key=value or a JSON object, got {item!r}{_did_you_mean(tool, item)}")
        try:
            result[key] = json.loads(raw)
        except json.JSONDecodeError:
            result[key] = raw
    return result


def _did_you_mean(tool: str | None, value: str) -> str:
    """``; did you mean query=BRAF?``: the value named as the tool's first required argument, when there is one."""
    from bfsql.server.host import collect_tools

    spec = next((s for s in collect_tools() if s.name == tool), None)
    required = spec.input_schema().get("required", []) if spec is not None else []
    return f"; did you mean {required[0]}={value}?" if required else ""


def _render_path(data: dict[str, Any]) -> str:
    meta = data.get("metadata", {})
    results = data.get("results", [])
    lines = [
        f"{len(results)} of {meta.get('total_results', len(results))} result(s) for {meta.get('query')} "
        f"({meta.get('hops')} hop(s), {meta.get('total_candidates_explored')} candidates, "
        f"{meta.get('execution_time_ms')} ms)"
    ]

    def step_text(step: dict[str, Any]) -> str:
        if "edge" in step:
            return f"-{step['edge']}->" if step.get("direction") == "outgoing" else f"<-{step['edge']}-"
        label = step.get("label")
        return f"{label} ({step['entity']})" if label and label != step["entity"] else str(step["entity"])

    for result in results:
        entity = result["entity"]
        lines.append(
            f"  {entity['id']}  [{entity['entity_type']}]" + (f"  {entity['name']}" if entity.get("name") else "")
            + f"  score={result['score']:.3f}" + (f"  depth={result['depth']}" if "depth" in result else "")
        )
        lines.append("    " + " ".join(step_text(step) for step in result["path"]))
    if meta.get("error"):
        lines.append(f"{meta['error']}: {meta.get('message', '')}")
    if meta.get("reason"):
        partial = " ".join(step_text(step) for step in meta.get("partial_path", []))
        lines.append(f"stopped at hop {meta.get('stopped_at_hop')}: {meta['reason']} (after: {partial})")
        if meta.get("available_relations") is not None:
            lines.append(f"available relations: {', '.join(meta['available_relations']) or '(none)'}")
    if meta.get("hint"):
        lines.append(f"hint: {meta['hint']}")
    for note in meta.get("truncated", []):
        lines.append(f"truncated ({note['reason']}): {note['detail']} {note['hint']}")
    for warning in meta.get("warnings", []):
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def _note_lines(notes: list[dict[str, Any]]) -> list[str]:
    return [
        f"{'note' if note['reason'] == 'unknown_ids' else 'truncated'} ({note['reason']}"
        + (f", {note['count']} items" if note.get("count") else "") + f"): {note['detail']} {note['hint']}"
        for note in notes
    ]


def _seed_paths(node: str, edges: list[list[str]], seeds: list[str]) -> list[str]:
    """A shared node's paths (intersect_subgraphs' ``paths`` entry: every seed's edges in seed order) as one line
    per seed, "SEED -p-> X <-q- NODE"."""
    lines: list[str] = []
    for seed in seeds:
        at, steps, used = seed, [], set()
        while at != node and (step := next((i for i, e in enumerate(edges) if i not in used and at in (e[0], e[2])),
                                           None)) is not None:
            subject, predicate, obj = edges[step]
            steps.append(f"-{predicate}-> {obj}" if subject == at else f"<-{predicate}- {subject}")
            at = obj if subject == at else subject
            used.add(step)
        if steps:
            lines.append(f"{seed} {' '.join(steps)}")
    return lines


def _render_traversal(data: dict[str, Any]) -> str:
    """A traversal answer for people: every node with its name and how much of it was shown."""
    nodes, edges = data["nodes"], data["edges"]
    lines = [
        f"{data.get('node_count')} nodes, {data.get('edge_count')} edges in all; "
        f"shown: {len(nodes)} nodes, {len(edges)} edges"
    ]
    width = max((len(n["id"]) for n in nodes), default=0)
    for node in nodes:
        metadata = node.get("metadata")
        name = (metadata or {}).get("name") or node.get("name") or ""
        shown = "stub" if metadata is None else "clipped" if "_clipped" in metadata else "full"
        lines.append(f"  {node['id']:<{width}}  [{node['entity_type']}]  {name}  ({shown})".rstrip())
    for edge in edges:
        lines.append(f"  {edge['subject']} -{edge['predicate']}-> {edge['object']}")
    seeds = data.get("seeds", [])
    for paths in data.get("paths", []):
        lines += [f"  path {line}" for line in _seed_paths(paths["node"], paths["edges"], seeds)]
    lines += _note_lines(data.get("truncated", []))
    lines += [f"warning: {warning}" for warning in data.get("warnings", [])]
    summary = data.get("schema_summary", {})
    lines.append(f"types: {', '.join(summary.get('entity_types_found', []))}")
    lines.append(f"predicates: {', '.join(summary.get('predicates_found', []))}")
    return "\n".join(lines)


def _render_list(tool: str, data: dict[str, Any]) -> str:
    """A list answer for people: a line per item, then where the page stands and what is unknown or cut."""
    items = data["items"]
    if not items:
        lines = ["No match." if tool == "search_entities" else "Nothing found."]
    elif all(isinstance(i, dict) and "id" in i for i in items):
        lines = [
            f"{i['id']}  [{i.get('entity_type', '')}]  {i.get('name') or (i.get('metadata') or {}).get('name', '')}"
            .rstrip()
            + (f"  score={i['score']:.3f}" if isinstance(i.get("score"), int | float) else "")
            + (f"  ({'+'.join(i['rankers'])})" if i.get("rankers") else "")
            for i in items
        ]
    else:
        lines = [json.dumps(i, ensure_ascii=False) for i in items]
    page = data.get("page")
    if page and page.get("next_offset") is not None:
        lines.append(f"page: {page['offset']}..{page['offset'] + page['returned'] - 1} of {page['total']}; "
                     f"offset={page['next_offset']} for the next")
    for field in ("unknown_ids", "unknown_edges"):
        if data.get(field):
            lines.append(f"{field.replace('_', ' ')}: {', '.join(map(str, data[field]))}")
    return "\n".join([*lines, *_note_lines(data.get("truncated", []))])


def _render(tool: str, data: Any) -> str:
    if isinstance(data, dict) and "results" in data and "metadata" in data:
        return _render_path(data)
    if isinstance(data, dict) and "nodes" in data and "edges" in data:
        return _render_traversal(data)
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        return _render_list(tool, data)
    return json.dumps(data, indent=2, ensure_ascii=False)


async def _call_tool(plans: list[Any], tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """Whether the call answered, and its answer's document (or error text).

    The call runs through the same host and pipeline as a served one and gets the same
    document, without the MCP SDK (about a second of imports for one call) and without warming
    up the embedder (loaded only if the call searches).
    """
    from bfsql.backend import opening_for_one_call
    from bfsql.server.host import ToolHost, open_host

    with opening_for_one_call():  # a store reads what only some calls need when one needs it (no walk: no index)
        async with open_host(plans, kind=ToolHost, warm_up=False) as host:
            answer = await host.answer(tool, arguments)
    return not answer.is_error, answer.text if answer.is_error else json.loads(answer.text)


@click.command(cls=GraphCommand)
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON answer.")
@click.option("--format", "diagram", type=click.Choice(["dot", "mermaid", "graphml"]), default=None,
              help="Print a bfs_query or intersect_subgraphs answer as a diagram (see docs/explore.md).")
def query(tool: str, arguments: tuple[str, ...], as_json: bool, diagram: str | None, **options: Any) -> None:
    """Call one tool from the terminal ('bfsql tools' lists them with their arguments).

    ARGUMENTS are key=value pairs (values parsed as JSON when they can be) or one JSON
    object, e.g.:

    \b
      bfsql query search_entities query=BRAF
      bfsql query bfs_query '{"seeds": ["FPLX:RAF"], "max_hops": 1}'
      bfsql query bfs_query seeds='["HGNC:BRAF"]' max_hops=2 --format mermaid
    """
    if diagram:
        from bfsql.diagrams import DIAGRAM_TOOLS  # here: a call without --format does not load the diagrams

        if tool not in DIAGRAM_TOOLS:
            raise click.UsageError(f"--format {diagram} draws {' and '.join(DIAGRAM_TOOLS)} answers, not {tool}'s; "
                                   "use --json for the others.")
        if as_json:
            raise click.UsageError("give either --json or --format, not both")
    _print_answer(tool, _parse_arguments(arguments, tool), as_json, options, diagram)


@click.command(cls=GraphCommand)
@click.argument("path_query", metavar="QUERY")
@click.option("--k", "k", type=int, default=None,
              help="Entry points, relations per entity and semantic matches kept per hop.  [default: 3, and a name "
              "that matches entities exactly enters at those only]")
@click.option("--threshold", type=float, default=0.5, show_default=True,
              help="Least similarity (0-1) for fuzzy relation and semantic matches.")
@click.option("--max-results", type=int, default=20, show_default=True, help="Most results returned.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON answer.")
def path(path_query: str, k: int | None, threshold: float, max_results: int, as_json: bool, **options: Any) -> None:
    """Run a path query (the path_query tool) from the terminal.

    \b
      bfsql path '"BRAF" -[isa]-> type:Family <-[isa]- type:Gene'
      bfsql path '@FPLX:RAF <-[*]- type:Gene' --k 5 --json
      bfsql path '@HGNC:BRAF -[isa*]->'

    See docs/path-queries.md for the language.
    """
    arguments = {"query": path_query, "threshold": threshold, "max_results": max_results}
    if k is not None:  # unset, as for the tool: a name matching an entity exactly enters there only
        arguments["k"] = k
    _print_answer("path_query", arguments, as_json, options)


def _print_answer(
    tool: str, arguments: dict[str, Any], as_json: bool, options: dict[str, Any], diagram: str | None = None
) -> None:
    """Call ``tool`` on the graph the command's options describe and print its answer (or fail with its error)."""
    _, plans = _resolve(options)
    try:
        ok, data = asyncio.run(_call_tool(plans, tool, arguments))
    except BfsqlError as exc:
        _fail(exc)
        return
    if not ok:
        raise click.ClickException(str(data))
    if diagram:
        from bfsql.diagrams import diagram as draw

        click.echo(draw(tool, data, diagram), nl=False)
        return
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(_render(tool, data).strip())


EXPLORE_PORT = 8765
"""The explorer's port unless --port (or BFSQL_EXPLORE_PORT) says otherwise: not serve's, so both can run."""


@click.command(cls=GraphCommand)
@click.option("--port", type=int, default=EXPLORE_PORT, show_default=True, envvar="BFSQL_EXPLORE_PORT",
              show_envvar=True, help="HTTP port of the page.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default web browser.")
def explore(port: int, open_browser: bool, **options: Any) -> None:
    """Search and draw a graph in the browser. With no options: the FamPlex demo graph.

    Serves a local web page (127.0.0.1 by default; beyond loopback, --auth-token is
    required, as for 'bfsql serve'). It reads the graph through the same tools, budgets
    and truncation notes as an MCP client. Shareable addresses, e.g.:

    \b
      http://127.0.0.1:8765/?seed=HGNC:BRAF&hops=2
      http://127.0.0.1:8765/?q=RAF

    See docs/explore.md.
    """
    from bfsql.explore import serve_explorer
    from bfsql.explore.app import page_url

    server, plans = _resolve(options)
    line = (f"bfsql explore: {', '.join(p.name for p in plans)} at {page_url(server, port)}"
            + (" (first visit: add ?token=<your token>)" if server.auth_token else "") + ". Ctrl-C stops.")
    try:
        asyncio.run(serve_explorer(plans, server, port, open_browser, started=lambda: click.echo(line, err=True)))
    except BfsqlError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        pass


def _load_limit_help() -> str:
    from bfsql.loading.limits import DEFAULT_LIMITS

    def size(value: int) -> str:
        return f"{value >> 20}M" if value >= 1 << 20 and value % (1 << 20) == 0 else str(value)

    shown = ", ".join(f"{f.name}={size(getattr(DEFAULT_LIMITS, f.name))}" for f in dataclasses.fields(DEFAULT_LIMITS))
    return f"Change a size limit, e.g. line_bytes=64M (repeatable; K/M/G = x1024). Defaults: {shown}."


def _load_formats() -> list[str]:
    from bfsql.loading.formats import FORMAT_NAMES

    return list(FORMAT_NAMES)


@click.command()
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), envvar="BFSQL_SQLITE_DB", required=True,
              help="SQLite file to load into (created if missing).")
@click.option("--format", "fmt", type=click.Choice(_load_formats()), default=None,
              help="Input format of every SOURCE (default: from each file's extension, or its start for "
              ".rdf/.xml and Neo4j CSV); kgx takes node and edge files, or a directory of them.")
@click.option("--description", default=None, help="Graph description shown by describe_schema.")
@click.option("--embedder", default=None, envvar="BFSQL_LOAD_EMBEDDER",
              help="Embedder of the entity vectors: a registered name, or 'none' for no vectors "
              "(default: the store's own, else wordllama-256 or minilm-int8 when installed, else none). "
              "Another embedder re-embeds every entity.")
@click.option("--prefix", "prefixes", multiple=True, metavar="NAME=IRI",
              help="RDF ids under IRI become NAME:local (repeatable; =IRI: bare local names), as the sparql "
              "backend's --prefix.")
@click.option("--file-prefixes/--no-file-prefixes", default=True, show_default=True,
              help="Compact RDF ids with the Turtle files' own @prefix declarations too.")
@click.option("--term-type", default=None, metavar="TYPE",
              help="Entity type of every term of OBO and OWL sources (default: each term's namespace).")
@click.option("--limit", "limits", multiple=True, metavar="NAME=VALUE", help=_load_limit_help())
@click.option("--max-errors", type=click.IntRange(min=1), default=20, show_default=True,
              help="Bad rows reported (all are counted).")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, path_type=Path))
def load(
    db: Path, fmt: str | None, description: str | None, embedder: str | None, prefixes: tuple[str, ...],
    file_prefixes: bool, term_type: str | None, limits: tuple[str, ...], max_errors: int, sources: tuple[Path, ...],
) -> None:
    """Load graph files into the embedded SQLite store, atomically.

    Either every record of every SOURCE is loaded, or (on bad rows, an interrupt or
    SIGTERM) the store is left exactly as it was. Loading the same files again changes
    nothing. Entity names are embedded for vector search; with --embedder and no SOURCE,
    an existing store is re-embedded (to switch models safely). Progress goes to stderr,
    one line per phase (read, index, embed, commit).
    """
    from bfsql.loading.errors import BadRows, LoadError, LoadInterrupted
    from bfsql.loading.limits import LoadLimits
    from bfsql.loading.progress import StderrProgress
    from bfsql.loading.sqlite_loader import AUTO_EMBEDDER, load_sqlite, reembed_store

    choice = embedder or AUTO_EMBEDDER
    if not sources and (embedder is None or not db.is_file()):
        raise click.UsageError("give SOURCE files to load, or --embedder NAME to re-embed an existing --db store")
    progress = StderrProgress(sys.stderr, live=sys.stderr.isatty())
    try:
        if sources:
            report = load_sqlite(
                db, list(sources), fmt=fmt, description=description, progress=progress, embedder=choice,
                limits=LoadLimits.parse(limits), max_errors=max_errors, prefixes=prefixes,
                file_prefixes=file_prefixes, term_type=term_type,
            )
        else:
            report = reembed_store(db, choice, progress=progress)
    except BadRows as exc:
        shown = f" (the first {len(exc.rows)} shown)" if exc.count > len(exc.rows) else ""
        rows = "1 bad row" if exc.count == 1 else f"{exc.count:,} bad rows"
        them = "it" if exc.count == 1 else "them"
        raise click.ClickException(f"{exc}\n{rows}{shown}; nothing was loaded: fix {them} and run again") from None
    except LoadInterrupted as exc:
        outcome = "after the store was replaced: the load is complete" if exc.committed else (
            "the store was left as it was"
        )
        click.echo(f"bfsql load: {exc}; {outcome}", err=True)
        sys.exit(128 + exc.signum)
    except (LoadError, BfsqlError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(dataclasses.asdict(report), default=str))


def _kind(schema: dict[str, Any], plural: bool = False) -> str:
    """A JSON schema's type in a few words: string, integer, list of strings, list of 3 strings, a|b."""
    if "enum" in schema:
        return "|".join(map(str, schema["enum"]))
    if "anyOf" in schema:
        return " or ".join(_kind(option, plural) for option in schema["anyOf"] if option.get("type") != "null")
    if schema.get("type") == "array":
        items = _kind(schema.get("items", {}), plural=True)
        size = schema.get("minItems")
        counted = f"{size} {items}" if size is not None and size == schema.get("maxItems") else items
        return f"{'lists' if plural else 'list'} of {counted}"
    kind = str(schema.get("type", "value"))
    return kind + "s" if plural else kind


def _argument_line(name: str, schema: dict[str, Any], required: bool) -> str:
    default = "required" if required else f"default {json.dumps(schema.get('default'))}"
    return f"    {name} ({_kind(schema)}; {default}): {schema.get('description', '')}".rstrip(": ")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print each tool's name, description and input schema as JSON.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="The tools as 'bfsql serve --config FILE' serves them (each graph's schema in the "
              "descriptions), and which description each graph shows.")
def tools(as_json: bool, config_path: Path | None) -> None:
    """List the tools a server offers (built-in and from plugins), with their arguments.

    Call one from the terminal with 'bfsql query TOOL key=value ...'.
    """
    from bfsql.server.host import collect_tools

    _report_plugin_errors()
    graphs: list[Any] = []
    if config_path is None:
        listed = [(s.name, s.description, s.input_schema()) for s in collect_tools()]
    else:
        listed, graphs = asyncio.run(_served_tools(_resolve({"config": config_path, "backend": DEFAULT_BACKEND})[1]))
    if as_json:
        click.echo(json.dumps([{"name": name, "description": text, "input_schema": schema}
                               for name, text, schema in listed], indent=2))
        return
    for name, text, schema in listed:
        required = set(schema.get("required", []))
        first, *rest = text.splitlines() or [""]
        click.echo(f"{name}: {first}")
        for line in rest:
            click.echo(f"  {line}".rstrip())
        for argument, prop in schema.get("properties", {}).items():
            click.echo(_argument_line(argument, prop, argument in required))
        click.echo("")
    if graphs:
        click.echo("graphs (the description each shows):")
        for entry in graphs:
            default = ", default" if entry is graphs[0] else ""
            click.echo(f"  {entry.name} ({entry.backend}{default}): {_description_source(entry)}")


async def _served_tools(plans: list[Any]) -> tuple[list[tuple[str, str, dict[str, Any]]], list[Any]]:
    """The tools as a server over ``plans`` lists them (name, description, input schema), and its graphs."""
    from bfsql.server.run import open_server

    async with open_server(plans) as server:
        tools = await server.list_tools()
        return [(t.name, t.description or "", t.input_schema) for t in tools], list(server.graphs.values())


def _description_source(entry: Any) -> str:
    """Which description a served graph shows, and whether a longer one of the store's is left unshown."""
    if entry.graph is None:
        return f"unavailable ({entry.failure})"
    stored = entry.stored_description or ""
    if not entry.description:
        return f"the store's own: {clip(stored, 120)!r}"
    shown = f"the configuration file's: {clip(entry.description, 120)!r}"
    if len(stored) > len(entry.description) and stored != entry.description:
        shown += (f" (the store's own, {len(stored)} characters, is longer and not shown: remove 'description' from "
                  f"[graphs.{entry.name}] to show it)")
    return shown


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines: name, version, hooks, errors.")
def plugins(as_json: bool) -> None:
    """List installed plugins: what each provides, its version, and any that failed to load."""
    from bfsql.plugins import get_backends, get_embedders, list_plugins

    listing = list_plugins()
    backends, embedders = get_backends(), get_embedders()
    for entry in listing:
        for kind, specs in (("backends", backends), ("embedders", embedders)):
            provided = sorted(name for name, spec in specs.items() if spec.plugin == entry["name"])
            if provided:
                entry[kind] = provided
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    rows = [("PLUGIN", "VERSION", "FROM", "PROVIDES")]
    for entry in listing:
        origin = "built-in" if entry.get("builtin") else entry.get("distribution", "-")
        if "error" in entry:
            provides = f"FAILED TO LOAD: {entry['error']}"
        else:
            parts = [f"backend {', '.join(entry['backends'])}"] if "backends" in entry else []
            parts += [f"embedder {', '.join(entry['embedders'])}"] if "embedders" in entry else []
            hooks = [h for h in entry["hooks"] if h not in ("register_backends", "register_embedders")]
            parts += [f"hooks {', '.join(hooks)}"] if hooks else []
            provides = "; ".join(parts)
        rows.append((entry["name"], entry.get("version", "-"), origin, provides))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3])


def _server_name(serve_args: tuple[str, ...]) -> str:
    """A name for the server in a client: the store's or configuration file's name, else ``bfsql``."""
    for flag in ("--db", "--config"):
        for i, arg in enumerate(serve_args):
            if arg == flag and i + 1 < len(serve_args):
                return Path(serve_args[i + 1]).stem or "bfsql"
            if arg.startswith(f"{flag}="):
                return Path(arg.removeprefix(f"{flag}=")).stem or "bfsql"
    return "bfsql"


@click.command("client-config", context_settings={"ignore_unknown_options": True})
@click.argument("client", type=click.Choice(sorted(CLIENTS)))
@click.argument("serve_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--name", default=None, help="The server's name in the client (default: the store's file name, or "
              "bfsql).")
@click.option("--write", is_flag=True, help="Merge it into the client's configuration file (Claude Desktop's own; "
              ".mcp.json, .cursor/mcp.json or .vscode/mcp.json in this folder), keeping the other servers.")
def client_config(client: str, serve_args: tuple[str, ...], name: str | None, write: bool) -> None:
    """Print (or --write) what starts this bfsql in an MCP client: Claude Desktop, Claude Code, Cursor or VS Code.

    The command is this installation's bfsql by absolute path, so the client finds it outside
    this virtualenv; flags after CLIENT are passed to 'bfsql serve', paths made absolute:

    \b
      bfsql client-config claude-desktop --write
      bfsql client-config cursor --db graph.sqlite --write
    """
    serve_command = build_cli().get_command(click.get_current_context(), "serve")  # with its options
    assert serve_command is not None
    try:
        serve_command.make_context("serve", list(serve_args))
    except click.UsageError as exc:
        raise click.UsageError(f"not a flag of 'bfsql serve': {exc.format_message()}") from None
    target = CLIENTS[client]
    name = name or _server_name(serve_args)
    entry = server_entry(target, serve_args)
    if not write:
        click.echo(json.dumps({target.key: {name: entry}}, indent=2))
        if client == "claude-code":
            click.echo("\nor: claude mcp add " + shlex.join([name, "--", entry["command"], *entry["args"]]))
        return
    path = target.file()
    try:
        config, replaced = merged(path.read_text() if path.exists() else None, target, name, entry)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot merge into {path}: {exc}; fix or move it, or copy the entry without "
                                   "--write.") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    click.echo(f"{'Replaced' if replaced else 'Wrote'} the server {name!r} in {path.resolve()}: "
               f"{entry['command']} {shlex.join(entry['args'])}")


def build_cli() -> click.Group:
    """The command group with built-in and plugin commands."""
    from bfsql.plugins import get_plugin_manager

    group = BfsqlGroup(name="bfsql", commands=dict(cli.commands), callback=cli.callback, params=cli.params,
                       help=cli.help)
    for command in (serve, query, path, explore):
        group.add_command(command)  # its options come when it is asked for (BfsqlGroup.get_command)
    group.add_command(load)
    group.add_command(tools)
    group.add_command(plugins)
    group.add_command(client_config)
    get_plugin_manager().hook.register_commands(cli=group)
    return group


def main() -> None:
    """Entry point of the ``bfsql`` script."""
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    build_cli()(prog_name="bfsql")
