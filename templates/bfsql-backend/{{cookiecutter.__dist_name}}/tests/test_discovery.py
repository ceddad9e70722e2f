"""bfsql finds the backend through the entry point of this distribution."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bfsql import BackendConfig, get_backends
from bfsql.testing import reset_plugins
from conftest import store_config

from {{ cookiecutter.__module }} import {{ cookiecutter.__config_class }}


def test_get_backends_has_the_backend() -> None:
    reset_plugins()
    spec = get_backends()["{{ cookiecutter.name }}"]
    assert spec.config_model is {{ cookiecutter.__config_class }}
    assert spec.plugin == "{{ cookiecutter.name }}"


async def test_the_config_uses_the_options_every_backend_shares(standard_bundle: Path) -> None:
    """``description`` comes from bfsql.BackendConfig, and describe_schema shows it (else the default)."""
    assert issubclass({{ cookiecutter.__config_class }}, BackendConfig)
    factory = get_backends()["{{ cookiecutter.name }}"].factory
    configured = store_config(standard_bundle).model_copy(update={"description": "Genes and diseases."})
    assert await factory(configured).graph_description() == "Genes and diseases."
    default = await factory(store_config(standard_bundle)).graph_description()
    assert standard_bundle.name in default


def test_bfsql_plugins_lists_the_plugin() -> None:
    script = shutil.which("bfsql", path=str(Path(sys.executable).parent))
    assert script is not None, "the bfsql script is not installed next to this Python"
    output = subprocess.run([script, "plugins", "--json"], check=True, capture_output=True, text=True).stdout
    entry = next((p for p in json.loads(output) if p["name"] == "{{ cookiecutter.name }}"), None)
    assert entry is not None, output
    assert "error" not in entry, entry
    assert entry["distribution"] == "{{ cookiecutter.__dist_name }}"
    assert "register_backends" in entry["hooks"]
