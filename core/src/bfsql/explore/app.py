"""The explorer's web app: the page, its static files, and the tool calls it makes.

``POST /api/call/TOOL`` (a JSON object of arguments) runs one of :data:`PAGE_TOOLS` through
the MCP server's own :meth:`~bfsql.server.app.BfsqlServer.call_tool` — the one pipeline —
and answers with the tool's answer text unchanged (what a model would read), or
``{"error": ...}`` with status 422 when the tool refused. Every request passes the HTTP
rules of ``bfsql serve``: Host and Origin accepted by its
:class:`~bfsql.server.http.HostPolicy` (against DNS rebinding), and the bearer token when one
is set. A browser cannot send a header on navigation, so the token is also taken
once from ``/?token=...``, which sets a same-site, HTTP-only cookie and drops it from the
address. ``GET /api/type-styles?type=T&type=...`` gives each entity type's colour and shape
from :func:`~bfsql.type_styles.type_style`, the one mapping that the diagram exports use too.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import re
import webbrowser
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlencode

from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bfsql.server.answers import document_of
from bfsql.server.app import BfsqlServer
from bfsql.server.http import HostPolicy
from bfsql.server.run import check_exposure, graceful_server, open_server, serve_announced
from bfsql.settings import GraphPlan, ServerSettings
from bfsql.type_styles import type_style

__all__ = ["PAGE_TOOLS", "build_app", "page_url", "serve_explorer"]

PAGE_TOOLS = ("describe_schema", "search_entities", "bfs_query", "describe_entity", "describe_edges")
"""The tools the page calls; the endpoint refuses any other."""

STATIC = Path(__file__).parent / "static"

MAX_BODY = 64 * 1024
"""Largest request body (a tool call's arguments), in bytes."""

MAX_DEPTH = 16
"""Deepest nesting of arrays and objects in a request body; a tool's arguments need 3 (``describe_edges``)."""

MAX_STYLED_TYPES = 500
"""Most entity types one ``/api/type-styles`` request asks about."""

logger = logging.getLogger("bfsql.explore")

SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
     b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
"""Sent with every response: the page runs only its own scripts and loads nothing from elsewhere."""


def build_app(
    server: BfsqlServer, policy: HostPolicy, token: str | None = None, cookie: str = "bfsql_explore"
) -> ASGIApp:
    """The explorer's ASGI app over a built MCP ``server``, guarded by ``policy`` and ``token``."""

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

    async def type_styles(request: Request) -> Response:
        types = request.query_params.getlist("type")
        if len(types) > MAX_STYLED_TYPES:
            return JSONResponse({"error": f"Ask for at most {MAX_STYLED_TYPES} types at a time."}, 400)
        return JSONResponse({name: dataclasses.asdict(type_style(name)) for name in types},
                            headers={"cache-control": "max-age=3600"})

    async def call(request: Request) -> Response:
        tool = request.path_params["tool"]
        if tool not in PAGE_TOOLS:
            return JSONResponse({"error": f"The explorer calls only {', '.join(PAGE_TOOLS)}; not {tool!r}."}, 404)
        body = await request.body()
        if _nesting_depth(body) > MAX_DEPTH:
            return JSONResponse({"error": f"The request body nests arrays or objects more than {MAX_DEPTH} levels "
                                          "deep; a tool's arguments are a flat JSON object of strings, numbers "
                                          "and lists."}, 400)
        try:
            arguments = json.loads(body or b"{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return JSONResponse({"error": "The request body must be a JSON object of the tool's arguments."}, 400)
        result = await server.call_tool(tool, arguments)
        if result.is_error:
            return JSONResponse({"error": document_of(result)}, 422)
        return Response(result.content[0].text, media_type="application/json")  # type: ignore[union-attr]

    app = Starlette(routes=[
        Route("/", index),
        Route("/api/type-styles", type_styles),
        Route("/api/call/{tool}", call, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC)),
    ])
    return Guard(RequestBodyLimitMiddleware(app, MAX_BODY), policy, token, cookie)


_JSON_TOKENS = re.compile(rb'\\.|["\[\]{}]', re.DOTALL)
"""What nesting depth depends on: quotes, brackets, and escapes (whose character never counts)."""


def _nesting_depth(body: bytes) -> int:
    """How deep arrays and objects nest in ``body`` (JSON or not), in one pass without recursion."""
    depth = deepest = 0
    in_string = False
    for token in _JSON_TOKENS.findall(body):
        if token == b'"':
            in_string = not in_string
        elif in_string or len(token) > 1:
            continue
        elif token in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def same_origin_path(path: str) -> str:
    """``path`` as a redirect target that stays on this server.

    Leading slashes collapse to one and the rest is percent-encoded, so that neither
    ``//evil.example/`` nor ``/\\evil.example/`` can become an address on another host.
    """
    return "/" + quote(path.lstrip("/\\"))


class Guard:
    """ASGI middleware: Host/Origin checks (as ``bfsql serve``), the token if set, and the security headers."""

    def __init__(self, app: ASGIApp, policy: HostPolicy, token: str | None, cookie: str) -> None:
        if token == "":
            raise ValueError("an empty auth token would accept everyone")
        self.app = app
        self.policy = policy
        self.token = token
        self.cookie = cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request here; pass the others on, with the security headers added."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused: Response | None = None
        if problem := self.policy.refusal(request.headers.get("host", ""), request.headers.get("origin", "")):
            status, error, hint = problem
            refused = JSONResponse({"error": error, "hint": hint}, status)
        elif request.method == "POST" and not request.headers.get("content-type", "").startswith("application/json"):
            refused = JSONResponse({"error": "Tool calls are JSON: send Content-Type: application/json."}, 400)
        if refused is None and self.token is not None:
            refused = self._authorise(request)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if refused is not None:
            await refused(scope, receive, send_with_headers)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception:
            # Answered here (with the security headers) rather than by the server, which would drop the connection.
            logger.exception("the explorer failed on %s %s", request.method, request.url.path)
            if not started:
                failed = JSONResponse({"error": "The explorer failed on this request; the server's log says why."}, 500)
                await failed(scope, receive, send_with_headers)

    def _authorise(self, request: Request) -> Response | None:
        token = self.token or ""

        def matches(supplied: str | None) -> bool:
            return supplied is not None and hmac.compare_digest(supplied.encode(), token.encode())

        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and matches(header.removeprefix("Bearer ")):
            return None
        if matches(request.cookies.get(self.cookie)):
            return None
        if request.method == "GET" and matches(request.query_params.get("token")):
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = same_origin_path(request.scope["path"]) + ("?" + urlencode(kept) if kept else "")
            response = RedirectResponse(target, 303)
            response.set_cookie(self.cookie, token, httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
            return response
        return PlainTextResponse(
            "Unauthorized: this explorer needs its token. Open it once as /?token=<token> "
            "(the --auth-token of bfsql explore), or send 'Authorization: Bearer <token>'.",
            401, headers={"www-authenticate": 'Bearer realm="bfsql"'},
        )


def page_url(settings: ServerSettings, port: int, with_token: bool = False) -> str:
    """The page's address on ``settings.host:port`` (with ``?token=`` when asked and a token is set)."""
    host = f"[{settings.host}]" if ":" in settings.host and not settings.host.startswith("[") else settings.host
    url = f"http://{host}:{port}/"
    return url + "?" + urlencode({"token": settings.auth_token}) if with_token and settings.auth_token else url


async def serve_explorer(
    plans: list[GraphPlan], settings: ServerSettings, port: int, open_browser: bool = False,
    started: Callable[[], object] = lambda: None,
) -> None:
    """Serve the explorer over the planned graphs on ``settings.host:port`` until interrupted.

    ``started()`` is called once the page can be opened (then the browser, with ``open_browser``).
    """
    import uvicorn

    check_exposure(settings)
    async with open_server(plans, settings) as server:
        policy = HostPolicy.for_bind(settings.host, settings.allowed_hosts)
        app = build_app(server, policy, settings.auth_token or None, cookie=f"bfsql_explore_{port}")
        web = graceful_server(uvicorn.Config(app, host=settings.host, port=port, log_level="warning", lifespan="off"))
        url = page_url(settings, port, with_token=True)

        def announce() -> None:
            started()
            if open_browser:
                webbrowser.open(url)

        await serve_announced(web, announce)
