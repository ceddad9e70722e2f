"""Diagram export: ``bfsql query bfs_query|intersect_subgraphs ... --format dot|mermaid|graphml``.

Each format is parsed back — DOT by pydot, GraphML by networkx and lxml, Mermaid line by
line — and must hold exactly the nodes and edges of the answer, computed by hand on the demo
graph (FamPlex): BRAF, ARAF and RAF1 are genes that are each ``isa`` the RAF family, which
``isa`` MAP3K.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from io import BytesIO

import networkx as nx
import pydot
import pytest
from lxml import etree

from bfsql.diagrams import diagram

QUERY = [sys.executable, "-m", "bfsql", "query"]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pydot.dot_parser")

BRAF_2_HOPS_NODES = {"HGNC:BRAF": ("BRAF", "Gene"), "FPLX:RAF": ("RAF Family", "Family"),
                     "FPLX:MAP3K": ("MAP3K", "Family"), "HGNC:ARAF": ("ARAF", "Gene"), "HGNC:RAF1": ("RAF1", "Gene")}
BRAF_2_HOPS_EDGES = {("HGNC:BRAF", "isa", "FPLX:RAF"), ("HGNC:ARAF", "isa", "FPLX:RAF"),
                     ("HGNC:RAF1", "isa", "FPLX:RAF"), ("FPLX:RAF", "isa", "FPLX:MAP3K")}
BFS = ["bfs_query", json.dumps({"seeds": ["HGNC:BRAF"], "max_hops": 2})]
INTERSECT = ["intersect_subgraphs", json.dumps({"seeds": ["HGNC:BRAF", "HGNC:RAF1"], "k": 1})]


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


def export(*args: str) -> str:
    done = subprocess.run([*QUERY, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def unquote(name: str) -> str:
    return name[1:-1].replace('\\"', '"').replace("\\\\", "\\") if name.startswith('"') else name


def dot_graph(text: str) -> tuple[dict[str, dict[str, str]], set[tuple[str, str, str]]]:
    graphs = pydot.graph_from_dot_data(text)
    assert graphs is not None and len(graphs) == 1
    graph = graphs[0]
    assert graph.get_type() == "digraph"
    nodes = {unquote(n.get_name()): {k: unquote(v) for k, v in n.get_attributes().items()}
             for n in graph.get_nodes() if unquote(n.get_name()) not in ("node", "edge", "graph")}
    edges = {(unquote(e.get_source()), unquote(e.get_attributes()["label"]), unquote(e.get_destination()))
             for e in graph.get_edges()}
    return nodes, edges


MERMAID_NODE = re.compile(r'^  (n_\w+)(\(\[|\[)"(.*)"(\]\)|\])$')
MERMAID_EDGE = re.compile(r'^  (n_\w+) -->\|"(.*)"\| (n_\w+)$')
MERMAID_CLASS = re.compile(r"^  class ([\w,]+) (\w+)$")


def mermaid_graph(text: str) -> tuple[dict[str, tuple[str, bool]], set[tuple[str, str, str]], dict[str, str]]:
    """Labels (and seed shape) by Mermaid id, edges, and each node's class; every line must be understood."""
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes: dict[str, tuple[str, bool]] = {}
    edges: set[tuple[str, str, str]] = set()
    classes: dict[str, str] = {}
    for line in lines[1:]:
        if (node := MERMAID_NODE.match(line)):
            nodes[node[1]] = (node[3], node[2] == "([")
        elif (edge := MERMAID_EDGE.match(line)):
            assert edge[1] in nodes and edge[3] in nodes, "an edge names a node defined before it"
            edges.add((edge[1], edge[2], edge[3]))
        elif (member := MERMAID_CLASS.match(line)):
            classes.update(dict.fromkeys(member[1].split(","), member[2]))
        else:
            assert line.startswith(("  %% ", "  classDef ")), f"unexpected Mermaid line {line!r}"
    return nodes, edges, classes


def test_dot_round_trips_through_pydot_with_the_right_nodes_and_edges():
    nodes, edges = dot_graph(export(*BFS, "--format", "dot"))
    assert set(nodes) == set(BRAF_2_HOPS_NODES)
    assert edges == BRAF_2_HOPS_EDGES
    for node_id, (name, entity_type) in BRAF_2_HOPS_NODES.items():
        assert nodes[node_id]["label"] == f"{name}\\n{entity_type}"
        assert nodes[node_id]["entity_type"] == entity_type
    assert "penwidth" in nodes["HGNC:BRAF"] and "penwidth" not in nodes["HGNC:ARAF"]  # the seed stands out
    assert nodes["HGNC:BRAF"]["fillcolor"] == nodes["HGNC:ARAF"]["fillcolor"] != nodes["FPLX:RAF"]["fillcolor"]


def test_graphml_round_trips_through_networkx_and_lxml():
    text = export(*BFS, "--format", "graphml")
    graph = nx.read_graphml(BytesIO(text.encode()))
    assert graph.is_directed()
    assert set(graph.nodes) == set(BRAF_2_HOPS_NODES)
    assert {(s, d["predicate"], o) for s, o, d in graph.edges(data=True)} == BRAF_2_HOPS_EDGES
    for node_id, (name, entity_type) in BRAF_2_HOPS_NODES.items():
        assert graph.nodes[node_id]["label"] == name
        assert graph.nodes[node_id]["entity_type"] == entity_type
        assert graph.nodes[node_id]["seed"] is (node_id == "HGNC:BRAF")
    assert json.loads(graph.nodes["FPLX:RAF"]["metadata"])["name"] == "RAF Family"

    root = etree.fromstring(text.encode())
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert root.xpath("/g:graphml/g:graph/@edgedefault", namespaces=ns) == ["directed"]
    assert len(root.xpath("//g:node", namespaces=ns)) == 5 and len(root.xpath("//g:edge", namespaces=ns)) == 4


def test_mermaid_names_every_node_and_edge_of_the_answer():
    nodes, edges, classes = mermaid_graph(export(*BFS, "--format", "mermaid"))
    by_id = {label.split("<br/>")[0]: mermaid_id for mermaid_id, (label, _) in nodes.items()}
    assert set(by_id) == {name for name, _ in BRAF_2_HOPS_NODES.values()}
    ids = {node_id: by_id[name] for node_id, (name, _) in BRAF_2_HOPS_NODES.items()}
    assert edges == {(ids[s], p, ids[o]) for s, p, o in BRAF_2_HOPS_EDGES}
    assert [mid for mid, (_, seed) in nodes.items() if seed] == [ids["HGNC:BRAF"]]
    for node_id, (_, entity_type) in BRAF_2_HOPS_NODES.items():
        assert classes[ids[node_id]] == f"type_{entity_type}"
        assert nodes[ids[node_id]][0].endswith(f"<br/><i>{entity_type}</i>")


def answer(*args: str) -> dict:
    return json.loads(export(*args, "--json"))


def test_an_intersection_draws_its_seeds_and_the_paths_that_join_them():
    expected_edges = {("HGNC:BRAF", "isa", "FPLX:RAF"), ("HGNC:RAF1", "isa", "FPLX:RAF")}
    graph = nx.read_graphml(BytesIO(export(*INTERSECT, "--format", "graphml").encode()))
    assert {(s, d["predicate"], o) for s, o, d in graph.edges(data=True)} == expected_edges
    assert graph.nodes["HGNC:RAF1"]["detail"] == "named stub" and graph.nodes["HGNC:RAF1"]["seed"] is True
    data = answer(*INTERSECT)
    nodes, edges = dot_graph(diagram("intersect_subgraphs", data, "dot"))
    assert set(nodes) == {"FPLX:RAF", "HGNC:BRAF", "HGNC:RAF1"}
    assert edges == expected_edges
    assert nodes["FPLX:RAF"]["entity_type"] == "Family"
    assert nodes["HGNC:BRAF"]["entity_type"] == "Gene"  # from the answer's context: no id without a type
    mermaid_nodes, mermaid_edges, _ = mermaid_graph(diagram("intersect_subgraphs", data, "mermaid"))
    assert len(mermaid_nodes) == 3 and len(mermaid_edges) == 2


def test_a_cut_answer_says_so_in_every_format_and_keeps_edges_to_earlier_pages():
    # Page 2 of FPLX:RAF's neighbourhood: its edges reach back to nodes of page 1.
    data = answer("bfs_query", json.dumps({"seeds": ["FPLX:RAF"], "max_hops": 1, "limit": 2, "offset": 2}))
    assert data["truncated"][0]["reason"] == "page"
    nodes, edges = dot_graph(diagram("bfs_query", data, "dot"))
    assert edges and {s for s, _, _ in edges} | {o for _, _, o in edges} <= set(nodes)
    assert nodes["FPLX:RAF"]["entity_type"] == "?"  # on page 1, named here by its edges
    comments = {"dot": "// truncated (page", "mermaid": "%% truncated (page", "graphml": "truncated (page"}
    for fmt, comment in comments.items():
        assert comment in diagram("bfs_query", data, fmt)


def test_format_is_refused_for_other_tools_and_with_json():
    done = subprocess.run([*QUERY, "search_entities", "query=BRAF", "--format", "dot"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "--format dot draws bfs_query and intersect_subgraphs answers" in done.stderr
    assert "Traceback" not in done.stderr
    done = subprocess.run([*QUERY, *BFS, "--format", "dot", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "either --json or --format" in done.stderr


AWKWARD = {
    "seeds": ["a:1"], "max_hops": 1, "node_count": 3, "edge_count": 2,
    "nodes": [
        {"id": "a:1", "entity_type": "Odd Type", "metadata": {"name": 'say "hi" \\ <b>#1</b> & co\nline two'}},
        {"id": "end", "entity_type": "Gene", "name": "x|y"},
    ],
    "edges": [{"subject": "a:1", "predicate": 'rel "q" | <p>', "object": "end"},
              {"subject": "end", "predicate": "isa", "object": "a 1"}],
    "schema_summary": {"entity_types_found": ["Gene", "Odd Type"], "predicates_found": ["isa"]},
}


def test_names_and_predicates_are_escaped_in_every_format():
    nodes, edges = dot_graph(diagram("bfs_query", AWKWARD, "dot"))
    assert set(nodes) == {"a:1", "end", "a 1"}
    assert nodes["a:1"]["label"] == 'say "hi" \\ <b>#1</b> & co\\nline two\\nOdd Type'  # \\n: DOT's line break
    assert ("a:1", 'rel "q" | <p>', "end") in edges

    graph = nx.read_graphml(BytesIO(diagram("bfs_query", AWKWARD, "graphml").encode()))
    assert graph.nodes["a:1"]["label"] == 'say "hi" \\ <b>#1</b> & co\nline two'
    assert {d["predicate"] for _, _, d in graph.edges(data=True)} == {'rel "q" | <p>', "isa"}

    mermaid_nodes, mermaid_edges, classes = mermaid_graph(diagram("bfs_query", AWKWARD, "mermaid"))
    assert set(mermaid_nodes) == {"n_a_1", "n_end", "n_a_1_2"}  # readable, unique, never the keyword 'end'
    label = mermaid_nodes["n_a_1"][0]
    assert '"' not in label and "<b>" not in label and "\n" not in label
    assert label.startswith("say #quot;hi#quot; \\ #lt;b#gt;#35;1#lt;/b#gt; #amp; co line two")
    assert ("n_a_1", "rel #quot;q#quot; | #lt;p#gt;", "n_end") in mermaid_edges
    assert classes["n_a_1"] == "type_Odd_Type" and classes["n_a_1_2"] == "not_shown"


def test_only_traversal_answers_can_be_drawn():
    with pytest.raises(ValueError, match="cannot be drawn"):
        diagram("search_entities", {}, "dot")


AMPK = ["bfs_query", json.dumps({"seeds": ["FPLX:AMPK"], "max_hops": 1})]
"""The AMPK complex and its three families of subunits: an answer whose types are Complex and Family."""


def mermaid_fills(text: str) -> dict[str, str]:
    """Fill colour of each entity type's class in a Mermaid diagram."""
    return dict(re.findall(r"^  classDef type_(\w+) fill:(#\w+),", text, flags=re.MULTILINE))


def test_a_type_has_one_colour_in_every_answer_graph_and_format(tmp_path):
    from bfsql.loading.sqlite_loader import load_sqlite
    from bfsql.testing.standard_graph import TP53, write_standard_bundle
    from bfsql.type_styles import PALETTE, type_style

    braf, ampk = answer(*BFS), answer(*AMPK)
    assert {n["entity_type"] for n in braf["nodes"]} == {"Gene", "Family"}
    assert {n["entity_type"] for n in ampk["nodes"]} == {"Complex", "Family"}
    store = tmp_path / "standard.db"
    load_sqlite(store, [write_standard_bundle(tmp_path)])
    standard = json.loads(export("--db", str(store), "bfs_query", json.dumps({"seeds": [TP53], "max_hops": 1}),
                                 "--json"))
    assert "Gene" in {n["entity_type"] for n in standard["nodes"]}

    seen: dict[str, set[str]] = {}
    for data in (braf, ampk, standard):
        nodes, _ = dot_graph(diagram("bfs_query", data, "dot"))
        for attributes in nodes.values():
            if attributes["entity_type"] != "?":
                seen.setdefault(attributes["entity_type"], set()).add(attributes["fillcolor"].upper())
        for entity_type, fill in mermaid_fills(diagram("bfs_query", data, "mermaid")).items():
            seen.setdefault(entity_type, set()).add(fill.upper())
        graph = nx.read_graphml(BytesIO(diagram("bfs_query", data, "graphml").encode()))
        for _, attributes in graph.nodes(data=True):
            seen.setdefault(attributes["entity_type"], set()).add(attributes["color"].upper())
    assert {"Gene", "Family", "Complex"} <= set(seen)
    assert all(colours == {type_style(t).fill} for t, colours in seen.items()), seen  # one colour per type
    assert all(type_style(t).fill in PALETTE for t in seen)


def test_the_palette_is_tols_muted_scheme_with_readable_text_on_every_fill():
    from bfsql.type_styles import PALETTE, _luminance, type_style

    def contrast(a: str, b: str) -> float:
        lighter, darker = sorted((_luminance(a), _luminance(b)), reverse=True)
        return (lighter + 0.05) / (darker + 0.05)

    styles = [type_style(f"type {i}") for i in range(200)]
    assert {style.fill for style in styles} == set(PALETTE) and len(PALETTE) == 9  # every colour is used
    assert all(contrast(style.fill, style.text) >= 4.5 for style in styles)  # WCAG AA for labels on the fill
