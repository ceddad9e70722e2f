"""The global plugin manager: built-ins, entry-point plugins, load errors, listing.

Plugins are found through the entry-point group ``bfsql`` and loaded lazily, on the
first call of :func:`get_plugin_manager`, never at import time. A plugin that fails
to import or register is recorded in :func:`load_errors` and shown by
``bfsql plugins``; it never stops the CLI unless ``BFSQL_STRICT_PLUGINS=1``.

Environment:

* ``BFSQL_LOAD_PLUGINS`` — comma-separated allow-list of entry-point names (empty
  string: load no external plugin).
* ``BFSQL_DISABLE_PLUGINS`` — comma-separated block-list of entry-point names.
* ``BFSQL_STRICT_PLUGINS=1`` — raise on the first broken plugin.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pluggy
from importlib_metadata import entry_points
from pydantic import BaseModel

from bfsql import hookspecs

__all__ = [
    "FIRST_PARTY",
    "BackendSpec",
    "EmbedderSpec",
    "PluginLoadError",
    "get_backends",
    "get_embedders",
    "get_plugin_manager",
    "install_hint",
    "list_plugins",
    "load_errors",
    "reset",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "bfsql"

BUILTIN_PLUGINS: tuple[str, ...] = (
    "bfsql.backends.memory",
    "bfsql.backends.sqlite",
    "bfsql.embedders",
    "bfsql.postprocess",
    "bfsql.server.tools",
)
"""Modules registered on every plugin manager, exactly like external plugins."""


FIRST_PARTY = {
    "postgres": "bfsql-postgres",
    "sparql": "bfsql-sparql",
    "neo4j": "bfsql-neo4j",
    "jsonld": "bfsql-jsonld",
    "minilm": "bfsql-embed-minilm",
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
    from bfsql.primitives import PrimitiveHookspecs

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.add_hookspecs(PrimitiveHookspecs)
    return pm


def _load(pm: pluggy.PluginManager) -> None:
    for module_name in BUILTIN_PLUGINS:
        try:
            pm.register(importlib.import_module(module_name), name=module_name)
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
            pm.register(plugin, name=ep.name)
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
    from bfsql import __version__

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


_backends_cache: dict[str, BackendSpec] = {}


def get_backends() -> dict[str, BackendSpec]:
    """Every registered backend by name. A plugin whose registration fails is recorded."""
    if _backends_cache:
        return dict(_backends_cache)
    pm = get_plugin_manager()
    found: dict[str, BackendSpec] = {}
    for impl in pm.hook.register_backends.get_hookimpls():
        plugin_name = impl.plugin_name

        def register(
            name: str,
            factory: Callable[[Any], Any],
            config_model: type[BaseModel],
            description: str,
            env_aliases: dict[str, tuple[str, ...]] | None = None,
            _plugin: str = plugin_name,
        ) -> None:
            if name in found:
                raise ValueError(f"backend {name!r} is already registered by plugin {found[name].plugin!r}")
            found[name] = BackendSpec(name, factory, config_model, description, _plugin, env_aliases)

        try:
            impl.function(register=register)
        except Exception as exc:
            _record(plugin_name, exc)
    _backends_cache.update(found)
    return dict(found)


_embedders_cache: dict[str, EmbedderSpec] = {}


def get_embedders() -> dict[str, EmbedderSpec]:
    """Every registered embedder by name. A plugin whose registration fails is recorded."""
    if _embedders_cache:
        return dict(_embedders_cache)
    pm = get_plugin_manager()
    found: dict[str, EmbedderSpec] = {}
    for impl in pm.hook.register_embedders.get_hookimpls():
        plugin_name = impl.plugin_name

        def register(
            name: str, factory: Callable[[], Any], description: str = "", _plugin: str = plugin_name
        ) -> None:
            if name in found:
                raise ValueError(f"embedder {name!r} is already registered by plugin {found[name].plugin!r}")
            found[name] = EmbedderSpec(name, factory, description, _plugin)

        try:
            impl.function(register=register)
        except Exception as exc:
            _record(plugin_name, exc)
    _embedders_cache.update(found)
    return dict(found)
