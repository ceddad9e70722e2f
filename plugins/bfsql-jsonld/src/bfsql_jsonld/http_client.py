"""One shared aiohttp session with timeouts, retries, bounded bodies and origin-bound credentials.

* Retries: the policy every HTTP store shares (:mod:`bfsql.http_retry`, the options of
  :class:`bfsql.HttpStoreConfig`): 429, 502, 503 and 504 answers and dropped connections are
  retried up to ``max_retries`` times, waiting what ``Retry-After`` asks or a doubling backoff;
  a wait longer than ``max_retry_wait``, or past the call's ``query_timeout``, fails at once.
* Timeouts: every request (connect, send, read the body) is bounded by ``request_timeout``.
* Credentials (``--auth-header``, ``--api-token``) are sent only to the API's origin;
  redirects are followed by hand so they never leak to another host.
* 404 raises :class:`~bfsql_jsonld.errors.NotFound`; other errors raise :class:`ApiError`
  with the status and the start of the body; a body that is not JSON raises
  :class:`MalformedResponse`. Messages quote the URL clipped (:func:`~bfsql_jsonld.urls.shown`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import aiohttp
from yarl import URL

from bfsql import RetriesSpent, RetryPolicy, send_with_retries
from bfsql_jsonld.errors import ApiError, MalformedResponse, NotFound
from bfsql_jsonld.urls import same_origin, shown

__all__ = ["ApiClient", "Response", "parse_link_header"]

logger = logging.getLogger("bfsql_jsonld")

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
ACCEPT = "application/ld+json, application/json;q=0.9"


@dataclass(frozen=True)
class Response:
    """A decoded JSON answer, where it came from, and the links of its Link header."""

    url: str
    data: Any
    links: dict[str, str]
    """Link header targets by relation (``next``, the JSON-LD context relation), absolute."""


def parse_link_header(value: str, base: str) -> dict[str, str]:
    """``<url>; rel="next", <ctx>; rel="http://www.w3.org/ns/json-ld#context"`` → ``{rel: absolute url}``."""
    links: dict[str, str] = {}
    for part in value.split(","):
        target, _, params = part.strip().partition(">")
        if not target.startswith("<"):
            continue
        for param in params.split(";"):
            name, _, rel = param.strip().partition("=")
            if name.strip().lower() == "rel":
                for one in rel.strip().strip('"').split():
                    links.setdefault(one, str(URL(base).join(URL(target[1:], encoded=True))))
    return links


class ApiClient:
    """The HTTP side of the backend. Create it, ``await open()`` inside the serving loop, ``await aclose()``."""

    def __init__(
        self,
        base_url: str,
        *,
        auth_headers: dict[str, str],
        request_timeout: float,
        retry: RetryPolicy,
        max_connections: int,
        max_response_bytes: int,
    ) -> None:
        self.base_url = base_url
        self._auth = auth_headers
        self._timeout = request_timeout
        self._retry = retry
        self._max_connections = max_connections
        self._max_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        """Create the session; must run in the event loop that will use it."""
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            connector=aiohttp.TCPConnector(limit=self._max_connections),
            headers={"Accept": ACCEPT, "User-Agent": "bfsql-jsonld"},
        )

    async def aclose(self) -> None:
        """Close the session and its connections (idempotent)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def get(self, url: str) -> Response:
        """GET a JSON document."""
        return await self._request("GET", url, None)

    async def post(self, url: str, body: Any) -> Response:
        """POST a JSON body and read a JSON document (used for read-only batch lookups)."""
        return await self._request("POST", url, body)

    async def _request(self, method: str, url: str, body: Any) -> Response:
        session = self._session
        if session is None:
            raise ApiError("The JSON-LD backend is closed.", "This is a bug: the backend was used after aclose().")
        try:
            status, final_url, headers, raw = await send_with_retries(
                lambda: self._send(session, method, url, body),
                lambda answer: (answer[0], answer[2].get("Retry-After")), self._retry,
                (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError), f"bfsql-jsonld {method}",
            )
        except TimeoutError:  # aiohttp's timeout errors subclass it
            raise self._timed_out(method, url) from None
        except RetriesSpent as spent:
            raise self._gave_up(method, url, spent) from None
        return self._decode(method, url, final_url, status, headers, raw)

    def _gave_up(self, method: str, url: str, spent: RetriesSpent) -> ApiError:
        what = (f"answered {spent.status} {_reason(spent.status)}" if spent.status is not None
                else f"failed: {spent.cause or type(spent.cause).__name__}")
        if spent.over_budget:
            return ApiError(f"{method} {shown(url)} {what} {spent.attempts} time(s); waiting {spent.asked_wait:g}s "
                            f"more would outlast --query-timeout ({self._timeout:g}s).",
                            "The API is overloaded or down; try again later.")
        if spent.asked_wait is not None:
            return ApiError(f"{method} {shown(url)} {what} and asks to wait {spent.asked_wait:g}s before retrying.",
                            f"That is longer than --max-retry-wait ({self._retry.max_wait:g}s); try again later.")
        if spent.status is None:
            return ApiError(f"{method} {shown(url)} {what} (after {spent.attempts} attempt(s)).",
                            "Check that the API is up and --base-url is right.")
        return ApiError(f"{method} {shown(url)} {what} {spent.attempts} time(s); gave up after {spent.attempts - 1} "
                        "retries.", "The API is overloaded or down; try again later, or raise --max-retries.")

    async def _send(
        self, session: aiohttp.ClientSession, method: str, url: str, body: Any
    ) -> tuple[int, str, dict[str, str], bytes]:
        for _ in range(MAX_REDIRECTS + 1):
            headers = dict(self._auth) if same_origin(url, self.base_url) else {}
            async with session.request(
                method, URL(url, encoded=True), json=body, headers=headers, allow_redirects=False
            ) as resp:
                location = resp.headers.get("Location")
                if resp.status in REDIRECT_STATUSES and location:
                    url = str(URL(url, encoded=True).join(URL(location, encoded=True)))
                    if resp.status == 303:
                        method, body = "GET", None
                    continue
                raw = await self._read(resp, url)
                kept = {
                    "Retry-After": resp.headers.get("Retry-After", ""),
                    "Link": ", ".join(resp.headers.getall("Link", [])),
                }
                return resp.status, url, {name: value for name, value in kept.items() if value}, raw
        raise ApiError(
            f"{method} {shown(url)} redirected more than {MAX_REDIRECTS} times.", "Fix --base-url or the API."
        )

    async def _read(self, resp: aiohttp.ClientResponse, url: str) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(65536):
            size += len(chunk)
            if size > self._max_bytes:
                raise ApiError(
                    f"The answer of {shown(url)} is larger than {self._max_bytes // 2**20} MiB.",
                    "Raise --max-response-mb, or page the API's lists.",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _decode(
        self, method: str, url: str, final_url: str, status: int, headers: dict[str, str], raw: bytes
    ) -> Response:
        if status == 404:
            raise NotFound(url)
        if status >= 400:
            hint = {
                401: "The API wants credentials: set --auth-header or --api-token.",
                403: "The API refused the credentials: check --auth-header / --api-token.",
            }.get(status, "Check the URL templates and the API's logs.")
            raise ApiError(f"{method} {shown(url)} answered {status} {_reason(status)}: {_snippet(raw)}", hint)
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedResponse(
                f"{method} {shown(url)} answered {status} with a body that is not JSON ({exc}): {_snippet(raw)}",
                "Check the URL templates: they must lead to JSON-LD documents.",
            ) from None
        link = headers.get("Link")
        return Response(final_url, data, parse_link_header(link, final_url) if link else {})

    def _timed_out(self, method: str, url: str) -> ApiError:
        return ApiError(
            f"{method} {shown(url)} took longer than {self._timeout:g}s.",
            "The API is slow or stuck; raise --query-timeout if it is just slow.",
        )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _snippet(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace").strip().replace("\n", " ")
    return (text[:limit] + "…") if len(text) > limit else text or "(empty body)"
