"""Chunks of batched transforms as tasks: vmap's batch members, the basis rows of Jacobians.

The transforms hand over what to run (this package imports none of them): `map_basis` gets
`vmap`, the basis-row maker and the function to map over the rows (jacrev's pullback, jacfwd's
pushforward); `map_batch` a maker of the plain vmapped function. Each chunk is one task; the
results are copied into one preallocated array per output, at their chunk's offset, as the
tasks finish (in any order), so the result equals the local chunked one exactly: each chunk
runs the same computation as `chunk_size` runs locally. The first task that raises fails the
call with its exception (and traceback); the other tasks are cancelled, as they are on
KeyboardInterrupt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.distributed import executors as ex
from autodiff.distributed.arrays import dask_rows

OUTS = ("numpy", "dask")


class BasisChunk:
    """Rows `start:stop` of `vmap(fn)` over the identity basis of leaves of `shapes`/`dtypes`
    (a chunk of jacrev's output basis or of jacfwd's input basis)."""

    def __init__(self, vmap, basis_rows, fn, shapes, dtypes, out_axes):
        self.vmap, self.basis_rows, self.fn = vmap, basis_rows, fn
        self.shapes, self.dtypes, self.out_axes = tuple(shapes), tuple(dtypes), out_axes

    def __call__(self, start: int, stop: int):
        rows = self.basis_rows(self.shapes, self.dtypes, start, stop)
        return self.vmap(self.fn, out_axes=self.out_axes, axis_size=stop - start)(*rows)


class BatchChunk:
    """A chunk of vmap's batch: the mapped slices put back among the constant leaves."""

    def __init__(self, make_vmapped, treedef, axes, constants):
        self.make_vmapped, self.treedef = make_vmapped, treedef
        self.axes, self.constants = tuple(axes), list(constants)

    def __call__(self, length: int, mapped: Sequence):
        it = iter(mapped)
        leaves = [c if ax is None else next(it) for ax, c in zip(self.axes, self.constants)]
        args, kwargs = tree_unflatten(self.treedef, leaves)
        return self.make_vmapped(axis_size=length)(*args, **kwargs)


def pack(out):
    """A chunk's result for the trip back: (structure, leaves, which leaves were Tensors);
    Tensors travel as their arrays."""
    leaves, treedef = tree_flatten(out)
    flags = [isinstance(x, Tensor) for x in leaves]
    return treedef, [np.asarray(x._value) if f else x for x, f in zip(leaves, flags)], flags


# How often a chunk whose task the cluster cancelled (a worker lost on a loaded machine) is
# submitted again before run_chunks gives up.
RETRIES = 3


def run_task(task, chunk, ship_result: bool):
    """What a worker runs: one chunk of `task` (module level: pickled by reference)."""
    packed = pack(ex.unpack(task)(*ex.unpack(chunk)))
    return ex.Shipped(ex.dumps(packed, "a task's result")) if ship_result else packed


class Assembler:
    """Chunk results copied into one preallocated array per mapped output, at their offsets;
    outputs without a mapped axis (out_axes None) are taken from chunk 0."""

    def __init__(self, total: int, out_axes):
        self.total, self.out_axes = total, out_axes
        self.treedef: Any = None
        self.values: list = []
        self.axes: list = []
        self.flags: list = []

    def add(self, index: int, offset: int, packed) -> None:
        treedef, leaves, flags = packed
        if self.treedef is None:
            self.treedef, self.flags = treedef, flags
            axes = ex.prefix_axes(self.out_axes, tree_unflatten(treedef, leaves))
            self.axes = [None if a is None else a % np.ndim(x) for a, x in zip(axes, leaves)]
            self.values = []
            for x, a in zip(leaves, self.axes):
                if a is None:
                    self.values.append(None)
                    continue
                x = np.asarray(x)
                shape = list(x.shape)
                shape[a] = self.total
                self.values.append(np.empty(shape, x.dtype))
        for j, (x, a) in enumerate(zip(leaves, self.axes)):
            if a is None:
                if index == 0:
                    self.values[j] = x
                continue
            x = np.asarray(x)
            self.values[j][(slice(None),) * a + (slice(offset, offset + x.shape[a]),)] = x

    def result(self):
        leaves = [Tensor._from(v) if f else v for v, f in zip(self.values, self.flags)]
        return tree_unflatten(self.treedef, leaves)


def run_chunks(
    backend,
    task,
    chunks: list,
    lengths: list,
    total: int,
    out_axes,
    progress,
    label: str,
    join: Callable,
    where: str,
):
    """Run `task(*chunk)` for each chunk on `backend` and join the results along `out_axes`
    (`join(results, out_axes, total)`, the local streaming join, when running inline)."""
    bar = ex.make_progress(progress, len(chunks), label, backend)
    if backend is ex.INLINE:

        def results():
            try:
                for i, chunk in enumerate(chunks):
                    yield task(*chunk)
                    bar.update(i + 1)
            finally:
                bar.close()

        return join(results(), out_axes, total)

    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
    session = None
    futures: list = []
    try:
        session = backend.start(task, where)
        shipped = [backend.pack_chunk(c, where) for c in chunks]
        futures = backend.submit_all(run_task, session, shipped, label)
        index = {f: i for i, f in enumerate(futures)}
        bar.start(futures)
        assembler = Assembler(total, out_axes)
        retries = [0] * len(chunks)
        pending = backend.completed(futures)
        done = 0
        for f, packed in pending:
            i = index.pop(f)
            if backend.was_cancelled(f, packed):  # (its task runs again: `pending` waits for it)
                f = _resubmit(backend, session, shipped[i], i, retries, label, where)
                index[f] = i
                futures.append(f)
                pending.add(f)
                continue
            assembler.add(i, offsets[i], packed)
            backend.forget(f)
            done += 1
            bar.update(done)
        return assembler.result()
    except BaseException:  # (an error, or KeyboardInterrupt while waiting): cancel them all
        backend.cancel(futures)
        raise
    finally:
        bar.close()
        if session is not None:
            backend.stop(session)


def _resubmit(backend, session, chunk, i: int, retries: list, label: str, where: str):
    """Chunk `i` submitted again after the cluster cancelled its task, RETRIES times at most."""
    retries[i] += 1
    if retries[i] > RETRIES:
        raise RuntimeError(
            f"{where}: the cluster cancelled chunk {i}'s task {RETRIES + 1} times (its workers "
            "lost, or the scheduler restarted?); giving up"
        )
    (future,) = backend.submit_all(run_task, session, [chunk], f"{label}-retry{retries[i]}-{i}")
    return future


def _check_out(out, backend, where: str) -> None:
    if out not in OUTS:
        raise ValueError(f'{where}: out must be "numpy" or "dask", got {out!r}.')
    if out == "dask" and backend.kind != "dask":
        raise ValueError(
            f'{where}: out="dask" leaves the result on a Dask cluster\'s workers: it needs '
            'executor=<dask.distributed.Client> (or executor="dask").'
        )


def map_basis(
    vmap,
    basis_rows,
    join,
    fn,
    shapes,
    dtypes,
    chunk_size,
    out_axes=0,
    *,
    executor=None,
    progress=False,
    out="numpy",
    where="jacobian",
):
    """`vmap(fn, out_axes)` over the identity basis of leaves of `shapes`/`dtypes`, in chunks of
    `chunk_size` rows run as tasks of `executor` (see `map_basis` in autodiff.jacobians for
    the local form; `fn` must not hold a local recorded graph when there is an executor)."""
    backend = ex.resolve(executor, f"{where}(executor=...): ")
    ex.check_progress(progress)
    _check_out(out, backend, where)
    n = sum(int(np.prod(s, dtype=np.int64)) for s in shapes)
    step = ex.default_step(n, chunk_size, backend, progress)
    task = BasisChunk(vmap, basis_rows, fn, shapes, dtypes, out_axes)
    bounds = [(s, min(s + step, n)) for s in range(0, n, step)] or [(0, 0)]
    if out == "dask":
        return dask_rows(backend, task, n, step, progress, where)
    return run_chunks(
        backend,
        task,
        bounds,
        [b - a for a, b in bounds],
        n,
        out_axes,
        progress,
        f"{where} rows",
        join,
        f"{where}(executor=...)",
    )


def map_batch(
    make_vmapped,
    join,
    leaves,
    treedef,
    axes,
    size: int,
    chunk_size,
    out_axes,
    *,
    executor=None,
    progress=False,
    where="vmap",
):
    """vmap's batch in chunks of `chunk_size` members run as tasks of `executor`:
    `make_vmapped(axis_size=n)` is the plain vmapped function, `axes` each leaf's mapped axis
    (None: a constant, sent once)."""
    backend = ex.resolve(executor, f"{where}(executor=...): ")
    ex.check_progress(progress)
    if backend is not ex.INLINE:
        ex.check_shareable(leaves, f"{where}(executor=...)")
    step = ex.default_step(size, chunk_size, backend, progress)
    constants = [x if ax is None else None for x, ax in zip(leaves, axes)]
    task = BatchChunk(make_vmapped, treedef, axes, constants)
    chunks, lengths = [], []
    for start in range(0, size, step) if size else [0]:
        length = min(step, size - start)
        part = (slice(start, start + length),)
        mapped = [x[(slice(None),) * ax + part] for x, ax in zip(leaves, axes) if ax is not None]
        chunks.append((length, mapped))
        lengths.append(length)
    return run_chunks(
        backend,
        task,
        chunks,
        lengths,
        size,
        out_axes,
        progress,
        f"{where} batch",
        join,
        f"{where}(executor=...)",
    )
