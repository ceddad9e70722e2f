"""The options every backend shares (bfsql.backend_config), and old option names kept working with a warning."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field

from bfsql import BackendConfig, DeprecatedOption, HttpStoreConfig, StoreConfig
from bfsql.backend_options import backend_click_options, resolve_config
from bfsql.backends.memory import MemoryConfig
from bfsql.backends.sqlite import SqliteConfig
from bfsql.errors import InvalidArgument
from bfsql.plugins import BackendSpec
from bfsql.settings import read_config


class OldStoreConfig(StoreConfig):
    """A store whose options had their own names before the shared ones."""

    deprecated_names: ClassVar[dict[str, str]] = {"statement_timeout": "query_timeout", "pool_size": "max_connections"}

    max_connections: int = Field(default=10, ge=1, le=100, description="Most connections held open at once.")


SPEC = BackendSpec("oldstore", lambda config: None, OldStoreConfig, "A store with renamed options.", "tests")


def test_every_built_in_and_http_config_shares_the_vocabulary() -> None:
    assert issubclass(MemoryConfig, BackendConfig) and issubclass(SqliteConfig, BackendConfig)
    assert {"description", "query_timeout", "max_connections"} <= set(OldStoreConfig.model_fields)
    assert {"max_retries", "retry_backoff", "max_retry_wait"} <= set(HttpStoreConfig.model_fields)
    policy = HttpStoreConfig(query_timeout=12, max_retries=2, retry_backoff=0.1, max_retry_wait=4).retry_policy()
    assert (policy.max_retries, policy.backoff, policy.max_wait, policy.budget) == (2, 0.1, 4, 12)


def test_an_old_keyword_sets_the_new_field_with_a_warning_naming_it() -> None:
    with pytest.warns(DeprecatedOption, match=r"'statement_timeout' is deprecated.*write 'query_timeout'"):
        config = OldStoreConfig(statement_timeout=5, pool_size=3)
    assert (config.query_timeout, config.max_connections) == (5, 3)
    with pytest.warns(DeprecationWarning, match="read .query_timeout"):
        assert config.statement_timeout == 5  # type: ignore[attr-defined]


def test_an_option_given_under_both_names_is_refused() -> None:
    with pytest.raises(ValueError, match="'statement_timeout' is the old name of 'query_timeout'"):
        OldStoreConfig(statement_timeout=5, query_timeout=6)


def test_new_names_give_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert OldStoreConfig(query_timeout=5, max_connections=3).query_timeout == 5


def test_old_flags_and_variables_still_configure_the_backend() -> None:
    with pytest.warns(DeprecatedOption):
        config = resolve_config(SPEC, {"statement_timeout": 4.0}, env={"BFSQL_OLDSTORE_POOL_SIZE": "7"})
    assert (config.query_timeout, config.max_connections) == (4.0, 7)  # type: ignore[attr-defined]
    # A new name's flag wins over an old name's variable, as any flag over any variable.
    config = resolve_config(SPEC, {"query_timeout": 2.0}, env={"BFSQL_OLDSTORE_STATEMENT_TIMEOUT": "9"})
    assert config.query_timeout == 2.0  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument, match="--nonsense is not an option"):
        resolve_config(SPEC, {"nonsense": 1}, env={})
    flags = {option.name: option for option in backend_click_options({"oldstore": SPEC})}
    assert not flags["query_timeout"].hidden and flags["statement_timeout"].hidden


def test_old_keys_in_a_configuration_file_still_configure_the_backend(tmp_path: Path) -> None:
    path = tmp_path / "bfsql.toml"
    path.write_text('[graphs.one]\nbackend = "oldstore"\nstatement_timeout = 3\npool_size = 2\n')
    with pytest.warns(DeprecatedOption, match="pool_size"):
        read = read_config(path, {"oldstore": SPEC}, [])
    assert (read.graphs[0].config.query_timeout, read.graphs[0].config.max_connections) == (3, 2)  # type: ignore
