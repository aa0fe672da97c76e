"""Torch-style dual levels (`autodiff.autograd.forward_ad`) on the transforms' level stack.

`enter_dual_level()` pushes a ForwardTrace and returns its dual-level index (0 for
the outermost live dual level). Unlike torch, dual levels nest: a tangent at an
outer level may itself carry a tangent at an inner one, which gives higher
forward derivatives. Levels must be exited innermost first; after a level ends
its tensors lower to their primal (they have no tangent any more).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
from numpy import ndarray

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.graph import share_version
from autodiff.core.primitive import bind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, pop_trace, push_trace, state
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.ops.elementwise import astype
from autodiff.ops.rearrange import copy_p
from autodiff.ops.structural import shape_of


class UnpackedDualTensor(NamedTuple):
    """What `unpack_dual` returns: the primal and the tangent (None when there is none).

    Example:
        >>> import autodiff as ad
        >>> with dual_level():
        ...     primal, tangent = unpack_dual(make_dual(ad.tensor(2.0), ad.tensor(1.0)))
        >>> float(primal), float(tangent)
        (2.0, 1.0)
    """

    primal: object
    tangent: object


def _dual_traces() -> list:
    return [t for t in state().stack if isinstance(t, ForwardTrace) and t.dual]


def _resolve(level: int | None) -> ForwardTrace:
    duals = _dual_traces()
    if level is None:
        if not duals:
            raise RuntimeError(
                "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                "enter_dual_level() first."
            )
        return duals[-1]
    if not 0 <= level < len(duals):
        raise RuntimeError(
            f"Trying to use forward AD level {level} but it does not exist (live levels: "
            f"{len(duals)})."
        )
    return duals[level]


def enter_dual_level() -> int:
    """Enter a new forward-AD level and return its index (see also `dual_level`).

    Example:
        >>> level = enter_dual_level(); exit_dual_level(level=level); level
        0
    """
    index = len(_dual_traces())
    push_trace(ForwardTrace, True)
    return index


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the innermost forward-AD level (`level`, if given, must be that one).

    Example:
        >>> import autodiff as ad
        >>> level = enter_dual_level()
        >>> x = make_dual(ad.tensor(1.0), ad.tensor(1.0))
        >>> exit_dual_level(level=level)
        >>> unpack_dual(x).tangent is None  # the level is gone, and with it the tangent
        True
    """
    duals = _dual_traces()
    if not duals:
        raise RuntimeError("Trying to exit a forward AD level but no level exists.")
    trace = duals[-1] if level is None else (duals[level] if 0 <= level < len(duals) else None)
    if trace is None or state().stack[-1] is not trace:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is "
            "not supported."
        )
    pop_trace(trace)


class dual_level(contextlib.ContextDecorator):
    """Context manager (and decorator) for one forward-AD level.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> from autodiff.autograd import forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = anp.sin(fwAD.make_dual(ad.tensor(0.0), ad.tensor(3.0)))
        ...     float(fwAD.unpack_dual(y).tangent)
        3.0
    """

    def __enter__(self):
        self._level = enter_dual_level()
        self._trace = _dual_traces()[-1]
        return self._level

    def __exit__(self, exc_type, exc, tb):
        trace = self._trace
        stack = state().stack
        if stack[-1] is trace:
            pop_trace(trace)
            return False
        if not trace.alive:
            if exc_type is not None:  # (an error is on its way: do not hide it)
                return False
            raise RuntimeError(
                f"Trying to exit forward AD level {self._level}, which was already exited."
            )
        # Levels entered inside this block (enter_dual_level without its exit_dual_level)
        # end with it, so that no level outlives its block.
        leaked = stack[stack.index(trace) + 1 :]
        if not all(isinstance(t, ForwardTrace) and t.dual for t in leaked):
            raise RuntimeError(
                f"Trying to exit forward AD level {self._level} while a function transform "
                "entered inside it is still running."
            )
        for t in reversed(leaked):
            pop_trace(t)
        pop_trace(trace)
        if exc_type is None:
            raise RuntimeError(
                f"Forward AD level {self._level} ended with {len(leaked)} level(s) entered "
                "inside it still live (enter_dual_level() without exit_dual_level()); they "
                "were exited with it."
            )
        return False


def make_dual(tensor, tangent, *, level: int | None = None):
    """A tensor with primal `tensor` and tangent `tangent` at `level` (default: the innermost).

    Example:
        >>> import autodiff as ad
        >>> with dual_level():
        ...     x = make_dual(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 0.0]))
        ...     print(unpack_dual(x * x).tangent)  # 2 x * dx
        tensor([2., 0.])
    """
    trace = _resolve(level)
    if _has_tangent_at(tensor, trace):
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {_index(trace)} is not supported."
        )
    if _has_tangent_at(tangent, trace):
        raise RuntimeError(
            "Setting a forward grad that itself has a forward gradient at the same level "
            f"{_index(trace)} is not supported."
        )
    dt = dtype_of(tensor)
    if not is_inexact(dt):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {dt.name}")
    if not is_inexact(dtype_of(tangent)):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {dtype_of(tangent).name}"
        )
    p_shape, t_shape = tuple(shape_of(tensor)), tuple(shape_of(tangent))
    if p_shape != t_shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(p_shape)} while the given "
            f"forward gradient is of size {list(t_shape)}."
        )
    if not isinstance(tensor, Tensor):
        tensor = Tensor(tensor)
    if not state().fw_grad_enabled:
        # inference mode: no tangent is attached (torch's), the result shares the data
        return _alias(tensor)
    if dtype_of(tangent) != dt:
        tangent = astype(tangent, dt)
    tangent = _with_layout_of(tangent, tensor)
    return _pack(tensor, tangent, trace, alias=True)


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """`(primal, tangent)` of `tensor` at dual level `level`; tangent None if it has none there.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> with dual_level():
        ...     y = anp.exp(make_dual(ad.tensor(0.0), ad.tensor(2.0)))
        ...     p, t = unpack_dual(y)
        ...     print(float(p), float(t))
        1.0 2.0
        >>> unpack_dual(ad.tensor(1.0)).tangent is None
        True
    """
    duals = _dual_traces()
    if level is None and not duals:
        return UnpackedDualTensor(tensor, None)
    trace = _resolve(level)
    if isinstance(tensor, ForwardTracer) and tensor._trace is trace:
        return UnpackedDualTensor(_alias(tensor._value), tensor._tangent)
    if _has_tangent_at(tensor, trace):  # a dual of an inner level with one at `level` inside
        return UnpackedDualTensor(*_split(tensor, trace))
    return UnpackedDualTensor(tensor, None)


def _alias(primal):
    """A new tensor object for a dual tensor's primal, sharing its data, graph and version
    counter (as torch's unpack_dual returns a new view each time); a leaf that requires grad is
    returned itself (its gradient must reach it)."""
    if type(primal) is not Tensor or primal._trace is not EVAL_TRACE:
        return primal
    if primal._edge is None and primal._requires_grad:
        return primal
    alias = Tensor._from(primal._value, primal._edge)
    share_version(primal, alias)
    return alias


# ---- nested levels: a value may carry tangents of several dual levels ----
# A tracer of level M holds values of lower levels only; x = p + e_M t with p, t of levels
# below M. The helpers below move a level-L tangent across tracers of levels above L.


def _index(trace: ForwardTrace) -> int:
    """The dual-level index (as enter_dual_level returned it) of a live dual trace."""
    duals = _dual_traces()
    return duals.index(trace) if trace in duals else -1


def _inner(x, trace: ForwardTrace):
    """`x` itself if it is a live ForwardTracer of a level above `trace` (dead torch dual
    levels lowered to their primal), else None."""
    while isinstance(x, ForwardTracer) and not x._trace.alive and x._trace.dual:
        x = x._value
    if isinstance(x, ForwardTracer) and x._trace.alive and x._trace.level > trace.level:
        return x
    return None


def _has_tangent_at(x, trace: ForwardTrace) -> bool:
    """Whether `x` carries a tangent of `trace` (directly, or inside tracers of higher levels)."""
    todo = [x]
    while todo:
        x = todo.pop()
        while isinstance(x, ForwardTracer) and not x._trace.alive and x._trace.dual:
            x = x._value
        if not isinstance(x, ForwardTracer) or not x._trace.alive:
            continue
        if x._trace is trace:
            return True
        if x._trace.level > trace.level:
            todo.append(x._value)
            if x._tangent is not None:
                todo.append(x._tangent)
    return False


def _split(x, trace: ForwardTrace):
    """`(primal, tangent)` with x = primal + e tangent at `trace` (tangent None: zero); both keep
    the tangents `x` has at higher levels."""
    while isinstance(x, ForwardTracer) and not x._trace.alive and x._trace.dual:
        x = x._value
    if isinstance(x, ForwardTracer) and x._trace is trace:
        return x._value, x._tangent
    outer = _inner(x, trace)
    if outer is None:
        return x, None
    # x = (pv + e dv) + e_M (pw + e dw) = (pv + e_M pw) + e (dv + e_M dw)
    up = outer._trace
    pv, dv = _split(outer._value, trace)
    pw, dw = (None, None) if outer._tangent is None else _split(outer._tangent, trace)
    primal = up.dual_value(pv, pw)
    if dv is None and dw is None:
        return primal, None
    if dv is None:
        dv = _zeros_like(dw)
    return primal, up.dual_value(dv, dw)


def _pack(primal, tangent, trace: ForwardTrace, alias: bool = False):
    """primal + e tangent at `trace`, where either may carry tangents of higher levels (the
    result is then a tracer of the highest of those, holding the `trace` dual inside)."""
    a, b = _inner(primal, trace), _inner(tangent, trace)
    if a is None and b is None:
        return ForwardTracer(primal, trace, tangent, alias)
    up = max((x._trace for x in (a, b) if x is not None), key=lambda t: t.level)
    # (pa + e_M pb) + e (ta + e_M tb) = (pa + e ta) + e_M (pb + e tb)
    pa, pb = _split(primal, up)
    ta, tb = _split(tangent, up)
    low = _pack(pa, ta, trace, alias)
    if tb is None:
        high = pb
    else:
        high = _pack(_zeros_like(tb) if pb is None else pb, tb, trace)
    return up.dual_value(low, high)


def _zeros_like(x) -> Tensor:
    """A level-0 zero with the shape and dtype of `x`."""
    return Tensor._from(np.zeros(tuple(shape_of(x)), dtype_of(x)))


# ---- the tangent's memory layout (torch reuses a tangent as-is only if it has the primal's) ----


def _layout(a: ndarray):
    """(storage size, offset, strides) of `a` in elements, its storage being the outermost
    array its memory belongs to."""
    root = a
    while isinstance(root.base, ndarray):
        root = root.base
    item = a.itemsize
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return root.nbytes // item, offset // item, tuple(s // item for s in a.strides)


def _overlaps(a: ndarray) -> bool:
    """Whether two elements of `a` share memory (a stride-0 or overlapping layout)."""
    dims = sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1)
    reach = a.itemsize
    for stride, n in dims:
        if stride < reach:
            return True
        reach = stride * n
    return False


def _with_layout_of(tangent, primal):
    """`tangent` itself if its memory layout is the primal's (storage size, offset, strides),
    else a copy laid out as the primal (torch's make_dual), so that views and in-place updates
    of the dual treat both parts alike. Tracers and non-array values are kept as they are."""
    if not (type(tangent) is Tensor and tangent._trace is EVAL_TRACE):
        return tangent
    if not (type(primal) is Tensor and primal._trace is EVAL_TRACE):
        return tangent
    p, t = primal._value, tangent._value
    if type(p) is not ndarray or type(t) is not ndarray or p.size == 0 or _overlaps(p):
        return tangent
    size, offset, strides = _layout(p)
    if _layout(t) == (size, offset, strides):
        return tangent
    copy = bind(copy_p, tangent)  # (recorded: the copy is differentiable)
    buffer = np.zeros(size, dtype=p.dtype)
    laid_out = ndarray(p.shape, p.dtype, buffer, offset * p.itemsize, p.strides)
    laid_out[...] = t
    copy._value = laid_out
    return copy
