"""What an interrupted load leaves beside a store is removed by the next load, and a running load's copy is not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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


def test_a_load_killed_with_sigkill_leaves_a_copy_the_next_load_removes(tmp_path: Path) -> None:
    db, source = tmp_path / "graph.sqlite", _bundle(tmp_path / "graph.jsonl", 300_000)
    load = subprocess.Popen([sys.executable, "-c", "import sys; from bfsql.loading.sqlite_loader import load_sqlite; "
                             "load_sqlite(sys.argv[1], [sys.argv[2]], embedder=None)", str(db), str(source)])
    deadline = time.monotonic() + 60
    while not _copies(db) and time.monotonic() < deadline and load.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)  # well into the load
    os.kill(load.pid, signal.SIGKILL)
    load.wait()
    left = _copies(db)
    assert left, "the killed load left no copy: it ended before the kill"
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
