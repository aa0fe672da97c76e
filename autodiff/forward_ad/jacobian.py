"""jacfwd (jvp vmapped over the input basis) and hessian (jacfwd of jacrev)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

from autodiff.core.dtypes import dtype_of
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.ops.broadcast import shape_of
from autodiff.ops.shape import FUNCTIONS as _shape_ops
from autodiff.reverse.jacobian import (
    _dyn_args,
    _select,
    _substitute,
    jacrev,
    map_basis,
    row_blocks,
)


def jacfwd(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """Jacobian of `fun` by forward mode: result leaves have shape `out.shape + in.shape`.

    The JVP is vmapped over the input basis (in chunks of `chunk_size` columns).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.jacfwd(lambda x: anp.sin(x))(np.array([0.0, 0.0]))
        array([[1., 0.],
               [0., 1.]])
    """
    from autodiff.forward_ad.transforms import jvp
    from autodiff.reverse.transforms import _as_input

    moveaxis, reshape = _shape_ops["moveaxis"], _shape_ops["reshape"]

    @wraps(fun)
    def jacfun(*args):
        nums, dyn = _dyn_args(args, argnums)
        in_flat, in_def = tree_flatten(dyn)
        in_flat = [_as_input(x) for x in in_flat]
        in_shapes = [tuple(shape_of(x)) for x in in_flat]

        def f_flat(*xs):
            return fun(*_substitute(args, nums, tree_unflatten(in_def, xs)))

        def pushforward(*ts):
            return jvp(f_flat, tuple(in_flat), ts, has_aux=has_aux)[1:]

        out_axes = (0, None) if has_aux else (0,)
        results = map_basis(
            pushforward, in_shapes, [dtype_of(x) for x in in_flat], chunk_size, out_axes
        )
        t_out = results[0]
        t_flat, out_def = tree_flatten(t_out)
        per_out = []
        for t in t_flat:  # t: (n, *out_shape)
            out_shape = tuple(shape_of(t))[1:]
            leaves = [
                reshape(moveaxis(block, 0, -1), out_shape + in_shape)
                for block, in_shape in zip(row_blocks(t, in_shapes), in_shapes)
            ]
            per_out.append(_select(tree_unflatten(in_def, leaves), argnums))
        jac = tree_unflatten(out_def, per_out)
        return (jac, results[1]) if has_aux else jac

    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Hessian of scalar `fun`: `jacfwd(jacrev(fun))`, shape `in.shape + in.shape`.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.hessian(lambda x: anp.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)
