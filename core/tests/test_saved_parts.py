"""Arrays saved in parts (bfsql.saved_parts): an array cut into many parts reads back as the one saved whole."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bfsql import saved_parts
from bfsql.csr import DamagedIndex, load_index
from bfsql.loading.sqlite_loader import load_sqlite
from bfsql.saved_parts import read_parts
from bfsql.vectors import open_vectors

from conftest import random_bundle

BUNDLE = random_bundle(random.Random(11), 600)


def _store(path: Path, part_bytes: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store of :data:`BUNDLE` with hashing vectors, its arrays saved in parts of ``part_bytes``."""
    source = path.with_suffix(".jsonl")
    source.write_text("".join(json.dumps(row) + "\n" for row in BUNDLE))
    with monkeypatch.context() as patch:
        patch.setattr(saved_parts, "PART_BYTES", part_bytes)
        load_sqlite(path, [source], embedder="hashing")
    return path


def test_arrays_saved_in_many_parts_read_as_those_saved_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _store(tmp_path / "whole.sqlite", saved_parts.PART_BYTES, monkeypatch)
    cut = _store(tmp_path / "cut.sqlite", 256, monkeypatch)
    with sqlite3.connect(whole) as one, sqlite3.connect(cut) as many:
        assert many.execute("SELECT MAX(part) FROM csr_part").fetchone()[0] > 3
        assert many.execute("SELECT MAX(part) FROM vector_part").fetchone()[0] > 3
        assert one.execute("SELECT MAX(part) FROM csr_part").fetchone()[0] == 0
        a, b = load_index(one), load_index(many)
        assert a is not None and b is not None
        for name in ("type_code", "offsets", "rows", "subjects", "objects", "preds", "id_hashes", "hash_index"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert a.ids.many(range(len(a.ids))) == b.ids.many(range(len(b.ids)))
        assert a.names.many(range(len(a.names))) == b.names.many(range(len(b.names)))
        assert (a.types, a.predicates) == (b.types, b.predicates)
        v, w = open_vectors(one, 512), open_vectors(many, 512)
        assert np.array_equal(v.words, w.words) and v.types == w.types and np.array_equal(v.type_rows, w.type_rows)


def test_a_damaged_part_of_a_cut_array_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cut = _store(tmp_path / "cut.sqlite", 256, monkeypatch)
    with sqlite3.connect(cut) as conn:
        last = conn.execute("SELECT MAX(part) FROM csr_part WHERE name = 'rows'").fetchone()[0]
        conn.execute("UPDATE csr_part SET data = zeroblob(length(data)) WHERE name = 'rows' AND part = ?", (last,))
        with pytest.raises(DamagedIndex, match="checksum"):
            load_index(conn)
        conn.execute("UPDATE csr_part SET data = 'text' WHERE name = 'rows' AND part = 0")
        with pytest.raises(DamagedIndex, match="not a blob"):
            load_index(conn)


def test_only_the_tables_of_parts_are_named_in_statements(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "x.sqlite") as conn, pytest.raises(ValueError, match="no table of saved parts"):
        read_parts(conn, "entity; DROP TABLE entity")


def test_a_damaged_part_is_refused_whichever_connection_reads_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A store in a file has about half its arrays read on a second connection: a damaged part of any array, saved
    (so that the second connection sees it), is refused."""
    cut = _store(tmp_path / "cut.sqlite", 256, monkeypatch)
    with sqlite3.connect(cut) as conn:
        names = [row[0] for row in conn.execute("SELECT DISTINCT name FROM csr_part WHERE length(data) > 0")]
    assert len(names) > 8
    for name in names:
        with sqlite3.connect(cut) as conn:
            saved = conn.execute("SELECT data FROM csr_part WHERE name = ? AND part = 0", (name,)).fetchone()[0]
            conn.execute("UPDATE csr_part SET data = zeroblob(length(data)) WHERE name = ? AND part = 0", (name,))
        with sqlite3.connect(cut) as conn, pytest.raises(DamagedIndex, match="checksum"):
            load_index(conn)
        with sqlite3.connect(cut) as conn:
            conn.execute("UPDATE csr_part SET data = ? WHERE name = ? AND part = 0", (saved, name))
    with sqlite3.connect(cut) as conn:
        assert load_index(conn) is not None
