"""Primitives by family, each with its rules adjacent (elementwise, reduce, shape, index, ...)."""
