"""Helpers for tests and benchmarks: a throwaway PostgreSQL server and the HPO graph as a bundle."""
