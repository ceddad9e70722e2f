"""Identity to the store, set up on a real PostgreSQL: a login role, two caller roles that see different rows.

:func:`prepare_roles` takes a database holding the standard graph (loaded by ``bfsql postgres
load``) and adds, as its superuser:

* ``bfsql_login``: the role bfsql connects as, allowed to ``SET ROLE`` to the two caller roles
  (``WITH INHERIT FALSE, SET TRUE``: it does not get their privileges itself), seeing every row;
* ``genes_diseases`` and ``genes_drugs``: row-level security lets each see the genes and one
  other type of entity, the relationships whose both ends it sees and their evidence;
* ``outsider``: a role the login role may not take.

Roles belong to the whole server, so they are made once per server (``IF NOT EXISTS``).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import asyncpg

__all__ = ["LOGIN", "ROLE_TYPES", "login_dsn", "prepare_roles"]

LOGIN = "bfsql_login"
ROLE_TYPES: dict[str, tuple[str, ...]] = {"genes_diseases": ("Gene", "Disease"), "genes_drugs": ("Gene", "Drug")}
"""Each caller role and the entity types its policy lets it see."""

_ROLES = f"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{LOGIN}') THEN CREATE ROLE {LOGIN} LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'genes_diseases') THEN CREATE ROLE genes_diseases; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'genes_drugs') THEN CREATE ROLE genes_drugs; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'outsider') THEN CREATE ROLE outsider; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'no_grants') THEN CREATE ROLE no_grants; END IF;
END $$;
GRANT genes_diseases, genes_drugs, no_grants TO {LOGIN} WITH INHERIT FALSE, SET TRUE;
"""

_POLICIES = f"""
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {LOGIN}, genes_diseases, genes_drugs, outsider;
ALTER TABLE entity ENABLE ROW LEVEL SECURITY;
ALTER TABLE relationship ENABLE ROW LEVEL SECURITY;
ALTER TABLE bundle_evidence ENABLE ROW LEVEL SECURITY;
CREATE POLICY login_entity ON entity TO {LOGIN} USING (true);
CREATE POLICY login_relationship ON relationship TO {LOGIN} USING (true);
CREATE POLICY login_evidence ON bundle_evidence TO {LOGIN} USING (true);
CREATE POLICY diseases ON entity TO genes_diseases USING (entity_type IN ('Gene', 'Disease'));
CREATE POLICY drugs ON entity TO genes_drugs USING (entity_type IN ('Gene', 'Drug'));
CREATE POLICY both_ends ON relationship TO genes_diseases, genes_drugs
  USING (EXISTS (SELECT FROM entity s WHERE s.entity_id = subject_id)
         AND EXISTS (SELECT FROM entity o WHERE o.entity_id = object_id));
CREATE POLICY seen_edges ON bundle_evidence TO genes_diseases, genes_drugs
  USING (EXISTS (SELECT FROM relationship r
                 WHERE r.subject_id || ':' || r.predicate || ':' || r.object_id = relationship_key));
"""


def login_dsn(dsn: str) -> str:
    """``dsn`` as the login role (the embedded server trusts local connections)."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{LOGIN}@{parts.hostname}:{parts.port}"))


async def prepare_roles(dsn: str) -> str:
    """Add the roles and policies to the database of ``dsn`` (holding the standard graph); its DSN as the login role."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(_ROLES)
        await conn.execute(_POLICIES)
    finally:
        await conn.close()
    return login_dsn(dsn)
