"""reduce primitives (being written)."""

FUNCTIONS: dict = {}
