"""Errors that carry what went wrong and what to do instead.

The MCP server turns a :class:`BfsqlError` into a tool error whose text is
``message`` followed by ``hint``; anything else is reported as a backend failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AccessDenied", "BackendFailure", "BfsqlError", "InvalidArgument", "StoreTimeout", "UnknownEntity", "clip",
    "plain_problem",
]


def clip(text: str, limit: int = 80) -> str:
    """Text shortened for an error message, so a hostile 100 kB id does not come back whole."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "list": "a list",
    "tuple": "a list",
    "dict": "an object",
}


def plain_problem(error: Mapping[str, Any], got: str) -> str:
    """One pydantic validation error in plain words: what the value must be, and what it was (``got``).

    The one translation of validation errors, for tool arguments, settings and backend options:
    no library jargon, no documentation links.
    """
    kind = str(error["type"])
    expected = _EXPECTED.get(kind.split("_")[0])
    if expected and kind.endswith(("_type", "_parsing")):
        return f"must be {expected}; got {got}."
    message = str(error["msg"]).replace("Input should be", "must be").replace("Value error, ", "").rstrip(".")
    return f"{message}." if kind == "value_error" else f"{message}; got {got}."


class BfsqlError(Exception):
    """A failure the caller can fix, with a hint saying how."""

    code = "error"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


class InvalidArgument(BfsqlError):
    """An argument is out of range or of the wrong shape."""

    code = "invalid_argument"


class UnknownEntity(BfsqlError):
    """One or more ids do not exist in the graph."""

    code = "unknown_entity"

    def __init__(self, ids: list[str], message: str | None = None) -> None:
        shown = ", ".join(repr(clip(i)) for i in ids[:10]) + (" …" if len(ids) > 10 else "")
        super().__init__(
            message or f"Unknown entity id(s): {shown}.",
            "Call search_entities with the entity's name to find its canonical id.",
        )
        self.ids = ids


class BackendFailure(BfsqlError):
    """The backend failed or timed out; the request can be retried."""

    code = "backend_failure"


class StoreTimeout(BackendFailure):
    """The store (or the wait for it) ran past its time limit on one call. A walk in the store that ends so is
    walked again with fewer hops, its counts then lower bounds (:func:`bfsql.engine.traverse.fewer_hops`)."""


class AccessDenied(BfsqlError):
    """The store will not answer this caller: no store identity is mapped for it, or the store refused what its
    identity asked (see :mod:`bfsql.identity`). Retrying does not help; the operator's mapping or grants must change."""

    code = "access_denied"
