"""An answer's one document, and the MCP result that carries it the same way to every client.

Clients hand a tool result to the model in different ways: Claude Code and VS Code give it
``structuredContent`` alone when there is one, others the text blocks, programs read the
structured content. So every answer is **one JSON object** holding everything the model
must know (the items, the page, the cuts, the unknown ids), sent as the structured content
and, the same document, as the single text block. Errors are text only (``isError``), which
every client shows.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bfsql.budgets import CHARS_PER_TOKEN
from bfsql.errors import clip
from bfsql.server.answers.fitting import AnswerBudget, answer_limit, compact_json, hold_texts
from bfsql.server.answers.kinds import RECORD_NOTES, kind_of

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["ERROR_CHARS", "document", "document_of", "error_result", "notes_in", "result_of", "was_cut"]


def _with_notes(data: dict[str, Any], where: tuple[str, ...], notes: list[dict[str, Any]]) -> dict[str, Any]:
    """``data`` with ``notes`` added first to the note list at path ``where`` (made if missing)."""
    if len(where) > 1:
        return {**data, where[0]: _with_notes(dict(data.get(where[0]) or {}), where[1:], notes)}
    return {**data, where[0]: [*notes, *data.get(where[0], [])]}


def document(answer: Any, budget: AnswerBudget, about: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    """The answer as its document within ``budget``, and the document's wire text.

    ``about`` is what the document says of the call besides the answer (which graph answered it,
    on a server of several), first; a flat record marks its keys with ``_`` as it does its notes.
    When even the smallest answer (one node, the counts, the notes) is more than the budget, it
    is given what it takes, and the document says so in a ``max_tokens_floor`` note, rather than
    report a budget the answer exceeds.
    """
    kind = kind_of(answer)
    if about:
        about = {f"_{key}": value for key, value in about.items()} if kind.notes_at == RECORD_NOTES else about
        budget = replace(budget, reserved=len(compact_json(about)))
    for _ in range(3):
        data = kind.fit(answer, budget)
        floor = budget.floor_note()
        if floor:
            data = _with_notes(data, kind.notes_at, [floor])
        if about:
            data = {**about, **data}
        data, text = hold_texts(data, budget)
        if len(text) <= answer_limit(budget.max_tokens):
            break
        budget = replace(budget, max_tokens=-(-len(text) // CHARS_PER_TOKEN) + 10,
                         asked=budget.asked or budget.max_tokens)
    return data, text


def result_of(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A tool result carrying the document ``data``: as structured content and as its one text block."""
    from mcp_types import CallToolResult, TextContent  # here: a call answered without MCP never loads the SDK

    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(data) if text is None else text)],
        structured_content=data,
    )


ERROR_CHARS = 2000
"""Longest error text: an error says what to do in a few sentences, whatever the arguments echoed."""


def error_result(text: str, max_chars: int = ERROR_CHARS) -> CallToolResult:
    """A tool error the model reads, clipped to ``max_chars`` (echoed input counts against the budget)."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=clip(text, max_chars))], is_error=True)


def document_of(result: CallToolResult) -> Any:
    """The document a result carries (its structured content, else its text read as JSON, else the text); for an
    error, its text."""
    if result.is_error:
        return "".join(getattr(block, "text", "") for block in result.content)
    if result.structured_content is not None:
        return result.structured_content
    text = "".join(getattr(block, "text", "") for block in result.content)
    try:
        return json.loads(text)
    except ValueError:
        return text


def notes_in(data: Any) -> list[dict[str, Any]]:
    """Every note of a document: its ``truncated``, a record's ``_truncated``, a path answer's metadata's."""
    if not isinstance(data, dict):
        return []
    path_notes = (data.get("metadata") or {}).get("truncated") if isinstance(data.get("metadata"), dict) else None
    notes = data.get("truncated") or data.get("_truncated") or path_notes or []
    return list(notes) if isinstance(notes, list) else []


def was_cut(data: Any) -> bool:
    """Whether a document says something was left out to fit the budget or a page."""
    page = data.get("page") if isinstance(data, dict) else None
    return bool(isinstance(page, dict) and page.get("next_offset") is not None) or any(
        n.get("reason") not in ("unknown_ids", "search_depth", "max_tokens_floor") for n in notes_in(data)
    )
