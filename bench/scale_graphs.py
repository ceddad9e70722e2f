"""The graphs of ``bench_scale.py`` and its baseline: R-MAT graphs written as bfsql bundles, and a numpy CSR BFS.

* :func:`rmat` draws a Graph500 R-MAT graph (Kronecker parameters a=.57, b=.19, c=.19, d=.05,
  ``edge_factor`` edges a vertex, vertex labels permuted, duplicate (subject, object) pairs
  dropped) from a fixed seed: the same scale and seed give the same graph on any machine.
  Every vertex is an entity (isolated ones too) of one of :data:`TYPES`, named by two or three
  syllables; every edge has one of :data:`PREDICATES` (skewed, as real graphs' are).
  :func:`add_star` adds a "mega-hub": one entity related to ``size`` new leaves.
* :func:`write_bundle` writes such a graph as a JSONL bundle (docs/bundle-format.md);
  :func:`read_bundle_arrays` reads any bundle (the HPO) into the same arrays, with the
  store's rules: later records win, merged entities and their edges are invisible, an end
  that is no entity is dangling.
* :class:`Csr` is the baseline: the same edges as CSR arrays (each node's rows in triple
  order, so a hub cap keeps the rows bfsql keeps), and :meth:`Csr.bfs` a breadth-first
  search with bfs_query's rules (every seed at distance 0; a hub's first ``cap`` rows; an
  edge counts when both its ends are reached; ``max_nodes`` cuts a hop by id order when
  given below the reach, as bfs_query once did) that computes only the two counts;
  :meth:`Csr.intersection` counts an intersection the same way.

Run ``python bench/scale_graphs.py SCALE OUT.jsonl`` to write one R-MAT bundle.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

A, B, C = 0.57, 0.19, 0.19
"""Graph500's Kronecker initiator (d = 1 - a - b - c = 0.05)."""
EDGE_FACTOR = 8
TYPES = ("Gene", "Protein", "Disease", "Compound", "Pathway")
TYPE_WEIGHTS = (0.35, 0.3, 0.15, 0.15, 0.05)
PREDICATES = ("interacts_with", "regulates", "part_of", "associated_with", "cites")
PREDICATE_WEIGHTS = (0.5, 0.2, 0.15, 0.1, 0.05)
SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai"))
STAR_PREDICATE = "mentions"
STAR_TYPE = "Document"


@dataclass
class Graph:
    """A graph as arrays: ``ids`` in code-point order, edges as indexes into them, predicates as codes."""

    ids: list[str]
    """Every end of an edge and every visible entity, sorted (code-point order)."""
    entity: np.ndarray
    """bool per id: a visible entity (False: a dangling end)."""
    subjects: np.ndarray
    predicates: np.ndarray
    """int32 codes into ``predicate_names``."""
    objects: np.ndarray
    predicate_names: list[str]
    type_codes: np.ndarray | None = None
    """int8 type per id (an index into :data:`TYPES`), for generated graphs."""
    names: list[str] | None = None

    @property
    def edges(self) -> int:
        """Relationships (every visible one, dangling included)."""
        return len(self.subjects)

    def degrees(self) -> np.ndarray:
        """Rows per id (a self-loop counted once, as the store's adjacency has it)."""
        loops = self.subjects == self.objects
        return np.bincount(np.concatenate([self.subjects, self.objects[~loops]]), minlength=len(self.ids))


def _names(count: int, rng: np.random.Generator) -> list[str]:
    parts = np.array(SYLLABLES)
    first, second, third = (rng.integers(0, len(SYLLABLES), count) for _ in range(3))
    long = rng.random(count) < 0.5
    words = np.char.add(parts[first], parts[second])
    words = np.where(long, np.char.add(words, parts[third]), words)
    return [f"{w.capitalize()} {i}" for i, w in enumerate(words.tolist())]


def rmat(scale: int, seed: int = 1, edge_factor: int = EDGE_FACTOR) -> Graph:
    """A Graph500 R-MAT graph of ``2**scale`` entities (see the module)."""
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, edge_factor << scale
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    ab, a_share, c_share = A + B, A / (A + B), C / (1 - A - B)
    for bit in range(scale):
        down = rng.random(m) > ab
        right = rng.random(m) > np.where(down, c_share, a_share)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    labels = rng.permutation(n)
    pairs = rng.permutation(np.unique(labels[src] * n + labels[dst]))  # in no order, as Graph500 lists them
    src, dst = pairs // n, pairs % n
    raw_ids = [f"R:{i}" for i in range(n)]
    order = np.argsort(np.array(raw_ids))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    ids = [raw_ids[i] for i in order.tolist()]
    predicates = rng.choice(len(PREDICATES), size=len(src), p=PREDICATE_WEIGHTS).astype(np.int32)
    types = rng.choice(len(TYPES), size=n, p=TYPE_WEIGHTS).astype(np.int8)
    names = _names(n, rng)
    return Graph(
        ids=ids, entity=np.ones(n, dtype=bool), subjects=rank[src].astype(np.int32), predicates=predicates,
        objects=rank[dst].astype(np.int32), predicate_names=list(PREDICATES), type_codes=types[order],
        names=[names[i] for i in order.tolist()],
    )


def add_star(graph: Graph, hub: str, size: int) -> Graph:
    """``graph`` plus an entity ``hub`` (a Document) that mentions ``size`` new entities (Compounds)."""
    assert graph.type_codes is not None and graph.names is not None
    leaves = [f"{hub}/{i}" for i in range(size)]
    old = len(graph.ids)
    raw = [*graph.ids, hub, *leaves]
    order = np.argsort(np.array(raw))
    rank = np.empty(len(raw), dtype=np.int64)
    rank[order] = np.arange(len(raw))
    codes = np.concatenate([graph.type_codes, [len(TYPES)], np.full(size, TYPES.index("Compound"))]).astype(np.int8)
    names = graph.names + ["The mega-hub"] + [f"Leaf {i}" for i in range(size)]
    predicate = len(graph.predicate_names)
    subjects = np.concatenate([rank[graph.subjects], np.full(size, rank[old])])
    objects = np.concatenate([rank[graph.objects], rank[old + 1 :]])
    return Graph(
        ids=[raw[i] for i in order.tolist()], entity=np.ones(len(raw), dtype=bool),
        subjects=subjects.astype(np.int32),
        predicates=np.concatenate([graph.predicates, np.full(size, predicate, dtype=np.int32)]),
        objects=objects.astype(np.int32), predicate_names=[*graph.predicate_names, STAR_PREDICATE],
        type_codes=codes[order], names=[names[i] for i in order.tolist()],
    )


def type_name(code: int) -> str:
    """The entity type of a generated graph's type code (the star's hub is the last)."""
    return TYPES[code] if code < len(TYPES) else STAR_TYPE


def write_bundle(graph: Graph, path: Path, chunk: int = 200_000) -> None:
    """Write a generated graph as a JSONL bundle: its entities, then its relationships."""
    assert graph.type_codes is not None and graph.names is not None
    dumps = json.dumps
    with open(path, "w", encoding="utf-8") as out:
        kinds = [type_name(c) for c in range(len(TYPES) + 1)]
        for start in range(0, len(graph.ids), chunk):
            out.write("".join(
                f'{{"kind":"entity","id":{dumps(i)},"entity_type":"{kinds[t]}","name":{dumps(n)}}}\n'
                for i, t, n in zip(graph.ids[start : start + chunk], graph.type_codes[start : start + chunk].tolist(),
                                   graph.names[start : start + chunk], strict=True)
            ))
        preds = graph.predicate_names
        ids = graph.ids
        for start in range(0, graph.edges, chunk):
            out.write("".join(
                f'{{"kind":"relationship","subject":"{ids[s]}","predicate":"{preds[p]}","object":"{ids[o]}"}}\n'
                for s, p, o in zip(graph.subjects[start : start + chunk].tolist(),
                                   graph.predicates[start : start + chunk].tolist(),
                                   graph.objects[start : start + chunk].tolist(), strict=True)
            ))


def read_bundle_arrays(path: Path) -> Graph:
    """Any JSONL bundle as a :class:`Graph`, with the store's rules (see the module)."""
    entities: dict[str, bool] = {}
    triples: dict[tuple[str, str, str], None] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["kind"] == "entity":
                entities[row["id"]] = row.get("status") != "merged"
            elif row["kind"] == "relationship":
                triples[(row["subject"], row["predicate"], row["object"])] = None
    merged = {i for i, visible in entities.items() if not visible}
    kept = [t for t in triples if t[0] not in merged and t[2] not in merged]
    ids = sorted({i for i, visible in entities.items() if visible} | {e for s, _, o in kept for e in (s, o)})
    index = {i: n for n, i in enumerate(ids)}
    names = sorted({p for _, p, _ in kept})
    code = {p: n for n, p in enumerate(names)}
    return Graph(
        ids=ids, entity=np.array([entities.get(i, False) for i in ids], dtype=bool),
        subjects=np.array([index[s] for s, _, _ in kept], dtype=np.int32),
        predicates=np.array([code[p] for _, p, _ in kept], dtype=np.int32),
        objects=np.array([index[o] for _, _, o in kept], dtype=np.int32), predicate_names=names,
    )


class Csr:
    """The baseline: ``graph``'s adjacency as CSR arrays, each node's rows in (subject, predicate, object) order."""

    def __init__(self, graph: Graph) -> None:
        self.entity = graph.entity
        self.subjects, self.objects = graph.subjects, graph.objects
        # Predicate codes follow the names' order, so sorting codes sorts predicates.
        rank = np.argsort(np.argsort(np.array(graph.predicate_names)))
        preds = rank[graph.predicates]
        loops = self.subjects == self.objects
        numbers = np.arange(graph.edges, dtype=np.int32)
        node = np.concatenate([self.subjects, self.objects[~loops]])
        edge = np.concatenate([numbers, numbers[~loops]])
        order = np.lexsort((self.objects[edge], preds[edge], self.subjects[edge], node))
        self.rows = edge[order]
        self.offsets = np.zeros(len(graph.ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(node, minlength=len(graph.ids)), out=self.offsets[1:])

    def nbytes(self) -> int:
        """Bytes of the adjacency: offsets, rows and the two end arrays."""
        return int(self.offsets.nbytes + self.rows.nbytes + self.subjects.nbytes + self.objects.nbytes)

    def distances(self, seed: int, hops: int, cap: int, passable: np.ndarray | None = None) -> np.ndarray:
        """Hops from ``seed`` to every node within ``hops`` (-1 beyond), a hub's first ``cap`` rows followed; only
        entities are entered (and the ids ``passable`` marks, the seeds of an intersection)."""
        enterable = self.entity if passable is None else self.entity | passable
        distance = np.full(len(self.entity), -1, dtype=np.int64)
        distance[seed] = 0
        frontier = np.array([seed], dtype=np.int64)
        for hop in range(1, hops + 1):
            if not len(frontier):
                break
            starts = self.offsets[frontier]
            taken = np.minimum(self.offsets[frontier + 1] - starts, cap)
            firsts = np.cumsum(taken) - taken
            edges = self.rows[np.repeat(starts - firsts, taken) + np.arange(int(taken.sum()))]
            subjects = self.subjects[edges]
            others = np.where(subjects == np.repeat(frontier, taken), self.objects[edges], subjects)
            frontier = np.unique(others[(distance[others] < 0) & enterable[others]])
            distance[frontier] = hop
        return distance

    def intersection(self, seeds: Sequence[int], k: int, cap: int) -> tuple[int, int]:
        """``(node_count, edge_count)`` of an intersect_subgraphs of ``seeds``: the nodes within ``k`` of every seed
        (each seed's own walk, a hub's first ``cap`` rows, passing through the other seeds), the edges among them."""
        passable = np.zeros(len(self.entity), dtype=bool)
        passable[list(seeds)] = True
        shared = np.ones(len(self.entity), dtype=bool)
        for seed in seeds:
            shared &= self.distances(seed, k, cap, passable) >= 0
        return int(shared.sum()), int(np.count_nonzero(shared[self.subjects] & shared[self.objects]))

    def bfs(self, seeds: Sequence[int], hops: int, max_nodes: int, cap: int) -> tuple[int, int]:
        """``(node_count, edge_count)`` of a bfs_query from ``seeds`` (see the module)."""
        visited = np.zeros(len(self.entity), dtype=bool)
        kept = np.zeros(len(self.subjects), dtype=bool)
        frontier = np.unique(np.asarray(seeds, dtype=np.int64))
        visited[frontier] = True
        reached = len(frontier)
        for _ in range(hops):
            if not len(frontier):
                break
            starts = self.offsets[frontier]
            taken = np.minimum(self.offsets[frontier + 1] - starts, cap)
            firsts = np.cumsum(taken) - taken
            edges = self.rows[np.repeat(starts - firsts, taken) + np.arange(int(taken.sum()))]
            node = np.repeat(frontier, taken)
            subjects = self.subjects[edges]
            others = np.where(subjects == node, self.objects[edges], subjects)
            seen = visited[others]
            kept[edges[seen]] = True
            fresh = ~seen & self.entity[others]
            new = np.unique(others[fresh])
            cut = len(new) > max_nodes - reached
            new = new[: max(max_nodes - reached, 0)]
            visited[new] = True
            reached += len(new)
            kept[edges[fresh][visited[others[fresh]]]] = True
            frontier = new
            if cut:
                break
        return reached, int(np.count_nonzero(kept))


def median_seeds(graph: Graph, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` entities of the median degree of all entities (at least 1)."""
    degrees = graph.degrees()
    median = max(1, int(np.median(degrees[graph.entity])))
    candidates = np.flatnonzero((degrees == median) & graph.entity)
    return sorted(rng.choice(candidates, size=min(count, len(candidates)), replace=False).tolist())


def hubs(graph: Graph, count: int) -> list[int]:
    """The ``count`` entities with the most rows, most first."""
    degrees = np.where(graph.entity, graph.degrees(), -1)
    return np.argsort(-degrees, kind="stable")[:count].tolist()


def main(argv: Iterable[str]) -> None:
    """Write one R-MAT bundle: ``SCALE OUT.jsonl``."""
    scale, out = list(argv)
    graph = rmat(int(scale))
    write_bundle(graph, Path(out))
    print(f"{len(graph.ids):,} entities, {graph.edges:,} relationships -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
