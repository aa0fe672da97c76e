"""Primitives by family, rules adjacent: elementwise, broadcast, reduce, shape, index, at, linalg
(products), decompositions, special, arrays; shared batch-rule helpers in batching.
"""
