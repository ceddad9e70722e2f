"""MCP client configuration that starts this bfsql: for Claude Desktop, Claude Code, Cursor and VS Code.

A client starts a stdio server by running a command. A bare ``"command": "bfsql"`` fails
(``spawn bfsql ENOENT``) when bfsql lives in a virtualenv the client's environment does not
activate, so the configuration names this installation's own ``bfsql`` script (or its Python
with ``-m bfsql``) by absolute path, and every path among the serve flags absolutely too: the
client starts the server from a folder of its own.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "Client", "launch_command", "merged", "server_entry"]


def launch_command(serve_args: Sequence[str]) -> tuple[str, list[str]]:
    """The absolute command and arguments that run ``bfsql serve`` with ``serve_args`` from any folder."""
    script = Path(sys.executable).parent / ("bfsql.exe" if os.name == "nt" else "bfsql")
    command, args = (str(script), []) if script.is_file() else (sys.executable, ["-m", "bfsql"])
    return command, [*args, "serve", *(_absolute(arg) for arg in serve_args)]


def _absolute(arg: str) -> str:
    """``arg`` as an absolute path when it names an existing file or folder (``--db=graph.sqlite`` too)."""
    flag, equals, value = arg.partition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
    if value and not value.startswith("-") and Path(value).exists():
        value = str(Path(value).resolve())
    return f"{flag}{equals}{value}"


def server_entry(client: Client, serve_args: Sequence[str]) -> dict[str, Any]:
    """The client's entry for one stdio server running ``bfsql serve`` with ``serve_args``."""
    command, args = launch_command(serve_args)
    entry: dict[str, Any] = {"command": command, "args": args}
    return {"type": "stdio", **entry} if client.key == "servers" else entry


def _desktop_file() -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"


@dataclass(frozen=True)
class Client:
    """An MCP client: where its configuration file is and under which key it lists servers."""

    name: str
    file: Callable[[], Path]
    """The file ``--write`` merges the entry into (Claude Desktop's own; the others' project files, relative to the
    current folder)."""
    key: str = "mcpServers"


CLIENTS: dict[str, Client] = {
    client.name: client for client in (
        Client("claude-desktop", _desktop_file),
        Client("claude-code", lambda: Path(".mcp.json")),
        Client("cursor", lambda: Path(".cursor") / "mcp.json"),
        Client("vscode", lambda: Path(".vscode") / "mcp.json", key="servers"),
    )
}
"""Every client the ``bfsql client-config`` command writes for."""


def merged(existing: str | None, client: Client, name: str, entry: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The configuration file ``existing`` (its text, or None) with ``entry`` under ``name``, the other servers and
    keys kept; and whether an entry of that name was replaced. ValueError when the file is not a JSON object."""
    config = json.loads(existing) if existing and existing.strip() else {}
    if not isinstance(config, dict) or not isinstance(config.get(client.key, {}), dict):
        raise ValueError(f"it is not a JSON object with an object under {client.key!r}")
    servers = config.setdefault(client.key, {})
    replaced = name in servers and servers[name] != entry
    servers[name] = entry
    return config, replaced
