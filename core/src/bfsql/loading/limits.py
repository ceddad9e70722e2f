"""Size limits of a load, and the checks every row goes through before it becomes a record.

A line is refused as soon as it is longer than ``line_bytes``, before it is read
whole, so one bad line (or an endless stream without line breaks) costs at most that
much memory. Within a line, ids, names, other texts, lists and nesting have limits
of their own, so that no loaded value can swamp the answers. Every string must be
valid Unicode without NUL characters, and every number finite. See the table in
docs/bundle-format.md.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bfsql.errors import clip
from bfsql.loading.errors import LoadError

__all__ = ["DEFAULT_LIMITS", "LoadLimits", "check_row", "describe_size", "may_break_limits", "text_may_break_limits"]

_KIB = 1024


@dataclass(frozen=True)
class LoadLimits:
    """The limits of one load; each field is also a ``--limit NAME=VALUE`` of ``bfsql load``."""

    line_bytes: int = 16 * _KIB * _KIB
    """Bytes of one line (one JSONL record, one CSV/TSV row, one line of an RDF file), line break included."""
    id_chars: int = 2048
    """Characters of an id, entity type or predicate."""
    name_chars: int = 4096
    """Characters of a name or one synonym."""
    text_chars: int = _KIB * _KIB
    """Characters of any other string: a text span, a document id, a property value or key."""
    list_items: int = 10_000
    """Items of one list or object: synonyms, source documents, a property's list, the properties themselves."""
    depth: int = 32
    """Levels of nesting of lists and objects inside a record."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise LoadError(f"limit {field.name} must be a positive whole number, got {value!r}")

    @classmethod
    def parse(cls, specs: Iterable[str], base: LoadLimits | None = None) -> LoadLimits:
        """``base`` (the defaults) with ``NAME=VALUE`` changes; VALUE may end in K, M or G (x1024)."""
        changes: dict[str, int] = {}
        names = [field.name for field in dataclasses.fields(cls)]
        for spec in specs:
            name, sep, raw = spec.partition("=")
            name = name.strip()
            if not sep or name not in names:
                raise LoadError(f"unknown limit {spec!r}; use NAME=VALUE with NAME one of {', '.join(names)}")
            changes[name] = _parse_size(raw.strip(), name)
        return dataclasses.replace(base or DEFAULT_LIMITS, **changes)


DEFAULT_LIMITS = LoadLimits()
"""The limits used unless a load says otherwise."""

_SUFFIXES = {"": 1, "K": _KIB, "M": _KIB**2, "G": _KIB**3}


def _parse_size(raw: str, name: str) -> int:
    match = re.fullmatch(r"([0-9][0-9_]*)\s*([KMG]?)i?B?", raw, re.IGNORECASE)
    if match is None:
        raise LoadError(f"limit {name}: {raw!r} is not a number (e.g. 5000, 64K, 32M, 1G)")
    return int(match[1]) * _SUFFIXES[match[2].upper()]


def describe_size(size: int) -> str:
    """``16 MiB`` for a byte count, exact when it is a whole number of KiB/MiB/GiB."""
    for unit, factor in (("GiB", _KIB**3), ("MiB", _KIB**2), ("KiB", _KIB)):
        if size >= factor and size % factor == 0:
            return f"{size // factor:,} {unit}"
    return f"{size:,} bytes"


_ID_FIELDS = frozenset({"id", "entity_type", "subject", "predicate", "object"})
_NAME_FIELDS = frozenset({"name", "synonyms"})
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_problem(text: str, limit: int, limit_name: str) -> str | None:
    if len(text) > limit:
        return f"{len(text):,} characters, more than the limit {limit_name} = {limit:,}"
    if "\x00" in text:
        return "contains a NUL character (\\u0000); remove it"
    if not text.isascii() and _SURROGATE.search(text):
        return "contains a lone surrogate (an unpaired \\ud800-\\udfff escape); text must be valid Unicode"
    return None


def _problem(value: Any, limits: LoadLimits, limit: int, limit_name: str, depth: int) -> tuple[str, str] | None:
    """``(path below value, problem)`` of the first bad part of ``value``; the path is built only on failure."""
    if isinstance(value, str):
        found = _text_problem(value, limit, limit_name)
        return None if found is None else ("", found)
    if isinstance(value, float):
        return None if math.isfinite(value) else ("", f"{value} is not a finite number")
    if not isinstance(value, list | dict):
        return None
    if depth >= limits.depth:
        return "", f"nested more than {limits.depth} levels deep (the limit depth)"
    if len(value) > limits.list_items:
        return "", f"{len(value):,} items, more than the limit list_items = {limits.list_items:,}"
    if isinstance(value, list):
        for index, item in enumerate(value):
            inner = _problem(item, limits, limit, limit_name, depth + 1)
            if inner is not None:
                return f"[{index}]{inner[0]}", inner[1]
        return None
    for key, item in value.items():
        found = _text_problem(key, limits.text_chars, "text_chars")
        if found is not None:
            return "", f"a key: {found}"
        inner = _problem(item, limits, limit, limit_name, depth + 1)
        if inner is not None:
            return f".{clip(key, 40)}{inner[0]}", inner[1]
    return None


def may_break_limits(line: str, limits: LoadLimits) -> bool:
    """Whether a JSON line could hold a value :func:`check_row` refuses; False lets a reader skip the check.

    Decoded strings are never longer than the line, a list of N items takes at least 2N - 1
    characters, nesting takes one bracket per level, NUL and lone surrogates can only come
    from ``\\u`` escapes (JSON refuses raw control characters), and a number overflows only
    with a 3-digit exponent or hundreds of digits.
    """
    shortest = min(limits.id_chars, limits.name_chars, limits.text_chars, 2 * limits.list_items - 1)
    return (
        len(line) > shortest
        or "\\u" in line
        or line.count("[") + line.count("{") > limits.depth
        or _HUGE_NUMBER.search(line) is not None
    )


def text_may_break_limits(texts: Iterable[str], limits: LoadLimits) -> bool:
    """Whether a row made of these decoded texts (a table row and its header, an OBO stanza) could hold a
    value :func:`check_row` refuses; False lets a reader skip the check.

    Decoded UTF-8 holds no lone surrogate, so beyond :func:`may_break_limits` only NUL characters
    (which a JSON line cannot hold raw) need a look.
    """
    text = "\t".join(texts)
    return "\x00" in text or may_break_limits(text, limits)


_HUGE_NUMBER = re.compile(r"[0-9](?:[eE][+]?[0-9]{3}|[0-9]{299})")
"""A 3-digit exponent or 300 digits (the common first digit factored out: 2.6x faster on HPO's lines)."""


def check_row(row: dict[str, Any], limits: LoadLimits) -> str | None:
    """What is wrong with a decoded row's sizes or characters, or None when nothing is.

    Ids, types and predicates are held to ``id_chars``, names and synonyms to
    ``name_chars``, every other string to ``text_chars``; lists and objects to
    ``list_items`` and ``depth``. NUL characters, lone surrogates and non-finite
    numbers are refused everywhere.
    """
    for key, value in row.items():
        if key in _ID_FIELDS:
            limit, limit_name = limits.id_chars, "id_chars"
        elif key in _NAME_FIELDS:
            limit, limit_name = limits.name_chars, "name_chars"
        else:
            limit, limit_name = limits.text_chars, "text_chars"
        found = _problem(value, limits, limit, limit_name, 0)
        if found is not None:
            return f"{key}{found[0]}: {found[1]}"
    return None
