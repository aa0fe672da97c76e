"""linalg primitives (being written)."""

FUNCTIONS: dict = {}
