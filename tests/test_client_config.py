"""``bfsql client-config``: a configuration that starts this bfsql from anywhere, merged into the client's file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

BFSQL = [sys.executable, "-m", "bfsql"]

FILES = {
    "claude-desktop": ("xdg/Claude/claude_desktop_config.json", "mcpServers"),
    "claude-code": (".mcp.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", "mcpServers"),
    "vscode": (".vscode/mcp.json", "servers"),
}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "xdg"), "HOME": str(cwd)}
    return subprocess.run([*BFSQL, "client-config", *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module", autouse=True)
def demo_db() -> None:
    from bfsql.demo import ensure_demo_db

    ensure_demo_db()


@pytest.mark.parametrize("client", sorted(FILES))
def test_write_merges_an_absolute_command_into_the_clients_file(tmp_path: Path, client: str) -> None:
    relative, key = FILES[client]
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "dark", key: {"other": {"command": "other-server"}}}))
    (tmp_path / "graphs.toml").write_text('[graphs.famplex]\nbackend = "sqlite"\n')
    done = run(tmp_path, client, "--config", "graphs.toml", "--max-tokens", "8000", "--write")
    assert done.returncode == 0, done.stderr
    config = json.loads(path.read_text())
    assert config["theme"] == "dark" and config[key]["other"] == {"command": "other-server"}
    entry = config[key]["graphs"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"][-4:] == ["--config", str(tmp_path / "graphs.toml"), "--max-tokens", "8000"]
    assert (entry.get("type") == "stdio") == (client == "vscode")
    again = run(tmp_path, client, "--config", "graphs.toml", "--write")
    assert again.returncode == 0 and again.stdout.startswith("Replaced the server 'graphs'"), again.stdout


async def test_the_written_command_serves_from_another_folder_without_the_virtualenv_on_path(tmp_path: Path) -> None:
    """What failed with a bare "command": "bfsql" (spawn bfsql ENOENT): the client's PATH knows nothing of the venv."""
    done = run(tmp_path, "cursor", "--write")
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]["bfsql"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))}
    env |= {k: v for k, v in os.environ.items() if k.startswith("BFSQL_")}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(elsewhere))
    async with Client(params) as client:
        result = await client.call_tool("search_entities", {"query": "BRAF", "limit": 1})
    assert not result.is_error and result.structured_content["items"][0]["id"] == "HGNC:BRAF"


def test_flags_serve_does_not_take_are_refused(tmp_path: Path) -> None:
    done = run(tmp_path, "cursor", "--bogus")
    assert done.returncode != 0 and "not a flag of 'bfsql serve'" in done.stderr and "Traceback" not in done.stderr
