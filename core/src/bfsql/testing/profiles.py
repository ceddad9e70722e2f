"""Client profiles: a tool result as each family of MCP client hands it to the model.

Clients differ in what of a ``CallToolResult`` the model sees:

* **structured-first** (Claude Code, VS Code): the structured content alone whenever there is
  one, serialised as JSON; the text blocks only when there is none (errors);
* **text blocks** (clients that read ``content``): every text block, one after the other;
* **program** (a script reading ``structuredContent``): the structured content, or the text
  when there is none.

A note the model must read (a page that goes on, a cut, unknown ids) is visible to a client
only if it is in what that client reads: :func:`seen_by` renders a result as a profile's
model reads it, and :func:`read_as` parses that rendering as the JSON document it must be.
The conformance suite runs its answer checks through every profile (:data:`CLIENT_PROFILES`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CLIENT_PROFILES", "ClientProfile", "read_as", "seen_by"]


def _texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


def _structured_first(result: Any) -> str:
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(_texts(result))


def _text_blocks(result: Any) -> str:
    return "\n".join(_texts(result))


def _program(result: Any) -> str:
    if result.structured_content is not None and not result.is_error:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(_texts(result))


@dataclass(frozen=True)
class ClientProfile:
    """A family of MCP clients, by what of a tool result it hands to the model."""

    name: str
    clients: str
    """Which clients behave so."""
    render: Callable[[Any], str]
    """The text the model reads of a ``CallToolResult``."""


CLIENT_PROFILES: tuple[ClientProfile, ...] = (
    ClientProfile("structured-first", "Claude Code, VS Code: structuredContent alone when present", _structured_first),
    ClientProfile("text-blocks", "clients that read the content's text blocks", _text_blocks),
    ClientProfile("program", "a program reading structuredContent", _program),
)
"""Every profile the suite checks answers through."""


def seen_by(profile: ClientProfile, result: Any) -> str:
    """What a client of ``profile`` hands its model of ``result``."""
    return profile.render(result)


def read_as(profile: ClientProfile, result: Any) -> Any:
    """The answer as a client of ``profile`` shows it, parsed: an answer must be one JSON document in every profile
    (an error is its text)."""
    seen = seen_by(profile, result)
    if result.is_error:
        return seen
    try:
        return json.loads(seen)
    except ValueError as exc:
        raise AssertionError(f"{profile.name}: the answer does not parse as one JSON document ({exc}): "
                             f"{seen[:300]!r}") from None
