"""Primitives by family, rules adjacent: elementwise, broadcast, reduce, shape, index, at,
products, linalg, special, arrays; shared batch-rule helpers in batching.
"""
