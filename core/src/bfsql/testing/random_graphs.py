"""Random graphs for checks that compare two ways of answering the same question.

Each graph has what trips traversals up: hubs, self-loops, edges both ways between two
entities, dangling ends (ids that are no entity), merged entities (invisible with their edges),
several types and predicates, and ids whose code-point order differs from their byte length.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bfsql.loading.bundle import Record
from bfsql.loading.records import EntityRecord, RelationshipRecord

__all__ = ["TYPES", "random_records", "respelled"]

TYPES = ("Gene", "Disease", "Drug")
PREDICATES = ("binds", "causes", "treats", "isa")
_SPELLINGS = ("n:{}", "N{}", "ñ:{}", "z-{}", "a/{}")


def random_records(rng: random.Random, entities: int = 30, edges: int = 90) -> list[Record]:
    """A random graph of about ``entities`` entities and ``edges`` relationships (see the module)."""
    ids = sorted({rng.choice(_SPELLINGS).format(rng.randrange(10 * entities)) for _ in range(entities)})
    merged = set(rng.sample(ids, k=max(1, len(ids) // 10)))
    records: list[Record] = [
        EntityRecord(id=entity_id, entity_type=rng.choice(TYPES), name=f"entity {entity_id}" if rng.random() < 0.8
                     else None, status="merged" if entity_id in merged else None)
        for entity_id in ids
    ]
    hubs = ids[:3]
    triples: set[tuple[str, str, str]] = set()
    for _ in range(edges):
        subject = rng.choice(hubs) if rng.random() < 0.3 else rng.choice(ids)
        obj = rng.choice(ids) if rng.random() < 0.9 else f"dangling:{rng.randrange(entities)}"
        if rng.random() < 0.05:
            obj = subject  # a self-loop
        if rng.random() < 0.5:
            subject, obj = obj, subject
        triples.add((subject, rng.choice(PREDICATES), obj))
    records.extend(RelationshipRecord(subject=s, predicate=p, object=o) for s, p, o in sorted(triples))
    return records


def respelled(records: list[Record], spell: Callable[[str], str]) -> list[Record]:
    """``records`` with every id (entities' and relationships' ends) spelled by ``spell``, a one-to-one map: the same
    graph for a store whose ids must look another way (a SPARQL store's IRIs)."""
    return [
        r.model_copy(update={"id": spell(r.id)}) if isinstance(r, EntityRecord)
        else r.model_copy(update={"subject": spell(r.subject), "object": spell(r.object)})
        if isinstance(r, RelationshipRecord) else r
        for r in records
    ]
