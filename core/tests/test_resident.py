"""A ``bfsql query`` answered by the resident process the command before it left behind (bfsql.launch).

Each test runs the real ``bfsql`` command as a subprocess, with resident processes turned on and their
sockets in a runtime folder of its own, and stops whatever resident process it started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bfsql_testsupport.residents import residents_of

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="resident processes need Unix sockets")

GRAPH = [
    {"kind": "entity", "id": "G:A", "entity_type": "Gene", "name": "Alpha"},
    {"kind": "entity", "id": "G:B", "entity_type": "Gene", "name": "Beta"},
    {"kind": "entity", "id": "G:C", "entity_type": "Family", "name": "Gamma family"},
    {"kind": "relationship", "subject": "G:A", "predicate": "isa", "object": "G:C"},
    {"kind": "relationship", "subject": "G:B", "predicate": "isa", "object": "G:C"},
]


def _load(db: Path, records: list[dict[str, object]]) -> None:
    from bfsql.loading import load_sqlite

    bundle = db.with_suffix(".jsonl")
    bundle.write_text("".join(json.dumps(record) + "\n" for record in records))
    if db.exists():
        db.unlink()
    load_sqlite(db, [bundle], embedder=None)


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Path]]:
    """The environment of a command with resident processes on (idle 60 s), its runtime folder and a store."""
    runtime = Path(tempfile.mkdtemp(prefix="bfsql-run-"))  # short: a socket's path takes 107 bytes at most
    db = tmp_path / "graph.db"
    _load(db, GRAPH)
    env = {**os.environ, "BFSQL_RESIDENT": "60", "XDG_RUNTIME_DIR": str(runtime)}
    yield env, runtime, db
    _stop_residents(runtime)
    shutil.rmtree(runtime, ignore_errors=True)


def _stop_residents(runtime: Path) -> None:
    for pid in residents_of(runtime):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _bfsql(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bfsql", *args], capture_output=True, text=True, timeout=180,
                          env=env, stdin=subprocess.DEVNULL)


def _socket_of(runtime: Path, timeout: float = 60) -> Path:
    """The socket of the one resident process started in ``runtime``, once it answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sockets = list((runtime / "bfsql").glob("*.sock"))
        if sockets:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(str(sockets[0]))
                    return sockets[0]
                except OSError:
                    pass
        time.sleep(0.1)
    raise AssertionError(f"no resident process answered in {runtime} within {timeout} s")


def _ask(path: Path, argv: list[str]) -> dict[str, object]:
    """The resident process's answer to ``bfsql ARGV``, asked over its socket as the command asks it: the words
    NUL between them; the reply is the exit status and the output's length, each ended by NUL, then the output
    and the error output."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        conn.sendall("\0".join(argv).encode())
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    code, length, rest = reply.split(b"\0", 2)
    return {"code": int(code), "stdout": rest[: int(length)].decode(), "stderr": rest[int(length) :].decode()}


def test_the_resident_process_answers_as_the_command_does_and_reads_a_store_loaded_again(setting):
    env, runtime, db = setting
    call = ["query", "describe_entity", "id=G:A", "--db", str(db), "--json"]
    first = _bfsql(env, *call)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["id"] == "G:A"
    path = _socket_of(runtime)
    assert path.stat().st_mode & 0o777 == 0o600 and (runtime / "bfsql").stat().st_mode & 0o777 == 0o700

    again = _bfsql(env, *call)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, first.stderr)
    assert _ask(path, call) == {"code": 0, "stdout": first.stdout, "stderr": ""}
    assert len(residents_of(runtime)) == 1, "one resident process serves one setting"

    unknown = ["query", "describe_entity", "id=G:NOPE", "--db", str(db)]
    alone = _bfsql({**env, "BFSQL_RESIDENT": "0"}, *unknown)
    assert alone.returncode == 1 and "G:NOPE" in alone.stderr
    assert _ask(path, unknown) == {"code": 1, "stdout": alone.stdout, "stderr": alone.stderr}

    _load(db, [*GRAPH, {"kind": "entity", "id": "G:D", "entity_type": "Gene", "name": "Delta"}])
    added = _ask(path, ["query", "describe_entity", "id=G:D", "--db", str(db), "--json"])
    assert added["code"] == 0 and json.loads(str(added["stdout"]))["name"] == "Delta"


def test_another_setting_gets_a_resident_process_of_its_own(setting):
    env, runtime, db = setting
    call = ["query", "describe_entity", "id=G:B", "--db", str(db)]
    assert _bfsql(env, *call).returncode == 0
    _socket_of(runtime)
    other = {**env, "BFSQL_MAX_TOKENS": "3000"}
    assert _bfsql(other, *call).returncode == 0
    deadline = time.monotonic() + 60
    while len(list((runtime / "bfsql").glob("*.sock"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list((runtime / "bfsql").glob("*.sock"))) == 2


def test_an_idle_resident_process_exits_and_removes_its_socket(setting):
    env, runtime, db = setting
    env["BFSQL_RESIDENT"] = "1"
    assert _bfsql(env, "query", "describe_entity", "id=G:A", "--db", str(db)).returncode == 0
    path = _socket_of(runtime)
    deadline = time.monotonic() + 30
    while (path.exists() or residents_of(runtime)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not path.exists() and residents_of(runtime) == []


def test_a_socket_left_by_a_killed_process_is_not_waited_for(setting):
    env, runtime, db = setting
    call = ["query", "describe_entity", "id=G:A", "--db", str(db), "--json"]
    assert _bfsql(env, *call).returncode == 0
    path = _socket_of(runtime)
    for pid in residents_of(runtime):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while residents_of(runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "a killed process leaves its socket"
    started = time.monotonic()
    done = _bfsql(env, *call)
    assert done.returncode == 0 and json.loads(done.stdout)["id"] == "G:A"
    assert time.monotonic() - started < 60
    assert _ask(_socket_of(runtime), call)["code"] == 0, "the next resident process took the socket over"


def test_no_resident_process_where_the_folder_is_not_private_or_the_setting_is_off(setting, tmp_path):
    env, runtime, db = setting
    call = ["query", "describe_entity", "id=G:A", "--db", str(db)]
    (runtime / "bfsql").mkdir(mode=0o755)
    os.chmod(runtime / "bfsql", 0o755)
    assert _bfsql(env, *call).returncode == 0
    off = runtime / "off"
    off.mkdir(mode=0o700)
    assert _bfsql({**env, "BFSQL_RESIDENT": "0", "XDG_RUNTIME_DIR": str(off)}, *call).returncode == 0
    wrong = _bfsql({**env, "BFSQL_RESIDENT": "soon", "XDG_RUNTIME_DIR": str(off)}, *call)
    assert wrong.returncode == 0 and wrong.stderr.count("BFSQL_RESIDENT='soon' is not a number of seconds") == 1
    time.sleep(2)
    assert list((runtime / "bfsql").iterdir()) == [] and not (off / "bfsql").exists()
    assert residents_of(runtime) == [] and residents_of(off) == []
