"""Reliability tests of the embedded sqlite backend; the ``figures`` fixture comes from bfsql's pytest plugin."""
