"""The house's rules that a reader of CONTRIBUTING.md relies on, checked on the sources.

* Every module of core is in CONTRIBUTING.md's layer list, and every import at the top of a module
  comes from a layer below its own (imports inside functions, which load on use, may reach anywhere).
* Every row of CONTRIBUTING.md's table points at files that exist, and there is a row for every kind
  of addition people make.
* The engine, the server and the plugins ask a :class:`~bfsql.Graph` graph-level questions (its
  description, advice, truncations, health, stored embedder) through its own methods, never through
  ``graph.backend``: only graph.py and the backends themselves talk to a backend.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
CORE = ROOT / "core" / "src" / "bfsql"
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")

KINDS_OF_ADDITION = ("a tool", "an answer-fitting rule", "a capability flag", "a primitive", "a backend",
                     "an embedder", "a loader format", "a CLI command", "a doc", "a server setting",
                     "a backend option", "a post-processing step", "an answer kind")
"""What people add; each needs a row saying where it goes and where its tests go."""


def _layers() -> list[list[str]]:
    """The layer list of CONTRIBUTING.md: the names of each layer, lowest first."""
    start = CONTRIBUTING.index("Layers, lowest first")
    text = CONTRIBUTING[start:CONTRIBUTING.index("A module imports only from layers below it", start)]
    text = text[text.index("\n\n"):]  # the list follows the paragraph that introduces it
    return [re.findall(r"`([^`]+)`", layer) for layer in text.split("→")]


def _unit(module: str) -> str:
    """The layer-list name of a ``bfsql.…`` module: a package's folder (``engine/``) or a module's name."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    return f"{parts[0]}/" if (CORE / parts[0]).is_dir() else parts[0]


def _units() -> list[str]:
    """Every module and package directly under core/src/bfsql, as the layer list names them."""
    found = [p.stem for p in CORE.glob("*.py")]
    found += [f"{p.name}/" for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    return sorted(found)


def _top_imports(path: Path) -> set[str]:
    """The bfsql modules ``path`` imports at its top level (not under ``if TYPE_CHECKING``, not in functions)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bfsql"):
            module = node.module or ""
            found |= {f"bfsql.{alias.name}" for alias in node.names} if module == "bfsql" else {module}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("bfsql")}
    return {module for module in found
            if module == "bfsql" or (CORE / module.split(".")[1]).exists()
            or (CORE / f"{module.split('.')[1]}.py").exists()}


def _module_name(path: Path) -> str:
    return ".".join(["bfsql", *path.relative_to(CORE).with_suffix("").parts]).removesuffix(".__init__")


def test_every_module_of_core_is_in_the_layer_list_once():
    listed = [name for layer in _layers() for name in layer]
    assert len(listed) == len(set(listed)), f"listed twice: {sorted({n for n in listed if listed.count(n) > 1})}"
    assert sorted(listed) == _units(), (f"missing from CONTRIBUTING.md's layers: {sorted(set(_units()) - set(listed))}"
                                        f"; listed but absent: {sorted(set(listed) - set(_units()))}")


def test_imports_at_the_top_of_a_module_come_from_layers_below():
    level = {name: n for n, layer in enumerate(_layers()) for name in layer}
    wrong = []
    for path in sorted(CORE.rglob("*.py")):
        own = _unit(_module_name(path))
        for module in _top_imports(path):
            other = _unit(module)
            if other != own and level[other] >= level[own]:
                wrong.append(f"{path.relative_to(CORE)} ({own}) imports {module} ({other})")
    assert not wrong, "imports at the top of a module from its own layer or above:\n" + "\n".join(wrong)


def _rows() -> list[str]:
    return [line for line in CONTRIBUTING.splitlines() if line.startswith("| a") or line.startswith("| an")]


def test_there_is_a_row_for_every_kind_of_addition_saying_where_its_tests_go():
    kinds = [row.split("|")[1].strip() for row in _rows()]
    for kind in KINDS_OF_ADDITION:
        assert any(k == kind or k.startswith(kind + " ") for k in kinds), f"no row for {kind!r} in CONTRIBUTING.md"
    for row in _rows():
        tests_cell = row.rstrip().rstrip("|").split("|")[-1]
        assert "tests" in tests_cell, f"this row does not say where its tests go: {row[:80]}"


def _paths(row: str) -> list[str]:
    """The file and folder paths a row names: backticked text with a slash or a file suffix."""
    named = []
    for text in re.findall(r"`([^`]+)`", row):
        text = text.removesuffix("…").strip()
        if " " in text or "NAME" in text or text.startswith(("-", "bfsql.", "BFSQL_")):
            continue
        if "/" in text or re.search(r"\.(py|md|toml)$", text):
            named.append(text)
    return named


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row.split("|")[1].strip())
def test_every_row_points_at_files_that_exist(row: str):
    assert _paths(row), "a row names the files to touch"
    missing = [path for path in _paths(row)
               if not any(base.glob(path.rstrip("/")) for base in (ROOT, CORE))]
    assert not missing, f"CONTRIBUTING.md names files that do not exist: {missing}"


def _reaches_past_a_graph(tree: ast.AST) -> list[int]:
    """The lines where code takes a graph's backend (``graph.backend.x``, ``b = served.graph.backend``,
    ``f(graph.backend)``). A ``graph`` whose ``backend`` is a name (a configured graph's, used as a key) is no
    Graph: ``specs[graph.backend]`` passes."""
    lines = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.Attribute) and child.attr == "backend"
                    and ast.unparse(child.value).endswith("graph") and not isinstance(node, ast.Subscript)):
                lines.append(child.lineno)
    return lines


ALLOWED = {CORE / "graph.py"}
SOURCES = sorted(
    path for folder in (CORE, *(ROOT / "plugins").glob("*/src"))
    for path in folder.rglob("*.py")
    if path not in ALLOWED and (CORE / "backends") not in path.parents
)


def test_there_are_sources_to_scan():
    assert len(SOURCES) > 100


def test_nothing_reaches_past_a_graph_to_its_backend():
    found = [f"{path.relative_to(ROOT)}:{line}"
             for path in SOURCES for line in _reaches_past_a_graph(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "ask the Graph (a method in graph.py), not graph.backend:\n" + "\n".join(found)


def test_the_scan_finds_a_reach_past_a_graph():
    code = "async def f(graph, served, specs):\n    a = served.graph.backend\n    await graph.backend.health()\n" \
           "    specs[graph.backend]\n"
    assert _reaches_past_a_graph(ast.parse(code)) == [2, 3]
