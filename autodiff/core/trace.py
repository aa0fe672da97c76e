"""Levels: the thread-local stack of live traces, the Trace base class, EvalTrace (level 0)
and `dispatch`, the one choice of the trace a primitive application goes to.

Every transform (grad, jvp, vmap, a dual level) pushes a Trace when it starts and
pops it when it ends. A trace's `level` is its position in the stack; dispatch
picks the highest live level among a primitive's arguments. A trace
that has been popped is marked dead: its tracers then either lower to their
primal value or raise, as the trace decides in `lower`.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import numpy as np
from numpy import ndarray as _ndarray

from autodiff.core import buffers as _buffers
from autodiff.core import views as _views
from autodiff.core.dtypes import SCALAR_PAIRS
from autodiff.core.errors import EscapedTracerError, type_str

# Tensor and its subclasses (core/tensor.py registers them): `type(x) in TENSOR_TYPES` is the
# hot paths' faster `isinstance(x, Tensor)` (a set lookup rather than a walk of x's type's MRO).
TENSOR_TYPES: set = set()


def _type_of(tracer) -> str:
    """`float32[4,3]`: a tracer's type as errors show it (JAX's short form)."""
    try:
        return type_str(tracer)
    except Exception:  # (a tracer whose shape or dtype cannot be read: name its class)
        return type(tracer).__name__


class Trace:
    """One interpretation level. Subclasses implement `process` for a primitive application."""

    __slots__ = ("level", "alive", "__weakref__")

    def __init__(self, level: int):
        self.level = level
        self.alive = True

    def process(self, prim, args: tuple, params: dict):
        raise NotImplementedError

    def lower(self, tracer):
        """What a tracer of this trace becomes once the trace is dead."""
        raise EscapedTracerError(
            f"Encountered an unexpected tracer: a tracer of type {_type_of(tracer)} from a "
            f"finished {type(self).__name__} (level {self.level}) was used in a "
            "new computation. Values computed inside a transform must be returned from the "
            "transformed function, not stored outside it."
        )

    def process_dead(self, prim, args, params):
        """Re-dispatch with this dead trace's tracers replaced by what `lower` gives."""
        lowered = tuple(self.lower(a) if getattr(a, "_trace", None) is self else a for a in args)
        return dispatch(prim, lowered, params)

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level}{'' if self.alive else ', dead'})"


class _ThreadState(threading.local):
    def __init__(self):
        self.stack: list[Trace] = [EVAL_TRACE]
        # Grad modes (the torch face's no_grad, inference_mode; autograd/grad_mode.py): does
        # level 0 record a graph, do dual levels carry tangents?
        self.grad_enabled = True
        self.fw_grad_enabled = True
        # While leaks are checked (core/config.py): the traces popped since, weakly held.
        self.popped: list | None = None


_NUMBERS = (float, int)
_shares = np.may_share_memory
_VIEW_PRIMITIVES = _views.VIEW_PRIMITIVES  # (filled by the torch face at import)


def _no_recorder(prim, args, params, out):
    raise RuntimeError("autodiff.autograd is not loaded: level 0 cannot record a graph")


class EvalTrace(Trace):
    """Level 0: runs primitive impls on concrete values held by plain `Tensor`s, and hands an
    operation on Tensors that require grad to the torch face's recorder while grad mode is on
    (autograd/_record.py registers it: `set_level0_recorder`)."""

    __slots__ = ("wrap", "recorder")

    def __init__(self, level: int):
        super().__init__(level)
        self.wrap = None  # Tensor._from: a level-0 Tensor around a result (core/tensor.py)
        self.recorder = _no_recorder

    def process(self, prim, args, params):
        raw = []
        record = False
        for a in args:
            if type(a) in TENSOR_TYPES:
                raw.append(a._value)
                record = record or a._requires_grad or a._edge is not None
            else:
                raw.append(a)
        out = None
        fast = prim.fast
        array = raw[0] if raw else None  # (the first array operand)
        if len(raw) == 2:
            x, y = raw
            if fast.scalar_impl is not None and (type(x), type(y)) in SCALAR_PAIRS:
                out = fast.scalar_impl(x, y)  # (NumPy scalars: see FastPaths.scalar_impl)
            array = y if type(x) in _NUMBERS else x  # (`2 * x`)
        if out is None:
            if (
                fast.pooled_ufunc is not None
                and not params
                and type(array) is _ndarray
                and array.nbytes >= _buffers.POOL_MIN_BYTES
            ):
                # Large elementwise results go into memory a backward pass recycled, as in a
                # functional trace (core/buffers.py): no fresh pages for the OS to fault in.
                out = _buffers.ufunc_into(fast.pooled_ufunc, tuple(raw))
            else:
                out = prim.impl(*raw, **params)
        if prim.name in _VIEW_PRIMITIVES:
            return self._views(prim, args, params, out, record)
        if type(out) is _ndarray and out.base is not None:
            out = _own_data(out, raw)
        if record and prim.differentiable and _state.grad_enabled:
            return self.recorder(prim, args, params, out)
        return tuple(self.wrap(o) for o in out) if prim.multiple_results else self.wrap(out)

    def _views(self, prim, args, params, out, record):
        """`process`'s end for a primitive that may return views of its first operand: the
        results that share its memory are marked as its views (core/views.py)."""
        grad = _state.grad_enabled
        if record and prim.differentiable and grad:
            result = self.recorder(prim, args, params, out)
        elif prim.multiple_results:
            result = tuple(self.wrap(o) for o in out)
        else:
            result = self.wrap(out)
        source = args[0]
        if type(source) not in TENSOR_TYPES or type(source._value) is not _ndarray:
            return result
        base = source._value
        name = (prim, params)  # (its torch name, for errors, made when needed: views.op_name)
        if prim.multiple_results:
            _mark_views_of_results(source, name, out, result, grad)
            return result
        if isinstance(out, np.generic) and prim.name == "getitem" and len(args) == 1:
            index = params["index"]  # (all integers: a 0-d view, as torch's `x[0]`)
            out = result._value = base[(index if type(index) is tuple else (index,)) + (...,)]
        if type(out) is _ndarray and (out is base or (out.base is not None and _shares(out, base))):
            if grad:
                creation = _views.DEFAULT
            else:
                creation = _views.NO_GRAD_MODE if _state.fw_grad_enabled else _views.INFERENCE_MODE
            _views.mark_view(result, source, name, creation)
        return result

    def lower(self, tracer):
        return tracer._value


def _own_data(out: np.ndarray, raw: list) -> np.ndarray:
    """`out`, or a copy of it if it is a NumPy view of an operand in `raw` (np.flip's impl
    returns one): as torch's, the result of an operation that is not a view owns its data."""
    for r in raw:
        if type(r) is _ndarray and _shares(out, r):
            return out.copy()
    return out


def _mark_views_of_results(source, name: tuple, out, result, grad: bool) -> None:
    """`EvalTrace._views` for a primitive of several results (`name` is `(prim, params)`):
    each of `result` (the Tensors around `out`) that shares `source`'s memory is its view."""
    prim, params = name
    base = source._value
    creation = _views.MULTI_OUTPUT if grad else _views.NO_GRAD_MODE
    for i, (o, t) in enumerate(zip(out, result)):
        if isinstance(o, np.generic) and prim.name == "unstack":
            # (NumPy gives a number for a 1-d array's element; torch a 0-d view)
            o = t._value = base[(slice(None),) * params["axis"] + (i, Ellipsis)]
        if type(o) is _ndarray and (o is base or (o.base is not None and _shares(o, base))):
            _views.mark_view(t, source, name, creation, i)


EVAL_TRACE = EvalTrace(0)
_state = _ThreadState()


def set_level0_recorder(recorder) -> None:
    """Make `recorder(prim, args, params, out)` record level-0 operations on Tensors that
    require grad (the torch face's graph, autograd/_record.py; done once, at its import)."""
    EVAL_TRACE.recorder = recorder


def state() -> _ThreadState:
    """This thread's level stack and grad modes."""
    return _state


def dispatch(prim, args: tuple, params: dict):
    """Apply `prim` to `args`: its impl when no argument is a tracer (or Tensor), else the
    process of the highest live level among their traces (a dead one lowers them first).
    `bind` and its unrolled forms for one and two arguments (core/primitive.py) make this
    same choice."""
    top = None
    level = -1
    for a in args:
        if type(a) in TENSOR_TYPES:
            t = a._trace
            if t.level > level:
                top = t
                level = t.level
    if top is None:
        return prim.impl(*args, **params)
    if not top.alive:
        return top.process_dead(prim, args, params)
    return top.process(prim, args, params)


def current_level() -> int:
    """The level of the innermost live trace (0 when no transform is active)."""
    return len(_state.stack) - 1


def trace_stack_depth() -> int:
    """How many traces are live in this thread, level 0 included."""
    return len(_state.stack)


def push_trace(trace_type, *args) -> Trace:
    stack = _state.stack
    trace = trace_type(len(stack), *args)
    stack.append(trace)
    return trace


def pop_trace(trace: Trace) -> None:
    stack = _state.stack
    if stack[-1] is not trace:
        raise RuntimeError(f"Level stack corrupted: expected {trace} on top, found {stack[-1]}")
    stack.pop()
    trace.alive = False
    if _state.popped is not None:
        _state.popped.append(weakref.ref(trace))


@contextmanager
def new_trace(trace_type, *args):
    """Push a new trace of `trace_type` for the duration of the block; always pop it."""
    trace = push_trace(trace_type, *args)
    try:
        yield trace
    finally:
        pop_trace(trace)
