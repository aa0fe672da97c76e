"""index primitives (being written)."""

FUNCTIONS: dict = {}
