"""Helpers for tests and benchmarks: a throwaway PostgreSQL server (the HPO graph is in bfsql.testing.hpo)."""
