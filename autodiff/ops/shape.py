"""shape primitives (being written)."""

FUNCTIONS: dict = {}
