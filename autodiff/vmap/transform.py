"""The vmap transform: map a function over an axis of its inputs with batch rules, not a loop.

Arguments are JAX's: `in_axes` is an int, None or a tuple with one entry (a pytree prefix)
per positional argument; keyword arguments are always mapped along their axis 0;
`out_axes` is a prefix of the output. Errors are JAX's types and words ("vmap got
inconsistent sizes for array axes to be mapped", "vmap in_axes specification must be a
tree prefix of the corresponding value", ...), naming arguments by their parameter names.
"""

from __future__ import annotations

import collections
import inspect
import reprlib
from collections.abc import Callable
from functools import partial, wraps
from typing import Any

import numpy as np

from autodiff.core.config import checks_leaks
from autodiff.core.errors import invalid_value_error, type_str
from autodiff.core.pytree import (
    keystr,
    prefix_errors,
    tree_flatten,
    tree_flatten_with_path,
    tree_unflatten,
)
from autodiff.core.tensor import Tensor
from autodiff.core.trace import new_trace
from autodiff.distributed import has_dask_array, map_batch, vmap_dask
from autodiff.ops.shape import FUNCTIONS as shape_ops
from autodiff.ops.structural import move_batch_axis, shape_of
from autodiff.vmap.trace import BatchTrace, BatchTracer


def _is_axis(a) -> bool:
    return a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)))


def _is_none(x) -> bool:
    return x is None


def _check_axes_spec(in_axes, out_axes) -> tuple:
    """in_axes and out_axes validated as JAX does at `vmap(...)` time (TypeError)."""
    if isinstance(in_axes, list):  # (JAX canonicalizes a list to a tuple)
        in_axes = tuple(in_axes)
    if not (_is_axis(in_axes) or type(in_axes) is tuple):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {in_axes}."
        )
    for name, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(_is_axis(a) for a in tree_flatten(spec, is_leaf=_is_none)[0]):
            raise TypeError(
                f"vmap {name} must be an int, None, or (nested) container with those types as "
                f"leaves, but got {spec}."
            )
    return in_axes


def broadcast_prefix(prefix, tree, name: str, report=None) -> list:
    """The axis of each leaf of `tree`, from the pytree prefix `prefix` (whose None entries
    are leaves); ValueError in JAX's words when it is not a prefix (its details computed on
    `report`, a (prefix, tree) pair, when given)."""
    axes, axes_def = tree_flatten(prefix, is_leaf=_is_none)
    try:
        subtrees = axes_def.flatten_up_to(tree)
    except ValueError:
        p, t = report if report is not None else (prefix, tree)
        errors = prefix_errors(p, t, name, is_leaf=_is_none)
        details = "\n  ".join(errors) if errors else f"{axes_def} for {tree_flatten(tree)[1]}"
        raise ValueError(
            f"{name} specification must be a tree prefix of the corresponding value;\n"
            f"  Mismatch details ({max(len(errors), 1)} found):\n  {details}"
        ) from None
    out = []
    for a, sub in zip(axes, subtrees):
        out.extend([a] * len(tree_flatten(sub)[0]))
    return out


def _describe_leaves(fun, args, kwargs) -> list[str]:
    """JAX's names of the leaves of (args, kwargs): `argument x`, `argument b[0]`,
    `args[2]` (beyond the named parameters), `kwargs['a3']`."""
    try:
        params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        params = None
    names = []
    for path, _ in tree_flatten_with_path((args, kwargs))[0]:
        top, rest = path[0].idx, path[1:]
        if top == 1:
            names.append(f"kwargs{keystr(rest)}")
            continue
        i = rest[0].idx
        if params is None or i >= len(params):
            names.append(f"args{keystr(rest)}")
        else:
            names.append(f"argument {params[i]}{keystr(rest[1:])}")
    return names


def _size_error(names, values, axes, sizes, axis_size) -> ValueError:
    """JAX's "inconsistent sizes" error, most common size first."""
    counts = collections.Counter(s for s in sizes if s is not None).most_common()

    def first(size):
        i = next(k for k, s in enumerate(sizes) if s == size)
        return f"axis {axes[i]} of {names[i]} of type {type_str(values[i])}"

    lines = []
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};")
    for rank, (size, count) in enumerate(counts):
        if count == 1:
            lines.append(f"  * one axis had size {size}: {first(size)};")
        else:
            which = "most" if rank == 0 else "some"
            lines.append(f"  * {which} axes ({count} of them) had size {size}, e.g. {first(size)};")
    msg = "vmap got inconsistent sizes for array axes to be mapped:\n" + "\n".join(lines)
    return ValueError(msg[:-1])


def _mapped_axes(fun, fname, args, kwargs, leaves, axes, axis_size):
    """The normalized axis of each leaf (None: unmapped) and the common mapped size; Python
    scalars among the mapped leaves become arrays in `leaves`. Errors in JAX's words."""
    names = None
    norm_axes, sizes = [], []
    for i, (x, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            norm_axes.append(None)
            sizes.append(None)
            continue
        if not isinstance(x, (Tensor, np.ndarray)):
            if not isinstance(x, (bool, int, float, complex, np.generic)):
                names = names or _describe_leaves(fun, args, kwargs)
                raise invalid_value_error(x, f"{names[i]} (mapped along axis {ax})")
            x = leaves[i] = np.asarray(x)
        shape = tuple(shape_of(x))
        if not -len(shape) <= ax < len(shape):
            names = names or _describe_leaves(fun, args, kwargs)
            raise ValueError(
                f"vmap was requested to map its argument along axis {ax}, which implies that "
                f"its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only "
                f"{len(shape)} (its shape is {shape}): {names[i]} of {fname}."
            )
        norm_axes.append(int(ax) % len(shape))
        sizes.append(shape[int(ax) % len(shape)])
    distinct = {s for s in sizes if s is not None}
    if axis_size is not None:
        distinct.add(axis_size)
    if not distinct:
        raise ValueError(
            "vmap must have at least one non-None value in in_axes or axis_size must be "
            f"specified (the mapped size of {fname} is otherwise unknown)."
        )
    if len(distinct) > 1:
        names = names or _describe_leaves(fun, args, kwargs)
        raise _size_error(names, leaves, norm_axes, sizes, axis_size)
    return norm_axes, distinct.pop()


def _check_tuple_length(in_axes, args, kwargs) -> None:
    """A tuple in_axes has one entry per positional argument (ValueError in JAX's words)."""
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        msg = (
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got len(in_axes)="
            f"{len(in_axes)}, len(args)={len(args)}."
        )
        if kwargs:
            msg += (
                f" Note that the function was called with keyword arguments {list(kwargs)},"
                " which the entries of a tuple in_axes never correspond to: keyword "
                "arguments are always mapped along their leading axis (axis 0). If that is "
                "the intended mapping, make in_axes correspond to the positional arguments "
                "only; otherwise pass the arguments positionally, or bind unmapped keyword "
                "arguments with functools.partial before applying vmap."
            )
        raise ValueError(msg)


_UNSET: Any = object()  # (in_dims/out_dims not given: None is a value of theirs)


def _torch_alias(value, alias, name: str, alias_name: str):
    """`in_axes` given as torch's `in_dims` (or `out_axes` as `out_dims`); not both."""
    if alias is _UNSET:
        return value
    if value != 0:
        raise TypeError(f"vmap() got both {name} and {alias_name} (torch's name for {name})")
    return alias


def vmap(
    fun: Callable,
    in_axes=0,
    out_axes=0,
    axis_name=None,
    axis_size: int | None = None,
    spmd_axis_name=None,
    chunk_size: int | None = None,
    executor=None,
    progress=False,
    *,
    in_dims=_UNSET,
    out_dims=_UNSET,
) -> Callable:
    """Vectorise `fun` over an axis of its arguments.

    Arguments:
        fun: a function of arrays / pytrees of arrays.
        in_axes: for each positional argument, the axis to map (an int, negative allowed) or
            None to broadcast it; an int applies to all; a tuple with one pytree prefix per
            positional argument. Keyword arguments are mapped along their axis 0.
        out_axes: where the mapped axis goes in each output (int, None for outputs that do
            not depend on the mapped inputs, or a pytree prefix).
        axis_name: a name for the mapped axis (JAX's; it appears in error messages).
        axis_size: the mapped size, needed only when no argument is mapped.
        spmd_axis_name: JAX's device-sharding annotation; refused (one CPU device here).
        chunk_size: process the batch in chunks of this size to bound memory.
        executor: run each chunk as a task of a `dask.distributed.Client` or a
            `concurrent.futures.Executor` (see the guide "Scaling out with Dask").
        progress: True for a progress bar over the chunks, or a callable `(done, total)`.
        in_dims, out_dims: torch's names of `in_axes` and `out_axes` (`torch.vmap(f,
            in_dims=...)`); `autodiff.func.vmap` is torch.func's vmap in full.

    Over a `dask.array.Array` mapped along its chunked axis, the result is a Dask array
    built blockwise (nothing is computed until asked).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> dot = ad.vmap(lambda row, w: anp.sum(row * w), in_axes=(0, None))
        >>> dot(np.ones((3, 2)), np.array([1.0, 2.0]))
        array([3., 3., 3.])
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {reprlib.repr(fun)}: vmap maps one.")
    in_axes = _torch_alias(in_axes, in_dims, "in_axes", "in_dims")
    out_axes = _torch_alias(out_axes, out_dims, "out_axes", "out_dims")
    if spmd_axis_name is not None:
        raise ValueError(
            f"vmap(spmd_axis_name={spmd_axis_name!r}) shards the mapped axis over a device mesh; "
            "autodiff runs on one CPU device and has no meshes. Remove spmd_axis_name: the "
            "result is the same without it."
        )
    in_axes = _check_axes_spec(in_axes, out_axes)
    fname = getattr(fun, "__name__", type(fun).__name__)
    # What a task runs on its chunk (autodiff/distributed): this vmap without scale-out.
    plain = partial(vmap, fun, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)

    @wraps(fun)
    def vmapped(*args, **kwargs):
        _check_tuple_length(in_axes, args, kwargs)
        tree = (args, kwargs)
        leaves, treedef = tree_flatten(tree)
        axes = broadcast_prefix((in_axes, 0), tree, "vmap in_axes", report=(in_axes, args))
        if executor is not None or progress or has_dask_array(leaves):
            scale = {"executor": executor, "progress": progress, "axis_size": axis_size}
            return _scale_out(
                plain, fname, (args, kwargs), leaves, treedef, axes, chunk_size, scale
            )
        _check_some_argument(leaves, axis_size, args, kwargs)
        norm_axes, size = _mapped_axes(fun, fname, args, kwargs, leaves, axes, axis_size)
        once = partial(_map_once, fun, fname, axis_name, out_axes, treedef, norm_axes)
        if chunk_size is not None and size > chunk_size:
            chunks = (
                once(
                    _slice_leaves(leaves, norm_axes, start, chunk_size),
                    min(chunk_size, size - start),
                )
                for start in range(0, size, chunk_size)
            )
            return _join_chunks(chunks, out_axes, size)
        return once(leaves, size)

    doc = (
        f"Vectorized version of {fname}. Takes similar arguments as {fname} but with additional "
        f"array axes over which {fname} is mapped."
    )
    if fun.__doc__:
        doc += "\n\nOriginal documentation:\n\n" + fun.__doc__
    vmapped.__doc__ = doc
    return vmapped


def _check_some_argument(leaves: list, axis_size, args, kwargs) -> None:
    """Some argument holds an array, or axis_size gives the mapped size."""
    if not leaves and axis_size is None:
        raise ValueError(
            "vmap wrapped function must be passed at least one argument containing an array "
            f"or axis_size must be specified, got empty *args={args} and **kwargs={kwargs}"
        )


@checks_leaks("vmap")
def _map_once(fun, fname, axis_name, out_axes, treedef, norm_axes, leaves, size):
    """`fun` run once under a BatchTrace of `size` on the flat `leaves` (mapped along
    `norm_axes`), its outputs' mapped axes moved to `out_axes`."""
    with new_trace(BatchTrace, size, axis_name) as trace:
        wrapped = [
            x if ax is None else BatchTracer(x, trace, ax) for x, ax in zip(leaves, norm_axes)
        ]
        call_args, call_kwargs = tree_unflatten(treedef, wrapped)
        out = fun(*call_args, **call_kwargs)
    out_leaves, out_def = tree_flatten(out)
    for o in out_leaves:
        if not isinstance(o, (Tensor, np.ndarray, bool, int, float, complex, np.generic)):
            raise TypeError(
                f"Output from batched function {reprlib.repr(o)} with type {type(o)} is not "
                f"a valid JAX type: {fname} must return arrays, scalars or Tensors (or "
                "pytrees of them) under vmap."
            )
    o_axes = broadcast_prefix(out_axes, out, "vmap out_axes")
    named = f" (axis_name={axis_name})" if axis_name is not None else ""
    results = [
        _output_with_axis(o, ax, trace, size, (out, k), fname, named)
        for k, (o, ax) in enumerate(zip(out_leaves, o_axes))
    ]
    return tree_unflatten(out_def, results)


def _output_with_axis(o, ax, trace, size: int, where: tuple, fname: str, named: str):
    """An output leaf with its mapped axis at `ax` (an unbatched one broadcast to `size`), or
    as it is for `ax` None, which a batched output cannot have. `where` is `(output, k)`:
    the output's k-th leaf, named in errors."""
    batched = isinstance(o, BatchTracer) and o._trace is trace
    if ax is None:
        if batched:
            raise ValueError(
                f"at vmap out_axes{_leaf_path(*where)}, got axis spec None but output was "
                f"batched on axis {o._bdim}: vmap has mapped output{named} but out_axes "
                "is None. An output that depends on a mapped input needs an out_axes."
            )
        return o
    value = o._value if batched else (o if isinstance(o, (Tensor, np.ndarray)) else np.asarray(o))
    ndim = len(shape_of(value)) + (0 if batched else 1)
    if not -ndim <= ax < ndim:
        raise ValueError(
            f"axis {ax} is out of bounds for an output of rank {ndim} with its mapped "
            f"axis (vmap out_axes{_leaf_path(*where)}={ax}; the output of {fname} has rank "
            f"{ndim - 1})."
        )
    return move_batch_axis(value, o._bdim if batched else None, ax % ndim, size)


def _leaf_path(tree, k: int) -> str:
    """The path of the k-th leaf of `tree`, as `keystr` writes it (`[0]['w']`)."""
    return keystr(tree_flatten_with_path(tree)[0][k][0])


def _scale_out(plain, fname, call, leaves, treedef, axes, chunk_size, scale):
    """vmap with `executor=`/`progress=`, or over Dask arrays: autodiff/distributed runs the
    chunks (`plain` makes this vmap without them; `call` is `(args, kwargs)`)."""
    fun, out_axes, axis_size = plain.args[0], plain.keywords["out_axes"], scale.pop("axis_size")
    if has_dask_array(leaves):
        return vmap_dask(plain, leaves, treedef, axes, out_axes, chunk_size, fname=fname, **scale)
    args, kwargs = call
    _check_some_argument(leaves, axis_size, args, kwargs)
    norm, size = _mapped_axes(fun, fname, args, kwargs, leaves, axes, axis_size)
    return map_batch(
        plain, _join_chunks, leaves, treedef, norm, size, chunk_size, out_axes, **scale
    )


def _slice_leaves(leaves, axes, start: int, length: int) -> list:
    return [
        x if ax is None else x[(slice(None),) * ax + (slice(start, start + length),)]
        for x, ax in zip(leaves, axes)
    ]


def _join_chunks(chunks, out_axes, size: int):
    """Join per-chunk outputs along each output's mapped axis.

    Concrete arrays are copied into one preallocated result as each chunk arrives, so
    peak memory is the result plus one chunk; traced outputs are concatenated.
    """
    out_def = axes = None
    joined: list = []
    offset = 0
    for chunk in chunks:
        flat, treedef = tree_flatten(chunk)
        if out_def is None:
            out_def = treedef
            axes = [
                None if a is None else a % len(shape_of(f))
                for a, f in zip(broadcast_prefix(out_axes, chunk, "vmap out_axes"), flat)
            ]
            joined = [_new_result(f, a, size) for f, a in zip(flat, axes)]
        length = None
        for j, (piece, ax) in enumerate(zip(flat, axes)):
            if ax is None:
                continue
            length = shape_of(piece)[ax]
            if isinstance(joined[j], np.ndarray) and isinstance(piece, np.ndarray):
                joined[j][(slice(None),) * ax + (slice(offset, offset + length),)] = piece
            else:
                if isinstance(joined[j], np.ndarray):  # a traced chunk after concrete ones
                    joined[j] = [joined[j][(slice(None),) * ax + (slice(0, offset),)]]
                joined[j].append(piece)
        offset += length or 0
    results = []
    for value, ax in zip(joined, axes):
        if isinstance(value, list):
            value = shape_ops["concatenate"](value, axis=ax)
        results.append(value)
    return tree_unflatten(out_def, results)


def _new_result(first, axis, size):
    """A preallocated array for a concrete mapped output, or a list collecting traced ones."""
    if axis is None:
        return first
    if type(first) is np.ndarray:
        shape = list(first.shape)
        shape[axis] = size
        return np.empty(shape, first.dtype)
    return []
