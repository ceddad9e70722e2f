"""How an entity type is drawn: one fill colour (and a shape) per type name, the same everywhere.

The explorer, DOT, Mermaid and GraphML all ask :func:`type_style`, so ``Gene`` has one colour
in every answer, every graph and every format. The colour is chosen by a hash of the type's
name from a fixed colour-blind-safe palette, never by the order in which types happen to
appear. Nine colours cannot keep every pair of types apart, so the explorer also draws each
type with a shape picked by the same hash: two types that share a colour rarely share a shape
too (and the legend, the labels and the exports' type names still tell them apart).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["NOT_SHOWN", "PALETTE", "SHAPES", "TypeStyle", "type_style"]

PALETTE = ("#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499")
"""Paul Tol's "muted" qualitative scheme: nine colours that stay apart under the common colour-vision deficiencies."""

SHAPES = ("ellipse", "round-rectangle", "diamond", "hexagon", "round-triangle")
"""Node shapes of the explorer (Cytoscape.js names), a second channel for types that share a colour."""

NOT_SHOWN = "?"
"""The type of a node that an answer names (in an edge or a path) without showing it."""


@dataclass(frozen=True)
class TypeStyle:
    """The fill colour, the text colour that reads on it, and the explorer's node shape of an entity type."""

    fill: str
    text: str
    """Black or white, whichever contrasts more with ``fill`` (labels drawn on the fill: DOT, Mermaid)."""
    shape: str


def _luminance(colour: str) -> float:
    """Relative luminance of ``#RRGGBB`` (WCAG 2)."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _text_on(fill: str) -> str:
    lum = _luminance(fill)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#FFFFFF"


@lru_cache(maxsize=4096)
def type_style(entity_type: str) -> TypeStyle:
    """The style of ``entity_type``: a function of its name alone (stable across answers, graphs and runs)."""
    if entity_type == NOT_SHOWN:
        return TypeStyle("#FFFFFF", "#000000", "ellipse")
    digest = int.from_bytes(hashlib.sha256(entity_type.encode()).digest()[:8], "big")
    fill = PALETTE[digest % len(PALETTE)]
    return TypeStyle(fill, _text_on(fill), SHAPES[digest // len(PALETTE) % len(SHAPES)])
