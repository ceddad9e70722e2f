"""The HTTP side: one aiohttp session, bounded concurrency, timeouts, retries, read-only by construction.

Only ``SELECT`` and ``ASK`` queries are ever sent to the configured query endpoint: a
short one as a GET ``query=`` parameter, any other as a POST body of type
``application/sparql-query`` (SPARQL 1.1 Protocol §2.1.3), which needs no URL-encoding of
a query that may hold thousands of IRIs (Virtuoso, which does not answer those, gets a
form-encoded POST: :attr:`SparqlClient.form_posts`); the client refuses any other text. Answers are
decoded by orjson when it is installed (``pip install 'bfsql-sparql[fast]'``), else by
the standard library. Failed requests are retried by the policy every HTTP store shares
(:mod:`bfsql.http_retry`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple
from urllib.parse import urlencode

import aiohttp

from bfsql import BackendFailure, RetriesSpent, RetryPolicy, send_with_retries

__all__ = ["SparqlClient", "SparqlEndpointError", "Term", "term", "user_agent"]

logger = logging.getLogger("bfsql.sparql")

RESULTS_JSON = "application/sparql-results+json"
SPARQL_QUERY = "application/sparql-query"
FORM = "application/x-www-form-urlencoded"
GET_MAX_URL = 2000
"""Longer queries are POSTed: many servers and proxies cut URLs beyond about 2 KB."""
_READ_ONLY = re.compile(r"\s*(SELECT|ASK)\b")


def _json_decoder() -> Callable[[bytes], Any]:
    """orjson's ``loads`` when installed (a hop's answer in 0.24 s instead of 0.28 s), else the standard library's."""
    try:
        import orjson
    except ImportError:
        return json.loads
    fast = orjson.loads

    def loads(body: bytes) -> Any:
        try:
            return fast(body)
        except ValueError:  # e.g. an escaped lone surrogate, which orjson refuses and json reads
            return json.loads(body)

    return loads


decode_json = _json_decoder()
"""Decodes a JSON body (bytes); raises ValueError when it is no JSON."""


class SparqlEndpointError(BackendFailure):
    """The endpoint refused a query, failed, timed out, or returned partial results."""


class Term(NamedTuple):
    """One RDF term from a result binding (a tuple: answers make thousands)."""

    kind: Literal["uri", "literal", "bnode"]
    value: str
    language: str | None = None
    datatype: str | None = None


def user_agent() -> str:
    """``bfsql-sparql/<version> bfsql/<version>``, so endpoint operators can see who calls."""
    from importlib.metadata import PackageNotFoundError, version

    from bfsql import __version__ as core_version

    try:
        own = version("bfsql-sparql")
    except PackageNotFoundError:
        own = "0"
    return f"bfsql-sparql/{own} bfsql/{core_version} (+MCP BFS-QL server; aiohttp)"


def term(raw: Mapping[str, Any]) -> Term:
    """The term of one variable of a SPARQL JSON binding."""
    kind = raw.get("type")
    if kind in ("literal", "typed-literal"):  # typed-literal: Virtuoso's pre-1.1 JSON spelling
        return Term("literal", raw["value"], raw.get("xml:lang") or None, raw.get("datatype"))
    if kind == "bnode":
        return Term("bnode", raw["value"])
    return Term("uri", raw["value"])


class _Answer(NamedTuple):
    """One HTTP answer of the endpoint, read whole."""

    status: int
    body: bytes
    retry_after: str | None
    partial: str | None
    """Virtuoso's X-SQL-State: the answer was cut short (an anytime query)."""
    partial_message: str
    content_type: str


class SparqlClient:
    """Sends read-only queries to one endpoint and parses SPARQL JSON results.

    Create it inside the serving event loop (:meth:`start`), close it with :meth:`aclose`.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        default_graphs: Sequence[str] = (),
        timeout: float = 30.0,
        max_concurrency: int = 4,
        retry: RetryPolicy | None = None,
        http_method: Literal["auto", "get", "post"] = "auto",
    ) -> None:
        self.endpoint = endpoint
        self.default_graphs = list(default_graphs)
        self.timeout = timeout
        self.retry = retry or RetryPolicy(budget=timeout)
        """How failed requests are retried (429, 502, 503, 504 and dropped connections)."""
        self.http_method = http_method
        self.extra_params: dict[str, str] = {}
        """Endpoint-specific parameters sent with every query (e.g. Virtuoso's ``timeout``)."""
        self.form_posts = False
        """POST queries form-encoded (``query=``) instead of as ``application/sparql-query`` bodies (Virtuoso)."""
        self.server: str | None = None
        """The ``Server`` header of the last answer (how Virtuoso is detected)."""
        self.requests = 0
        """HTTP requests sent, retries included."""
        self.row_cap: int | None = None
        """The endpoint's own cap on result rows, once it has announced one (Virtuoso's X-SPARQL-MaxRows)."""
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Open the shared HTTP session (inside the running event loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers={"User-Agent": user_agent(), "Accept": RESULTS_JSON},
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )

    async def aclose(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def select(self, query: str, allow_partial: bool = False) -> list[dict[str, Term]]:
        """Run a SELECT query; one dict per solution, unbound variables left out.

        A partial answer (Virtuoso's anytime queries) is an error unless ``allow_partial``,
        for queries whose answer is a best-effort sample anyway (search candidates).
        """
        bindings = await self.bindings(query, allow_partial)
        return [{name: term(value) for name, value in row.items()} for row in bindings]

    async def bindings(self, query: str, allow_partial: bool = False) -> list[dict[str, Any]]:
        """Run a SELECT query; its solutions as the SPARQL JSON bindings themselves (``{"value": …}`` per variable).

        For answers of many rows read once (a hop), where making a :class:`Term` of every value costs more
        than the query itself.
        """
        data = await self._run(query, allow_partial)
        try:
            bindings: list[dict[str, Any]] = data["results"]["bindings"]
        except (KeyError, TypeError):
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} answered a SELECT without results.",
                "Check that --endpoint is a SPARQL query endpoint.",
            ) from None
        return bindings

    async def ask(self, query: str) -> bool:
        """Run an ASK query."""
        data = await self._run(query)
        answer = data.get("boolean") if isinstance(data, dict) else None
        if not isinstance(answer, bool):
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} answered an ASK without a boolean.",
                "Check that --endpoint is a SPARQL query endpoint.",
            )
        return answer

    def _request(self, query: str) -> tuple[str, dict[str, Any]]:
        params: list[tuple[str, str]] = [("default-graph-uri", graph) for graph in self.default_graphs]
        params += list(self.extra_params.items())
        separator = "&" if "?" in self.endpoint else "?"
        # A query longer than a GET may be is never URL-encoded: only its length decides.
        if self.http_method == "get" or (self.http_method == "auto" and len(self.endpoint) + len(query) < GET_MAX_URL):
            encoded = urlencode([("query", query), *params])
            if self.http_method == "get" or len(self.endpoint) + len(encoded) + 1 <= GET_MAX_URL:
                return "GET", {"url": f"{self.endpoint}{separator}{encoded}"}
        if self.form_posts:
            form = urlencode([("query", query), *params])
            return "POST", {"url": self.endpoint, "data": form, "headers": {"Content-Type": FORM}}
        url = f"{self.endpoint}{separator}{urlencode(params)}" if params else self.endpoint
        return "POST", {"url": url, "data": query.encode("utf-8"), "headers": {"Content-Type": SPARQL_QUERY}}

    async def _run(self, query: str, allow_partial: bool = False) -> Any:
        if not _READ_ONLY.match(query):
            raise ValueError("only SELECT and ASK queries may be sent")  # a bug in this package, never user input
        if self._session is None:
            await self.start()
        assert self._session is not None
        method, kwargs = self._request(query)
        try:
            answer = await send_with_retries(lambda: self._send(method, kwargs), lambda a: (a.status, a.retry_after),
                                             self.retry, (aiohttp.ClientError,), f"sparql {method}")
        except TimeoutError:
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} did not answer within {self.timeout:g}s.",
                "Ask for less (fewer seeds or hops), or raise --query-timeout.",
            ) from None
        except RetriesSpent as spent:
            raise self._gave_up(spent) from None
        if answer.status != 200:
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} answered HTTP {answer.status}: {self._snippet(answer.body)}",
                "Retry later; if it persists the endpoint may not support this query (see docs/backends/sparql.md).",
            )
        if answer.partial and not allow_partial:
            raise SparqlEndpointError(
                f"The SPARQL endpoint returned partial results ({answer.partial}: {answer.partial_message}); "
                "they are not used.",
                "The endpoint cut the query short (Virtuoso anytime query); ask for less or raise its limits.",
            )
        return self._decode(answer.body, answer.content_type)

    async def _send(self, method: str, kwargs: dict[str, Any]) -> _Answer:
        """One request, within the concurrency bound; its answer read whole."""
        assert self._session is not None
        async with self._semaphore:
            self.requests += 1
            started = time.perf_counter()
            async with self._session.request(method, **kwargs) as response:
                self.server = response.headers.get("Server", self.server)
                body = await response.read()
                cap = response.headers.get("X-SPARQL-MaxRows", "")
                if cap.isdigit():
                    self.row_cap = int(cap)
                answer = _Answer(response.status, body, response.headers.get("Retry-After"),
                                 response.headers.get("X-SQL-State"), response.headers.get("X-SQL-Message", ""),
                                 response.content_type)
            logger.debug("%s %s: %s in %.3fs", method, self.endpoint, answer.status, time.perf_counter() - started)
            return answer

    def _gave_up(self, spent: RetriesSpent) -> SparqlEndpointError:
        """The error of a request the retry policy gave up on."""
        if spent.status is None:
            return SparqlEndpointError(
                f"Cannot reach the SPARQL endpoint {self.endpoint}: {type(spent.cause).__name__}: {spent.cause}.",
                "Check --endpoint and that the server is running.",
            )
        if spent.over_budget:
            return SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} answered HTTP {spent.status} {spent.attempts} time(s); waiting "
                f"{spent.asked_wait:.0f}s more would outlast --query-timeout ({self.timeout:g}s).",
                "The endpoint is overloaded or rate limiting; try again later.",
            )
        if spent.asked_wait is not None:
            return SparqlEndpointError(
                f"The SPARQL endpoint is rate limiting (HTTP {spent.status}) and asks to wait {spent.asked_wait:.0f}s, "
                f"longer than --max-retry-wait ({self.retry.max_wait:g}s).",
                "Try again later.",
            )
        return SparqlEndpointError(
            f"The SPARQL endpoint {self.endpoint} answered HTTP {spent.status} {spent.attempts} time(s), last: "
            f"{self._snippet(spent.answer.body) if spent.answer else '(no body)'}; gave up after {spent.attempts - 1} "
            "retries.",
            "The endpoint is overloaded or down; try again later, or raise --max-retries.",
        )

    def _decode(self, body: bytes, content_type: str) -> Any:
        try:
            return decode_json(body)
        except ValueError:
            raise SparqlEndpointError(
                f"The SPARQL endpoint {self.endpoint} did not answer SPARQL JSON (content type {content_type!r}).",
                "Check that --endpoint is the query endpoint (e.g. .../sparql or .../query), not a web page.",
            ) from None

    @staticmethod
    def _snippet(body: bytes) -> str:
        text = body.decode("utf-8", errors="replace").strip()
        return " ".join(text.split())[:300] or "(empty body)"
