"""The bfsql conformance suite against the {{ cookiecutter.name }} backend, loaded with the standard graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from bfsql import get_backends
from bfsql.testing import BackendConformance
from conftest import store_config

from {{ cookiecutter.__module }} import {{ cookiecutter.__backend_class }}


class Test{{ cookiecutter.__backend_class }}(BackendConformance):
    # Declared here, checks for capabilities the backend lacks are not even collected (bfsql's pytest
    # plugin, loaded by pyproject.toml, lists them at the end of the run).
    capabilities = {{ cookiecutter.__backend_class }}.capabilities

    @pytest.fixture
    def backend(self, standard_bundle: Path) -> {{ cookiecutter.__backend_class }}:
        # Built as `bfsql serve` builds it: the registered factory, with the tests' configuration.
        return get_backends()["{{ cookiecutter.name }}"].factory(store_config(standard_bundle))
