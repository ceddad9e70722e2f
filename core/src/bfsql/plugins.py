"""The global plugin manager: built-ins, entry-point plugins, load errors, listing.

Plugins are found through the entry-point group ``bfsql`` and loaded lazily, on the
first call of :func:`get_plugin_manager`, never at import time. A plugin that fails
to import or register, or that implements a hook bfsql does not have (a misspelt
``process_node``), is refused, recorded in :func:`load_errors` and shown by
``bfsql plugins``; it never stops the CLI unless ``BFSQL_STRICT_PLUGINS=1``.

Environment:

* ``BFSQL_LOAD_PLUGINS`` — comma-separated allow-list of entry-point names (empty
  string: load no external plugin).
* ``BFSQL_DISABLE_PLUGINS`` — comma-separated block-list of entry-point names.
* ``BFSQL_STRICT_PLUGINS=1`` — raise on the first broken plugin.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, TypeVar

import pluggy
from pydantic import BaseModel

from bfsql import hookspecs
from bfsql.embedders import AUTO, DEFAULT_EMBEDDER, PREFERRED_EMBEDDERS, Embedder
from bfsql.errors import InvalidArgument
from bfsql.primitives import PrimitiveHookspecs
from bfsql.version import __version__

__all__ = [
    "FIRST_PARTY",
    "BackendSpec",
    "EmbedderSpec",
    "PluginLoadError",
    "UnknownHook",
    "collect",
    "create_embedder",
    "get_backends",
    "get_embedders",
    "get_plugin_manager",
    "install_hint",
    "list_plugins",
    "load_errors",
    "preferred_embedder",
    "reset",
    "resolve_embedder_name",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "bfsql"

BUILTIN_PLUGINS: tuple[str, ...] = (
    "bfsql.backends.memory",
    "bfsql.backends.sqlite",
    "bfsql.embedders",
    "bfsql.postprocess",
)
"""Modules registered on every plugin manager, exactly like external plugins. (The server registers its
built-in tools itself, ahead of the plugins': see :func:`bfsql.server.app.collect_tools`.)"""


FIRST_PARTY = {
    "postgres": "bfsql-postgres",
    "sparql": "bfsql-sparql",
    "neo4j": "bfsql-neo4j",
    "jsonld": "bfsql-jsonld",
    "minilm": "bfsql-embed-minilm",
    "minilm-int8": "bfsql-embed-minilm",
    "wordllama-256": "bfsql-embed-wordllama",
}
"""Backends and embedders that come with the plugins of bfsql's own repository, by the distribution providing them."""


def install_hint(name: str) -> str:
    """How to install the plugin providing ``name``, when it is one of bfsql's own; else an empty string."""
    distribution = FIRST_PARTY.get(name)
    if distribution is None:
        return ""
    return (f" {name!r} comes with the {distribution} plugin: from a checkout of the bfsql repository, "
            f"pip install ./plugins/{distribution}.")


class PluginLoadError(RuntimeError):
    """Raised for a broken plugin when ``BFSQL_STRICT_PLUGINS=1``."""


@dataclass(frozen=True)
class BackendSpec:
    """A registered backend: how to build it and how to configure it."""

    name: str
    factory: Callable[[Any], Any]
    """Called with a validated config model; returns a backend or an awaitable of one."""
    config_model: type[BaseModel]
    description: str
    plugin: str
    """The name of the plugin that registered it."""
    env_aliases: dict[str, tuple[str, ...]] | None = None
    """Conventional environment variables per config field, e.g. {"dsn": ("DATABASE_URL",)}."""


@dataclass(frozen=True)
class EmbedderSpec:
    """A registered embedder: how to build it."""

    name: str
    factory: Callable[[], Any]
    """Called without arguments; returns an :class:`bfsql.embedders.Embedder`."""
    description: str
    plugin: str


@dataclass(frozen=True)
class _LoadError:
    name: str
    error: str


_lock = threading.Lock()
_pm: pluggy.PluginManager | None = None
_errors: list[_LoadError] = []
_dists: dict[str, tuple[str, str]] = {}


def _names_from_env(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def _strict() -> bool:
    return os.environ.get("BFSQL_STRICT_PLUGINS", "") not in ("", "0", "false", "no")


def _record(name: str, exc: BaseException) -> None:
    message = f"{type(exc).__name__}: {exc}"
    _errors.append(_LoadError(name, message))
    logger.info("bfsql plugin %r failed to load: %s", name, message)
    if _strict():
        raise PluginLoadError(f"plugin {name!r} failed to load: {message}") from exc


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with every bfsql hookspec (the primitive table's included) and nothing registered."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.add_hookspecs(PrimitiveHookspecs)
    return pm


class UnknownHook(ValueError):
    """A plugin implements a hook bfsql does not have (a misspelt name, a hook of another version)."""


def _unknown_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """The hooks ``plugin`` implements that no hookspec names (pluggy's ``check_pending``, for one plugin)."""
    return sorted(caller.name for caller in pm.get_hookcallers(plugin) or []
                  if caller.spec is None and any(not impl.optionalhook for impl in caller.get_hookimpls()
                                                 if impl.plugin is plugin))


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register ``plugin``, refusing it (unregistered again) when it implements a hook bfsql does not have."""
    pm.register(plugin, name=name)
    unknown = _unknown_hooks(pm, plugin)
    if unknown:
        pm.unregister(plugin)
        known = [hook for hook in dir(pm.hook) if not hook.startswith("_") and getattr(pm.hook, hook).spec]
        said = ", ".join(f"{hook!r}{_did_you_mean(hook, known)}" for hook in unknown)
        raise UnknownHook(f"it implements hooks bfsql does not have: {said}")


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _load(pm: pluggy.PluginManager) -> None:
    for module_name in BUILTIN_PLUGINS:
        try:
            _register(pm, importlib.import_module(module_name), module_name)
        except Exception as exc:
            _record(module_name, exc)

    allow = _names_from_env("BFSQL_LOAD_PLUGINS")
    block = _names_from_env("BFSQL_DISABLE_PLUGINS") or set()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in block or (allow is not None and ep.name not in allow):
            continue
        if pm.get_plugin(ep.name) is not None:
            continue
        try:
            plugin = ep.load()
            _register(pm, plugin, ep.name)
        except Exception as exc:  # a broken plugin must never brick the CLI
            _record(ep.name, exc)
            continue
        if ep.dist is not None:
            _dists[ep.name] = (ep.dist.name, ep.dist.version)


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, loading plugins on first use."""
    global _pm
    with _lock:
        if _pm is None:
            pm = new_plugin_manager()
            _load(pm)
            _pm = pm
        return _pm


def reset() -> None:
    """Forget loaded plugins and errors, so the next call reloads (for tests)."""
    global _pm
    with _lock:
        _pm = None
        _errors.clear()
        _dists.clear()
        _backends_cache.clear()
        _embedders_cache.clear()


def load_errors() -> list[dict[str, str]]:
    """Plugins that failed to load, as ``{"name", "error"}`` dicts."""
    get_plugin_manager()
    return [{"name": e.name, "error": e.error} for e in _errors]


def list_plugins() -> list[dict[str, Any]]:
    """Every plugin with its name, version, hooks; broken ones with their error."""
    pm = get_plugin_manager()

    listing: list[dict[str, Any]] = []
    for name, plugin in sorted(pm.list_name_plugin(), key=lambda item: item[0] or ""):
        if name is None:
            continue
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        dist = _dists.get(name)
        entry: dict[str, Any] = {"name": name, "hooks": hooks}
        if dist is not None:
            entry["distribution"], entry["version"] = dist
        elif name in BUILTIN_PLUGINS:
            entry["version"] = __version__
            entry["builtin"] = True
        listing.append(entry)
    listing.extend({"name": e.name, "error": e.error, "hooks": []} for e in _errors)
    return listing


class _Registered(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def plugin(self) -> str: ...


S = TypeVar("S", bound=_Registered)


def collect(hook: str, make: Callable[..., S], kind: str) -> dict[str, S]:
    """Call every implementation of the registration hook ``hook`` with a ``register`` callback.

    ``register(*args, **kwargs)`` builds a spec with ``make(*args, plugin=NAME, **kwargs)``,
    NAME being the registering plugin's; a name registered twice is an error of the second
    plugin. A plugin whose registration fails is recorded (see :func:`load_errors`) and the
    others are kept.
    """
    found: dict[str, S] = {}
    for impl in getattr(get_plugin_manager().hook, hook).get_hookimpls():

        def register(*args: Any, _plugin: str = impl.plugin_name, **kwargs: Any) -> None:
            spec = make(*args, plugin=_plugin, **kwargs)
            if spec.name in found:
                raise ValueError(f"{kind} {spec.name!r} is already registered by plugin {found[spec.name].plugin!r}")
            found[spec.name] = spec

        try:
            impl.function(register=register)
        except Exception as exc:
            _record(impl.plugin_name, exc)
    return found


def _backend(name: str, factory: Callable[[Any], Any], config_model: type[BaseModel], description: str,
             env_aliases: dict[str, tuple[str, ...]] | None = None, *, plugin: str) -> BackendSpec:
    return BackendSpec(name, factory, config_model, description, plugin, env_aliases)


def _embedder(name: str, factory: Callable[[], Any], description: str = "", *, plugin: str) -> EmbedderSpec:
    return EmbedderSpec(name, factory, description, plugin)


_backends_cache: dict[str, BackendSpec] = {}
_embedders_cache: dict[str, EmbedderSpec] = {}


def get_backends() -> dict[str, BackendSpec]:
    """Every registered backend by name: ``register(name, factory, config_model, description, env_aliases=None)``."""
    if not _backends_cache:
        _backends_cache.update(collect("register_backends", _backend, "backend"))
    return dict(_backends_cache)


def get_embedders() -> dict[str, EmbedderSpec]:
    """Every registered embedder by name: ``register(name, factory, description="")``."""
    if not _embedders_cache:
        _embedders_cache.update(collect("register_embedders", _embedder, "embedder"))
    return dict(_embedders_cache)


_built_embedders: dict[tuple[str, Callable[[], Any]], Embedder] = {}
"""The embedders this process has built, by name and factory: a model is loaded once for every graph and call."""
_embedders_lock = threading.Lock()


def create_embedder(name: str) -> Embedder:
    """The registered embedder ``name``, built once per process; :class:`InvalidArgument` naming the installed ones.

    An embedder turns texts into vectors and keeps nothing of a call, so the graphs of one server, and the
    calls of a resident ``bfsql`` process (:mod:`bfsql.launch`), share one and load its model once.
    """
    specs = get_embedders()
    spec = specs.get(name)
    if spec is None:
        raise InvalidArgument(
            f"Unknown embedder {name!r}; installed: {', '.join(sorted(specs)) or '(none)'}.",
            "Install a plugin that registers it (from a checkout of bfsql: pip install ./plugins/bfsql-embed-wordllama "
            "for 'wordllama-256', ./plugins/bfsql-embed-minilm for 'minilm-int8') and check 'bfsql plugins'.",
        )
    with _embedders_lock:
        embedder = _built_embedders.get((name, spec.factory))
        if embedder is None:
            embedder = spec.factory()
            if not isinstance(embedder, Embedder):
                raise TypeError(f"embedder factory {name!r} returned {type(embedder).__name__}, not an Embedder")
            _built_embedders[name, spec.factory] = embedder
    return embedder


def preferred_embedder() -> str | None:
    """The first installed embedder of :data:`~bfsql.embedders.PREFERRED_EMBEDDERS`, or None."""
    installed = get_embedders()
    return next((name for name in PREFERRED_EMBEDDERS if name in installed), None)


def resolve_embedder_name(choice: str, stored: str | None = None) -> str:
    """The embedder name for ``choice``; ``auto`` is ``stored`` (the store's vectors' embedder)
    when installed, else the preferred semantic embedder, else ``hashing``."""
    if choice != AUTO:
        return choice
    if stored is not None and stored in get_embedders():
        return stored
    return preferred_embedder() or DEFAULT_EMBEDDER
