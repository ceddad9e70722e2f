"""Backend configuration from the command line and the environment.

Every field of a backend's registered config model becomes a flag ``--field-name``
and an environment variable ``BFSQL_<BACKEND>_<FIELD>``, plus the conventional
aliases the backend declares (e.g. ``DATABASE_URL``). Precedence: flag, then
``BFSQL_…`` variable, then aliases, then the model's default. An option's old name
(``deprecated_names`` of :class:`bfsql.backend_config.BackendConfig`) keeps its hidden flag and
its variable, and sets the new field with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from bfsql.backend_config import option_names
from bfsql.errors import InvalidArgument, clip, plain_problem
from bfsql.options import field_option, flag, is_bool, is_list, type_name
from bfsql.plugins import BackendSpec

__all__ = ["backend_click_options", "backend_help_sections", "env_var", "resolve_config"]


def env_var(backend: str, field: str) -> str:
    """The environment variable of one backend field."""
    return f"BFSQL_{backend.upper().replace('-', '_')}_{field.upper()}"


def backend_click_options(specs: Mapping[str, BackendSpec], hidden: bool = False) -> list[click.Option]:
    """One click option per distinct config field across all backends.

    ``hidden`` leaves them out of the command's option list, for a help page that shows
    them grouped by backend instead (:func:`backend_help_sections`).
    """
    seen: dict[str, list[str]] = {}
    annotations: dict[str, Any] = {}
    helps: dict[str, str] = {}
    old_names: set[str] = set()
    for spec in specs.values():
        fields = spec.config_model.model_fields
        for name, target in option_names(spec.config_model).items():
            seen.setdefault(name, []).append(spec.name)
            annotations.setdefault(name, fields[target].annotation)
            helps.setdefault(name, fields[target].description or "")
            if name != target:
                old_names.add(name)
    return [
        field_option(name, annotations[name], hidden=hidden or name in old_names,
                     help=f"[{', '.join(seen[name])}] {helps[name]} (env: "
                     f"{', '.join(env_var(b, name) for b in seen[name])})")
        for name in sorted(seen)
    ]


def backend_help_sections(specs: Mapping[str, BackendSpec]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Help sections, one per backend: each option with its type, default and environment variables."""
    sections = []
    for name, spec in sorted(specs.items()):
        rows = []
        for field_name, field in spec.config_model.model_fields.items():
            switch = field_name.replace("_", "-")
            kind = type_name(field.annotation)
            opt = f"--{switch}/--no-{switch}" if is_bool(field.annotation) else f"{flag(field_name)} {kind}"
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
    if is_list(annotation):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _from_variables(spec: BackendSpec, names: Mapping[str, str], given: set[str],
                    env: Mapping[str, str]) -> dict[str, Any]:
    """The options set by environment variables (a field's, then an old name's, then the backend's aliases), for the
    fields no flag gave."""
    fields = spec.config_model.model_fields
    aliases = spec.env_aliases or {}
    values: dict[str, Any] = {}
    for name, target in names.items():
        if target in given:
            continue
        for var in (env_var(spec.name, name), *aliases.get(name, ())):
            if env.get(var):
                values[name] = _from_env(env[var], fields[target].annotation)
                given.add(target)
                break
    return values


def resolve_config(spec: BackendSpec, given: Mapping[str, Any], env: Mapping[str, str] | None = None) -> BaseModel:
    """Validate the backend's config from flags, environment and defaults.

    Flags that belong to other backends are refused with a message naming the
    flags this backend takes.
    """
    env = os.environ if env is None else env
    fields = spec.config_model.model_fields
    names = option_names(spec.config_model)
    foreign = sorted(
        flag(name) for name, value in given.items() if name not in names and value not in (None, ())
    )
    if foreign:
        accepted = ", ".join(flag(f) for f in fields) or "(none)"
        raise InvalidArgument(
            f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not an option of backend {spec.name!r}.",
            f"Backend {spec.name!r} takes: {accepted}.",
        )
    values = {name: list(value) if isinstance(value, tuple) else value
              for name, value in given.items() if name in names and value not in (None, ())}
    values.update(_from_variables(spec, names, {names[name] for name in values}, env))
    try:
        return spec.config_model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{flag(str(err['loc'][0])) if err['loc'] else 'config'} "
            f"{plain_problem(err, clip(repr(err.get('input')), 80))}"
            for err in exc.errors(include_url=False)
        )
        raise InvalidArgument(
            f"Invalid configuration for backend {spec.name!r}: {problems}.",
            f"See 'bfsql serve --help' for the options of {spec.name!r}.",
        ) from None
