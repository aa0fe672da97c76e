"""Primitives by family, rules adjacent (as JAX's lax; NumPy's composites are in autodiff.numpy):
elementwise (derivatives as formulas), reduce, shape, index, at, products, linalg, special, fft,
cumulative (cumsum, cumprod, linear_recurrence), sorting (argsort, searchsorted, gather, unique)
and correlate; below them all, structural (reshape, transpose, broadcasting and batch axes);
numpy_forms derives the NumPy form of a vjp rule from the rule; series is the truncated Taylor
series arithmetic of the `taylor` rules (jet), and elementwise_taylor holds the elementwise
primitives' (loaded by Taylor mode, autodiff/taylor/). ops imports kernels and core.
"""
