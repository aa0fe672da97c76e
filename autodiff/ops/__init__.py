"""Primitives by family, rules adjacent: elementwise (derivatives as formulas), reduce, shape,
index, at, products, linalg, special, arrays; below them all, structural (reshape, transpose,
broadcasting and batch axes); numpy_forms derives the NumPy form of a vjp rule from the rule.
"""
