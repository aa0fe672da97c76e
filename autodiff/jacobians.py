"""Jacobians and Hessians, composed of the basic transforms: jacrev, jacfwd, hessian, hvp.

jacrev vmaps a pullback over the output basis, jacfwd a jvp over the input basis;
hessian is jacfwd of jacrev, hvp a jvp of grad (forward-over-reverse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

from autodiff.core.dtypes import dtype_of, float0
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.distributed import map_basis as distributed_map_basis
from autodiff.forward_ad.transforms import jvp
from autodiff.ops.shape import moveaxis, reshape
from autodiff.ops.structural import shape_of
from autodiff.reverse.transforms import (
    _as_input,
    _fname,
    check_argnums,
    check_callable,
    check_holomorphic_inputs,
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


def map_basis(
    fn: Callable, shapes, dtypes, chunk_size: int | None, out_axes=0, *, where="", **scale
):
    """`vmap(fn)` over the identity basis of the given leaves, `chunk_size` rows at a time.

    Basis rows are made per chunk, and concrete results stream into one array, so
    peak memory is the result plus one chunk's work. With `executor=`, `progress=` or
    `out=` in `scale`, the chunks run as tasks (autodiff/distributed).
    """
    if any(v is not None and v is not False and v != "numpy" for v in scale.values()):
        return distributed_map_basis(
            vmap,
            basis_rows,
            _join_chunks,
            fn,
            shapes,
            dtypes,
            chunk_size,
            out_axes,
            where=where,
            **scale,
        )
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
    "jacrev": "use allow_int=True for float0 (zero) rows, convert it to a float dtype, or leave "
    "it out of argnums (vjp gives integer inputs float0 cotangents)",
    "jacfwd": "convert it to a float dtype, or leave it out of argnums (an integer input has "
    "no tangent)",
}


def _dyn_args(transform: str, fun, args, argnums, holomorphic: bool, allow_int: bool = False):
    """The positions `argnums` names and the arguments there, checked as JAX does: complex
    with `holomorphic`; else float (jacfwd) or float/complex (jacrev; integers with
    `allow_int`)."""
    fname = _fname(fun)
    nums = check_argnums(argnums, len(args), fname)
    if holomorphic:
        check_holomorphic_inputs(transform, args, nums, fname)
    elif not allow_int:
        check_inexact_inputs(transform, args, nums, fname, _INTEGER_HINTS[transform])
    if transform == "jacfwd" and not holomorphic:
        for i in nums:
            for x in tree_flatten(args[i])[0]:
                dt = dtype_of(_as_input(x, f"argument {i} of {fname}"))
                if dt.kind == "c":
                    raise TypeError(
                        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                        f"np.floating), but got {dt.name} (argument {i} of {fname}). For "
                        "holomorphic differentiation, pass holomorphic=True. For differentiation "
                        "of non-holomorphic functions involving complex inputs, use jacrev (for "
                        "a real output) or jvp directly."
                    )
    return nums, tuple(args[i] for i in nums)


def _check_outputs(transform: str, outs, holomorphic: bool, fname: str) -> None:
    """jacrev: real outputs unless `holomorphic` (then complex); jacfwd: complex outputs with
    `holomorphic` (TypeError in JAX's words)."""
    for o in outs:
        dt = dtype_of(o)
        if holomorphic and dt.kind != "c":
            raise TypeError(
                f"{transform} with holomorphic=True requires outputs with complex dtype, but got "
                f"{dt.name} (an output of {fname})."
            )
        if transform == "jacrev" and not holomorphic and dt.kind == "c":
            raise TypeError(
                "jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {dt.name} (an output of {fname}). For holomorphic "
                "differentiation, pass holomorphic=True. For differentiation of non-holomorphic "
                "functions involving complex outputs, use vjp directly (or differentiate the "
                "real and imaginary parts)."
            )


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
    allow_int: bool = False,
    chunk_size: int | None = None,
    executor=None,
    progress=False,
    out: str = "numpy",
) -> Callable:
    """Jacobian of `fun` by reverse mode: result leaves have shape `out.shape + in.shape`.

    One forward pass records the graph; the pullback is then vmapped over the
    output basis (in chunks of `chunk_size` rows to bound memory). Outputs must be real
    unless `holomorphic=True` (then inputs and outputs are complex); complex inputs of a
    real function get JAX's convention (the rows are `grad`'s). `allow_int` gives integer
    inputs float0 Jacobian blocks.

    `executor=` (a `dask.distributed.Client` or a `concurrent.futures.Executor`) runs each
    chunk of rows as a task, which records the forward pass again; `progress=True` shows a
    progress bar (a callable gets `(done, total)` chunks); `out="dask"` (with a Dask client)
    returns Dask arrays whose blocks stay on the workers. See the guide "Scaling out".

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """

    check_callable(fun, "jacrev")
    result_type = out  # ("out" below is the function's output)

    @wraps(fun)
    def jacfun(*args, **kwargs):
        nums, dyn = _dyn_args("jacrev", fun, args, argnums, holomorphic, allow_int)
        in_flat, in_def = tree_flatten(dyn)
        in_flat = [_as_input(x) for x in in_flat]

        def f_flat(*xs):
            return fun(*_substitute(args, nums, tree_unflatten(in_def, xs)), **kwargs)

        # The plain transpose (no conjugation): rows of the Jacobian J itself.
        result = pullback(f_flat, in_flat, has_aux, conjugate=False)
        out, f_pullback = result[0], result[1]
        out_flat, out_def = tree_flatten(out)
        _check_outputs("jacrev", out_flat, holomorphic, _fname(fun))
        out_shapes = [tuple(shape_of(o)) for o in out_flat]
        if executor is None:
            rows = lambda *r: f_pullback(tree_unflatten(out_def, r))
        else:  # (a recorded graph does not travel: each task records the forward pass again)
            rows = lambda *r: pullback(f_flat, in_flat, has_aux, conjugate=False)[1](
                tree_unflatten(out_def, r)
            )
        cts = map_basis(
            rows,
            out_shapes,
            [dtype_of(o) for o in out_flat],
            chunk_size,
            where="jacrev",
            executor=executor,
            progress=progress,
            out=result_type,
        )
        in_shapes = [tuple(shape_of(x)) for x in in_flat]
        # cts[i] has shape (m, *in_shape_i), its rows ordered by output leaf.
        per_out = [[] for _ in out_flat]
        for ct, in_shape in zip(cts, in_shapes):
            for j, block in enumerate(row_blocks(ct, out_shapes)):
                if dtype_of(block) == float0:  # (an integer input, with allow_int)
                    per_out[j].append(np.zeros(out_shapes[j] + in_shape, float0))
                elif result_type == "dask":  # (Dask arrays: reshaped lazily)
                    per_out[j].append(block.reshape(out_shapes[j] + in_shape))
                else:
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
    executor=None,
    progress=False,
) -> Callable:
    """Jacobian of `fun` by forward mode: result leaves have shape `out.shape + in.shape`.

    The JVP is vmapped over the input basis (in chunks of `chunk_size` columns). Inputs
    must be real unless `holomorphic=True` (then inputs and outputs are complex).
    `executor=` runs each chunk as a task, `progress=True` shows a progress bar (as jacrev).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.jacfwd(lambda x: anp.sin(x))(np.array([0.0, 0.0]))
        array([[1., 0.],
               [0., 1.]])
    """

    check_callable(fun, "jacfwd")

    @wraps(fun)
    def jacfun(*args, **kwargs):
        nums, dyn = _dyn_args("jacfwd", fun, args, argnums, holomorphic)
        in_flat, in_def = tree_flatten(dyn)
        in_flat = [_as_input(x) for x in in_flat]
        in_shapes = [tuple(shape_of(x)) for x in in_flat]

        def f_flat(*xs):
            return fun(*_substitute(args, nums, tree_unflatten(in_def, xs)), **kwargs)

        def pushforward(*ts):
            return jvp(f_flat, tuple(in_flat), ts, has_aux=has_aux)[1:]

        out_axes = (0, None) if has_aux else (0,)
        results = map_basis(
            pushforward,
            in_shapes,
            [dtype_of(x) for x in in_flat],
            chunk_size,
            out_axes,
            where="jacfwd",
            executor=executor,
            progress=progress,
        )
        t_out = results[0]
        t_flat, out_def = tree_flatten(t_out)
        if holomorphic:
            _check_outputs("jacfwd", t_flat, holomorphic, _fname(fun))
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


def hessian(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
    executor=None,
    progress=False,
) -> Callable:
    """Hessian of scalar `fun`: `jacfwd(jacrev(fun))`, shape `in.shape + in.shape`
    (`holomorphic=True`: of a holomorphic complex `fun`, both Jacobians holomorphic).
    `chunk_size`, `executor` and `progress` apply to the outer jacfwd's columns.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.hessian(lambda x: anp.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    check_callable(fun, "hessian")
    return jacfwd(
        jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
        argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
        chunk_size=chunk_size,
        executor=executor,
        progress=progress,
    )


def hvp(fun: Callable, primals, tangents):
    """Hessian-vector product of scalar `fun` at `primals` along `tangents` (forward-over-reverse).

    Never forms the Hessian: one forward pass of the gradient computation with dual numbers.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.hvp(lambda x: anp.sum(x ** 3), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
        array([6., 0.])
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to hvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}."
        )
    argnums = tuple(range(len(primals)))
    g = grad(fun, argnums=argnums if len(primals) > 1 else 0)
    return jvp(g, tuple(primals), tuple(tangents))[1]
