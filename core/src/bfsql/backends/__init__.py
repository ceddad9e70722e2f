"""Built-in backends: ``memory`` (for tests and examples) and ``sqlite`` (the embedded store)."""
