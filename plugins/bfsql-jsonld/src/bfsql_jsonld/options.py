"""How the reference server (``bfsql jsonld-serve``) pages, batches, names its vocabulary and authenticates.

Apart from :mod:`bfsql_jsonld.server` so that adding the command to ``bfsql`` does not load the
server (aiohttp's web application).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_VOCAB", "ServerOptions"]

DEFAULT_VOCAB = "urn:bfsql:vocab:"
"""The ``@vocab`` IRI a server names its types, predicates and metadata keys under unless told otherwise."""


@dataclass(frozen=True)
class ServerOptions:
    """How the reference server pages, batches, names its vocabulary and authenticates."""

    page_size: int = 500
    """Relations per page (a client may ask for fewer with ``page_size``)."""
    max_batch: int = 500
    """Ids (or relations) one batch request may hold."""
    batch_rows: int = 5000
    """Relations one batch answer may hold; the rest follows its next link."""
    batch_bytes: int = 2**20
    """Bytes one batch answer's relations may take (about: the envelope adds its context)."""
    max_heavy_requests: int = 4
    """Batch requests computed at once; the others wait their turn."""
    vocab: str = DEFAULT_VOCAB
    """The ``@vocab`` IRI that types, predicates and metadata keys are relative to."""
    auth_token: str | None = None
    """Bearer token every request must carry, if set."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names accepted besides the bound address's own (``bfsql serve``'s rules, against DNS rebinding)."""
