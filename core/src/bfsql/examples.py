"""The examples a client reads (tool descriptions, argument schemas, error hints), in the served graph's words.

bfsql's texts are written with the demo graph's ids and words (``HGNC:BRAF isa FPLX:RAF``, a
``Gene`` in a ``Family``). Served over another graph, an example naming ids that graph does not
have sends a model looking for them. :class:`Examples` maps each demo word to one of the served
graph (picked at start-up by :func:`bfsql.engine.examples.examples_of`: two entities that share
a neighbour, the predicate linking them and their types), and :meth:`Examples.say` rewrites a
text with it. The demo's own examples change nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

__all__ = ["DEMO", "Examples"]


@dataclass(frozen=True)
class Examples:
    """One graph's words for each role of the texts' examples (the demo's: ``BRAF isa RAF``, ``RAF1 isa RAF``)."""

    entity: str = "HGNC:BRAF"
    """An entity with a name (the demo's BRAF)."""
    entity_name: str = "BRAF"
    other: str = "HGNC:RAF1"
    """Another entity linked to ``group`` as ``entity`` is (BRAF and RAF1 share their family)."""
    other_name: str = "RAF1"
    group: str = "FPLX:RAF"
    """What ``entity`` and ``other`` are both linked to."""
    predicate: str = "isa"
    """The predicate from ``entity`` to ``group``."""
    second_predicate: str = "partof"
    """Another predicate of the graph."""
    entity_type: str = "Gene"
    group_type: str = "Family"
    own_words: frozenset[str] = frozenset()
    """The graph's own types and predicates: a demo word that is one of them is a word of the graph too, and stays
    (a hint listing the graph's types keeps its "Gene")."""

    def say(self, text: str) -> str:
        """``text`` with every demo word in this graph's words (whole words and ids only)."""
        if self == DEMO or not self._words:
            return text
        return self._pattern.sub(lambda match: self._words[match.group(0)], text)

    def say_all(self, value: Any) -> Any:
        """:meth:`say` applied to every string inside ``value`` (a JSON schema, a list of examples)."""
        if isinstance(value, str):
            return self.say(value)
        if isinstance(value, list):
            return [self.say_all(item) for item in value]
        if isinstance(value, dict):
            return {key: self.say_all(item) for key, item in value.items()}
        return value

    @cached_property
    def _words(self) -> dict[str, str]:
        return {getattr(DEMO, f.name): getattr(self, f.name) for f in fields(self)
                if f.name != "own_words" and getattr(DEMO, f.name) not in self.own_words}

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        demo_words = sorted(self._words, key=len, reverse=True)  # FPLX:RAF before RAF
        # A word stands alone, or after "type:" (a path query's type filter); never inside an id or a longer word.
        return re.compile(r"(?:(?<![\w:])|(?<=type:))(" + "|".join(map(re.escape, demo_words)) + r")(?![\w:])")


DEMO = Examples()
"""The demo graph's examples: the words the texts are written in."""
