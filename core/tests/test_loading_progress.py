"""How a load's phases are shown (bfsql.loading.progress): live on a terminal, one line per phase elsewhere."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bfsql.loading import progress as progress_module
from bfsql.loading.progress import StderrProgress
from bfsql.loading.sqlite_loader import load_sqlite, reembed_store


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module, "time", fake)
    return fake


def test_without_a_terminal_one_line_per_finished_phase(clock: Clock) -> None:
    stream = io.StringIO()
    progress = StderrProgress(stream, live=False)
    progress.start("read", 2_000_000, "bytes")
    progress.advance(1_000_000)
    progress.step("1,000 records")
    assert stream.getvalue() == ""  # nothing until the phase ends
    progress.advance(1_000_000)
    clock.now += 2.5
    progress.start("index", 1, "entities")
    progress.advance(1)
    progress.start("embed", 10, "entities")
    progress.advance(4)
    clock.now += 61
    progress.start("commit")
    progress.finish()
    progress.finish()  # a second finish writes nothing
    assert stream.getvalue().splitlines() == [
        "read    2.0 MB, 1,000 records in 2.5 s",
        "index   1 entity in 0.0 s",
        "embed   4 of 10 entities in 1:01",  # cut short: says how far it got
        "commit  done in 0.0 s",
    ]


def test_on_a_terminal_the_line_is_redrawn_with_share_and_eta(clock: Clock) -> None:
    stream = io.StringIO()
    progress = StderrProgress(stream, live=True, interval=0.5)
    progress.start("embed", 1000, "entities")
    clock.now += 2
    progress.advance(250)
    clock.now += 0.1
    progress.advance(10)  # within the interval: not redrawn
    progress.finish()
    assert stream.getvalue().split("\r")[1:] == [
        "embed   0 of 1,000 entities  0%  0.0 s\x1b[K",
        "embed   250 of 1,000 entities  25%  2.0 s  ETA 6.0 s\x1b[K",
        "embed   260 of 1,000 entities in 2.1 s\x1b[K\n",
    ]


def test_a_load_reports_its_phases_in_order(tmp_path: Path) -> None:
    source = tmp_path / "g.jsonl"
    source.write_text('{"kind": "entity", "id": "A", "entity_type": "T", "name": "Alpha"}\n', encoding="utf-8")
    db = tmp_path / "s.sqlite"
    stream = io.StringIO()
    load_sqlite(db, [source], progress=StderrProgress(stream, live=False), embedder="hashing")
    load_sqlite(db, [source], progress=StderrProgress(stream, live=False), embedder=None)
    reembed_store(db, "hashing", progress=StderrProgress(stream, live=False))
    phases = [line.split()[0] for line in stream.getvalue().splitlines()]
    first = ["read", "index", "embed", "graph", "commit"]
    again_without_vectors = ["copy", "read", "index", "graph", "commit"]
    reembedded = ["copy", "index", "embed", "graph", "commit"]
    assert phases == [*first, *again_without_vectors, *reembedded]


@pytest.mark.parametrize(
    ("size", "shown"),
    [(1, "1 byte"), (47, "47 bytes"), (999, "999 bytes"), (1000, "1.0 kB"), (77_824, "77.8 kB"),
     (999_949, "999.9 kB"), (1_000_000, "1.0 MB"), (64_900_000, "64.9 MB"), (2_345_000_000, "2.3 GB")],
)
def test_a_size_is_shown_in_the_largest_unit_it_reaches(clock: Clock, size: int, shown: str) -> None:
    stream = io.StringIO()
    progress = StderrProgress(stream, live=False)
    progress.start("read", size, "bytes")
    progress.advance(size)
    progress.finish()
    assert stream.getvalue() == f"read    {shown} in 0.0 s\n"


def test_a_share_of_bytes_is_in_the_unit_of_its_total(clock: Clock) -> None:
    stream = io.StringIO()
    progress = StderrProgress(stream, live=True)
    progress.start("read", 47, "bytes")
    progress.finish()
    progress.start("copy", 77_824, "bytes")
    clock.now += 1
    progress.advance(12_345)
    assert stream.getvalue().split("\r")[1:] == [
        "read    0 of 47 bytes  0%  0.0 s\x1b[K",
        "read    0 of 47 bytes in 0.0 s\x1b[K\n",  # cut short: the share, in bytes
        "copy    0.0 of 77.8 kB  0%  0.0 s\x1b[K",
        "copy    12.3 of 77.8 kB  15%  1.0 s  ETA 5.3 s\x1b[K",
    ]
