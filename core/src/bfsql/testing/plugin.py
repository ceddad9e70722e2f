"""The pytest plugin registered through the ``pytest11`` entry point.

It makes the conformance suite's fixtures available to any project that installs
``bfsql[testing]``.
"""
