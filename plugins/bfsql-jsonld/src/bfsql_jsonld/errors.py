"""Errors of the JSON-LD backend; each says what went wrong and what to do."""

from __future__ import annotations

from bfsql import BackendFailure, BfsqlError

__all__ = ["ApiError", "ContextError", "MalformedResponse", "NotFound"]


class ApiError(BackendFailure):
    """The API failed, timed out, refused the request or could not be reached."""


class MalformedResponse(BackendFailure):
    """The API answered, but not with a JSON(-LD) document of the expected shape."""

    code = "malformed_response"


class ContextError(BfsqlError):
    """A JSON-LD context cannot be used: invalid, or remote and not allowed to be fetched."""

    code = "context_error"


class NotFound(Exception):
    """The API answered 404 for ``url`` (turned into ``KeyError`` or ``{}`` by the backend)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url
