"""The installed version of bfsql (a module of its own, so that any layer may name it without importing the rest)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("bfsql")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
