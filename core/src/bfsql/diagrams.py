"""Diagrams of a neighbourhood: DOT (Graphviz), Mermaid (GitHub markdown) and GraphML (Gephi).

They are drawn from the answers of ``bfs_query`` and ``intersect_subgraphs`` as served (the
fitted JSON, read into :class:`~bfsql.models.BfsResult` / :class:`~bfsql.models.IntersectionResult`),
so a diagram shows exactly what a model was shown: nodes labelled by name (or id, for a bare
stub), coloured by entity type (:func:`~bfsql.type_styles.type_style`, as in the explorer);
directed edges labelled by predicate; the seeds outlined. An intersection also draws its
seeds and the paths that join them to the shared nodes (with their types and names, from the
answer's ``context``). An edge whose other end is not in
the answer (an earlier page) still gets that end, by id. Every ``truncated`` note and warning
of the answer is kept as a comment: a cut answer gives a partial diagram, and says so.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bfsql.models import BfsResult, IntersectionResult
from bfsql.type_styles import NOT_SHOWN, type_style

__all__ = ["DIAGRAM_TOOLS", "FORMATS", "Neighbourhood", "diagram", "neighbourhood"]

UNKNOWN_TYPE = NOT_SHOWN
"""Entity type of a node that an edge or a path names but the answer does not show."""

DIAGRAM_TOOLS = ("bfs_query", "intersect_subgraphs")
"""The tools whose answers can be drawn."""


@dataclass(frozen=True)
class DrawnNode:
    """A node as a diagram draws it."""

    id: str
    entity_type: str
    name: str | None
    detail: str
    """``full``, ``clipped``, ``named stub``, ``stub``, or ``not shown`` (named only by an edge or a path)."""
    seed: bool
    metadata: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """The name, else the id."""
        return self.name or self.id

    @property
    def shown(self) -> bool:
        """Whether the answer shows this node (rather than only naming it in an edge or a path)."""
        return self.entity_type != UNKNOWN_TYPE


@dataclass
class Neighbourhood:
    """The nodes, edges and notes of one answer, ready to draw."""

    title: str
    nodes: dict[str, DrawnNode] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _detail(metadata: dict[str, Any] | None, name: str | None) -> str:
    if metadata is None:
        return "named stub" if name else "stub"
    return "clipped" if "_clipped" in metadata else "full"


_ANSWER_MODELS: dict[str, tuple[type[BfsResult] | type[IntersectionResult], Callable[[Any], str]]] = {
    "bfs_query": (BfsResult, lambda answer: f"max_hops={answer.max_hops}"),
    "intersect_subgraphs": (IntersectionResult, lambda answer: f"k={answer.k}"),
}
"""Each drawable tool's answer model, and the bound its diagram's title names after the seeds."""


def _read_answer(tool: str, data: dict[str, Any]) -> tuple[BfsResult | IntersectionResult, str]:
    """The answer of ``tool`` read from its JSON data, and the diagram's title."""
    if tool not in _ANSWER_MODELS:
        raise ValueError(f"{tool} answers cannot be drawn; diagrams are made of {' and '.join(DIAGRAM_TOOLS)} answers")
    model, bound = _ANSWER_MODELS[tool]
    answer = model.model_validate(data)
    return answer, f"{tool} {', '.join(answer.seeds)}, {bound(answer)}"


def _shown_nodes(answer: BfsResult | IntersectionResult, seeds: set[str]) -> dict[str, DrawnNode]:
    """The nodes the answer shows (an intersection's ``context`` too), by id."""
    context = (answer.context or []) if isinstance(answer, IntersectionResult) else []
    nodes = {}
    for node in [*answer.nodes, *context]:
        name = (node.metadata or {}).get("name") or node.name
        nodes[node.id] = DrawnNode(
            node.id, node.entity_type, str(name) if name else None, _detail(node.metadata, name), node.id in seeds,
            node.metadata,
        )
    return nodes


def _triples(answer: BfsResult | IntersectionResult) -> list[tuple[str, str, str]]:
    """The answer's edges (an intersection's path edges too) as triples, each once, in order."""
    triples = [(e.subject, e.predicate, e.object) for e in answer.edges]
    if isinstance(answer, IntersectionResult):
        triples += [edge for path in answer.paths or [] for edge in path.edges]
    return list(dict.fromkeys(triples))


def _notes(answer: BfsResult | IntersectionResult) -> list[str]:
    """The answer's ``truncated`` notes and warnings, one line each."""
    return [
        f"truncated ({note.reason}" + (f", {note.count} items" if note.count else "") + f"): {note.detail} {note.hint}"
        for note in answer.truncated or []
    ] + [f"warning: {warning}" for warning in answer.warnings or []]


def neighbourhood(tool: str, data: dict[str, Any]) -> Neighbourhood:
    """The drawable content of a ``bfs_query`` or ``intersect_subgraphs`` answer (plain JSON data)."""
    answer, title = _read_answer(tool, data)
    seeds = set(answer.seeds)
    drawn = Neighbourhood(title, _shown_nodes(answer, seeds), _triples(answer), _notes(answer))
    for node_id in [*answer.seeds, *(end for s, _, o in drawn.edges for end in (s, o))]:
        if node_id not in drawn.nodes:
            drawn.nodes[node_id] = DrawnNode(node_id, UNKNOWN_TYPE, None, "not shown", node_id in seeds)
    return drawn


# -- DOT ------------------------------------------------------------------------------


def _dot_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(drawn: Neighbourhood) -> str:
    """A Graphviz ``digraph``: boxes filled by type, labelled name and type; seeds drawn thicker."""
    lines = [f"// {drawn.title}", *(f"// {_one_line(note)}" for note in drawn.notes)]
    lines += [
        f"digraph {_dot_string(drawn.title)} {{",
        "  graph [rankdir=LR];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for node in drawn.nodes.values():
        style = type_style(node.entity_type)
        attributes = {
            "label": f"{node.label}\n{node.entity_type}" if node.shown else node.label,
            "entity_type": node.entity_type,
            "fillcolor": style.fill,
            "fontcolor": style.text,
            "tooltip": node.id,
        }
        extra = (", penwidth=2.5" if node.seed else "") + ("" if node.shown else ', style="rounded,dashed"')
        body = ", ".join(f"{key}={_dot_string(value)}" for key, value in attributes.items())
        lines.append(f"  {_dot_string(node.id)} [{body}{extra}];")
    for subject, predicate, obj in drawn.edges:
        lines.append(f"  {_dot_string(subject)} -> {_dot_string(obj)} [label={_dot_string(predicate)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Mermaid --------------------------------------------------------------------------

_MERMAID_ENTITIES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#amp;"}


def _mermaid_text(text: str) -> str:
    return "".join(_MERMAID_ENTITIES.get(ch, ch) for ch in " ".join(text.split()))


def _mermaid_ids(ids: list[str], prefix: str) -> dict[str, str]:
    """Mermaid-safe identifiers (letters, digits, underscores), readable and unique."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for original in ids:
        base = prefix + re.sub(r"\W", "_", original, flags=re.ASCII)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        names[original] = name
    return names


def _one_line(text: str) -> str:
    return " ".join(text.split())


def to_mermaid(drawn: Neighbourhood) -> str:
    """A Mermaid ``flowchart``: one class (fill colour) per entity type; labels are name and type."""
    ids = _mermaid_ids(list(drawn.nodes), "n_")
    classes = _mermaid_ids(sorted({n.entity_type for n in drawn.nodes.values()} - {UNKNOWN_TYPE}), "type_")
    classes[UNKNOWN_TYPE] = "not_shown"
    lines = ["flowchart LR", f"  %% {_one_line(drawn.title)}", *(f"  %% {_one_line(note)}" for note in drawn.notes)]
    for node in drawn.nodes.values():
        label = _mermaid_text(node.label) + (f"<br/><i>{_mermaid_text(node.entity_type)}</i>" if node.shown else "")
        shape = ('(["', '"])') if node.seed else ('["', '"]')
        lines.append(f"  {ids[node.id]}{shape[0]}{label}{shape[1]}")
    for subject, predicate, obj in drawn.edges:
        lines.append(f'  {ids[subject]} -->|"{_mermaid_text(predicate)}"| {ids[obj]}')
    for entity_type, name in classes.items():
        members = ",".join(ids[n.id] for n in drawn.nodes.values() if n.entity_type == entity_type)
        if members:
            style = type_style(entity_type)
            dashes = "" if entity_type != UNKNOWN_TYPE else ",stroke-dasharray:4 3"
            lines.append(f"  classDef {name} fill:{style.fill},stroke:#333,color:{style.text}{dashes}")
            lines.append(f"  class {members} {name}")
    return "\n".join(lines) + "\n"


# -- GraphML --------------------------------------------------------------------------

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"

_GRAPHML_KEYS = (
    ("label", "node", "label", "string"),
    ("entity_type", "node", "entity_type", "string"),
    ("detail", "node", "detail", "string"),
    ("seed", "node", "seed", "boolean"),
    ("metadata", "node", "metadata", "string"),
    ("color", "node", "color", "string"),
    ("predicate", "edge", "predicate", "string"),
    ("edge_label", "edge", "label", "string"),
)
"""(key id, for, attribute name, type): ``label`` is what Gephi shows on nodes and edges; ``color`` the type's fill."""


def to_graphml(drawn: Neighbourhood) -> str:
    """GraphML (directed) with each node's label, type, detail level, seed flag, metadata (as JSON) and colour."""
    root = ET.Element("graphml", {"xmlns": GRAPHML_NS})
    for key_id, domain, name, kind in _GRAPHML_KEYS:
        ET.SubElement(root, "key", {"id": key_id, "for": domain, "attr.name": name,
                                                     "attr.type": kind})
    graph = ET.SubElement(root, "graph", {"id": "G", "edgedefault": "directed"})
    ET.SubElement(graph, "desc").text = "\n".join([drawn.title, *drawn.notes])

    def data(parent: ET.Element, key: str, value: str) -> None:
        ET.SubElement(parent, "data", {"key": key}).text = value

    for node in drawn.nodes.values():
        element = ET.SubElement(graph, "node", {"id": node.id})
        data(element, "label", node.label)
        data(element, "entity_type", node.entity_type)
        data(element, "detail", node.detail)
        data(element, "seed", "true" if node.seed else "false")
        if node.metadata is not None:
            data(element, "metadata", json.dumps(node.metadata, ensure_ascii=False, default=str))
        data(element, "color", type_style(node.entity_type).fill)
    for index, (subject, predicate, obj) in enumerate(drawn.edges):
        element = ET.SubElement(graph, "edge", {"id": f"e{index}", "source": subject, "target": obj})
        data(element, "predicate", predicate)
        data(element, "edge_label", predicate)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


FORMATS: dict[str, Callable[[Neighbourhood], str]] = {"dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}
"""Diagram formats by name (``bfsql query ... --format NAME``)."""


def diagram(tool: str, data: dict[str, Any], fmt: str) -> str:
    """The answer ``data`` of ``tool`` as a diagram in format ``fmt`` (a key of :data:`FORMATS`)."""
    return FORMATS[fmt](neighbourhood(tool, data))
