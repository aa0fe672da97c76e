"""NumPy forms of the products' rules: what the reverse engine runs on plain arrays."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def matmul_vjp(prim, rule: Callable) -> Callable:
    """matmul's vjp on plain arrays: for two matrices of one float or complex dtype, `prim`'s
    impl (matmul's, as it is at the call) on NumPy's transposed views directly; any other
    operands through `rule` (the vjp written with autodiff's ops).

    Example:
        >>> from types import SimpleNamespace
        >>> vjp = matmul_vjp(SimpleNamespace(impl=np.matmul), rule=None)
        >>> a, b = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
        >>> ga, gb = vjp(np.ones((2, 4)), None, a, b)
        >>> ga.tolist(), gb.shape
        ([[6.0, 22.0, 38.0], [6.0, 22.0, 38.0]], (3, 4))
    """

    def vjp(g, out, a, b, *, needs=(True, True)):
        if (
            type(g) is np.ndarray
            and type(a) is np.ndarray
            and type(b) is np.ndarray
            and a.ndim == 2
            and b.ndim == 2
            and g.dtype == a.dtype == b.dtype
            and a.dtype.kind in "fc"
        ):
            product = prim.impl
            return (product(g, b.T) if needs[0] else None, product(a.T, g) if needs[1] else None)
        return rule(g, a, b, out=out, needs=needs)

    return vjp
