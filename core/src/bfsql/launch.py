"""The ``bfsql`` command's entry point: a call answered by a resident process when one is running.

One ``bfsql query`` or ``bfsql path`` spends about half a second before its call runs (the interpreter,
asyncio, pydantic, the plugins) and more when it searches (numpy, the embedder's model). After such a
command, a resident process is left behind with all of that loaded. It answers the next ``query`` and
``path`` commands of the same setting over a Unix socket until it has been idle for ``BFSQL_RESIDENT``
seconds (:data:`RESIDENT_SECONDS` unless set; ``0`` turns it off). The same setting means the same
interpreter and flags, the same installed packages (the mtimes of ``sys.path``'s folders), the same
environment and the same working directory. Any difference gets a resident process of its own.

The resident process runs the very command line it is given, so its output and exit status are the
command's own. It opens the graph for each call as the command does, so a store loaded again is read
afresh. Whatever goes wrong on the way (no process yet, a stale socket, a process that died mid-call)
makes the command run in its own process, as without a resident one: a call is read-only, so running
it again is safe. The socket lives in a folder only its user may open (``$XDG_RUNTIME_DIR/bfsql``, else
``/tmp/bfsql-UID``), and the process answers no other user.

This module imports only the standard library, so that a command it forwards loads nothing else.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import sys

from bfsql.file_locks import held

TYPE_CHECKING = False  # typing's own costs an import this module is written to avoid; mypy reads the name alike
if TYPE_CHECKING:
    import click

__all__ = ["FORWARDED", "RESIDENT_SECONDS", "forward", "main", "resident_seconds", "serve_resident"]

RESIDENT_SECONDS = 300.0
"""Seconds a resident process waits for its next call before it exits, unless ``BFSQL_RESIDENT`` says."""

FORWARDED = frozenset({"query", "path"})
"""The commands a resident process answers: those that make one call and print its answer."""

START_WAIT = 3.0
"""Seconds a command waits for a resident process that is starting before it runs the call itself."""

_VOLATILE = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})
"""Environment variables the shell changes between commands and bfsql never reads: not part of a setting."""


def resident_seconds(env: dict[str, str]) -> float:
    """The idle seconds of a resident process that ``env`` asks for; 0 when it turns them off."""
    given = env.get("BFSQL_RESIDENT", "").strip()
    if not given:
        return RESIDENT_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        print(f"bfsql: BFSQL_RESIDENT={given!r} is not a number of seconds; no resident process is used "
              f"(give seconds of idleness, e.g. {RESIDENT_SECONDS:g}, or 0 to turn it off).", file=sys.stderr)
        return 0.0
    return seconds


def _forwarded(argv: list[str]) -> bool:
    """Whether ``bfsql ARGV`` is a call a resident process answers (not a request for help, whose lines fit
    the terminal's width)."""
    command = next((word for word in argv if not word.startswith("-")), None)
    return command in FORWARDED and "--help" not in argv


def _setting(env: dict[str, str]) -> str:
    """A digest of what a resident process's answers depend on besides the command line and the stores."""
    folders: list[tuple[str, int | None, int | None]] = []
    for entry in sys.path:
        try:
            folders.append((entry, os.stat(entry or ".").st_mtime_ns, _sources_changed(entry or ".")))
        except OSError:
            folders.append((entry, None, None))
    described = [sys.executable, sys.version, repr(sys.flags), os.getcwd(), folders,
                 sorted((name, value) for name, value in env.items() if name not in _VOLATILE)]
    return hashlib.sha256(repr(described).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _sources_changed(folder: str) -> int:
    """The last change to a source file of bfsql or its plugins in ``folder`` (a folder of ``sys.path``).

    An installed package changes its folder's mtime; bfsql's sources in a checkout installed for
    development change their own files only.
    """
    latest = 0
    with os.scandir(folder) as entries:
        packages = [entry.path for entry in entries if (entry.name == "bfsql" or entry.name.startswith("bfsql_"))
                    and os.path.isfile(os.path.join(entry.path, "__init__.py"))]
    for package in packages:
        for root, dirs, files in os.walk(package):
            dirs[:] = [name for name in dirs if name != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    latest = max(latest, os.stat(os.path.join(root, name)).st_mtime_ns)
    return latest


_SOCKET_PATH_BYTES = 100
"""The longest socket path used: Linux takes 107 bytes, macOS 103."""


def _own_folder(env: dict[str, str]) -> str | None:
    """The folder of this user's resident sockets, made if need be; None when it is not this user's alone.

    ``$XDG_RUNTIME_DIR/bfsql``, unless that path is too long for a socket in it; else ``/tmp/bfsql-UID``.
    """
    folder = os.path.join(env.get("XDG_RUNTIME_DIR", ""), "bfsql")
    if not (os.path.isabs(folder) and len(os.fsencode(folder)) + 38 <= _SOCKET_PATH_BYTES  # "/", 32 digits, ".sock"
            and os.path.isdir(os.path.dirname(folder))):
        folder = f"/tmp/bfsql-{os.getuid()}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def _paths(env: dict[str, str]) -> tuple[str, str] | None:
    """The socket and lock file of the resident process of this setting, or None where none can be used."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    folder = _own_folder(env)
    if folder is None:
        return None
    name = os.path.join(folder, _setting(env))
    return name + ".sock", name + ".lock"


def _log_of(lock: str) -> str:
    """The file a resident process writes its errors to, beside its lock."""
    return lock.removesuffix(".lock") + ".log"


def _connect(path: str, lock: str) -> socket.socket | None:
    """A connection to the resident process at ``path``, waiting for one that is starting; None if none runs."""
    import time

    deadline = None
    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
            return client
        except OSError:
            client.close()
        if deadline is None:
            if not held(lock):
                return None
            deadline = time.monotonic() + START_WAIT
        elif time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def forward(argv: list[str], paths: tuple[str, str]) -> int | None:
    """Have the resident process at ``paths`` (socket, lock) run ``bfsql ARGV``, print its output and give its
    exit status.

    None when none is running (or it failed on the way): the caller then runs the command itself.
    """
    client = _connect(*paths)
    if client is None:
        return None
    with client:
        try:
            client.sendall(b"\0".join(map(os.fsencode, argv)))
            client.shutdown(socket.SHUT_WR)
            code, out, err = _decode_reply(_read_all(client))
        except (OSError, ValueError):
            return None
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return code


def _encode_reply(code: int, out: str, err: str) -> bytes:
    """A reply: the exit status and the output's length in bytes, each ended by NUL, then output and error output."""
    out_bytes = out.encode("utf-8", "surrogateescape")
    return b"%d\0%d\0" % (code, len(out_bytes)) + out_bytes + err.encode("utf-8", "surrogateescape")


def _decode_reply(reply: bytes) -> tuple[int, str, str]:
    """The exit status, output and error output of a reply (:func:`_encode_reply`); ValueError if it is not one."""
    code, length, rest = reply.split(b"\0", 2)
    size = int(length)
    if size > len(rest):
        raise ValueError("a reply cut short")
    return int(code), rest[:size].decode("utf-8", "surrogateescape"), rest[size:].decode("utf-8", "surrogateescape")


def _read_all(conn: socket.socket) -> bytes:
    parts = []
    while chunk := conn.recv(1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def _leave_resident(argv: list[str], env: dict[str, str], paths: tuple[str, str], seconds: float) -> None:
    """Start the resident process at ``paths`` (socket, lock), idle for at most ``seconds``, unless one runs.

    It warms up with ``argv`` (the command just run), so that the next call like it finds everything loaded.
    """
    if held(paths[1]):
        return
    import subprocess

    with open(_log_of(paths[1]), "w") as log:
        subprocess.Popen(
            [sys.executable, "-m", "bfsql.launch", *paths, repr(seconds), *argv],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            start_new_session=True, close_fds=True,
        )


def serve_resident(path: str, lock: str, seconds: float, warm_up: list[str]) -> None:
    """Answer ``bfsql`` command lines on the socket ``path`` until ``seconds`` pass without one.

    Holds ``lock`` while it runs, so that one process serves a setting; a second one exits at once. Runs
    the command line ``warm_up`` first, its output dropped, so that what such a call loads is loaded.
    """
    import fcntl

    handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    from bfsql.cli import build_cli

    group = build_cli()
    if warm_up and not _run(group, warm_up)[3]:
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        if os.path.lexists(path):
            os.unlink(path)  # a socket left by a process that was killed: the lock says none serves it
        server.bind(path)
        os.chmod(path, 0o600)
        server.listen(16)
        server.settimeout(seconds)
        try:
            while True:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    return
                with conn:
                    if not _answer(group, conn):
                        return
        finally:
            os.unlink(path)
            os.close(handle)


def _answer(group: click.Group, conn: socket.socket) -> bool:
    """Run the command line read from ``conn`` and send back its output; False when the process should exit."""
    conn.settimeout(30)
    uid = _peer_uid(conn)
    if uid is not None and uid != os.getuid():
        return True
    try:
        argv = [os.fsdecode(word) for word in _read_all(conn).split(b"\0")]  # the command line, NUL between words
    except OSError:
        return True
    code, out, err, sound = _run(group, argv)
    conn.settimeout(None)
    try:
        conn.sendall(_encode_reply(code, out, err))
    except OSError:
        pass  # the command was stopped while it waited
    return sound


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end of ``conn`` (Linux), or None where the system does not say."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    import struct

    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return int(uid)


def _run(group: click.Group, argv: list[str]) -> tuple[int, str, str, bool]:
    """Run ``bfsql ARGV`` in this process: its exit status, output, error output and whether all went as designed."""
    import contextlib
    import io
    import logging
    import traceback

    for handler in logging.root.handlers[:]:
        logging.root.removeHandler(handler)  # each call configures logging for its own error output
    out, err = io.StringIO(), io.StringIO()
    code, sound = 0, True
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            group.main(args=argv, prog_name="bfsql")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
        except BaseException:  # a fault of bfsql's: say it as the command would, then let a fresh process serve
            traceback.print_exc()
            code, sound = 1, False
    return code, out.getvalue(), err.getvalue(), sound


def main() -> None:
    """Entry point of the ``bfsql`` script: forward a call to a resident process, or run the command here."""
    argv, env = sys.argv[1:], dict(os.environ)
    seconds = resident_seconds(env) if _forwarded(argv) else 0.0
    paths = _paths(env) if seconds else None
    code = forward(argv, paths) if paths else None
    if code is not None:
        sys.exit(code)
    from bfsql.cli import main as run_command

    try:
        run_command()
    except SystemExit:  # how click ends every command, an answer or an error
        if paths:
            _leave_resident(argv, env, paths, seconds)
        raise


if __name__ == "__main__":
    serve_resident(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:])
