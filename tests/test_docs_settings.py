"""docs/cli.md lists every server setting as the settings model makes it: flag, variable, default, per graph.

A new setting is one field of ``bfsql.settings.ServerSettings`` (CONTRIBUTING.md); this test
names the row docs/cli.md then needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bfsql.options import flag
from bfsql.settings import ServerSettings, env_var

CLI_DOCS = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()


def _shown(default: object) -> str:
    if default is None:
        return "none"
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    if isinstance(default, tuple):
        return ""
    return f"`{default}`" if isinstance(default, str) else str(default)


@pytest.mark.parametrize("name", list(ServerSettings.model_fields))
def test_every_setting_has_its_row(name: str) -> None:
    field = ServerSettings.model_fields[name]
    per_graph = "yes" if name in ServerSettings.per_graph_fields() else ""
    cells = [f"`{flag(name)}`", f"`{env_var(name)}`", _shown(field.default), per_graph]
    row = "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"
    assert row in CLI_DOCS, f"docs/cli.md needs a row starting with: {row} <meaning>"
