"""A big load's helper processes: a bundle read in parts, relationships written into a side store.

Both give what the loading process alone gives (rows, bad rows with their file and line, the
store), and stop with it (an error, a signal), leaving no process or file behind. The sizes
from which they start are lowered here so that small files use them.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bfsql.csr import build_index, load_index
from bfsql.loading import parallel_reading, relationship_writer, sqlite_loader
from bfsql.loading.bundle import read_bundle
from bfsql.loading.errors import BadRow, BadRows, LoadError, LoadInterrupted, RowErrors
from bfsql.loading.helper_process import HelperProcess
from bfsql.loading.id_codes import CodedRelationships, IdCodes
from bfsql.loading.limits import DEFAULT_LIMITS, LoadLimits
from bfsql.loading.plain import PlainRelationship, PlainRelationships
from bfsql.loading.progress import LoadProgress
from bfsql.loading.sqlite_loader import FROM_HELPER, load_sqlite

from conftest import random_bundle

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals")


def _with_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Helpers for any file: parts of 2 kB, three processors, a side writer for any number of rows."""
    monkeypatch.setattr(parallel_reading, "MIN_PART_BYTES", 2048)
    monkeypatch.setattr(parallel_reading, "MIN_BARE_SHARE", 0.0)
    monkeypatch.setattr(parallel_reading, "processors", lambda: 3)
    monkeypatch.setattr(sqlite_loader, "processors", lambda: 3)
    monkeypatch.setattr(sqlite_loader, "MIN_ROWS", 0)


def _alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """No helper process at all."""
    monkeypatch.setattr(parallel_reading, "processors", lambda: 1)
    monkeypatch.setattr(sqlite_loader, "processors", lambda: 1)


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_helpers(monkeypatch)


def _rows(rng: random.Random, count: int, bad: bool = True) -> list[str]:
    """Bundle lines: entities, bare and fuller relationships, evidence, and (with ``bad``) some bad rows."""
    ids = [f"E{i}" for i in range(60)] + ["é", "a b"]
    lines = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.15:
            row: dict[str, Any] = {"kind": "entity", "id": rng.choice(ids), "entity_type": rng.choice(["T", "U"])}
            if rng.random() < 0.7:
                row["name"] = f"name {i}"
            if rng.random() < 0.05:
                row["synonyms"] = [f"syn {i}"]
        elif roll < 0.2:
            row = {"kind": "evidence", "subject": rng.choice(ids), "predicate": "p", "object": rng.choice(ids),
                   "text_span": f"span {i}"}
        else:
            row = {"kind": "relationship", "subject": rng.choice(ids), "predicate": rng.choice(["p", "q"]),
                   "object": rng.choice(ids)}
            if rng.random() < 0.1:
                row["confidence"] = round(rng.random(), 2)
        if bad and rng.random() < 0.02:
            lines.append(rng.choice(['{"kind": "relationship", "subject": "A"}', "not json", '{"kind": "edge"}']))
        else:
            lines.append(json.dumps(row, separators=(",", ":") if rng.random() < 0.9 else (", ", ": ")))
    return lines


def _read(path: Path, limits: LoadLimits, parts: bool) -> tuple[list[tuple[int, Any]], list[str], int, str | None]:
    """Every row of ``path`` (bare relationships one by one, as triples), the bad rows and how reading stopped."""
    errors = RowErrors(5)
    codes = IdCodes()
    rows: list[tuple[int, Any]] = []
    stopped = None
    reading = (parallel_reading.read_in_parts(path, codes, limits=limits, errors=errors) if parts
               else read_bundle(path, limits=limits, errors=errors, plain=True))
    try:
        for line, row in reading:
            if isinstance(row, CodedRelationships):
                ids, predicates = list(codes.ids), list(codes.predicates)
                rows += [(None, (ids[s], predicates[p], ids[o]))
                         for s, p, o in zip(row.subjects.tolist(), row.preds.tolist(), row.objects.tolist(),
                                            strict=True)]
            elif isinstance(row, PlainRelationships):
                rows += [(None, tuple(triple)) for triple in row]
            elif isinstance(row, PlainRelationship):
                rows.append((None, tuple(row)))
            else:
                rows.append((line, row))
    except BadRow as exc:
        stopped = str(exc)
    return rows, [str(error) for error in errors.rows], errors.count, stopped


@pytest.mark.parametrize("seed", range(4))
def test_a_bundle_read_in_parts_gives_what_one_reader_gives(tmp_path: Path, helpers: None, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(_rows(rng, 400)) + "\n", encoding="utf-8")
    limits = LoadLimits()
    assert len(parallel_reading.cut_points(path, 3, limits.line_bytes)) == 4  # the file is read in three parts
    alone, parts = _read(path, limits, parts=False), _read(path, limits, parts=True)
    assert parts == alone
    assert alone[2] > 5  # bad rows in every part: the first five kept, in the file's order, all counted


def test_a_line_too_long_in_a_later_part_ends_the_reading_there(tmp_path: Path, helpers: None) -> None:
    rng = random.Random(7)
    lines = _rows(rng, 300, bad=False)
    lines[150] = json.dumps({"kind": "entity", "id": "X", "entity_type": "T", "name": "n" * 600})
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    limits = LoadLimits(line_bytes=512)
    points = parallel_reading.cut_points(path, 3, limits.line_bytes)
    assert len(points) == 4 and points[1] < sum(len(line) + 1 for line in lines[:150]) < points[2]
    alone, parts = _read(path, limits, parts=False), _read(path, limits, parts=True)
    assert parts == alone
    assert alone[3] is not None and alone[3].startswith(f"{path}:151: the line is longer than 512 bytes")


def test_no_cut_where_no_line_break_comes_within_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"x" * 5000 + b"\n" + b"y" * 10)
    assert parallel_reading.cut_points(path, 2, 1000) == [0, 5011]
    assert parallel_reading.cut_points(path, 2, 5000) == [0, 5001, 5011]


def _dump(db: Path) -> list[Any]:
    """Everything a store holds that a load writes, in a fixed order."""
    with sqlite3.connect(db) as conn:
        tables = [
            conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in (("relationship", "1, 2, 3"), ("entity", "1"), ("entity_label", "1"),
                                 ("meta", "1"), ("csr_part", "1, 2"))
        ]
        by_object = conn.execute(
            "SELECT object_id, subject_id, predicate FROM relationship INDEXED BY relationship_by_object"
        ).fetchall()
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        saved, built = load_index(conn), build_index(conn)
    assert saved is not None
    assert all(np.array_equal(getattr(saved, name), getattr(built, name)) for name in ("offsets", "rows", "objects"))
    return [*tables, by_object, schema]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(3))
def test_a_load_with_helpers_writes_the_store_a_load_alone_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    first = _write(tmp_path / "first.jsonl", random_bundle(rng, 600))
    second = _write(tmp_path / "second.jsonl", random_bundle(rng, 300))
    stores = []
    for way in (_alone, _with_helpers):
        with monkeypatch.context() as patch:
            way(patch)
            db = tmp_path / f"{way.__name__}.sqlite"
            load_sqlite(db, [first], embedder=None)  # an empty store: the side writer
            fresh = _dump(db)
            load_sqlite(db, [second], embedder=None)  # into a store with relationships: upserts
            stores.append((fresh, _dump(db)))
    assert stores[0] == stores[1]
    assert not list(tmp_path.glob(".*"))


def test_every_bad_row_of_every_part_is_reported_with_its_file_and_line(tmp_path: Path, helpers: None) -> None:
    lines = [json.dumps({"kind": "relationship", "subject": f"E{i}", "predicate": "p", "object": "E0"})
             for i in range(300)]
    for number in (3, 150, 290):
        lines[number - 1] = '{"kind": "relationship", "subject": "A"}'
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(parallel_reading.cut_points(path, 3, LoadLimits().line_bytes)) == 4
    with pytest.raises(BadRows) as caught:
        load_sqlite(tmp_path / "s.sqlite", [path], embedder=None)
    assert [(row.path, row.line) for row in caught.value.rows] == [(str(path), 3), (str(path), 150), (str(path), 290)]
    assert not (tmp_path / "s.sqlite").exists()


class SignalWhen(LoadProgress):
    """Sends ``signum`` to this process at the first bytes read, or when the phase or step ``phase`` starts."""

    def __init__(self, signum: int, phase: str | None = None) -> None:
        self.signum, self.phase, self.reading = signum, phase, False

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        self.reading = phase == "read"
        if phase == self.phase:
            os.kill(os.getpid(), self.signum)

    def step(self, text: str) -> None:
        if text == self.phase:
            os.kill(os.getpid(), self.signum)

    def advance(self, amount: int) -> None:
        if self.reading and self.phase is None:
            self.reading = False
            os.kill(os.getpid(), self.signum)


def _helpers_running() -> list[int]:
    """The helper processes this process started that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"helper_process" in command:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes through /proc")
@pytest.mark.parametrize("phase", [None, "write", "index", FROM_HELPER, "embed", "graph"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.usefixtures("default_signal_dispositions")
def test_a_signal_stops_the_helpers_and_leaves_the_store_as_it_was(
    tmp_path: Path, helpers: None, phase: str | None, signum: int
) -> None:
    db = tmp_path / "s.sqlite"
    load_sqlite(db, [_write(tmp_path / "a.jsonl", [{"kind": "entity", "id": "A", "entity_type": "T"}])])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    source = _write(tmp_path / "g.jsonl", random_bundle(random.Random(1), 400))
    with pytest.raises(LoadInterrupted):
        load_sqlite(db, [source], embedder="hashing", progress=SignalWhen(signum, phase))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not list(tmp_path.glob(".*loading"))
    assert _helpers_running() == []
    assert not [thread for thread in threading.enumerate() if thread.name == "bfsql-load-embed"]


def test_a_bundle_of_rich_rows_is_read_without_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel_reading, "MIN_PART_BYTES", 2048)
    monkeypatch.setattr(parallel_reading, "processors", lambda: 3)

    def no_helper(*args: object) -> None:
        raise AssertionError("a helper was started for rows it would hand back as objects")

    monkeypatch.setattr(parallel_reading, "HelperProcess", no_helper)
    rich = [{"kind": "relationship", "subject": f"E{i}", "predicate": "p", "object": "E0", "confidence": 0.5}
            for i in range(300)]
    bare = [{"kind": "relationship", "subject": f"E{i}", "predicate": "p", "object": "E0"} for i in range(300)]
    path = _write(tmp_path / "rich.jsonl", rich)
    assert len(_read(path, DEFAULT_LIMITS, parts=True)[0]) == 300
    monkeypatch.setattr(parallel_reading, "HelperProcess", HelperProcess)
    assert parallel_reading._bare_share(path, [0], DEFAULT_LIMITS) == 0.0
    assert parallel_reading._bare_share(_write(tmp_path / "bare.jsonl", bare), [0], DEFAULT_LIMITS) == 1.0


def test_a_failing_helper_is_a_load_error() -> None:
    assert HelperProcess(len, [1, 2, 3]).result() == 3
    sleeping = HelperProcess(time.sleep, 30)
    if Path("/proc/self/stat").exists():
        assert len(_helpers_running()) == 1
    sleeping.stop()
    assert _helpers_running() == []
    with pytest.raises(LoadError, match="a helper process of the load failed: ValueError: invalid literal"):
        HelperProcess(int, "x").result()


def test_the_side_writer_gives_up_when_the_loading_process_is_gone(tmp_path: Path) -> None:
    side = tmp_path / "side.sqlite"
    rows = (np.array([0]), np.array([0]), np.array([1]))
    table = "CREATE TABLE relationship (subject_id TEXT, predicate TEXT, object_id TEXT)"
    relationship_writer._write(side, table, ["A", "B"], ["p"], rows, os.getpid() + 1_000_000)
    assert not side.exists()


def test_a_script_without_a_main_guard_loads_with_helpers(tmp_path: Path) -> None:
    source = _write(tmp_path / "g.jsonl", random_bundle(random.Random(2), 300))
    script = tmp_path / "script.py"
    script.write_text(
        "from bfsql.loading import parallel_reading, sqlite_loader\n"
        "parallel_reading.MIN_PART_BYTES = 2048\n"
        "parallel_reading.processors = sqlite_loader.processors = lambda: 2\n"
        "sqlite_loader.MIN_ROWS = 0\n"
        f"print(sqlite_loader.load_sqlite({str(tmp_path / 's.sqlite')!r}, [{str(source)!r}], embedder=None)"
        ".relationships)\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert int(done.stdout) == 300
