"""Dask arrays in, Dask arrays out: vmap over a Dask array built blockwise, and Jacobian rows
left on a cluster's workers (`jacrev(..., out="dask")`).

`vmap(f)` over a Dask array along its mapped axis computes nothing: it is one
`dask.array.apply_gufunc` (blockwise: one task per chunk of the mapped axis, every other axis
of the mapped arrays in one chunk, the mapped axis being the gufunc's loop axis), whose tasks
run the plain vmapped `f` on a block. The outputs' shapes and dtypes come from `f` run locally
on a batch of size zero (zeros stand in for Dask arrays that are not mapped). Mapped NumPy
arrays are chunked like the Dask ones; unmapped arrays are whole in every task.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.distributed import executors as ex


def is_dask_array(x) -> bool:
    """Whether `x` is a `dask.array.Array` (never imports Dask: none exists before it is)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(x, module.Array)


def has_dask_array(leaves) -> bool:
    return "dask.array" in sys.modules and any(is_dask_array(x) for x in leaves)


class _Block:
    """One block of the mapped axis: the plain vmapped function on the blocks of the mapped
    arrays (loop axis first, moved back to its place) and the whole unmapped arrays."""

    def __init__(self, make_vmapped, treedef, kinds, constants, out_axes):
        self.make_vmapped, self.treedef = make_vmapped, treedef
        self.kinds, self.constants, self.out_axes = kinds, constants, out_axes
        self.token = os.urandom(16).hex()

    def __dask_tokenize__(self):
        return self.token

    def __reduce__(self):  # (through autodiff's pickler: Tensors as values, tracers refused)
        state = (self.make_vmapped, self.treedef, self.kinds, self.constants, self.out_axes)
        return _rebuild_block, (ex.Packed(state, "vmap over a Dask array"),)

    def __call__(self, *blocks):
        it = iter(blocks)
        leaves, length = [], None
        for (kind, ax, tensor), const in zip(self.kinds, self.constants):
            if kind == "const":
                leaves.append(const)
                continue
            value = next(it)
            if kind == "mapped":
                length = value.shape[0]
                value = np.moveaxis(value, 0, ax)
            leaves.append(Tensor(value) if tensor else value)
        args, kwargs = tree_unflatten(self.treedef, leaves)
        out = tree_flatten(self.make_vmapped(axis_size=length)(*args, **kwargs))[0]
        res = [
            np.moveaxis(np.asarray(o._value if isinstance(o, Tensor) else o), a, 0)
            for o, a in zip(out, self.out_axes)
        ]
        return tuple(res) if len(res) > 1 else res[0]


def _rebuild_block(state) -> _Block:
    return _Block(*ex.unpack(state))


def _call(*blocks, fn):
    return fn(*blocks)


def _normalize(x, ax, i: int, fname: str) -> int:
    ndim = len(x.shape)
    if not -ndim <= ax < ndim:
        raise ValueError(
            f"vmap was requested to map its argument along axis {ax}, which implies that its "
            f"rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only {ndim} (its "
            f"shape is {tuple(x.shape)}): leaf {i} of the arguments of {fname}."
        )
    return ax % ndim


def _as_array(x, where: str):
    """A NumPy array for an array leaf (Tensors as their values); None for other leaves."""
    if isinstance(x, Tensor):
        ex.check_shareable(x, where)
        return np.asarray(x._value)
    if isinstance(x, np.ndarray):
        return x
    return None


def _probe_leaf(x, ax):
    """A stand-in with the mapped axis of length 0 (mapped) or zeros (an unmapped Dask array),
    without memory: a broadcast view."""
    shape = list(x.shape)
    if ax is not None:
        shape[ax] = 0
    if is_dask_array(x):
        return np.broadcast_to(np.zeros((), x.dtype), tuple(shape))
    if ax is None:
        return x
    return x[(slice(None),) * ax + (slice(0, 0),)]


def _mapped_size(leaves, norm, where: str) -> int:
    """The common length of the mapped axes (ValueError, as vmap's, when they differ)."""
    sizes = {}
    for i, (x, ax) in enumerate(zip(leaves, norm)):
        if ax is None:
            continue
        size = x.shape[ax]
        if isinstance(size, float) and np.isnan(size):
            raise ValueError(
                f"{where}: leaf {i} has unknown chunk sizes along its mapped axis {ax}; call "
                "x.compute_chunk_sizes() first."
            )
        sizes[i] = int(size)
    if not sizes:
        raise ValueError(
            f"{where}: no argument is mapped (in_axes is None for every one); map a Dask array "
            "along its chunked axis."
        )
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"leaf {i}: {s}" for i, s in sizes.items())
        raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped: {detail}.")
    return next(iter(sizes.values()))


def _output_spec(out, out_axes, where: str):
    """(structure, mapped axes, gufunc output signature, core sizes, meta) of the outputs
    from a probe's output (whose mapped axes have length 0)."""
    out_leaves, out_def = tree_flatten(out)
    o_axes = ex.prefix_axes(out_axes, out)
    if any(a is None for a in o_axes):
        raise NotImplementedError(
            f"{where}: an output with out_axes=None (not mapped) has no blocks to be built "
            "from; return it mapped (out_axes=0) and take one row."
        )
    o_axes = [a % np.ndim(o) for a, o in zip(o_axes, out_leaves)]
    signature, metas = [], []
    sizes: dict[str, int] = {}
    for k, (o, a) in enumerate(zip(out_leaves, o_axes)):
        o = np.asarray(o._value if isinstance(o, Tensor) else o)
        shape = list(o.shape)
        del shape[a]
        names = [f"o{k}_{j}" for j in range(len(shape))]
        sizes.update(zip(names, shape))
        signature.append("(" + ",".join(names) + ")")
        metas.append(np.empty((0,) * (len(shape) + 1), o.dtype))
    meta = tuple(metas) if len(metas) > 1 else metas[0]
    return out_def, o_axes, ",".join(signature), sizes, meta


def _inputs(leaves, norm, loop_chunks, where: str):
    """The gufunc's arguments (mapped axis first, the other axes in one chunk), each leaf's
    kind for `_Block`, its constants, and the input signature."""
    import dask.array as da

    args, kinds, constants, signature = [], [], [], []
    for i, (x, ax) in enumerate(zip(leaves, norm)):
        if is_dask_array(x):
            arr = x.rechunk(-1) if ax is None else da.moveaxis(x, ax, 0)
        else:
            value = _as_array(x, where)
            if value is None:  # (a Python scalar, None...): a constant of the block function
                kinds.append(("const", None, False))
                constants.append(x)
                continue
            arr = da.from_array(value if ax is None else np.moveaxis(value, ax, 0), chunks=-1)
        if ax is not None:
            arr = arr.rechunk((loop_chunks,) + tuple(-1 for _ in arr.shape[1:]))
        kinds.append(("mapped" if ax is not None else "array", ax, isinstance(x, Tensor)))
        constants.append(None)
        args.append(arr)
        core = arr.ndim - (ax is not None)
        signature.append("(" + ",".join(f"i{i}_{j}" for j in range(core)) + ")")
    return args, kinds, constants, ",".join(signature)


def vmap_dask(
    make_vmapped,
    leaves,
    treedef,
    axes,
    out_axes,
    chunk_size,
    *,
    executor=None,
    progress=False,
    fname: str = "the function",
):
    """`vmap` over arguments among which are Dask arrays: a Dask array (pytree) built
    blockwise along the mapped axis, nothing computed."""
    import dask
    import dask.array as da

    where = f"vmap of {fname} over a Dask array"
    if executor is not None and ex.resolve(executor, "vmap(executor=...): ").kind != "dask":
        raise TypeError(
            f"{where}: the result is a Dask array, computed later by Dask's scheduler; "
            "executor= may only be None or a dask.distributed.Client here."
        )
    if progress:
        raise ValueError(
            f"{where}: progress= reports work that vmap runs, and a Dask array result runs "
            "later: follow its computation with dask.distributed.progress(result.persist()) "
            "or dask.diagnostics.ProgressBar()."
        )
    norm = []
    for i, (x, ax) in enumerate(zip(leaves, axes)):
        if ax is not None and not (is_dask_array(x) or isinstance(x, (np.ndarray, Tensor))):
            raise ValueError(f"{where}: leaf {i} is mapped but is not an array: {type(x)}.")
        norm.append(None if ax is None else _normalize(x, ax, i, fname))
    size = _mapped_size(leaves, norm, where)

    # The loop axis's chunks: chunk_size, else those of the first mapped Dask array.
    if chunk_size is not None:
        step = ex.default_step(size, chunk_size, ex.INLINE, False)
        loop_chunks: tuple = da.core.normalize_chunks((step,), (size,))[0]
    else:
        first = next(
            (i for i, x in enumerate(leaves) if norm[i] is not None and is_dask_array(x)), None
        )
        loop_chunks = leaves[first].chunks[norm[first]] if first is not None else (size,)

    # The output structure, shapes and dtypes: the function on a batch of size zero.
    probe = [
        _probe_leaf(x, ax) if is_dask_array(x) or ax is not None else x
        for x, ax in zip(leaves, norm)
    ]
    p_args, p_kwargs = tree_unflatten(treedef, probe)
    try:
        out = make_vmapped(axis_size=0)(*p_args, **p_kwargs)
    except Exception as e:
        if hasattr(e, "add_note"):
            e.add_note(
                f"(while finding the output shapes of {where}: {fname} ran on a batch of size "
                "0, with zeros for the Dask arrays that are not mapped)"
            )
        raise
    out_def, o_axes, sig_out, sizes_out, meta = _output_spec(out, out_axes, where)
    args, kinds, constants, sig_in = _inputs(leaves, norm, loop_chunks, where)
    block = _Block(make_vmapped, treedef, kinds, constants, o_axes)
    ex.check_shareable(block, where)
    results = da.apply_gufunc(
        _call,
        sig_in + "->" + sig_out,
        *args,
        fn=dask.delayed(block, pure=False),
        output_sizes=sizes_out,
        meta=meta,
        name=f"vmap_{_identifier(fname)}-{os.urandom(16).hex()}",
    )
    results = list(results) if len(o_axes) > 1 else [results]
    results = [r if a == 0 else da.moveaxis(r, 0, a) for r, a in zip(results, o_axes)]
    return tree_unflatten(out_def, results)


def _identifier(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)[:40] or "f"


def _rows_block(rows, *, task, row_axes):
    """Rows rows[0]..rows[-1] of a Jacobian's basis task (its row axis first)."""
    start, stop = int(rows[0]), int(rows[-1]) + 1
    out = tree_flatten(ex.unpack(task)(start, stop))[0]
    res = [
        np.moveaxis(np.asarray(o._value if isinstance(o, Tensor) else o), a, 0)
        for o, a in zip(out, row_axes)
    ]
    return tuple(res) if len(res) > 1 else res[0]


def dask_rows(backend, task, n: int, step: int, progress, where: str):
    """The rows of `task` (a BasisChunk) as Dask arrays whose blocks are computed on the
    workers and left there (persisted); the call waits for them (errors raise here, and
    KeyboardInterrupt cancels them)."""
    import dask.array as da

    out = task(0, 0)  # (the structure, shapes and dtypes, with no rows: computed here)
    out_def, o_axes, sig_out, sizes_out, meta = _output_spec(out, task.out_axes, where)
    if n == 0:
        leaves = [
            np.asarray(o._value if isinstance(o, Tensor) else o) for o in tree_flatten(out)[0]
        ]
        return tree_unflatten(out_def, [da.from_array(x) for x in leaves])
    session = backend.start(task, f'{where}(out="dask")')
    futures: list = []
    bar = None
    try:
        results = da.apply_gufunc(
            _rows_block,
            "()->" + sig_out,
            da.arange(n, chunks=step),
            task=session,
            row_axes=o_axes,
            output_sizes=sizes_out,
            meta=meta,
            name=f"{_identifier(where)}_rows-{os.urandom(16).hex()}",
        )
        results = list(results) if len(o_axes) > 1 else [results]
        results = [r if a == 0 else da.moveaxis(r, 0, a) for r, a in zip(results, o_axes)]
        results = backend.client.persist(results)
        futures = backend.dd.futures_of(results)
        bar = ex.make_progress(progress, len(futures), f"{where} blocks", backend)
        bar.start(futures)
        finished = backend.dd.as_completed(futures, loop=backend.client.loop)
        for done, f in enumerate(finished, 1):
            if f.status == "error":
                f.result()  # (raises the task's exception, with its traceback)
            bar.update(done)
    except BaseException:
        backend.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.close()
    return tree_unflatten(out_def, results)
