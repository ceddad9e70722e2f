"""How the tests open the {{ cookiecutter.name }} backend: one place for its configuration.

When you change ``{{ cookiecutter.__config_class }}`` (a DSN or a URL instead of a bundle, say),
change :func:`store_config`: the conformance suite (through the registered factory) and the
reliability tests (through ``bfsql serve`` with a configuration file) both follow it.
"""

from __future__ import annotations

from pathlib import Path

from {{ cookiecutter.__module }} import {{ cookiecutter.__config_class }}


def store_config(bundle: Path) -> {{ cookiecutter.__config_class }}:
    """The backend's configuration for a store holding the graph of ``bundle`` (a JSONL graph bundle)."""
    return {{ cookiecutter.__config_class }}(bundle=bundle)
