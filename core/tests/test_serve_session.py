"""bfsql.testing.reliability.serve_session: a backend served from the very config a test builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from bfsql.backends.sqlite import SqliteConfig
from bfsql.settings import config_text
from bfsql.testing.reliability import serve_session


def test_the_server_opens_the_backend_with_the_given_config(tmp_path: Path) -> None:
    from bfsql.demo import ensure_demo_db

    config = SqliteConfig(db=ensure_demo_db(), description="served from a test's config")
    with serve_session("sqlite", config, tmp_path) as session:
        schema = session.call("describe_schema", {}).data()
    assert schema["graph_description"] == "served from a test's config"


def test_a_server_that_fails_to_start_reports_its_stderr(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_text("not a sqlite store\n" * 50)
    with pytest.raises(RuntimeError) as failed, serve_session("sqlite", SqliteConfig(db=broken), tmp_path):
        pass
    assert "the MCP server did not start" in str(failed.value)
    assert "its stderr" in str(failed.value) and "Error" in str(failed.value)


def test_config_text_round_trips_through_the_configuration_reader(tmp_path: Path) -> None:
    from bfsql.plugins import get_backends, get_embedders
    from bfsql.settings import read_config

    config = SqliteConfig(db=tmp_path / "a \"quoted\" name.db", description="ünïcode\nand a newline", memory_index=5)
    path = tmp_path / "graphs.toml"
    path.write_text(config_text({"my-graph": ("sqlite", config)}, {"max_tokens": 900, "allowed_hosts": ["a", "b"]}))
    read = read_config(path, get_backends(), get_embedders())
    assert read.server == {"max_tokens": 900, "allowed_hosts": ["a", "b"]}
    # description is the graph table's own key (what clients are shown), not passed on to the backend
    assert [(g.name, g.backend, g.description, g.config) for g in read.graphs] == [
        ("my-graph", "sqlite", config.description, config.model_copy(update={"description": None}))]
