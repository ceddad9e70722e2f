"""``bfsql jsonld-serve``: publish any bfsql graph as a read-only JSON-LD REST API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

import click

from bfsql_jsonld.options import DEFAULT_VOCAB, ServerOptions

__all__ = ["jsonld_serve_command"]


_OWN_OPTIONS = [
    click.option("--backend", default="sqlite", show_default=True, help="Backend of the graph to publish."),
    click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="Bind address; anything but loopback needs --serve-token.",
    ),
    click.option("--port", type=int, default=8080, show_default=True, help="TCP port (0: any free port)."),
    click.option(
        "--page-size", type=click.IntRange(1, 100_000), default=500, show_default=True, help="Relations per page."
    ),
    click.option(
        "--max-batch", type=click.IntRange(1, 100_000), default=500, show_default=True, help="Ids per batch request."
    ),
    click.option(
        "--batch-rows",
        type=click.IntRange(1, 1_000_000),
        default=ServerOptions.batch_rows,
        show_default=True,
        help="Relations per batch answer; the rest follows its next link.",
    ),
    click.option(
        "--batch-kb",
        type=click.IntRange(1, 1_048_576),
        default=ServerOptions.batch_bytes // 1024,
        show_default=True,
        help="KiB of relations per batch answer (about); the rest follows its next link.",
    ),
    click.option(
        "--max-heavy-requests",
        type=click.IntRange(1, 1024),
        default=ServerOptions.max_heavy_requests,
        show_default=True,
        help="Batch requests computed at once; the others wait their turn. Other requests never wait.",
    ),
    click.option(
        "--vocab", default=DEFAULT_VOCAB, show_default=True, help="@vocab IRI of types, predicates and metadata keys."
    ),
    click.option(
        "--embedder",
        default="hashing",
        show_default=True,
        envvar="BFSQL_EMBEDDER",
        help="Embedder of the graph's vector search (published when the backend has one).",
    ),
    click.option(
        "--serve-token",
        envvar="BFSQL_JSONLD_SERVE_TOKEN",
        default=None,
        help="Bearer token every request must carry (required off loopback).",
    ),
    click.option(
        "--allowed-host",
        "allowed_hosts",
        multiple=True,
        help="Extra Host header value accepted (e.g. a reverse proxy's name); others get 421, as for bfsql serve.",
    ),
]
"""The command's own options, in the order its help lists them (each backend's options follow)."""


def _with_own_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with :data:`_OWN_OPTIONS`, as if each were a decorator written above it."""
    for option in reversed(_OWN_OPTIONS):
        command = option(command)
    return command


def _check_publishing(backend: str, installed: Collection[str], host: str, serve_token: str | None) -> None:
    """Refuse an unknown backend, or a graph published off loopback without a token."""
    from bfsql import is_loopback

    if backend not in installed:
        raise click.BadParameter(
            f"unknown backend {backend!r}; installed: {', '.join(sorted(installed))}.", param_hint="--backend"
        )
    if not is_loopback(host) and not serve_token:
        raise click.UsageError(
            f"Refusing to publish the graph on {host} without authentication: "
            "set --serve-token (or BFSQL_JSONLD_SERVE_TOKEN), or bind 127.0.0.1."
        )


def _publish(
    backend: str, spec: Any, backend_options: dict[str, Any], embedder: str, host: str, port: int,
    options: ServerOptions,
) -> None:
    """Open the graph and serve it until stopped; a bfsql error is the command's error."""
    from bfsql import BfsqlError, create_embedder, open_graph, resolve_config
    from bfsql_jsonld.server import run_server

    async def main() -> None:
        config = resolve_config(spec, backend_options)
        query_embedder = create_embedder(embedder)
        async with open_graph(spec, config) as graph:
            graph.set_embedder(query_embedder)
            await run_server(
                graph,
                host,
                port,
                options,
                lambda url: click.echo(
                    f"bfsql jsonld-serve: publishing backend {backend!r} at {url}/ (Ctrl-C stops)", err=True
                ),
            )

    try:
        asyncio.run(main())
    except BfsqlError as exc:
        raise click.ClickException(str(exc)) from None


class _PublishCommand(click.Command):
    """A command that takes every installed backend's options besides its own, added when it is first parsed or
    shown (not each time ``bfsql`` starts: building them reads every backend's config)."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """Its own parameters, then each backend option whose name it does not take itself."""
        if not getattr(self, "_backend_options_added", False):
            from bfsql import backend_click_options, get_backends

            own = {param.name for param in self.params}
            self.params.extend(opt for opt in backend_click_options(get_backends()) if opt.name not in own)
            self._backend_options_added = True
        return super().get_params(ctx)


def jsonld_serve_command() -> click.Command:
    """The ``jsonld-serve`` command, with one option per config field of every installed backend."""
    from bfsql import get_backends

    @click.command("jsonld-serve", cls=_PublishCommand)
    @_with_own_options
    def jsonld_serve(
        backend: str,
        host: str,
        port: int,
        page_size: int,
        max_batch: int,
        batch_rows: int,
        batch_kb: int,
        max_heavy_requests: int,
        vocab: str,
        embedder: str,
        serve_token: str | None,
        allowed_hosts: tuple[str, ...],
        **backend_options: Any,
    ) -> None:
        """Publish a graph (any backend) as a read-only JSON-LD REST API for the jsonld backend and others.

        \b
          bfsql jsonld-serve --backend sqlite --db graph.db --port 8080
          bfsql serve --backend jsonld --base-url http://127.0.0.1:8080
        """
        specs = get_backends()
        _check_publishing(backend, specs, host, serve_token)
        options = ServerOptions(
            page_size=page_size,
            max_batch=max_batch,
            batch_rows=batch_rows,
            batch_bytes=batch_kb * 1024,
            max_heavy_requests=max_heavy_requests,
            vocab=vocab,
            auth_token=serve_token,
            allowed_hosts=allowed_hosts,
        )
        _publish(backend, specs[backend], backend_options, embedder, host, port, options)

    return jsonld_serve
