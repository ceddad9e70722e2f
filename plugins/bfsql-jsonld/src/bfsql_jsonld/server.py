"""The reference server: any bfsql graph published as a read-only JSON-LD REST API.

Routes (every id is one percent-encoded path segment or query value)::

    GET  /                                   an index of the routes below
    GET  /context.jsonld                     the JSON-LD context every answer embeds
    GET  /schema                             vocabulary, description, capabilities, batch endpoints
    GET  /entities/{id}                      one entity: @id, @type and its metadata
    GET  /entities/{id}/relations?direction=out|in|both[&page=N&page_size=M]
    GET  /entities?q=TEXT[&types=T&types=U][&limit=N]
    GET  /relations?subject=S&predicate=P&object=O
    POST /batch/entities           {"ids": [...]}
    POST /batch/relations[?cursor=C]  {"ids": [...], "direction": "out"|"in"}
    POST /batch/relation-metadata  {"relations": [{"subject", "predicate", "object"}, ...]}
    POST /vector-search            {"vector": [...], "types": [...] | null, "limit": N}  (if the graph has one)

Relation lists are paged (hydra:view/hydra:next in the body and a ``Link: rel="next"``
header). In a relation list, the end of each relation other than the listed entity is
written as a node object with its type and name (``"object": {"@id": …, "@type": …,
"name": …}``), so a reader learns a whole hop from it; an end that is no entity (a
dangling edge) stays a plain id. The lists come from the graph's ``hop`` primitive.
A batch answer of relations is bounded too (:mod:`bfsql_jsonld.relation_pages`): an
unfinished one ends with a next link, to which the client POSTs the same body again.
The POST routes only read: they take id lists too long for a URL. The server only ever
calls the graph's read primitives, so it cannot change the graph.

Scheduling, as in ``bfsql serve``: the batch routes are heavy, and at most
``max_heavy_requests`` of them are computed at once (the others wait their turn, in order of
arrival); every other request is cheap and never waits for a slot. Heavy work yields the event
loop every slice, and whole slices while cheap requests are in flight
(:mod:`bfsql.pacing`).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bfsql import BfsqlError, Edge, EntityStub, Graph, HostPolicy, NodeInfo, gather_or_cancel, light_call
from bfsql_jsonld.options import DEFAULT_VOCAB, ServerOptions
from bfsql_jsonld.relation_pages import (
    PageLimits,
    decode_cursor,
    encode_cursor,
    hop_relation,
    listed_relations,
    relation_page,
    request_digest,
)

__all__ = ["DEFAULT_VOCAB", "ServerOptions", "build_app", "run_server", "server_context"]

logger = logging.getLogger("bfsql_jsonld.server")

HYDRA = "http://www.w3.org/ns/hydra/core#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
CONTENT_TYPE = "application/ld+json"
SEARCH_LIMIT = 20
"""Search hits answered when the request gives no ``limit``."""
MAX_LIMIT = 200
"""The most hits a search or a vector search may ask for."""


GRAPH_KEY = web.AppKey("graph", Graph)
OPTIONS_KEY = web.AppKey("options", ServerOptions)
CONTEXT_KEY = web.AppKey("context", dict)


def server_context(vocab: str = DEFAULT_VOCAB) -> dict[str, Any]:
    """The JSON-LD context of every answer.

    ``@base`` is null so ids stay the opaque strings they are (never resolved against
    the document URL); types, predicates and metadata keys are ``@vocab``-relative;
    relation lists are hydra collections; edge metadata is a JSON literal, kept verbatim.
    """
    return {
        "@version": 1.1,
        "@base": None,
        "@vocab": vocab,
        "subject": {"@id": RDF + "subject", "@type": "@id"},
        "predicate": {"@id": RDF + "predicate", "@type": "@vocab"},
        "object": {"@id": RDF + "object", "@type": "@id"},
        "relations": {"@id": HYDRA + "member", "@container": "@set"},
        "results": {"@id": HYDRA + "member", "@container": "@set"},
        "entities": {"@id": HYDRA + "member", "@container": "@set"},
        "Collection": HYDRA + "Collection",
        "PartialCollectionView": HYDRA + "PartialCollectionView",
        "totalItems": HYDRA + "totalItems",
        "view": HYDRA + "view",
        "next": {"@id": HYDRA + "next", "@type": "@id"},
        "metadata": {"@id": vocab + "metadata", "@type": "@json"},
        "entity_types": {"@id": vocab + "entity_types", "@type": "@vocab", "@container": "@set"},
        "predicates": {"@id": vocab + "predicates", "@type": "@vocab", "@container": "@set"},
    }


def _answer(request: web.Request, body: dict[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    document = {"@context": request.app[CONTEXT_KEY], **body}
    return web.json_response(
        document, content_type=CONTENT_TYPE, headers=headers, dumps=functools.partial(json.dumps, ensure_ascii=False)
    )


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


def _entity(entity_id: str, info: NodeInfo, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"@id": entity_id, "@type": info.entity_type, **metadata}


def _relation(edge: Edge) -> dict[str, Any]:
    return {"subject": edge.subject, "predicate": edge.predicate, "object": edge.object}


def _direction(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise web.HTTPBadRequest(text=f"direction must be {' or '.join(map(repr, allowed))}, got {value!r}")
    return str(value)


async def _entities(graph: Graph, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The entity documents of the known ids among ``ids``, in their order."""
    nodes, metadata = await gather_or_cancel(graph.get_nodes(ids), graph.metadata_for_nodes(ids))
    return {i: _entity(i, nodes[i], metadata.get(i, {})) for i in dict.fromkeys(ids) if i in nodes}


async def _relation_documents(graph: Graph, edges: list[Edge]) -> dict[Edge, dict[str, Any]]:
    """The metadata of each edge with its ``provenance`` merged in, as seed 000's ``metadata_for_edge`` gives it."""
    metadata, provenance = await gather_or_cancel(graph.metadata_for_edges(edges), graph.provenance_for_edges(edges))
    documents = {}
    for edge in dict.fromkeys(edges):
        document = dict(metadata.get(edge) or {})
        if document and provenance.get(edge):
            document["provenance"] = provenance[edge]
        documents[edge] = document
    return documents


MAX_QUERY_CHARS = 1000
"""Longest search text accepted, as for the search_entities tool: a longer one is refused before any search."""


def _param(request: web.Request, name: str) -> str:
    value = request.query.get(name)
    if value is None:
        raise web.HTTPBadRequest(text=f"missing query parameter {name!r}")
    return value


def _int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise web.HTTPBadRequest(text=f"{name} must be between {low} and {high}, got {value}")
    return value


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise web.HTTPBadRequest(text=f"the body is not JSON: {exc.msg}") from None
    except RecursionError:
        raise web.HTTPBadRequest(text="the body nests too deeply; send a flat object of ids or relations") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body must be a JSON object")
    return body


def _id_list(body: dict[str, Any], key: str, limit: int) -> list[Any]:
    ids = body.get(key)
    if not isinstance(ids, list):
        raise web.HTTPBadRequest(text=f"{key!r} must be a list")
    if len(ids) > limit:
        raise web.HTTPRequestEntityTooLarge(
            max_size=limit, actual_size=len(ids), text=f"at most {limit} {key} per request, got {len(ids)}"
        )
    return ids


def _strings(ids: list[Any], key: str) -> list[str]:
    if not all(isinstance(i, str) for i in ids):
        raise web.HTTPBadRequest(text=f"{key!r} must be a list of strings")
    return ids


# -- handlers ---------------------------------------------------------------------------


async def index(request: web.Request) -> web.Response:
    """The routes of this API."""
    return _answer(
        request,
        {
            "@id": "/",
            "schema": "/schema",
            "entity": "/entities/{id}",
            "relations": "/entities/{id}/relations?direction={out|in|both}",
            "search": "/entities?q={q}&types={type}",
            "relation": "/relations?subject={subject}&predicate={predicate}&object={object}",
        },
    )


async def context(request: web.Request) -> web.Response:
    """The JSON-LD context, as a context document."""
    return _answer(request, {})


async def schema(request: web.Request) -> web.Response:
    """The vocabulary, description, capabilities and batch endpoints."""
    graph, options = request.app[GRAPH_KEY], request.app[OPTIONS_KEY]
    types, predicates = await asyncio.gather(graph.entity_types(), graph.predicates())
    capabilities = graph.capabilities.as_dict()
    vector = None
    if graph.has_vector_search:
        vector = {"url": "/vector-search", "embedder": graph.embedder.name, "dimension": graph.embedder.dimension}
    return _answer(
        request,
        {
            "@id": "/schema",
            "description": await graph.describe(),
            "next_steps": await graph.next_steps(),
            "comprehensive": capabilities["comprehensive_schema"],
            "entity_types": types,
            "predicates": predicates,
            "capabilities": capabilities,
            "batch": {
                "entities": "/batch/entities",
                "relations": "/batch/relations",
                "relation_metadata": "/batch/relation-metadata",
                "max_ids": options.max_batch,
                "max_relations": options.batch_rows,
                "max_bytes": options.batch_bytes,
            },
            "vector_search": vector,
        },
    )


async def entity(request: web.Request) -> web.Response:
    """One entity document."""
    graph, entity_id = request.app[GRAPH_KEY], request.match_info["id"]
    found = await _entities(graph, [entity_id])
    if entity_id not in found:
        raise web.HTTPNotFound(text=f"no entity {entity_id!r}")
    return _answer(request, found[entity_id])


async def relations(request: web.Request) -> web.Response:
    """One page of an entity's outgoing, incoming or all relations."""
    graph, options, entity_id = request.app[GRAPH_KEY], request.app[OPTIONS_KEY], request.match_info["id"]
    direction = _direction(request.query.get("direction", "out"), ("out", "in", "both"))
    page = _int_param(request, "page", 1, 1, 10**9)
    size = _int_param(request, "page_size", options.page_size, 1, options.page_size)
    found = (await graph.hop([entity_id])).get(entity_id)
    if found is None:
        raise web.HTTPNotFound(text=f"no entity {entity_id!r}")
    listed = listed_relations(entity_id, found.edges, direction)
    start = (page - 1) * size
    body: dict[str, Any] = {
        "@id": str(request.rel_url),
        "@type": "Collection",
        "totalItems": len(listed),
        "relations": [hop_relation(entity_id, row) for row in listed[start : start + size]],
    }
    headers = {}
    if start + size < len(listed):
        next_url = str(request.rel_url.update_query(page=page + 1))
        body["view"] = {"@id": str(request.rel_url), "@type": "PartialCollectionView", "next": next_url}
        headers["Link"] = f'<{next_url}>; rel="next"'
    return _answer(request, body, headers)


async def search(request: web.Request) -> web.Response:
    """Ranked entities matching ``q``, restricted to the repeated ``types`` parameters."""
    graph = request.app[GRAPH_KEY]
    query = _param(request, "q")
    if len(query) > MAX_QUERY_CHARS:
        raise web.HTTPBadRequest(text=f"q is at most {MAX_QUERY_CHARS} characters, got {len(query)}; search by a name")
    types = request.query.getall("types", [])
    limit = _int_param(request, "limit", SEARCH_LIMIT, 1, MAX_LIMIT)
    stubs = await graph.search_entities(query, types or None, limit)
    results = [_stub(stub) for stub in stubs[:limit]]
    return _answer(request, {"@id": str(request.rel_url), "@type": "Collection", "results": results})


def _stub(stub: EntityStub) -> dict[str, Any]:
    item: dict[str, Any] = {"@id": stub.id, "@type": stub.entity_type}
    if stub.name is not None:
        item["name"] = stub.name
    if stub.score is not None:
        item["score"] = stub.score
    return item


async def vector_search(request: web.Request) -> web.Response:
    """The entities nearest to a query vector made by the embedder named in /schema."""
    graph = request.app[GRAPH_KEY]
    if not graph.has_vector_search:
        raise web.HTTPNotFound(text="this graph has no vector search")
    body = await _json_body(request)
    vector, types, limit = body.get("vector"), body.get("types"), body.get("limit", SEARCH_LIMIT)
    dimension = graph.embedder.dimension
    if not isinstance(vector, list) or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
        raise web.HTTPBadRequest(text="'vector' must be a list of numbers")
    if len(vector) != dimension:
        raise web.HTTPBadRequest(
            text=f"'vector' has {len(vector)} dimensions; embedder {graph.embedder.name!r} makes {dimension}"
        )
    if types is not None and not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
        raise web.HTTPBadRequest(text="'types' must be a list of strings or null")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise web.HTTPBadRequest(text=f"'limit' must be an integer between 1 and {MAX_LIMIT}")
    stubs = await graph.vector_search([float(x) for x in vector], types, limit)
    return _answer(request, {"@type": "Collection", "results": [_stub(stub) for stub in stubs[:limit]]})


async def relation(request: web.Request) -> web.Response:
    """The metadata of one relation, provenance included."""
    graph = request.app[GRAPH_KEY]
    edge = Edge(_param(request, "subject"), _param(request, "predicate"), _param(request, "object"))
    return _answer(request, {**_relation(edge), "metadata": (await _relation_documents(graph, [edge]))[edge]})


async def batch_entities(request: web.Request) -> web.Response:
    """Many entity documents; unknown ids are left out."""
    graph, options = request.app[GRAPH_KEY], request.app[OPTIONS_KEY]
    ids = _strings(_id_list(await _json_body(request), "ids", options.max_batch), "ids")
    found = await _entities(graph, ids)
    return _answer(request, {"@type": "Collection", "entities": list(found.values())})


async def batch_relations(request: web.Request) -> web.Response:
    """The relations of many entities in one direction, one bounded page; unknown ids are left out."""
    graph, options = request.app[GRAPH_KEY], request.app[OPTIONS_KEY]
    body = await _json_body(request)
    ids = list(dict.fromkeys(_strings(_id_list(body, "ids", options.max_batch), "ids")))
    direction = _direction(body.get("direction", "out"), ("out", "in"))
    digest = request_digest(ids, direction)
    try:
        start = decode_cursor(request.query.get("cursor"), digest)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    limits = PageLimits(options.batch_rows, options.batch_bytes)
    page = await relation_page(graph, ids, direction, start, limits)
    parts = [b'{"@context":', _json_bytes(request.app[CONTEXT_KEY]), b',"@type":"Collection","entities":']
    parts.append(page.entities)  # written as text by the page: no 23 MB document of dicts first
    headers = {}
    if page.next is not None:
        next_url = str(request.rel_url.update_query(cursor=encode_cursor(page.next, digest)))
        view = {"@id": str(request.rel_url), "@type": "PartialCollectionView", "next": next_url}
        parts.append(b',"view":' + _json_bytes(view))
        headers["Link"] = f'<{next_url}>; rel="next"'
    parts.append(b"}")
    return web.Response(body=b"".join(parts), content_type=CONTENT_TYPE, charset="utf-8", headers=headers)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


async def batch_relation_metadata(request: web.Request) -> web.Response:
    """The metadata of many relations, provenance included."""
    graph, options = request.app[GRAPH_KEY], request.app[OPTIONS_KEY]
    raw = _id_list(await _json_body(request), "relations", options.max_batch)
    edges = [_edge(item) for item in raw]
    found = await _relation_documents(graph, edges)
    items = [{**_relation(e), "metadata": metadata} for e, metadata in found.items()]
    return _answer(request, {"@type": "Collection", "relations": items})


def _edge(item: Any) -> Edge:
    values = [item.get(k) for k in ("subject", "predicate", "object")] if isinstance(item, dict) else []
    texts = [v for v in values if isinstance(v, str)]
    if len(texts) != 3:
        raise web.HTTPBadRequest(text="relations must be objects with subject, predicate and object")
    return Edge(*texts)


# -- middleware and app -----------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as a JSON body with a status: 4xx for the caller's mistakes, 502/500 for ours."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, exc.text or exc.reason)
    except BfsqlError as exc:
        logger.warning("bfsql jsonld-serve: %s %s: %s", request.method, request.path, exc)
        return _error(502, str(exc))
    except Exception as exc:
        logger.exception("bfsql jsonld-serve: %s %s failed", request.method, request.path)
        return _error(500, f"internal error: {type(exc).__name__}")


POLICY_KEY = web.AppKey("hosts", dict)


@web.middleware
async def _hosts(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a foreign Host (421) or Origin (403), as ``bfsql serve`` does, against DNS rebinding."""
    policy: HostPolicy | None = request.app[POLICY_KEY].get("policy")
    if policy is not None:
        refused = policy.refusal(request.headers.get("Host", ""), request.headers.get("Origin", ""))
        if refused is not None:
            status, error, hint = refused
            logger.warning("bfsql jsonld-serve: refused %s %s: %s %s", request.method, request.path, error, hint)
            return web.json_response({"error": f"{error} {hint}", "status": status}, status=status)
    return await handler(request)


def _auth(token: str) -> Any:
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return web.json_response(
                {"error": "missing or wrong bearer token", "status": 401},
                status=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return await handler(request)

    return check


ROUTES: list[tuple[str, str, Handler, bool]] = [
    ("GET", "/", index, False),
    ("GET", "/context.jsonld", context, False),
    ("GET", "/schema", schema, False),
    ("GET", "/entities", search, False),
    ("GET", "/entities/{id}", entity, False),
    ("GET", "/entities/{id}/relations", relations, False),
    ("GET", "/relations", relation, False),
    ("POST", "/batch/entities", batch_entities, True),
    ("POST", "/batch/relations", batch_relations, True),
    ("POST", "/batch/relation-metadata", batch_relation_metadata, True),
    ("POST", "/vector-search", vector_search, False),
]
"""Every route: method, path, handler, and whether it is heavy (waits for a slot) or cheap."""


def _heavy(handler: Handler, slots: asyncio.Semaphore) -> Handler:
    """``handler`` run in one of the heavy-request slots, waited for in order of arrival."""

    @functools.wraps(handler)
    async def in_slot(request: web.Request) -> web.StreamResponse:
        async with slots:
            return await handler(request)

    return in_slot


def _cheap(handler: Handler) -> Handler:
    """``handler`` marked cheap: heavy work in flight yields whole slices of the event loop to it."""

    @functools.wraps(handler)
    async def cheap(request: web.Request) -> web.StreamResponse:
        with light_call():
            return await handler(request)

    return cheap


def build_app(graph: Graph, options: ServerOptions | None = None) -> web.Application:
    """The aiohttp application publishing ``graph``; the caller owns the graph's lifecycle."""
    options = options or ServerOptions()
    middlewares = [_hosts, _errors] if options.auth_token is None else [_hosts, _errors, _auth(options.auth_token)]
    app = web.Application(middlewares=middlewares)
    app[POLICY_KEY] = {}  # filled once the server knows its address (run_server); none in-process
    app[GRAPH_KEY] = graph
    app[OPTIONS_KEY] = options
    app[CONTEXT_KEY] = server_context(options.vocab)
    slots = asyncio.Semaphore(options.max_heavy_requests)
    for method, path, handler, heavy in ROUTES:
        add = app.router.add_get if method == "GET" else app.router.add_post  # a GET answers HEAD too
        add(path, _heavy(handler, slots) if heavy else _cheap(handler))
    return app


async def run_server(
    graph: Graph, host: str, port: int, options: ServerOptions, started: Callable[[str], None]
) -> None:
    """Serve ``graph`` on ``host:port`` until SIGINT/SIGTERM; ``started`` gets the base URL."""
    app = build_app(graph, options)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise BfsqlError(
                f"Cannot listen on {host}:{port}: {exc.strerror or exc}.",
                "Choose another --port (0: any free one), or stop what uses it.",
            ) from None
        bound = runner.addresses[0]
        app[POLICY_KEY]["policy"] = HostPolicy.for_bind(host, options.allowed_hosts)
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        started(f"http://{shown}:{bound[1]}")
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
