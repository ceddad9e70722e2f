"""Backend configuration from the command line and the environment.

Every field of a backend's registered config model becomes a flag ``--field-name``
and an environment variable ``BFSQL_<BACKEND>_<FIELD>``, plus the conventional
aliases the backend declares (e.g. ``DATABASE_URL``). Precedence: flag, then
``BFSQL_…`` variable, then aliases, then the model's default.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from bfsql.errors import InvalidArgument
from bfsql.plugins import BackendSpec

__all__ = ["backend_click_options", "backend_help_sections", "env_var", "resolve_config"]


def env_var(backend: str, field: str) -> str:
    """The environment variable of one backend field."""
    return f"BFSQL_{backend.upper().replace('-', '_')}_{field.upper()}"


def _option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    return False


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args == [bool]
    return False


def backend_click_options(specs: Mapping[str, BackendSpec], hidden: bool = False) -> list[click.Option]:
    """One click option per distinct config field across all backends.

    ``hidden`` leaves them out of the command's option list, for a help page that shows
    them grouped by backend instead (:func:`backend_help_sections`).
    """
    seen: dict[str, list[str]] = {}
    annotations: dict[str, Any] = {}
    helps: dict[str, str] = {}
    for spec in specs.values():
        for name, field in spec.config_model.model_fields.items():
            seen.setdefault(name, []).append(spec.name)
            annotations.setdefault(name, field.annotation)
            helps.setdefault(name, field.description or "")
    options = []
    for name in sorted(seen):
        owners = ", ".join(seen[name])
        help_text = f"[{owners}] {helps[name]} (env: {', '.join(env_var(b, name) for b in seen[name])})"
        annotation = annotations[name]
        if _is_bool(annotation):
            flag = name.replace("_", "-")
            options.append(click.Option([f"--{flag}/--no-{flag}", name], default=None, help=help_text,
                                        hidden=hidden))
        elif _is_list(annotation):
            options.append(click.Option([_option_name(name), name], multiple=True, default=(), help=help_text,
                                        hidden=hidden))
        else:
            options.append(click.Option([_option_name(name), name], default=None, help=help_text, hidden=hidden))
    return options


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else annotation
    if _is_list(annotation):
        inner = typing.get_args(annotation)
        return f"{_type_name(inner[0]) if inner else 'TEXT'} (repeatable)"
    if typing.get_origin(annotation) is typing.Literal:
        return "|".join(str(a) for a in typing.get_args(annotation))
    named = {int: "INTEGER", float: "NUMBER", bool: "", Path: "PATH"}
    return named.get(annotation, "TEXT")


def backend_help_sections(specs: Mapping[str, BackendSpec]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Help sections, one per backend: each option with its type, default and environment variables."""
    sections = []
    for name, spec in sorted(specs.items()):
        rows = []
        for field_name, field in spec.config_model.model_fields.items():
            flag = field_name.replace("_", "-")
            kind = _type_name(field.annotation)
            opt = f"--{flag}/--no-{flag}" if _is_bool(field.annotation) else f"{_option_name(field_name)} {kind}"
            facts = []
            if field.is_required():
                facts.append("required")
            elif (default := field.get_default(call_default_factory=True)) not in (None, [], (), ""):
                facts.append(f"default: {default}")
            facts.append("env: " + ", ".join([env_var(name, field_name), *(spec.env_aliases or {}).get(field_name,
                                                                                                          ())]))
            rows.append((opt.strip(), f"{field.description or ''}  [{'; '.join(facts)}]".strip()))
        sections.append((f"Backend {name} ({spec.description.rstrip('.')})", rows))
    return sections


def _from_env(raw: str, annotation: Any) -> Any:
    if _is_list(annotation):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def resolve_config(spec: BackendSpec, given: Mapping[str, Any], env: Mapping[str, str] | None = None) -> BaseModel:
    """Validate the backend's config from flags, environment and defaults.

    Flags that belong to other backends are refused with a message naming the
    flags this backend takes.
    """
    env = os.environ if env is None else env
    fields = spec.config_model.model_fields
    foreign = sorted(
        _option_name(name) for name, value in given.items() if name not in fields and value not in (None, ())
    )
    if foreign:
        accepted = ", ".join(_option_name(f) for f in fields) or "(none)"
        raise InvalidArgument(
            f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not an option of backend {spec.name!r}.",
            f"Backend {spec.name!r} takes: {accepted}.",
        )
    values: dict[str, Any] = {}
    aliases = spec.env_aliases or {}
    for name, field in fields.items():
        value = given.get(name)
        if value not in (None, ()):
            values[name] = list(value) if isinstance(value, tuple) else value
            continue
        for var in (env_var(spec.name, name), *aliases.get(name, ())):
            if env.get(var):
                values[name] = _from_env(env[var], field.annotation)
                break
    try:
        return spec.config_model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_option_name(str(err['loc'][0])) if err['loc'] else 'config'}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidArgument(
            f"Invalid configuration for backend {spec.name!r}: {problems}.",
            f"See 'bfsql serve --help' for the options of {spec.name!r}.",
        ) from None
