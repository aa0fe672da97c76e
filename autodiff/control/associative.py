"""`associative_scan`: the prefix combination of an associative function in log2(n) steps."""

from __future__ import annotations

from collections.abc import Callable

import autodiff.numpy as anp
from autodiff.control.common import _check_callable
from autodiff.core.pytree import tree_flatten, tree_unflatten


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """The running combination of `elems` along `axis` by the associative `fn` (JAX's
    lax.associative_scan): element i of the result is `fn(...fn(fn(e0, e1), e2)..., ei)`.
    `elems` is a pytree of arrays of one length along `axis`; `fn` takes and returns such
    pytrees and is called on whole slices (so it must work elementwise along `axis`). With
    `reverse`, the combination runs from the last element to the first.

    Each of the ceil(log2(n)) steps combines every element with the one `2**k` before it
    (all in one call of `fn`); every transform applies through the slicing and `fn`.

    Example:
        >>> import numpy as np, operator, autodiff as ad
        >>> ad.associative_scan(operator.add, np.arange(1.0, 6.0))
        array([ 1.,  3.,  6., 10., 15.])
        >>> ad.associative_scan(operator.mul, np.arange(1.0, 5.0), reverse=True)
        array([24., 24., 12.,  4.])
    """
    _check_callable("associative_scan", "fn argument", fn)
    flat, tree = tree_flatten(elems)
    if not flat:
        return elems
    flat = [anp.asarray(x) for x in flat]
    ndim = flat[0].ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    n = flat[0].shape[axis]
    if any(x.shape[axis] != n for x in flat):
        raise ValueError(
            "Array inputs to associative_scan must have the same first dimension. "
            f"(saw: {[tuple(x.shape) for x in flat]})"
        )
    if reverse:
        flat = [anp.flip(x, axis) for x in flat]

    def part(x, start, stop):
        return x[(slice(None),) * axis + (slice(start, stop),)]

    step = 1
    while step < n:  # (Hillis-Steele: after step 2**k, element i combines the 2**(k+1) up to it)
        earlier = tree_unflatten(tree, [part(x, 0, n - step) for x in flat])
        later = tree_unflatten(tree, [part(x, step, n) for x in flat])
        combined, out_tree = tree_flatten(fn(earlier, later))
        if out_tree != tree:
            raise TypeError(
                f"associative_scan: fn must return the structure of its inputs {tree}, "
                f"got {out_tree}"
            )
        flat = [anp.concatenate([part(x, 0, step), c], axis=axis) for x, c in zip(flat, combined)]
        step *= 2
    if reverse:
        flat = [anp.flip(x, axis) for x in flat]
    return tree_unflatten(tree, flat)


__all__ = ["associative_scan"]
