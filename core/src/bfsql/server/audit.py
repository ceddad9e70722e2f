"""The audit log (``--audit-log FILE``): one JSON line per tool call, refused ones included, rotated by size.

Each line holds ``time`` (UTC, ISO 8601), ``principal`` (``user:SUBJECT`` with OAuth,
``client:ADDRESS`` with a shared token or without a valid one, ``local`` over stdio), ``graph``,
``tool`` (for a refused call, as the caller sent them, clipped), ``arguments_sha256`` (of the
arguments as canonical JSON: the same call always hashes the same, and the log never holds the
caller's search texts or ids), ``outcome`` (:data:`~bfsql.server.pipeline.OUTCOMES`), ``ms``
and ``chars`` (the answer's size). The file is
rotated at ``--audit-log-max-mb`` into ``FILE.1`` … ``FILE.N`` (``--audit-log-backups``), by
:class:`logging.handlers.RotatingFileHandler`: one file per process, so each replica gets its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import logging.handlers
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bfsql.errors import BfsqlError
from bfsql.server.callers import current_caller
from bfsql.server.pipeline import CallRecord

__all__ = ["AuditLog", "arguments_hash"]

_ESCAPED = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), 0x2028, 0x2029)}
"""What ``json.dumps`` leaves raw that would end a line for ``str.splitlines`` (U+0085, U+2028, U+2029), or that a
terminal may obey (C1 controls): escaped, so that one call is one line to every reader, whatever a token's
subject or a caller's tool name holds. The characters occur only inside JSON strings, where the escape is valid."""


def arguments_hash(arguments: Any) -> str:
    """The SHA-256 of the arguments as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class AuditLog:
    """Writes the audit lines of one server to its own rotating file."""

    def __init__(self, path: str, max_mb: float, backups: int) -> None:
        if backups < 1:
            raise ValueError("an audit log keeps at least one rotated file (with none it is never rotated)")
        target = Path(path)
        if not target.parent.is_dir():
            raise BfsqlError(f"Cannot write the audit log {path}: the directory {target.parent} does not exist.",
                             "Create it first, or give another --audit-log.")
        try:
            self._handler = logging.handlers.RotatingFileHandler(
                target, maxBytes=max(1, int(max_mb * 1024 * 1024)), backupCount=backups, encoding="utf-8")
        except OSError as exc:
            raise BfsqlError(f"Cannot write the audit log {path}: {exc}.", "Give a file this user may write.") from None
        self._handler.setFormatter(logging.Formatter("%(message)s"))

    def record(self, record: CallRecord) -> None:
        """Append one call's line."""
        line = json.dumps({
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "principal": current_caller().principal,
            "graph": record.graph,
            "tool": record.tool,
            "arguments_sha256": arguments_hash(record.arguments),
            "outcome": record.outcome,
            "ms": round(record.seconds * 1000, 1),
            "chars": record.chars,
        }, ensure_ascii=False).translate(_ESCAPED)
        self._handler.emit(logging.LogRecord("bfsql.audit", logging.INFO, "", 0, line, None, None))

    def close(self) -> None:
        """Flush and close the file."""
        self._handler.close()
