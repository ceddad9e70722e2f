"""The docs count the tools bfsql serves as it serves them.

The README once said "six read-only tools" while eight were served. The tools served by
a bare ``bfsql serve`` are :data:`bfsql.server.tools.BUILTIN_TOOLS`; the README must state
their number and name each, and no page may give the served tools another number (the
protocol's own six may be named as such: "the six tools of the protocol").
"""

from __future__ import annotations

import re
from pathlib import Path

from bfsql.server.tools import BUILTIN_TOOLS

ROOT = Path(__file__).resolve().parents[1]
SERVED = [tool.fn.__name__ for tool in BUILTIN_TOOLS]

NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
PROTOCOL_TOOLS = 6
"""Appendix A of the BFS-QL protocol defines six tools; a page may count them as "the six tools of the protocol"."""

COUNTED = re.compile(rf"\b(?P<number>{'|'.join(NUMBERS)}|\d+) (?:read-only |BFS-QL |MCP |built-in )?tools\b", re.I)


def pages() -> list[Path]:
    """The README, every page under docs/, and the template's text (what a generated plugin says)."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found += sorted(p for p in (ROOT / "templates").rglob("*") if p.suffix in {".md", ".py", ".toml"})
    return found


def flat(text: str) -> str:
    """The text with every run of whitespace as one space, so a phrase broken over lines is found."""
    return re.sub(r"\s+", " ", text)


def number_of(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS.index(word.casefold())


def test_the_readme_states_how_many_tools_are_served_and_names_each() -> None:
    readme = flat((ROOT / "README.md").read_text(encoding="utf-8"))
    intro = readme.split("What you get", 1)[0]
    stated = re.search(r"\b(\w+) read-only tools\b", intro)
    assert stated is not None, intro
    assert number_of(stated.group(1)) == len(SERVED), f"the README says {stated.group(0)!r}; {len(SERVED)} are served"
    missing = [name for name in SERVED if f"`{name}`" not in intro]
    assert not missing, f"the README's opening does not name {missing}"


def test_no_page_gives_the_served_tools_another_number() -> None:
    wrong = []
    for page in pages():
        text = flat(page.read_text(encoding="utf-8"))
        for found in COUNTED.finditer(text):
            number = number_of(found.group("number"))
            around = text[max(0, found.start() - 30) : found.end() + 30]
            of_the_protocol = text[found.end() :].startswith(" of the protocol")
            if number == len(SERVED) or (number == PROTOCOL_TOOLS and of_the_protocol):
                continue
            wrong.append(f"{page.relative_to(ROOT)}: ...{around}...")
    assert not wrong, f"{len(SERVED)} tools are served ({', '.join(SERVED)}):\n" + "\n".join(wrong)
