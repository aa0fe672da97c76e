"""Jacobians and Hessians, composed of the basic transforms: jacrev, jacfwd, hessian, hvp.

jacrev vmaps a pullback over the output basis, jacfwd a jvp over the input basis;
hessian is jacfwd of jacrev, hvp a jvp of grad (forward-over-reverse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.forward_ad.transforms import jvp
from autodiff.ops.shape import moveaxis, reshape
from autodiff.ops.structural import shape_of
from autodiff.reverse.transforms import (
    _as_input,
    _fname,
    check_argnums,
    check_inexact_inputs,
    grad,
    one_argnum,
    pullback,
)
from autodiff.vmap.transform import _join_chunks, vmap


def basis_rows(shapes: Sequence[tuple], dtypes: Sequence, start: int, stop: int) -> list:
    """Rows start..stop of the identity over all leaves, split by leaf: leaf i gets an array
    of shape (stop - start, *shapes[i]) (the identity rows are numbered across leaves)."""
    out, offset = [], 0
    for shape, dt in zip(shapes, dtypes):
        size = int(np.prod(shape, dtype=np.int64))
        block = np.zeros((stop - start, size), dtype=dt)
        rows = np.arange(max(start, offset), min(stop, offset + size))
        block[rows - start, rows - offset] = 1
        out.append(block.reshape((stop - start,) + tuple(shape)))
        offset += size
    return out


def map_basis(fn: Callable, shapes, dtypes, chunk_size: int | None, out_axes=0):
    """`vmap(fn)` over the identity basis of the given leaves, `chunk_size` rows at a time.

    Basis rows are made per chunk, and concrete results stream into one array, so
    peak memory is the result plus one chunk's work.
    """
    n = sum(int(np.prod(s, dtype=np.int64)) for s in shapes)
    step = n if chunk_size is None or chunk_size >= n else chunk_size
    if step == n:
        return vmap(fn, out_axes=out_axes, axis_size=n)(*basis_rows(shapes, dtypes, 0, n))
    chunks = (
        vmap(fn, out_axes=out_axes)(*basis_rows(shapes, dtypes, start, min(start + step, n)))
        for start in range(0, n, step)
    )
    return _join_chunks(chunks, out_axes, n)


def row_blocks(stacked, shapes: Sequence[tuple]) -> list:
    """Split the leading (row) axis of `stacked` into consecutive blocks, one per leaf shape."""
    blocks, offset = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        blocks.append(stacked[offset : offset + size])
        offset += size
    return blocks


# What the errors suggest for an integer input: neither mode differentiates one.
_INTEGER_HINTS = {
    "jacrev": "convert it to a float dtype, or leave it out of argnums (vjp gives integer "
    "inputs zero cotangents)",
    "jacfwd": "convert it to a float dtype, or leave it out of argnums (an integer input has "
    "no tangent)",
}


def _dyn_args(transform: str, fun, args, argnums):
    """The positions `argnums` names and the arguments there, all float or complex."""
    fname = _fname(fun)
    nums = check_argnums(argnums, len(args), fname)
    check_inexact_inputs(transform, args, nums, fname, _INTEGER_HINTS[transform])
    return nums, tuple(args[i] for i in nums)


def _substitute(args, nums, values):
    call = list(args)
    for i, v in zip(nums, values):
        call[i] = v
    return call


def _select(tree, argnums):
    return tree[0] if one_argnum(argnums) else tree


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """Jacobian of `fun` by reverse mode: result leaves have shape `out.shape + in.shape`.

    One forward pass records the graph; the pullback is then vmapped over the
    output basis (in chunks of `chunk_size` rows to bound memory).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """

    @wraps(fun)
    def jacfun(*args):
        nums, dyn = _dyn_args("jacrev", fun, args, argnums)
        in_flat, in_def = tree_flatten(dyn)
        in_flat = [_as_input(x) for x in in_flat]

        def f_flat(*xs):
            return fun(*_substitute(args, nums, tree_unflatten(in_def, xs)))

        # The plain transpose (no conjugation): rows of the Jacobian J itself.
        result = pullback(f_flat, in_flat, has_aux, conjugate=False)
        out, f_pullback = result[0], result[1]
        out_flat, out_def = tree_flatten(out)
        out_shapes = [tuple(shape_of(o)) for o in out_flat]
        cts = map_basis(
            lambda *r: f_pullback(tree_unflatten(out_def, r)),
            out_shapes,
            [dtype_of(o) for o in out_flat],
            chunk_size,
        )
        in_shapes = [tuple(shape_of(x)) for x in in_flat]
        # cts[i] has shape (m, *in_shape_i), its rows ordered by output leaf.
        per_out = [[] for _ in out_flat]
        for ct, in_shape in zip(cts, in_shapes):
            for j, block in enumerate(row_blocks(ct, out_shapes)):
                per_out[j].append(reshape(block, out_shapes[j] + in_shape))
        jac = tree_unflatten(
            out_def,
            [_select(tree_unflatten(in_def, leaves), argnums) for leaves in per_out],
        )
        return (jac, result[2]) if has_aux else jac

    return jacfun


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

    @wraps(fun)
    def jacfun(*args):
        nums, dyn = _dyn_args("jacfwd", fun, args, argnums)
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


def hvp(fun: Callable, primals, tangents):
    """Hessian-vector product of scalar `fun` at `primals` along `tangents` (forward-over-reverse).

    Never forms the Hessian: one forward pass of the gradient computation with dual numbers.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.hvp(lambda x: anp.sum(x ** 3), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
        array([6., 0.])
    """
    argnums = tuple(range(len(primals)))
    g = grad(fun, argnums=argnums if len(primals) > 1 else 0)
    return jvp(g, tuple(primals), tuple(tangents))[1]
