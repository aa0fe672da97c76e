"""Primitives by family, each with its rules adjacent: elementwise, broadcast, reduce, shape, index, linalg.
"""
