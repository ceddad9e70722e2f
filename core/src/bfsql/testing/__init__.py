"""Test helpers for backend authors: the conformance suite and the standard graph."""
