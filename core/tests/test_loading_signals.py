"""Signals during a load (bfsql.loading.sqlite_loader): cleaned up like errors, deferred during the swap."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from bfsql.loading.errors import LoadInterrupted
from bfsql.loading.progress import LoadProgress
from bfsql.loading.sqlite_loader import load_sqlite

pytestmark = [pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals"),
              pytest.mark.usefixtures("default_signal_dispositions")]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SignalAt(LoadProgress):
    """Sends ``signum`` to this process when ``phase`` starts."""

    def __init__(self, phase: str, signum: int) -> None:
        self.phase, self.signum = phase, signum

    def start(self, phase: str, total: int | None = None, unit: str = "") -> None:
        if phase == self.phase:
            os.kill(os.getpid(), self.signum)


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    first = tmp_path / "first.jsonl"
    first.write_text('{"kind": "entity", "id": "A", "entity_type": "T"}\n', encoding="utf-8")
    second = tmp_path / "second.jsonl"
    second.write_text('{"kind": "entity", "id": "B", "entity_type": "T"}\n', encoding="utf-8")
    return first, second


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("phase", ["copy", "read", "index", "embed", "commit"])
def test_a_signal_before_the_swap_leaves_the_store_as_it_was(
    tmp_path: Path, sources: tuple[Path, Path], phase: str, signum: int
) -> None:
    db = tmp_path / "s.sqlite"
    load_sqlite(db, [sources[0]])
    before = digest(db)
    with pytest.raises(LoadInterrupted) as caught:
        load_sqlite(db, [sources[1]], progress=SignalAt(phase, signum), embedder="hashing")
    assert (caught.value.signum, caught.value.committed) == (signum, False)
    assert digest(db) == before
    assert not list(tmp_path.glob("*.loading"))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers are given back
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_during_the_swap_waits_for_it(
    tmp_path: Path, sources: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.sqlite"
    load_sqlite(db, [sources[0]])
    replace = os.replace

    def replace_after_a_signal(*args: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        replace(*args)

    monkeypatch.setattr(os, "replace", replace_after_a_signal)
    with pytest.raises(LoadInterrupted) as caught:
        load_sqlite(db, [sources[1]])
    assert caught.value.committed
    monkeypatch.undo()
    assert "B" in db.read_bytes().decode("latin-1")  # the new store is in place, whole
    assert not list(tmp_path.glob("*.loading"))


def test_an_applications_own_handler_is_left_alone(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    heard: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
    try:
        report = load_sqlite(tmp_path / "s.sqlite", [sources[0]], progress=SignalAt("read", signal.SIGTERM))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert heard == [signal.SIGTERM] and report.entities == 1
