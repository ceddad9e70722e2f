"""Every link between the repository's Markdown pages reaches its page, and its heading when it names one.

docs/cli.md once linked ``deploying.md#audit-log``, a heading that did not exist.
Anchors are made from headings as GitHub makes them: lower case, punctuation dropped, spaces as
hyphens, a repeated heading numbered ``-1``, ``-2`` …; lines inside fenced code are no headings.
Links to other sites are not followed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
EXPLICIT = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def pages() -> list[Path]:
    """The Markdown pages of the repository (not those of installed packages or tools' caches)."""
    skipped = {".git", ".nox", "node_modules", ".venv", "venv", ".pytest_cache"}
    return sorted(p for p in ROOT.rglob("*.md") if not skipped & set(p.relative_to(ROOT).parts))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page: its headings' (outside fenced code) and explicit ones."""
    found: set[str] = set()
    seen: Counter[str] = Counter()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        found.update(EXPLICIT.findall(line))
        heading = HEADING.match(line)
        if heading and not fenced:
            base = slug(heading.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """The relative links of a page (outside fenced code), with their line numbers."""
    found = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            found += [(number, target) for target in LINK.findall(line)
                      if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_page_and_heading(page: Path) -> None:
    broken = []
    for number, target in links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"line {number}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"line {number}: {target} (no heading #{anchor} in {linked.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_a_heading_anchor_is_made_as_github_makes_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Logs\n\n```bash\n# not a heading\n```\n## Loading: `bfsql postgres load`\n## Logs\n")
    assert anchors(page) == {"logs", "loading-bfsql-postgres-load", "logs-1"}
