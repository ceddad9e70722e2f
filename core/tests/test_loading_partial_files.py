"""What an interrupted load leaves beside a store is removed by the next load, and a running load's copy is not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from bfsql.loading.partial_files import partial_copy, remove_stale
from bfsql.loading.sqlite_loader import load_sqlite


def _bundle(path: Path, relationships: int) -> Path:
    rows = [{"kind": "entity", "id": f"E{i}", "entity_type": "Gene", "name": f"gene {i}"} for i in range(1000)]
    rows += [{"kind": "relationship", "subject": f"E{i % 1000}", "predicate": "binds", "object": f"E{(i * 7) % 1000}"}
             for i in range(relationships)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _copies(db: Path) -> list[Path]:
    return sorted(db.parent.glob(f".{db.name}.*.loading"))


_HELD_AT_INDEX = """
import sys, time
from bfsql.loading.progress import LoadProgress
from bfsql.loading.sqlite_loader import load_sqlite

class HeldAtIndex(LoadProgress):
    def start(self, phase, total=None, unit=""):
        if phase == "index":
            print("index", flush=True)
            time.sleep(60)

load_sqlite(sys.argv[1], [sys.argv[2]], progress=HeldAtIndex(), embedder=None)
"""
"""A load that says when it reaches its index phase and stays there: a kill then lands well into it, on a
machine of any speed."""


def test_a_load_killed_with_sigkill_leaves_a_copy_the_next_load_removes(tmp_path: Path) -> None:
    db, source = tmp_path / "graph.sqlite", _bundle(tmp_path / "graph.jsonl", 30_000)
    load = subprocess.Popen([sys.executable, "-c", _HELD_AT_INDEX, str(db), str(source)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert load.stdout is not None and load.stdout.readline().strip() == "index"
    finally:
        os.kill(load.pid, signal.SIGKILL)
        load.wait()
    left = _copies(db)
    assert left, "the killed load left no copy"
    load_sqlite(db, [_bundle(tmp_path / "small.jsonl", 10)], embedder=None)
    assert _copies(db) == [] and db.exists()


def test_a_running_loads_copy_is_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "graph.sqlite"
    running, stale = tmp_path / f".{db.name}.aaaa.loading", tmp_path / f".{db.name}.bbbb.loading"
    orphan_side = tmp_path / f".{db.name}.cccc.relationships.loading"
    stale.write_bytes(b"x" * 100)
    orphan_side.write_bytes(b"y")
    with partial_copy(running):
        holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                                   "from bfsql.loading.partial_files import partial_copy\n"
                                   "with partial_copy(Path(sys.argv[1])):\n    print('held', flush=True); "
                                   "time.sleep(30)", str(tmp_path / f".{db.name}.dddd.loading")],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            removed = remove_stale(db)
        finally:
            holder.kill()
            holder.wait()
    assert removed == [stale, orphan_side]
    assert running.exists() and (tmp_path / f".{db.name}.dddd.loading").exists()
