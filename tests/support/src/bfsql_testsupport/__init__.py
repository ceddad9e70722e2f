"""The repository's test support: CI-only helpers that the ``bfsql`` wheel does not ship.

Real servers for the tests (embedded PostgreSQL, free ports, services that CI must have),
the HPO converter, fault proxies, outage scenarios and the load drivers of
docs/reliability.md. Installed by the nox sessions (``pip install -e tests/support``); a
backend's own conformance and reliability checks come from :mod:`bfsql.testing`.
"""
