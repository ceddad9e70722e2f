"""bfsql finds the backend through the entry point of this distribution."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bfsql import get_backends
from bfsql.testing import reset_plugins

from {{ cookiecutter.__module }} import {{ cookiecutter.__config_class }}


def test_get_backends_has_the_backend() -> None:
    reset_plugins()
    spec = get_backends()["{{ cookiecutter.name }}"]
    assert spec.config_model is {{ cookiecutter.__config_class }}
    assert spec.plugin == "{{ cookiecutter.name }}"


def test_bfsql_plugins_lists_the_plugin() -> None:
    script = shutil.which("bfsql", path=str(Path(sys.executable).parent))
    assert script is not None, "the bfsql script is not installed next to this Python"
    output = subprocess.run([script, "plugins", "--json"], check=True, capture_output=True, text=True).stdout
    entry = next((p for p in json.loads(output) if p["name"] == "{{ cookiecutter.name }}"), None)
    assert entry is not None, output
    assert "error" not in entry, entry
    assert entry["distribution"] == "{{ cookiecutter.__dist_name }}"
    assert "register_backends" in entry["hooks"]
