"""The README's quick start, as the tests run it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

__all__ = ["quick_start"]


def quick_start(readme: Path) -> list[list[str]]:
    """The ``bfsql query`` and ``bfsql path`` lines of the README's quick start, as argument lists."""
    text = readme.read_text(encoding="utf-8")
    quick = text[text.index("## Quick start"):text.index("## Running the tests")]
    lines = [line for block in re.findall(r"```bash\n(.*?)```", quick, re.S) for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith(("bfsql query ", "bfsql path "))]
