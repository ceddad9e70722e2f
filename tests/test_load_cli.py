"""`bfsql load` as a user meets it: the installed command run as a subprocess.

Common mistakes end in one plain error line; bad rows are all reported with their
count; progress is one line per phase without a terminal and a live line on one;
SIGTERM leaves no stray file; size limits and bad data give `file:line: problem`;
Turtle ids are compacted by prefixes; the memory backend refuses big bundles.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(sys.executable).with_name("bfsql")
BFSQL = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "bfsql"]


def bfsql(*args: str | Path, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BFSQL, *map(str, args)], capture_output=True, text=True, timeout=300, env=env, **kwargs
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stray_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".loading" in p.name)


def assert_one_plain_error(result: subprocess.CompletedProcess[str], *says: str) -> str:
    """Exit status != 0, no traceback, and one `Error:` line that says each of ``says``."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    for text in says:
        assert text in errors[0], result.stderr
    return errors[0]


ROWS = [
    {"kind": "entity", "id": "A", "entity_type": "Gene", "name": "Alpha"},
    {"kind": "entity", "id": "B", "entity_type": "Gene", "name": "Beta"},
    {"kind": "relationship", "subject": "A", "predicate": "binds", "object": "B"},
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "store.sqlite"
    done = bfsql("load", "--db", db, "--embedder", "none", write_jsonl(tmp_path / "base.jsonl", ROWS))
    assert done.returncode == 0, done.stderr
    return db


# -- 16.2: common mistakes -------------------------------------------------------


@pytest.mark.parametrize(("name", "says"), [("graph.json", "--format jsonl"), ("graph.txt", "--format")])
def test_a_file_of_unknown_extension_names_the_format_option(
    store: Path, tmp_path: Path, name: str, says: str
) -> None:
    before = digest(store)
    source = write_jsonl(tmp_path / name, ROWS)
    assert_one_plain_error(bfsql("load", "--db", store, source), name, says)
    assert digest(store) == before
    assert bfsql("load", "--db", store, "--format", "jsonl", "--embedder", "none", source).returncode == 0


def test_turtle_without_rdflib_says_what_to_install(store: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "no-rdflib" / "rdflib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'rdflib'\")\n")
    paths = [str(shadow.parent), *filter(None, [os.environ.get("PYTHONPATH")])]  # the shadow first
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    source = tmp_path / "graph.ttl"
    source.write_text("@prefix ex: <http://example.org/> .\nex:a ex:b ex:c .\n", encoding="utf-8")
    before = digest(store)
    assert_one_plain_error(bfsql("load", "--db", store, source, env=env), "rdflib", "pip install './core[rdf]'")
    assert digest(store) == before
    assert stray_files(tmp_path) == []


def test_db_in_a_missing_directory(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "g.jsonl", ROWS)
    assert_one_plain_error(bfsql("load", "--db", tmp_path / "nowhere" / "g.sqlite", source), "does not exist")
    assert not (tmp_path / "nowhere").exists()


def test_db_pointing_at_a_jsonl_file(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "g.jsonl", ROWS)
    before = digest(source)
    line = assert_one_plain_error(bfsql("load", "--db", source, source), "not a SQLite database")
    assert "bfsql load --db" in line  # says how the command goes
    assert digest(source) == before
    assert stray_files(tmp_path) == []


def test_a_sqlite_store_given_as_a_source_is_named_as_a_store(store: Path, tmp_path: Path) -> None:
    served = tmp_path / "GO.sqlite"
    served.write_bytes(store.read_bytes())
    before = digest(store)
    line = assert_one_plain_error(bfsql("load", "--db", store, served), f"{served} is a bfsql store")
    assert f"bfsql serve --db {served}" in line and "--format" not in line
    forced = bfsql("load", "--db", store, "--format", "jsonl", served)  # told the format, it still says what it is
    assert_one_plain_error(forced, f"{served} is a bfsql store", f"bfsql serve --db {served}")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    unknown = digest(other)
    line = assert_one_plain_error(bfsql("load", "--db", store, other), f"{other} is a SQLite database but not a bfsql")
    assert "JSONL" in line and "--format" not in line
    assert digest(store) == before and digest(other) == unknown and digest(served) == before
    assert stray_files(tmp_path) == []


MISTAKEN_ROWS = [  # (row, what the error says, what it no longer says)
    ({"kind": "entity", "id": "B", "type": "Gene", "name": "Beta"},
     "unknown field 'type'; did you mean 'entity_type'?", "Extra inputs are not permitted"),
    ({"kind": "entity", "id": "B", "entityType": "Gene"},
     "unknown field 'entityType'; did you mean 'entity_type'?", "Field required"),
    ({"kind": "relationship", "source": "A", "target": "B", "predicate": "binds"},
     "unknown field 'source'; did you mean 'subject'?; unknown field 'target'; did you mean 'object'?",
     "Field required"),
    ({"kind": "entity", "id": "B", "entity_type": "Gene", "colour": "red"},
     "unknown field 'colour'; an entity has id, entity_type, name, synonyms, properties, status, confidence, source, "
     "canonical_url; put other fields in 'properties'", "Extra inputs"),
    ({"id": "B", "entity_type": "Gene"},
     "missing field 'kind': each row says which record it is, one of 'entity', 'relationship', 'evidence'; "
     "this row looks like an entity: add \"kind\": \"entity\"", "None"),
    ({"subject": "A", "predicate": "binds", "object": "B"},
     "missing field 'kind'", "got None"),
    ({"kind": "edge", "subject": "A", "predicate": "binds", "object": "B"},
     "unknown kind 'edge'; did you mean 'relationship'? (the kinds are 'entity', 'relationship', 'evidence')", "got"),
    ({"kind": 5, "subject": "A", "predicate": "binds", "object": "B"},
     "unknown kind 5; the kinds are 'entity', 'relationship', 'evidence'; this row looks like a relationship: "
     "write \"kind\": \"relationship\"", "got"),
]


def test_a_mistaken_field_or_kind_says_what_it_probably_means(store: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mistakes.jsonl", [ROWS[0], *(row for row, _, _ in MISTAKEN_ROWS)])
    before = digest(store)
    result = bfsql("load", "--db", store, source)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    reported = {}  # line number: what is said of it
    for line in result.stderr.splitlines():
        place, _, message = line.removeprefix("Error: ").partition(": ")
        if place.startswith(f"{source}:"):
            reported[int(place.rsplit(":", 1)[1])] = message
    for number, (_, says, not_says) in enumerate(MISTAKEN_ROWS, start=2):
        assert says in reported[number] and not_says not in reported[number], reported[number]
    assert f"{len(MISTAKEN_ROWS)} bad rows;" in result.stderr
    assert digest(store) == before


def test_every_bad_row_is_reported_with_the_count(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps(ROWS[0])]
    lines += [json.dumps({"kind": "entity", "id": f"X{i}"}) for i in range(30)]  # no entity_type
    lines.append('{"kind": "entity", "id": "Y", "entity_type": "T", "name": "open')
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = digest(store)
    result = bfsql("load", "--db", store, "--max-errors", "25", bad)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    reported = [line for line in result.stderr.splitlines() if f"{bad}:" in line]
    assert len(reported) == 25
    assert reported[0] == f"Error: {bad}:2: entity_type: Field required"
    assert "31 bad rows (the first 25 shown)" in result.stderr
    assert "nothing was loaded" in result.stderr
    assert digest(store) == before
    everything = bfsql("load", "--db", store, "--max-errors", "100", bad)
    assert f"{bad}:32: invalid JSON: Unterminated string starting at column 59" in everything.stderr
    assert "at at" not in everything.stderr


# -- 16.3: progress ---------------------------------------------------------------


def test_without_a_terminal_each_phase_is_one_line_on_stderr(store: Path, tmp_path: Path) -> None:
    rows = [{"kind": "entity", "id": f"n{i}", "entity_type": "T", "name": f"node {i}"} for i in range(3000)]
    source = write_jsonl(tmp_path / "many.jsonl", rows)
    result = bfsql("load", "--db", store, "--embedder", "hashing", source)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert [line.split()[0] for line in lines] == ["copy", "read", "index", "embed", "graph", "commit"]
    size = f"{source.stat().st_size / 1e3:.1f} kB"
    assert lines[1].startswith(f"read    {size}, 3,000 records in ")
    assert lines[2].startswith("index   3,002 entities in ")
    assert lines[3].startswith("embed   3,002 entities")  # the store had no vectors: all are embedded
    assert "\r" not in result.stderr
    assert json.loads(result.stdout)["entities"] == 3000


def on_a_terminal(*args: str | Path) -> str:
    """What ``bfsql ARGS`` writes to stderr when stderr is a (pseudo-)terminal; the command must succeed."""
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen([*BFSQL, *map(str, args)], stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        seen = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            seen += chunk
        assert process.wait(timeout=60) == 0
    finally:
        os.close(leader)
    return seen.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal (POSIX)")
def test_on_a_terminal_the_phase_line_is_live(tmp_path: Path) -> None:
    rows = [{"kind": "entity", "id": f"n{i}", "entity_type": "T", "name": f"node {i}"} for i in range(2000)]
    source = write_jsonl(tmp_path / "many.jsonl", rows)
    text = on_a_terminal("load", "--db", tmp_path / "t.sqlite", source)
    assert "\r" in text and "%" in text  # redrawn in place, with the share done
    size = f"{source.stat().st_size / 1e3:.1f} kB"
    assert f"read    0.0 of {size}  0%" in text and "index   0 of 2,000 entities  0%" in text
    assert "commit  done in" in text


# -- 28.5: sizes a reader can see ------------------------------------------------------


def test_a_tiny_file_shows_its_size_in_bytes(store: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "tiny.jsonl", ROWS[:1])
    size = source.stat().st_size
    assert size < 1000
    result = bfsql("load", "--db", store, "--embedder", "none", source)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"copy    {store.stat().st_size / 1e3:.1f} kB in "), lines
    assert lines[1].startswith(f"read    {size} bytes, 1 record in "), lines
    if sys.platform != "win32":  # and the live line on a terminal: the share in bytes too
        live = on_a_terminal("load", "--db", tmp_path / "fresh.sqlite", "--embedder", "none", source)
        assert f"read    0 of {size} bytes  0%" in live, live


# -- 16.4: SIGTERM ----------------------------------------------------------------


def start_and_terminate(db: Path, source: Path, after_phase: str | None) -> subprocess.CompletedProcess[str]:
    """Start a load and send it SIGTERM once its private copy exists, or once ``after_phase`` has ended."""
    process = subprocess.Popen(
        [*BFSQL, "load", "--db", str(db), str(source)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    err = ""
    if after_phase is None:
        deadline = time.monotonic() + 60
        while not list(db.parent.glob(f".{db.name}.*.loading")):
            assert process.poll() is None and time.monotonic() < deadline, "the load ended before SIGTERM"
            time.sleep(0.01)
    else:
        while not err.startswith(after_phase):
            err = process.stderr.readline()
            assert err, "the load ended before SIGTERM"
    process.send_signal(signal.SIGTERM)
    out, rest = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err + rest)


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or sys.platform == "win32", reason="needs POSIX signals")
def test_sigterm_mid_load_leaves_no_stray_file_and_the_store_untouched(store: Path, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for i in range(20_000):
        rows.append({"kind": "entity", "id": f"n{i}", "entity_type": "T", "name": f"node number {i}"})
        rows.append({"kind": "relationship", "subject": f"n{i}", "predicate": "next", "object": f"n{i + 1}"})
    source = write_jsonl(tmp_path / "big.jsonl", rows)
    before = digest(store)
    for db, after_phase in ((store, None), (store, "read"), (tmp_path / "fresh.sqlite", "write")):
        result = start_and_terminate(db, source, after_phase)
        assert result.returncode == 128 + signal.SIGTERM, result.stderr
        assert "stopped by SIGTERM; the store was left as it was" in result.stderr
        assert "Traceback" not in result.stderr
        assert stray_files(tmp_path) == []
    assert digest(store) == before
    assert not (tmp_path / "fresh.sqlite").exists()


# -- 19.6: size limits -------------------------------------------------------------

LIMITED = [  # (file, row, limit, what the error says)
    ("line.jsonl", {"kind": "entity", "id": "A", "entity_type": "T", "name": "n" * 3000}, "line_bytes=2K",
     "the line is longer than 2 KiB (the limit line_bytes)"),
    ("name.jsonl", {"kind": "entity", "id": "A", "entity_type": "T", "name": "n" * 300}, "name_chars=100",
     "name: 300 characters, more than the limit name_chars = 100"),
    ("list.jsonl", {"kind": "entity", "id": "A", "entity_type": "T", "synonyms": ["s"] * 50}, "list_items=10",
     "synonyms: 50 items, more than the limit list_items = 10"),
    ("id.jsonl", {"kind": "entity", "id": "A" * 50, "entity_type": "T"}, "id_chars=20",
     "id: 50 characters, more than the limit id_chars = 20"),
    ("text.jsonl", {"kind": "entity", "id": "A", "entity_type": "T", "properties": {"p": "v" * 50}}, "text_chars=20",
     "properties.p: 50 characters, more than the limit text_chars = 20"),
    ("depth.jsonl", {"kind": "entity", "id": "A", "entity_type": "T", "properties": {"a": {"b": {"c": [1]}}}},
     "depth=3", "properties.a.b.c: nested more than 3 levels deep"),
]


def test_rows_above_a_limit_are_refused(store: Path, tmp_path: Path) -> None:
    sources = [write_jsonl(tmp_path / name, [ROWS[0], row]) for name, row, _, _ in LIMITED]
    limits = [arg for _, _, limit, _ in LIMITED for arg in ("--limit", limit)]
    before = digest(store)
    result = bfsql("load", "--db", store, *limits, *sources)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    for source, (_, _, _, says) in zip(sources, LIMITED, strict=True):
        assert f"{source}:2: {says}" in result.stderr, result.stderr
    assert f"{len(LIMITED)} bad rows;" in result.stderr
    assert digest(store) == before
    assert bfsql("load", "--db", store, "--embedder", "none", *sources).returncode == 0  # within the defaults


def test_an_endless_line_fails_fast(tmp_path: Path) -> None:
    result = bfsql("load", "--db", tmp_path / "z.sqlite", "--format", "jsonl", "--limit", "line_bytes=64K", "/dev/zero")
    assert_one_plain_error(result, "/dev/zero:1: the line is longer than 64 KiB")
    assert not (tmp_path / "z.sqlite").exists() and stray_files(tmp_path) == []


def test_a_csv_row_running_over_the_limit_is_an_unclosed_quote(tmp_path: Path) -> None:
    source = tmp_path / "g.csv"
    source.write_text("A,r,B\nA,r,\"C\n" + "D,r,E\n" * 500, encoding="utf-8")
    result = bfsql("load", "--db", tmp_path / "g.sqlite", "--limit", "line_bytes=1K", source)
    assert_one_plain_error(result, f"{source}:2: the row that starts here is longer than 1 KiB", "closing quote")


def test_a_bad_limit_is_a_plain_error(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "g.jsonl", ROWS)
    assert_one_plain_error(bfsql("load", "--db", tmp_path / "g.sqlite", "--limit", "lines=5", source), "line_bytes")
    assert_one_plain_error(bfsql("load", "--db", tmp_path / "g.sqlite", "--limit", "depth=x", source), "depth")


# -- 19.8: bad data ----------------------------------------------------------------

BAD_DATA = [  # (file, content, line, what the error says)
    ("quote.csv", b'subject,predicate,object\nA,r,B\nA,r,"C\nD,r,E\nF,r,G\n', 3,
     "a quoted value opened on line 3 is never closed"),
    ("nul.csv", b"A\x00x,r,B\n", 1, "subject: contains a NUL character"),
    ("nul.jsonl", b'{"kind": "entity", "id": "A\\u0000", "entity_type": "T"}\n', 1, "id: contains a NUL"),
    ("nan.jsonl", b'{"kind": "entity", "id": "A", "entity_type": "T", "confidence": NaN}\n', 1,
     "invalid JSON: NaN is not a number JSON allows"),
    ("inf.jsonl", b'{"kind": "relationship", "subject": "A", "predicate": "r", "object": "B", '
     b'"confidence": -Infinity}\n', 1, "invalid JSON: -Infinity is not a number JSON allows"),
    ("inf.csv", b"subject,predicate,object,confidence\nA,r,B,inf\n", 2, "confidence: must be a finite number"),
    ("latin1.jsonl", b'{"kind": "entity", "id": "A", "entity_type": "T", "name": "caf\xe9"}\n', 1,
     "invalid UTF-8: byte 0xe9"),
    ("latin1.csv", b"A,r,caf\xe9\n", 1, "invalid UTF-8: byte 0xe9"),
    ("surrogate.jsonl", b'{"kind": "entity", "id": "A", "entity_type": "T", "synonyms": ["\\ud800"]}\n', 1,
     "synonyms[0]: contains a lone surrogate"),
    ("deep.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", 1, "nested too deeply"),
    ("ctrl.jsonl", b'{"kind": "entity", "id": "A\\nB", "entity_type": "T"}\n', 1,
     "id: must not contain control characters"),
]


def test_bad_data_is_a_clear_file_line_problem(store: Path, tmp_path: Path) -> None:
    sources = []
    for name, content, _, _ in BAD_DATA:
        sources.append(tmp_path / name)
        sources[-1].write_bytes(content)
    before = digest(store)
    result = bfsql("load", "--db", store, *sources)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    for source, (_, _, line, says) in zip(sources, BAD_DATA, strict=True):
        assert f"{source}:{line}: {says}" in result.stderr, result.stderr
    assert f"{len(BAD_DATA)} bad rows;" in result.stderr
    assert digest(store) == before
    assert stray_files(tmp_path) == []
    alone = bfsql("load", "--db", store, sources[0])  # each alone: one plain error line
    assert_one_plain_error(alone, f"{sources[0]}:3: a quoted value opened on line 3 is never closed")


# -- 16.10: compact RDF ids ----------------------------------------------------------

TURTLE = """\
@prefix lv2: <http://lv2plug.in/ns/lv2core#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix : <http://example.org/plugins/> .

lv2:Plugin a rdfs:Class ; rdfs:label "Plugin" .
:amp a lv2:Plugin ; rdfs:label "Simple amplifier" ; lv2:port :amp_in .
<http://other.org/x> rdfs:seeAlso :amp .
<http://doap.example/p> rdfs:seeAlso :amp .
"""


def entity_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT entity_id FROM entity ORDER BY entity_id")]


def test_turtle_ids_are_compacted_by_the_files_prefixes_and_given_ones(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "plugins.ttl"
    source.write_text(TURTLE, encoding="utf-8")
    db = tmp_path / "g.sqlite"
    done = bfsql("load", "--db", db, "--embedder", "none", "--prefix", "dp=http://doap.example/", source)
    assert done.returncode == 0, done.stderr
    assert entity_ids(db) == ["amp", "amp_in", "dp:p", "http://other.org/x", "lv2:Plugin"]
    found = bfsql("query", "--db", db, "describe_entity", "id=lv2:Plugin", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["canonical_url"] == "http://lv2plug.in/ns/lv2core#Plugin"
    edges = bfsql("query", "--db", db, "bfs_query", '{"seeds": ["amp"], "max_hops": 1}', "--json")
    assert {(e["subject"], e["object"]) for e in json.loads(edges.stdout)["edges"]} >= {("amp", "amp_in")}
    # A later N-Triples load (no prefixes of its own) writes the same ids.
    more = tmp_path / "more.nt"
    more.write_text('<http://lv2plug.in/ns/lv2core#Plugin> <http://example.org/plugins/rank> "1" .\n')
    assert bfsql("load", "--db", db, "--embedder", "none", more).returncode == 0
    assert entity_ids(db) == ["amp", "amp_in", "dp:p", "http://other.org/x", "lv2:Plugin"]
    # A prefix that would rename ids already written is refused.
    clash = bfsql("load", "--db", db, "--prefix", "lv=http://lv2plug.in/ns/lv2core#", more)
    assert_one_plain_error(clash, "already writes ids under http://lv2plug.in/ns/lv2core# as 'lv2:…'")


def test_no_file_prefixes_keeps_full_iris(tmp_path: Path) -> None:
    pytest.importorskip("rdflib", reason="rdflib is the optional extra rdf")
    source = tmp_path / "plugins.ttl"
    source.write_text(TURTLE, encoding="utf-8")
    db = tmp_path / "g.sqlite"
    assert bfsql("load", "--db", db, "--embedder", "none", "--no-file-prefixes", source).returncode == 0
    assert "http://lv2plug.in/ns/lv2core#Plugin" in entity_ids(db)
    assert_one_plain_error(bfsql("load", "--db", db, "--prefix", "http=http://x/", source), "IRI scheme")


# -- 16.9: the memory backend -------------------------------------------------------


def test_the_memory_backend_refuses_a_bundle_above_its_limit(tmp_path: Path) -> None:
    rows = [{"kind": "entity", "id": f"n{i}", "entity_type": "T", "properties": {"p": "x" * 100}} for i in range(8000)]
    bundle = write_jsonl(tmp_path / "big.jsonl", rows)  # about 1.3 MB
    refused = bfsql("query", "--backend", "memory", "--bundle", bundle, "--max-bundle-mb", "1",
                    "search_entities", "query=node")
    line = assert_one_plain_error(refused, "up to 1 MB (--max-bundle-mb)")
    assert f"bfsql load --db {tmp_path / 'big.sqlite'} {bundle}" in line
    served = bfsql("query", "--backend", "memory", "--bundle", bundle, "describe_entity", "id=n7")
    assert served.returncode == 0 and "n7" in served.stdout


def test_the_memory_backend_reports_a_bad_bundle_plainly(tmp_path: Path) -> None:
    bundle = tmp_path / "bad.jsonl"
    bundle.write_bytes(b'{"kind": "entity", "id": "A", "entity_type": "T", "name": "caf\xe9"}\n')
    refused = bfsql("query", "--backend", "memory", "--bundle", bundle, "search_entities", "query=x")
    assert_one_plain_error(refused, f"{bundle}:1: invalid UTF-8")
