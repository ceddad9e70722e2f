"""Command-line options made from a pydantic model's fields: the one helper for the server's and the backends' flags.

Every field of :class:`~bfsql.settings.ServerSettings` and of each backend's config model
becomes a flag by the same rules (:func:`field_option`): ``my_field`` is ``--my-field``; a
boolean is a ``--x/--no-x`` switch; a list is a repeatable option; a ``Literal`` is a choice;
numbers are typed. Values are validated by the model itself afterwards, and their errors are
put in plain words by :func:`bfsql.errors.plain_problem`.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

import click

__all__ = ["field_option", "flag", "is_bool", "is_list", "type_name"]

_FLAGS = {"allowed_hosts": "--allowed-host"}
"""Flags not spelled like their field (a repeated option reads better in the singular)."""


def flag(name: str) -> str:
    """The command-line flag of a field."""
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def is_list(annotation: Any) -> bool:
    """Whether a field holds several values (a repeatable option)."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(is_list(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    return False


def is_bool(annotation: Any) -> bool:
    """Whether a field is a switch."""
    return _without_none(annotation) is bool


def _click_type(annotation: Any) -> Any:
    annotation = _without_none(annotation)
    if typing.get_origin(annotation) is Literal:
        return click.Choice([str(a) for a in typing.get_args(annotation)])
    return {int: int, float: float}.get(annotation, str)


def type_name(annotation: Any) -> str:
    """How a help page names the values a field takes."""
    annotation = _without_none(annotation)
    if is_list(annotation):
        inner = typing.get_args(annotation)
        return f"{type_name(inner[0]) if inner else 'TEXT'} (repeatable)"
    if typing.get_origin(annotation) is Literal:
        return "|".join(str(a) for a in typing.get_args(annotation))
    return {int: "INTEGER", float: "NUMBER", bool: "", Path: "PATH"}.get(annotation, "TEXT")


def field_option(
    name: str,
    annotation: Any,
    *,
    help: str,
    default: Any = None,
    envvar: str | None = None,
    hidden: bool = False,
) -> click.Option:
    """The click option of one field (see the module for the rules)."""
    common: dict[str, Any] = {"help": help, "hidden": hidden}
    if envvar is not None:
        common |= {"envvar": envvar, "show_envvar": True}
    if is_bool(annotation):
        switch = name.replace("_", "-")
        return click.Option([f"--{switch}/--no-{switch}", name], default=default, **common)
    if is_list(annotation):
        return click.Option([flag(name), name], multiple=True, default=default if default is not None else (),
                            **common)
    return click.Option([flag(name), name], type=_click_type(annotation), default=default,
                        show_default=default is not None, **common)
