"""Executors: what `executor=` accepts, how a task's function travels, progress bars.

`resolve(executor)` gives a backend: `INLINE` (no executor: the chunks run here, in order),
`PoolBackend` (any `concurrent.futures.Executor`) or `DaskBackend` (a
`dask.distributed.Client`, or the string `"dask"` for the current default client). Dask,
cloudpickle, tqdm and `concurrent.futures` (with `logging`) are imported inside the functions
that use them, so `import autodiff` never loads them.

What travels: the function of a chunk (a picklable task object holding the user's function
and its constants) is pickled once per call by cloudpickle; with Dask it is scattered to
every worker once (`client.scatter(..., broadcast=True)`) and the tasks refer to it, so large
constants are not shipped with every task. Level-0 Tensors travel as their values (and
become Tensors again on the other side); a tracer (a value of an enclosing transform) or a
Tensor that requires grad cannot travel: the derivative would be lost, so that is an error.
"""

from __future__ import annotations

import importlib
import io
import math
import os
import pickle
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from autodiff.core.errors import TracerConversionError
from autodiff.core.pytree import tree_flatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE

if TYPE_CHECKING:
    import concurrent.futures

EXTRA = 'pip install "autodiff[distributed]"'


class DaskMissingError(ImportError):
    """Dask (the `distributed` extra) is needed and not installed."""


def _dask_missing(what: str) -> DaskMissingError:
    return DaskMissingError(
        f"{what} needs Dask's distributed scheduler, which is not installed: {EXTRA} "
        '(or pip install "dask[distributed]").'
    )


def _import_distributed(what: str):
    try:
        import dask.distributed as dd
    except ImportError as e:
        raise _dask_missing(what) from e
    return dd


def _looks_like_dask(obj) -> bool:
    top = type(obj).__module__.partition(".")[0]
    return top in ("dask", "distributed")


# ---- shipping values: cloudpickle, with Tensors as their values and tracers refused --------


def _rebuild_tensor(value) -> Tensor:
    return Tensor(value)


class TracerShippingError(TracerConversionError):
    """A tracer (a value of an enclosing transform) would be sent to a task."""


class GradShippingError(RuntimeError):
    """A Tensor that requires grad would be sent to a task."""


def _tensor_reduction(obj: Tensor, where: str):
    if obj._trace is not EVAL_TRACE:
        raise TracerShippingError(
            f"{where} would send a {type(obj).__name__} (a value of an enclosing transform: "
            "grad, jvp, vmap, jit...) to another thread or process, where its derivative is "
            "lost. Apply executor= to the outermost transform only, or leave executor= out "
            "inside transforms."
        )
    if obj.requires_grad:
        raise GradShippingError(
            f"{where} would send a Tensor that requires grad to another thread or process, "
            "and no autograd graph can be recorded through it. Pass tensor.detach() (and "
            "differentiate with the functional transforms), or leave executor= out."
        )
    return _rebuild_tensor, (np.asarray(obj._value),)


def _import_attr(module: str, name: str):
    return getattr(importlib.import_module(module), name)


def _reference_table() -> dict:
    """id -> (module, name) of the module-level objects of autodiff's loaded modules: they
    travel by reference (the workers have autodiff), never as copies of its internals (a
    copied primitive would not be the worker's own)."""
    table: dict = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "autodiff" or name.startswith("autodiff.")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, (type, types.ModuleType)):
                continue
            if callable(value) or type(value).__module__.startswith("autodiff"):
                table.setdefault(id(value), (name, attr))
    return table


def _autodiff_internal(obj) -> bool:
    """An object of autodiff's that plain pickling would not find by its name (a function
    made by a factory, a primitive...)."""
    module = getattr(obj, "__module__", None)
    if not (isinstance(module, str) and module.startswith("autodiff")) or isinstance(obj, type):
        return False
    found = sys.modules.get(module)
    qualname = getattr(obj, "__qualname__", None)
    if found is None or not isinstance(qualname, str):
        return True
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is not obj


def _pickler_class():
    """A cloudpickle pickler (stdlib pickle without Dask) that sends Tensors as values and
    autodiff's own objects by reference."""
    try:
        import cloudpickle  # type: ignore[import-untyped]

        base = cloudpickle.CloudPickler
    except ImportError:  # without the extra: plain pickle (module-level functions only)
        base = pickle.Pickler

    class Pickler(base):  # type: ignore[valid-type,misc]
        where = "executor="
        table = None  # (built on first need)

        def reducer_override(self, obj):
            if isinstance(obj, Tensor):
                return _tensor_reduction(obj, self.where)
            if _autodiff_internal(obj):
                if self.table is None:
                    self.table = _reference_table()
                ref = self.table.get(id(obj))
                if ref is not None:
                    return _import_attr, ref
            parent = getattr(super(), "reducer_override", None)
            return NotImplemented if parent is None else parent(obj)

    return Pickler


def dumps(obj, where: str) -> bytes:
    """`obj` pickled for another process (cloudpickle: functions and closures by value)."""
    buffer = io.BytesIO()
    pickler = _pickler_class()(buffer, protocol=5)
    pickler.where = where
    try:
        pickler.dump(obj)
    except (TracerShippingError, GradShippingError):
        raise
    except Exception as e:
        hint = "" if "cloudpickle" in sys.modules else f" (cloudpickle, with {EXTRA}, pickles more)"
        raise TypeError(
            f"{where}: the function or its arguments cannot be sent to another process: {e}."
            f"{hint} Functions defined in a module must be importable by the workers too."
        ) from e
    return buffer.getvalue()


def check_shareable(obj, where: str) -> None:
    """Refuse tracers and Tensors that require grad in `obj` (a dry run of the pickler that
    copies no array data); other objects that cannot be pickled are fine for threads."""
    pickler = _pickler_class()(_NullWriter(), protocol=5, buffer_callback=_drop)
    pickler.where = where
    try:
        pickler.dump(obj)
    except (TracerShippingError, GradShippingError):
        raise
    except Exception:  # (unpicklable, but a thread does not pickle)
        pass


class _NullWriter:
    def write(self, data) -> int:
        return len(data)


def _drop(buffer) -> None:
    return None


def loads(blob: bytes):
    return pickle.loads(blob)


class Shipped:
    """An object pickled once (`dumps`) that becomes the object again where it lands (a
    process pool's task: unpickled once per task there)."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes):
        self.blob = blob

    def __reduce__(self):
        return loads, (self.blob,)


class Packed:
    """A value that always travels through `dumps` (Tensors as values, autodiff's objects by
    reference), however often it is pickled: Dask moves data between workers with its own
    pickler, which would copy a Tensor's trace or fail on autodiff's internals. The value is
    `.value`; the blob made here (eagerly, so that errors come at the call) is reused for
    every copy sent from this process."""

    __slots__ = ("value", "where", "blob")

    def __init__(self, value, where: str, eager: bool = False):
        self.value, self.where = value, where
        self.blob = dumps(value, where) if eager else None

    def __reduce__(self):
        blob = self.blob if self.blob is not None else dumps(self.value, self.where)
        return _rebuild_packed, (blob, self.where)


def _rebuild_packed(blob: bytes, where: str) -> Packed:
    return Packed(pickle.loads(blob), where)


def unpack(value):
    """A task's argument as the task sees it (a `Packed` unwrapped)."""
    return value.value if isinstance(value, Packed) else value


def prefix_axes(out_axes, tree) -> list:
    """The axis of each leaf of `tree` from the pytree prefix `out_axes` (None entries are
    leaves; vmap has checked that it is a prefix)."""
    axes, axes_def = tree_flatten(out_axes, is_leaf=lambda a: a is None)
    out = []
    for a, sub in zip(axes, axes_def.flatten_up_to(tree)):
        out.extend([a] * len(tree_flatten(sub)[0]))
    return out


# ---- backends ------------------------------------------------------------------------------


class InlineBackend:
    """No executor: the chunks run in this thread, in order (for `progress=` alone)."""

    kind = "inline"

    def workers(self) -> int:
        return 1


INLINE = InlineBackend()


class PoolBackend:
    """A `concurrent.futures.Executor`: a thread pool shares the objects; any other executor
    (a process pool) gets the task pickled once and sent with each chunk."""

    kind = "pool"

    def __init__(self, executor: concurrent.futures.Executor):
        import concurrent.futures  # (loaded: an Executor was made)

        self.executor = executor
        self.threads = isinstance(executor, concurrent.futures.ThreadPoolExecutor)

    def workers(self) -> int:
        n = getattr(self.executor, "_max_workers", None)
        return int(n) if n else 1

    def start(self, task, where: str):
        if self.threads:
            check_shareable(task, where)
            return task
        return Shipped(dumps(task, where))  # (pickled once, sent with each chunk)

    def pack_chunk(self, chunk, where: str):
        return chunk if self.threads else Packed(chunk, where)

    def submit_all(self, runner: Callable, session, chunks, label: str) -> list:
        # (a process pool's results come back through plain pickle: shipped as cloudpickle)
        return [self.executor.submit(runner, session, c, not self.threads) for c in chunks]

    def completed(self, futures: list):
        """(future, result) as they finish (polling, so that KeyboardInterrupt gets through);
        a task's exception is raised."""
        import concurrent.futures  # (loaded: an Executor was made)

        pending = set(futures)
        while pending:
            done, pending = concurrent.futures.wait(
                pending, timeout=0.1, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for f in done:
                yield f, f.result()

    def was_cancelled(self, future, result) -> bool:
        return False  # (only this process cancels a pool's futures: then it stops waiting)

    def forget(self, future) -> None:
        pass

    def cancel(self, futures) -> None:
        for f in futures:
            f.cancel()  # (a chunk already running finishes; its result is dropped)

    def stop(self, session) -> None:
        pass


class DaskBackend:
    """A `dask.distributed.Client`: the task scattered to every worker once, one submitted
    task per chunk (Dask reschedules the chunks of a worker that dies)."""

    kind = "dask"

    def __init__(self, client):
        self.client = client
        self.dd = _import_distributed("executor=<dask client>")

    def workers(self) -> int:
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:
            return 1

    def start(self, task, where: str):
        # One scatter, to all workers: the tasks then name it (a future) instead of carrying it.
        packed = Packed(task, where, eager=True)
        return self.client.scatter([packed], broadcast=True, hash=False)[0]

    def pack_chunk(self, chunk, where: str):
        return Packed(chunk, where, eager=True)

    def submit_all(self, runner, session, chunks, label: str) -> list:
        token = os.urandom(6).hex()
        big = [i for i, c in enumerate(chunks) if len(getattr(c, "blob", b"")) > 1 << 20]
        if big:  # large chunk data: sent to the workers in one scatter, not in task messages
            placed = self.client.scatter([chunks[i] for i in big], hash=False)
            chunks = list(chunks)
            for i, f in zip(big, placed):
                chunks[i] = f
        return [
            self.client.submit(
                runner, session, c, False, key=f"autodiff_{label}-{token}-{i}", pure=False
            )
            for i, c in enumerate(chunks)
        ]

    def completed(self, futures: list):
        """(future, result) as they finish: Dask's as_completed on this client's loop, which
        fetches the results in the background and polls (KeyboardInterrupt gets through); a
        task's exception is raised, with its traceback."""
        return self.dd.as_completed(futures, loop=self.client.loop, with_results=True)

    def was_cancelled(self, future, result) -> bool:
        """Whether the cluster cancelled the chunk's task under us (its result is then the
        CancelledError, not a chunk's result): seen when a worker dies on a loaded machine."""
        return future.status == "cancelled"

    def forget(self, future) -> None:
        future.release()

    def cancel(self, futures) -> None:
        if futures:  # (finished ones are released)
            self.client.cancel(list(futures))

    def stop(self, session) -> None:
        session.release()


def resolve(executor, where: str = "executor="):
    """The backend for `executor=`: None, a `concurrent.futures.Executor`, a
    `dask.distributed.Client`, or `"dask"` (the default client)."""
    if executor is None:
        return INLINE
    if isinstance(executor, str):
        if executor != "dask":
            raise ValueError(
                f'{where}{executor!r}: expected a dask.distributed.Client, "dask" (the default '
                "client) or a concurrent.futures.Executor."
            )
        dd = _import_distributed(f'{where}"dask"')
        try:
            client = dd.default_client()
        except ValueError as e:
            raise ValueError(
                f'{where}"dask" uses the default Dask client, and there is none: start one '
                "(dask.distributed.Client(...)) or pass it as executor=client."
            ) from e
        return DaskBackend(client)
    import concurrent.futures  # (not at module level: `import autodiff` needs no executor)

    if isinstance(executor, concurrent.futures.Executor):
        return PoolBackend(executor)
    if _looks_like_dask(executor):
        dd = _import_distributed(f"{where}{type(executor).__name__}")
        if isinstance(executor, dd.Client):
            return DaskBackend(executor)
    raise TypeError(
        f'{where}{type(executor).__name__}: expected a dask.distributed.Client, "dask" (the '
        "default client) or a concurrent.futures.Executor (ThreadPoolExecutor, "
        "ProcessPoolExecutor, ...)."
    )


def default_step(n: int, chunk_size: int | None, backend, progress) -> int:
    """Rows per chunk: `chunk_size`, else 4 chunks per worker of an executor, 20 chunks for a
    local progress bar, one chunk otherwise."""
    if chunk_size is not None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)):
            raise TypeError(f"chunk_size must be a positive int or None, got {chunk_size!r}.")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size}.")
        return max(1, min(int(chunk_size), n))
    if n == 0:
        return 1
    if backend is not INLINE:
        return max(1, math.ceil(n / (4 * backend.workers())))
    if progress:
        return max(1, math.ceil(n / 20))
    return n


# ---- progress ------------------------------------------------------------------------------


def check_progress(progress) -> None:
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(
            f"progress must be a bool or a callable progress(done, total), got {progress!r}."
        )


class _NoProgress:
    def start(self, futures) -> None:
        pass

    def update(self, done: int) -> None:
        pass

    def close(self) -> None:
        pass


class _CallbackProgress(_NoProgress):
    """progress=callable: called as `progress(done, total)` after each chunk."""

    def __init__(self, fn, total: int):
        self.fn, self.total = fn, total

    def update(self, done: int) -> None:
        self.fn(done, self.total)


class _TqdmProgress(_NoProgress):
    def __init__(self, tqdm, total: int, label: str):
        self.bar = tqdm(total=total, desc=label, unit="chunk")
        self.done = 0

    def update(self, done: int) -> None:
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        self.bar.close()


class _TextProgress(_NoProgress):
    """A plain bar on stderr, without tqdm."""

    def __init__(self, total: int, label: str):
        self.total, self.label = total, label

    def update(self, done: int) -> None:
        frac = done / self.total if self.total else 1.0
        sys.stderr.write(f"\r{self.label}: [{'#' * int(30 * frac):<30}] {done}/{self.total}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


class _DaskProgress(_NoProgress):
    """Dask's own progress bar (a widget in a notebook; in a console it follows the tasks
    until they finish or one fails)."""

    def __init__(self, client):
        self.client = client

    def start(self, futures) -> None:
        from distributed.diagnostics.progressbar import progress
        from distributed.utils import is_kernel

        address = self.client.scheduler.address
        if is_kernel():
            try:
                from IPython.display import display

                display(progress(futures, notebook=True, multi=False, scheduler=address))
                return
            except ImportError:  # (no ipywidgets: the text bar)
                pass
        progress(futures, notebook=False, multi=False, scheduler=address)


def make_progress(progress, total: int, label: str, backend):
    """The progress reporter: `progress=True` gives Dask's bar with a Dask client, else tqdm
    (a plain text bar without tqdm); a callable is called as `progress(done, total)`."""
    if progress is False:
        return _NoProgress()
    if callable(progress):
        return _CallbackProgress(progress, total)
    if backend.kind == "dask":
        return _DaskProgress(backend.client)
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return _TextProgress(total, label)
    return _TqdmProgress(tqdm, total, label)
