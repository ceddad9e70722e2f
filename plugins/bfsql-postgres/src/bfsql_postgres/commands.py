"""The ``bfsql postgres`` command group: ``init-schema`` and ``load``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path

import click

from bfsql import BfsqlError

__all__ = ["postgres"]

_DSN_HELP = "PostgreSQL connection URI (a role that may create tables). Env: BFSQL_POSTGRES_DSN or DATABASE_URL."


def _dsn(value: str | None) -> str:
    dsn = value or os.environ.get("BFSQL_POSTGRES_DSN") or os.environ.get("DATABASE_URL")
    if not dsn:
        raise click.UsageError("give --dsn postgresql://USER:PASSWORD@HOST:5432/DBNAME (or set DATABASE_URL)")
    return dsn


@click.group()
def postgres() -> None:
    """Create and load a kgraph-schema PostgreSQL database for 'bfsql serve --backend postgres'."""


@postgres.command("init-schema")
@click.option("--dsn", default=None, help=_DSN_HELP)
@click.option("--vector/--no-vector", default=True, show_default=True,
              help="Create the pgvector extension and the entity.embedding column.")
def init_schema(dsn: str | None, vector: bool) -> None:
    """Create the extensions (pg_trgm, pgvector), tables and indexes that are missing."""
    from bfsql_postgres.errors import describe_dsn
    from bfsql_postgres.loader import connect
    from bfsql_postgres.schema import create_schema

    url = _dsn(dsn)

    async def run() -> None:
        conn = await connect(url)
        try:
            async with conn.transaction():
                await create_schema(conn, vector=vector)
        finally:
            await conn.close()

    try:
        asyncio.run(run())
    except BfsqlError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"kgraph schema ready in {describe_dsn(url)}", err=True)


def count_lines(path: Path) -> int:
    """Lines of a file (the last one counted whether or not a line break ends it), read in big blocks: the
    length of the load's progress bar."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


@postgres.command("load")
@click.option("--dsn", default=None, help=_DSN_HELP)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "tsv", "nt", "ttl"]), default=None,
              help="Input format (default: from each file's extension).")
@click.option("--vector/--no-vector", default=True, show_default=True,
              help="When creating the schema: with pgvector and the entity.embedding column.")
@click.option("--embedder", default="auto", show_default=True,
              help="Embedder of the entity vectors: a registered name (see 'bfsql plugins'), 'auto' (the one the "
              "database records, else wordllama-256 or minilm-int8 when installed, else none) or 'none' (drop the "
              "vectors).")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def load(dsn: str | None, fmt: str | None, vector: bool, embedder: str, sources: tuple[Path, ...]) -> None:
    """Load graph files into PostgreSQL in one transaction (COPY, then upsert).

    The schema is created first when missing. Either every record of every SOURCE is
    loaded, or (on a bad row, an error or an interrupt) nothing is. Loading the same
    files again changes nothing. Entity names are embedded into entity.embedding (pgvector)
    for vector search, and the vectors' codes saved; see --embedder. Without SOURCE, only the
    vectors are brought up to date (after another tool wrote the entities, or with another
    --embedder).
    """
    from bfsql import BadRow
    from bfsql_postgres.loader import load_postgres

    url = _dsn(dsn)
    with click.progressbar(length=sum(count_lines(p) for p in sources), label="loading", file=sys.stderr,
                           show_pos=True) as bar:
        try:
            report = asyncio.run(
                load_postgres(url, list(sources), fmt=fmt, vector=vector, embedder=embedder, progress=bar.update)
            )
        except BadRow as exc:
            raise click.ClickException(f"{exc} (nothing was loaded; fix the row and run again)") from None
        except BfsqlError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(dataclasses.asdict(report)))
