"""Integer codes for the ids and predicates of a load's relationships, each text coded once.

A load holds its relationships as three int32 codes each (:mod:`bfsql.loading.relationship_buffer`).
Each process that reads part of a bundle (:mod:`bfsql.loading.parallel_reading`) codes its
part with its own :class:`IdCodes`; the loading process then adopts that part's texts into its
own codes (:meth:`IdCodes.adopt`), one lookup per distinct text instead of one per row.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["CodedRelationships", "IdCodes"]


class IdCodes:
    """The codes given so far: ``ids[text]`` for subjects and objects, ``predicates[text]`` for predicates."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.predicates: dict[str, int] = {}

    def code(self, triples: Sequence[tuple[str, str, str]], subjects: array[int], preds: array[int],
             objects: array[int]) -> None:
        """Append the codes of ``triples`` to the three arrays, coding new texts as they come."""
        ids, predicates = self.ids, self.predicates
        known, kind = ids.setdefault, predicates.setdefault
        subjects.extend([known(t[0], len(ids)) for t in triples])
        preds.extend([kind(t[1], len(predicates)) for t in triples])
        objects.extend([known(t[2], len(ids)) for t in triples])

    def adopt(self, ids: list[str], predicates: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """This object's codes of another's ``ids`` and ``predicates`` (each listed in its code order)."""
        known, kind = self.ids.setdefault, self.predicates.setdefault
        own_ids, own_predicates = self.ids, self.predicates
        id_codes = np.array([known(text, len(own_ids)) for text in ids], dtype=np.int32)
        predicate_codes = np.array([kind(text, len(own_predicates)) for text in predicates], dtype=np.int32)
        return id_codes, predicate_codes


@dataclass(frozen=True)
class CodedRelationships:
    """Consecutive relationships with nothing but their triple, as the loading process's codes (int32 arrays)."""

    subjects: np.ndarray
    preds: np.ndarray
    objects: np.ndarray

    def __len__(self) -> int:
        return len(self.subjects)

    @property
    def kind(self) -> Literal["relationship"]:
        """As a record's."""
        return "relationship"
