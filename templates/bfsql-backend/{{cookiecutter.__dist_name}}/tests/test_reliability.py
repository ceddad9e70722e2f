"""bfsql's reliability scenarios against ``bfsql serve --backend {{ cookiecutter.name }}``, through a real MCP client.

Generated calls and the shared injection corpus must end as answers or clear errors and
leave the store unchanged. When the store is a server, add the outage scenarios of
``bfsql.testing.scenarios`` too (see docs/reliability.md in the bfsql repository).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bfsql.testing.reliability import SessionThread, serve_session, standard_ids
from bfsql.testing.scenarios import fuzz, injection_corpus
from bfsql.testing.standard_graph import MDM2, TP53, write_standard_bundle
from conftest import store_config

pytestmark = pytest.mark.reliability

FUZZ_EXAMPLES = int(os.environ.get("BFSQL_FUZZ_EXAMPLES", "50"))
BACKEND_FAILED = ("graph backend failed",)
"""What an error says when the store, not the arguments, failed."""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_standard_bundle(tmp_path_factory.mktemp("standard"))


@pytest.fixture(scope="module")
def session(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionThread]:
    # `bfsql serve` opens the backend with the tests' configuration (conftest.py), written to a
    # configuration file; a server that fails to start fails here with its stderr.
    with serve_session("{{ cookiecutter.name }}", store_config(bundle), tmp_path_factory.mktemp("serve")) as held:
        yield held


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fuzzed_calls_end_as_answers_or_clear_errors(session: SessionThread, bundle: Path) -> None:
    before = digest(bundle)
    entities, dangling = standard_ids()
    fuzz(session, [*entities, *dangling], FUZZ_EXAMPLES, backend_failed=BACKEND_FAILED, hub=TP53, neighbour=MDM2)
    assert digest(bundle) == before


def test_injection_corpus_gives_errors_or_exact_matches(session: SessionThread, bundle: Path) -> None:
    before = digest(bundle)
    injection_corpus(session, hub=TP53, backend_failed=BACKEND_FAILED)
    assert digest(bundle) == before
