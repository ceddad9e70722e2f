"""``bfsql explore`` over HTTP: the page and its assets, the tool calls, and the HTTP rules of ``bfsql serve``.

The explorer's answers must be the MCP server's answers (same pipeline, same budgets), its
requests must pass the Host/Origin checks and the token, and nothing beyond loopback without one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bfsql_testsupport.explore import running_explorer
from bfsql_testsupport.services import free_port


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


@pytest.fixture(scope="module")
def explorer():
    with running_explorer("--max-tokens", "1500") as base:
        yield base


def test_the_page_and_its_drawing_library_are_served_from_the_package(explorer):
    page = httpx.get(explorer)
    assert page.status_code == 200 and "<title>bfsql explore</title>" in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src" not in policy  # scripts: this server's only
    assert page.headers["referrer-policy"] == "no-referrer"
    for address in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert address.startswith(("static/", "data:")), f"the page loads {address} from elsewhere"
        if address.startswith("static/"):
            assert httpx.get(explorer + address).status_code == 200, address
    library = httpx.get(explorer + "static/vendor/cytoscape.min.js")
    assert "javascript" in library.headers["content-type"] and "Cytoscape Consortium" in library.text[:200]
    for name in ("cytoscape", "cytoscape-fcose", "cose-base", "layout-base"):  # each library with its licence
        assert f'src="static/vendor/{name}' in page.text
        licence = httpx.get(explorer + f"static/vendor/{name}.LICENSE")
        assert licence.status_code == 200 and "Permission is hereby granted" in licence.text, name


async def test_answers_are_the_mcp_servers_answers_with_the_same_budget(explorer):
    arguments = {"seeds": ["FPLX:MAP3K"], "max_hops": 2}
    served = httpx.post(explorer + "api/call/bfs_query", json=arguments)
    assert served.status_code == 200
    params = StdioServerParameters(command=sys.executable, args=["-m", "bfsql", "serve", "--max-tokens", "1500"],
                                   env=dict(os.environ))
    async with Client(params) as client:
        result = await client.call_tool("bfs_query", arguments)
    assert served.text == result.content[0].text  # the text a model reads, unchanged
    assert [n["reason"] for n in json.loads(served.text)["truncated"]][:2] == ["clipped_values", "named_stubs"]


def test_bad_calls_get_one_plain_error(explorer):
    def call(tool: str, body: object) -> httpx.Response:
        return httpx.post(explorer + f"api/call/{tool}", json=body)

    refused = call("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 9})
    assert refused.status_code == 422
    assert refused.json()["error"].startswith("max_hops must be an integer from 1 to 5")
    assert "Unknown argument 'bogus'" in call("bfs_query", {"seeds": ["FPLX:RAF"], "max_hops": 1, "bogus": 1}).json()[
        "error"]
    assert "Unknown entity id(s): 'X:Y'" in call("describe_entity", {"id": "X:Y"}).json()["error"]
    assert call("bfs_query", ["FPLX:RAF"]).status_code == 400
    assert httpx.post(explorer + "api/call/bfs_query", content=b"{nope", headers={"content-type": "application/json"}
                      ).json()["error"] == "The request body must be a JSON object of the tool's arguments."
    other = call("path_query", {"query": '"BRAF" -[isa]-> type:Family'})
    assert other.status_code == 404 and "calls only describe_schema, search_entities" in other.json()["error"]
    assert httpx.get(explorer + "api/call/bfs_query").status_code == 405
    too_big = call("search_entities", {"query": "x" * 70_000})
    assert too_big.status_code == 413
    assert call("search_entities", {"query": "BRAF"}).json()["items"][0]["id"] == "HGNC:BRAF"  # still answering


def test_the_page_gets_type_styles_from_the_one_mapping_the_exports_use(explorer):
    from dataclasses import asdict

    from bfsql.type_styles import type_style

    styles = httpx.get(explorer + "api/type-styles", params=[("type", "Gene"), ("type", "?"), ("type", "Odd Type")])
    assert styles.json() == {name: asdict(type_style(name)) for name in ("Gene", "?", "Odd Type")}
    too_many = httpx.get(explorer + "api/type-styles", params=[("type", f"T{i}") for i in range(501)])
    assert too_many.status_code == 400 and "at most 500 types" in too_many.json()["error"]


SECURITY_HEADERS = ("content-security-policy", "x-content-type-options", "referrer-policy")


def test_a_deeply_nested_body_gets_a_plain_400_and_the_connection_serves_on(explorer):
    with httpx.Client() as http:
        for body in (b"[" * 30_000, b'{"seeds": ' + b"[" * 990 + b"]" * 990 + b', "max_hops": 1}'):
            refused = http.post(explorer + "api/call/bfs_query", content=body,
                                headers={"content-type": "application/json"})
            assert refused.status_code == 400, refused.text
            assert "more than 16 levels deep" in refused.json()["error"]
            assert all(name in refused.headers for name in SECURITY_HEADERS), refused.headers
        # Brackets inside strings are text, not nesting: the tool gets the call (and finds no such entity).
        quoted = http.post(explorer + "api/call/describe_entity", json={"id": "[{" * 1000})
        assert quoted.status_code == 422 and "Unknown entity id(s)" in quoted.json()["error"]
        found = http.post(explorer + "api/call/search_entities", json={"query": "BRAF"}).json()
        assert found["items"][0]["id"] == "HGNC:BRAF"


def test_foreign_hosts_origins_and_form_posts_are_refused(explorer):
    assert httpx.get(explorer, headers={"Host": "evil.example:80"}).status_code == 421
    body = {"query": "BRAF"}
    foreign = httpx.post(explorer + "api/call/search_entities", json=body, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    form = httpx.post(explorer + "api/call/search_entities", content=json.dumps(body),
                      headers={"content-type": "text/plain"})
    assert form.status_code == 400  # a cross-site form cannot send JSON, so it cannot call a tool
    same = httpx.post(explorer + "api/call/search_entities", json=body, headers={"Origin": explorer.rstrip("/")})
    assert same.status_code == 200


TOKEN = "s3cret-token-of-the-explorer-tests"


@pytest.fixture(scope="module")
def guarded():
    with running_explorer("--auth-token", TOKEN) as base:
        yield base


def test_a_token_guards_every_request_and_a_first_visit_sets_a_cookie(guarded):
    base = guarded
    with httpx.Client() as http:
        assert http.get(base).status_code == 401
        assert http.get(base + "static/explorer.js").status_code == 401
        assert http.get(base + "?token=wrong").status_code == 401
        assert http.post(base + "api/call/search_entities", json={"query": "BRAF"}).status_code == 401
        bearer = http.post(base + "api/call/search_entities", json={"query": "BRAF"},
                           headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200

        first = http.get(base + f"?seed=HGNC:BRAF&token={TOKEN}&hops=2")
        assert first.status_code == 303
        assert first.headers["location"] == "/?seed=HGNC%3ABRAF&hops=2"  # the token leaves the address
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert http.get(base).status_code == 200  # the cookie now stands for the token
        assert http.post(base + "api/call/search_entities", json={"query": "BRAF"}).status_code == 200


def test_the_first_visits_redirect_stays_on_this_server(guarded):
    targets = {"//evil.example/": "/evil.example/", "/\\evil.example/": "/evil.example/",
               "/%5C%5Cevil.example/x": "/evil.example/x", "///static/explorer.js": "/static/explorer.js"}
    for path, location in targets.items():
        moved = httpx.get(guarded.rstrip("/") + path + f"?token={TOKEN}")
        assert moved.status_code == 303 and moved.headers["location"] == location, (path, moved.headers)


def test_binding_beyond_loopback_requires_a_token():
    done = subprocess.run([sys.executable, "-m", "bfsql", "explore", "--host", "0.0.0.0", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "BFSQL_AUTH_TOKEN": ""})
    assert done.returncode != 0
    assert "without authentication" in done.stderr and "--auth-token" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_explorer_is_imported_only_when_it_runs():
    code = ("import sys; from bfsql.cli import build_cli; build_cli(); "
            "print(sorted(m for m in sys.modules if m.startswith(('bfsql.explore', 'bfsql.diagrams'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_open_shows_the_page_with_its_token_in_the_users_browser(tmp_path, monkeypatch):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys, pathlib; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])\n")
    monkeypatch.setenv("BROWSER", f"{sys.executable} {browser} %s")  # webbrowser runs this "browser"
    with running_explorer("--open", "--auth-token", "t0ken-for-the-explorer") as base:
        deadline = time.monotonic() + 60
        while not (opened.exists() and opened.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)  # the "browser" may not have written the address yet
        assert opened.read_text() == base + "?token=t0ken-for-the-explorer"


async def test_an_unexpected_failure_is_a_json_500_with_the_security_headers():
    from bfsql.explore.app import Guard
    from bfsql.server.http import HostPolicy

    async def failing(scope, receive, send):
        raise RuntimeError("a fault the explorer did not foresee")

    guard = Guard(failing, HostPolicy.for_bind("127.0.0.1"), None, "cookie")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(guard), base_url="http://127.0.0.1:8765") as http:
        failed = await http.get("/")
    assert failed.status_code == 500
    assert "the server's log says why" in failed.json()["error"]
    assert all(name in failed.headers for name in SECURITY_HEADERS)
