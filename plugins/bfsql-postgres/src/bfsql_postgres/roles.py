"""Identity to the store: each caller's calls run as a PostgreSQL role, and the database applies its permissions.

With ``roles``, ``role_claim`` or ``default_role`` set (docs/backends/postgres.md, *A role per
caller*), every statement of a call made for a caller (:func:`bfsql.call_identity`) runs in a
read-only transaction that first sets the caller's role for that transaction only
(``set_config('role', $1, true)``, the parameterised form of ``SET LOCAL ROLE``): row-level
security policies, column grants and views of that role then decide what the call reads. The
role ends with the transaction, committed or rolled back (asyncpg rolls back any transaction a
connection still holds when it goes back to the pool, and drops a connection that cannot), so a
pooled connection never carries one caller's role into another's statement.

Which role (:meth:`RoleMap.role_for`), first match wins:

1. an entry ``PRINCIPAL=ROLE`` of ``roles`` naming the caller's principal (``user:alice``);
2. an entry ``VALUE=ROLE`` naming a value of the token's claim ``role_claim`` (a string, or
   each string of a list such as ``groups``, in order); an entry ``ROLE`` alone lets the claim
   name that role itself;
3. ``default_role``;
4. none: the call is refused (:class:`~bfsql.AccessDenied`), and the server records it as
   ``denied`` in its audit log and metrics.

A claim can only ever select a role an entry names: every role the server may take is known
at start, where :func:`check_roles` makes sure each exists, that the login role may ``SET
ROLE`` to it, and that it may read the tables the server reads. A call with no caller (start-up,
``/readyz``, stdio) runs as the login role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from bfsql import AccessDenied, CallIdentity, clip
from bfsql_postgres.errors import PostgresStoreError

if TYPE_CHECKING:
    import asyncpg

__all__ = ["MAX_ROLE_BYTES", "SET_ROLE_SQL", "RoleMap", "check_roles", "parse_entries", "role_name_problem"]

SET_ROLE_SQL = "SELECT set_config('role', $1, true)"
"""``SET LOCAL ROLE`` with the role as a parameter: PostgreSQL checks the name and the membership; nothing is
spliced into SQL text."""

MAX_ROLE_BYTES = 63
"""Longest role name PostgreSQL keeps (NAMEDATALEN - 1): a longer one would be cut to another name."""


def role_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a role name (None when it can)."""
    if not name:
        return "must not be empty"
    if name != name.strip():
        return "must not start or end with a space"
    if "\x00" in name:
        return "must not hold a NUL character"
    if len(name.encode()) > MAX_ROLE_BYTES:
        return f"must be at most {MAX_ROLE_BYTES} bytes long (PostgreSQL would cut it to another name)"
    return None


def parse_entries(entries: Iterable[str]) -> dict[str, str]:
    """``KEY=ROLE`` entries (``ROLE`` alone: ``ROLE=ROLE``) as a mapping; ValueError naming a bad one.

    The last ``=`` separates key and role, so a key may hold ``=`` (role names never do here).
    """
    mapping: dict[str, str] = {}
    for entry in entries:
        key, sep, role = entry.rpartition("=")
        if not sep:
            key = role
        key = key.strip()
        problem = role_name_problem(role)
        if problem is not None:
            raise ValueError(f"roles entry {entry!r}: the role {problem}; write KEY=ROLE or ROLE")
        if not key:
            raise ValueError(f"roles entry {entry!r} names no principal or claim value before '='")
        if mapping.get(key, role) != role:
            raise ValueError(f"roles entries map {key!r} to both {mapping[key]!r} and {role!r}")
        mapping[key] = role
    return mapping


def _claim_values(claims: Mapping[str, Any], claim: str | None) -> list[str]:
    if claim is None:
        return []
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


class RoleMap:
    """Which role each caller's calls run as (the module says how it is chosen)."""

    def __init__(self, entries: Mapping[str, str], claim: str | None = None, default: str | None = None) -> None:
        self.entries = dict(entries)
        self.claim = claim
        self.default = default

    @property
    def targets(self) -> frozenset[str]:
        """Every role a call may run as."""
        return frozenset(self.entries.values()) | ({self.default} if self.default else set())

    def role_for(self, identity: CallIdentity | None) -> str | None:
        """The role a call for ``identity`` runs as; None for the server's own calls (the login role).

        :class:`~bfsql.AccessDenied` for a caller no entry maps, without a default role.
        """
        if identity is None:
            return None
        role = self.entries.get(identity.principal)
        if role is not None:
            return role
        for value in _claim_values(identity.claims, self.claim):
            role = self.entries.get(value)
            if role is not None:
                return role
        if self.default is not None:
            return self.default
        via = f" nor a value of its token's claim {self.claim!r}" if self.claim else ""
        raise AccessDenied(
            f"This server maps no database role to {clip(identity.principal)}{via}, so it does not read the "
            "graph for it.",
            "Ask the operator to map your principal or group to a PostgreSQL role (the postgres backend's roles, "
            "role_claim and default_role options).",
        )


_ROLES_SQL = """
SELECT t.name, r.oid IS NOT NULL AS found,
       r.oid IS NOT NULL AND pg_has_role(current_user, r.oid, $2) AS settable,
       r.oid IS NOT NULL AND r.rolsuper AS super,
       r.oid IS NOT NULL AND r.rolbypassrls AS bypass,
       coalesce((SELECT array_agg(tbl ORDER BY tbl) FROM unnest($3::text[]) AS tbl
                 WHERE r.oid IS NOT NULL AND NOT has_table_privilege(r.oid, tbl, 'SELECT')), '{}') AS unreadable
FROM unnest($1::text[]) AS t(name) LEFT JOIN pg_roles AS r ON r.rolname = t.name
ORDER BY t.name
"""


async def check_roles(conn: asyncpg.Connection, roles: Iterable[str], tables: Iterable[str]) -> list[str]:
    """Check, as the login role, every role calls may run as; :class:`PostgresStoreError` naming what to fix.

    Each must exist, the login role must be allowed to ``SET ROLE`` to it (a member WITH SET, or a
    superuser) and it must be allowed to SELECT each of ``tables``. Returns warnings: a role that
    is a superuser or bypasses row-level security sees every row whatever the policies say.
    """
    privilege = "SET" if conn.get_server_version().major >= 16 else "MEMBER"
    rows = await conn.fetch(_ROLES_SQL, sorted(set(roles)), privilege, sorted(set(tables)))
    login = await conn.fetchval("SELECT current_user")
    problems, warnings = [], []
    for row in rows:
        name = row["name"]
        if not row["found"]:
            problems.append(f"role {name!r} does not exist")
        elif not row["settable"]:
            problems.append(f"the login role {login!r} may not SET ROLE to {name!r} (GRANT {name} TO {login} WITH "
                            "INHERIT FALSE, SET TRUE)")
        elif row["unreadable"]:
            problems.append(f"role {name!r} may not SELECT from {', '.join(row['unreadable'])}")
        if row["super"] or row["bypass"]:
            warnings.append(f"role {name!r} {'is a superuser' if row['super'] else 'has BYPASSRLS'}: row-level "
                            "security does not apply to it")
    if problems:
        raise PostgresStoreError(
            "The roles configured for callers cannot be used: " + "; ".join(problems) + ".",
            "Create the roles and grant them as docs/backends/postgres.md (A role per caller) shows, or fix the "
            "roles and default_role options.",
        )
    return warnings
