"""Validation of traversal arguments, with errors that say what to send instead."""

from __future__ import annotations

from bfsql.budgets import MAX_HOPS, MAX_SEEDS
from bfsql.errors import InvalidArgument

__all__ = ["check_hops", "check_limit", "check_min_mentions", "check_page", "check_seeds", "type_set"]


def check_seeds(seeds: list[str], minimum: int, tool: str) -> list[str]:
    """Seeds without duplicates, in the order given."""
    if not isinstance(seeds, list) or not all(isinstance(s, str) for s in seeds):
        raise InvalidArgument("seeds must be a list of entity id strings.", "Example: seeds=[\"HGNC:BRAF\"].")
    unique = list(dict.fromkeys(s for s in seeds))
    if any(not s.strip() for s in unique):
        raise InvalidArgument("seeds must not contain empty ids.", "Call search_entities to find canonical ids.")
    if len(unique) < minimum:
        need = "at least one seed" if minimum == 1 else f"at least {minimum} distinct seeds"
        hint = (
            "Call search_entities to find canonical ids."
            if minimum == 1
            else "For one seed, use bfs_query instead."
        )
        raise InvalidArgument(f"{tool} needs {need}; got {len(unique)}.", hint)
    if len(unique) > MAX_SEEDS:
        raise InvalidArgument(
            f"{tool} accepts at most {MAX_SEEDS} seeds; got {len(unique)}.", "Split the seeds over several calls."
        )
    return unique


def check_hops(value: int, name: str) -> int:
    """A hop count in 1..MAX_HOPS."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_HOPS:
        raise InvalidArgument(
            f"{name} must be an integer from 1 to {MAX_HOPS}; got {value!r}.",
            f"Use {name}=1 for a survey; 2-3 hops are typical.",
        )
    return value


def check_limit(limit: int | None) -> None:
    """limit >= 0 (0: the counts alone) or None."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be an integer >= 0 or omitted; got {limit!r}.",
                              "Example: limit=50; limit=0 answers the counts alone.")


def check_page(limit: int | None, offset: int) -> None:
    """limit >= 0 (or None) and offset >= 0."""
    check_limit(limit)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgument(f"offset must be an integer >= 0; got {offset!r}.", "Use offset=0 for the first page.")


def check_min_mentions(value: int | None) -> int | None:
    """min_mentions: None (no filter) or an integer >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"min_mentions must be an integer >= 0; got {value!r}.",
                              "Omit it to keep every node; min_mentions=2 drops nodes mentioned less than twice.")
    return value


def type_set(values: list[str] | None, name: str) -> frozenset[str] | None:
    """A filter list as a frozenset; None stays None (no filter)."""
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidArgument(f"{name} must be a list of strings.", "Call describe_schema for valid values.")
    return frozenset(values)
