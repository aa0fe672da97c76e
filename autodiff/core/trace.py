"""Levels: the thread-local stack of live traces, the Trace base class and EvalTrace (level 0).

Every transform (grad, jvp, vmap, a dual level) pushes a Trace when it starts and
pops it when it ends. A trace's `level` is its position in the stack; dispatch
picks the highest live level among a primitive's arguments (see `bind`). A trace
that has been popped is marked dead: its tracers then either lower to their
primal value or raise, as the trace decides in `lower`.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from numpy import ndarray as _ndarray

from autodiff.core import buffers as _buffers
from autodiff.core.dtypes import SCALAR_PAIRS
from autodiff.core.errors import EscapedTracerError


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
            f"A tracer from a finished {type(self).__name__} (level {self.level}) was used in a "
            "new computation. Values computed inside a transform must be returned from the "
            "transformed function, not stored outside it."
        )

    def process_dead(self, prim, args, params):
        """Re-dispatch with this dead trace's tracers replaced by what `lower` gives."""
        from autodiff.core.primitive import bind

        lowered = tuple(self.lower(a) if getattr(a, "_trace", None) is self else a for a in args)
        return bind(prim, *lowered, **params)

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level}{'' if self.alive else ', dead'})"


class _ThreadState(threading.local):
    def __init__(self):
        self.stack: list[Trace] = [EVAL_TRACE]
        self.grad_enabled = True  # torch-style grad mode: does level 0 record a graph?
        self.fw_grad_enabled = True  # off in inference_mode: dual levels carry no tangents
        self.anomaly = False  # detect_anomaly: record forward tracebacks, check for nan
        self.anomaly_check_nan = True
        self.seq = 0  # sequence numbers of level-0 nodes (per thread, as in torch)
        self.saved_tensors_hooks: list = []  # (pack, unpack) pairs, innermost last
        self.saved_tensors_hooks_disabled: str | None = None  # the error, while disabled
        self.backward_pass_id = 0  # which backward pass is running (multi-grad hooks)
        self.pass_nodes: frozenset | set = frozenset()  # the nodes that pass will run


_NUMBERS = (float, int)


class EvalTrace(Trace):
    """Level 0: runs primitive impls on concrete values held by plain `Tensor`s."""

    __slots__ = ()

    def process(self, prim, args, params):
        Tensor = _core.tensor.Tensor
        raw = []
        record = False
        for a in args:
            if isinstance(a, Tensor):
                raw.append(a._value)
                if a._requires_grad or a._edge is not None:
                    record = True
            else:
                raw.append(a)
        out = None
        fast = prim.fast
        array = raw[0] if raw else None  # (the first array operand)
        if len(raw) == 2:
            x, y = raw
            if fast.scalar_impl is not None and (type(x), type(y)) in SCALAR_PAIRS:
                out = fast.scalar_impl(x, y)  # (NumPy scalars: see FastPaths.scalar_impl)
            elif type(x) in _NUMBERS:  # (`2 * x`)
                array = y
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
        if record and prim.differentiable and _state.grad_enabled:
            return _core.graph.record(prim, args, params, out)
        if prim.multiple_results:
            return tuple(Tensor._from(o) for o in out)
        return Tensor._from(out)

    def lower(self, tracer):
        return tracer._value


EVAL_TRACE = EvalTrace(0)
_state = _ThreadState()


def state() -> _ThreadState:
    """This thread's level stack and grad mode."""
    return _state


def next_sequence_number() -> int:
    """A new level-0 node sequence number (grows with creation, per thread)."""
    _state.seq += 1
    return _state.seq


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


@contextmanager
def new_trace(trace_type, *args):
    """Push a new trace of `trace_type` for the duration of the block; always pop it."""
    trace = push_trace(trace_type, *args)
    try:
        yield trace
    finally:
        pop_trace(trace)


# Tensor and the graph recorder live in modules that import this one; they are looked up
# through the package at call time (no import inside the hot path, no import cycle).
import autodiff.core as _core  # noqa: E402
