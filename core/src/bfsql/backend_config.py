"""The words every backend's configuration shares: one name for one thing across backends.

A backend's config model extends one of these, so that the same option has the same flag,
``BFSQL_<BACKEND>_<FIELD>`` variable and configuration key whatever the store:

* :class:`BackendConfig` — ``description``, the graph's description as describe_schema shows it
  (the backend's ``graph_description`` answers with it; a ``[graphs.NAME]`` table's own
  ``description`` key comes first, see :meth:`bfsql.Graph.describe`);
* :class:`StoreConfig` — a store reached over a connection: ``query_timeout`` (seconds one call
  to the store — a statement, a query, a request — may take) and ``max_connections`` (calls to
  the store in flight at once: a pool's size, or HTTP requests);
* :class:`HttpStoreConfig` — a store answering over HTTP: the retry policy of
  :mod:`bfsql.http_retry` (``max_retries``, ``retry_backoff``, ``max_retry_wait``).

A backend that renames an option keeps the old name working: ``deprecated_names`` maps it to the
new one, and a value given under it (a flag, a variable, a configuration key, a keyword) is taken
with a :class:`DeprecatedOption` warning saying what to write instead. Reading the old attribute
still answers, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bfsql.http_retry import RetryPolicy

__all__ = ["BackendConfig", "DeprecatedOption", "HttpStoreConfig", "StoreConfig", "option_names"]


class DeprecatedOption(FutureWarning):
    """A backend option was given under its old name (shown by default: people write these names in files)."""


class BackendConfig(BaseModel):
    """The base of every backend's config model: the options every backend has."""

    model_config = ConfigDict(defer_build=True)  # built when first validated: a process uses one backend's, or none

    deprecated_names: ClassVar[dict[str, str]] = {}
    """Old option names still accepted, each with the field it now sets (a subclass adds its own)."""

    description: str | None = Field(default=None, description="graph_description text shown by describe_schema.")

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, values: Any) -> Any:
        """Take a value given under a deprecated name as its new field's, with a warning."""
        if not isinstance(values, dict) or not cls.deprecated_names:
            return values
        values = dict(values)
        for old, new in cls.deprecated_names.items():
            if old not in values:
                continue
            value = values.pop(old)
            if new in values:
                raise ValueError(f"{old!r} is the old name of {new!r}: give only {new!r}")
            values[new] = value
            warnings.warn(deprecation(old, new), DeprecatedOption, stacklevel=2)
        return values

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.deprecated_names = {**_inherited_names(cls), **cls.__dict__.get("deprecated_names", {})}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for old, new in cls.deprecated_names.items():
            setattr(cls, old, _old_attribute(old, new))


def _inherited_names(cls: type) -> dict[str, str]:
    names: dict[str, str] = {}
    for base in reversed(cls.__mro__[1:]):
        names.update(getattr(base, "deprecated_names", {}) or {})
    return names


def _old_attribute(old: str, new: str) -> property:
    def read(self: BaseModel) -> Any:
        warnings.warn(f"{type(self).__name__}.{old} is deprecated: read .{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return property(read, doc=f"Deprecated: the old name of ``{new}``.")


def deprecation(old: str, new: str) -> str:
    """The warning given for an option written under its old name."""
    flag_old, flag_new = "--" + old.replace("_", "-"), "--" + new.replace("_", "-")
    return (f"backend option {old!r} is deprecated and will be removed: write {new!r} instead (flag {flag_new} "
            f"for {flag_old}, variable BFSQL_<BACKEND>_{new.upper()}, key {new} in a [graphs.NAME] table). "
            "The value given is used.")


def option_names(model: type[BaseModel]) -> dict[str, str]:
    """Every name an option of ``model`` may be given under, with the field it sets (old names included)."""
    names = {name: name for name in model.model_fields}
    names.update(getattr(model, "deprecated_names", {}) or {})
    return names


class StoreConfig(BackendConfig):
    """The config of a backend reaching its store over connections: a timeout per call and a bound on calls."""

    query_timeout: float = Field(
        default=30.0, gt=0,
        description="Seconds one call to the store (a statement, a query, an HTTP request) may take.",
    )
    max_connections: int = Field(
        default=8, ge=1, le=256, description="Calls to the store in flight at once (pooled connections, requests)."
    )


class HttpStoreConfig(StoreConfig):
    """The config of a backend whose store answers over HTTP: the shared retry policy (:mod:`bfsql.http_retry`)."""

    max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries after 429, 502, 503, 504 answers and dropped connections."
    )
    retry_backoff: float = Field(
        default=0.5, ge=0, description="Seconds before the first retry when the store asks none; doubles per retry."
    )
    max_retry_wait: float = Field(
        default=30.0, ge=0, description="Longest wait before a retry; a store asking a longer one fails at once."
    )

    def retry_policy(self) -> RetryPolicy:
        """The retry policy these options make; all retries of one call fit in its ``query_timeout``."""
        return RetryPolicy(max_retries=self.max_retries, backoff=self.retry_backoff, max_wait=self.max_retry_wait,
                           budget=self.query_timeout)
