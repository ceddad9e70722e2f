"""Id maps: how the standard graph's ids are spelled in a store that rewrites them (e.g. as IRIs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeAlias

from bfsql.models import Edge
from bfsql.testing.standard_graph import ALL_IDS, Triple

__all__ = ["IdMap", "IdMapLike"]


class IdMap:
    """A two-way map between standard ids and a backend's ids.

    Built from a dict (ids it lacks map to themselves), a function, or None (identity).
    The reverse direction is computed over every id of the standard graph, so the
    forward map must be one-to-one on them.
    """

    def __init__(self, forward: Mapping[str, str] | Callable[[str], str] | None = None) -> None:
        if forward is None:
            self._forward: Callable[[str], str] = str
        elif callable(forward):
            self._forward = forward
        else:
            table = dict(forward)
            self._forward = lambda standard_id: table.get(standard_id, standard_id)
        self._reverse: dict[str, str] = {}
        for standard_id in ALL_IDS:
            backend_id = self._forward(standard_id)
            if backend_id in self._reverse:
                raise ValueError(f"id map is not one-to-one: {self._reverse[backend_id]!r} and {standard_id!r} "
                                 f"both map to {backend_id!r}")
            self._reverse[backend_id] = standard_id

    @classmethod
    def of(cls, value: IdMapLike) -> IdMap:
        """``value`` if it is already an IdMap, else a new one built from it."""
        return value if isinstance(value, IdMap) else cls(value)

    def to_backend(self, standard_id: str) -> str:
        """The backend's spelling of a standard id."""
        return self._forward(standard_id)

    def to_standard(self, backend_id: str) -> str:
        """The standard id of a backend id (unchanged when it is not one of the standard graph's)."""
        return self._reverse.get(backend_id, backend_id)

    def edge(self, triple: Triple) -> Edge:
        """A standard triple as an Edge in the backend's ids."""
        subject, predicate, obj = triple
        return Edge(subject=self.to_backend(subject), predicate=predicate, object=self.to_backend(obj))

    def triple(self, subject: str, predicate: str, obj: str) -> Triple:
        """A backend edge as a standard triple."""
        return (self.to_standard(subject), predicate, self.to_standard(obj))

    @property
    def preserves_order(self) -> bool:
        """Whether sorting backend ids sorts the standard ids the same way.

        Answers whose content depends on id order (pages, the edges a capped hub
        keeps) can only be compared with the hand-computed ones when this holds.
        """
        ordered = sorted(ALL_IDS)
        return [self.to_backend(i) for i in ordered] == sorted(self.to_backend(i) for i in ordered)


IdMapLike: TypeAlias = IdMap | Mapping[str, str] | Callable[[str], str] | None
"""What a test may give as an id map: a ready IdMap, a dict, a function, or None for identity."""
