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

from autodiff.core.dtypes import dtype_of
from autodiff.core.graph import share_version
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, pop_trace, push_trace, state
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.ops.elementwise import astype
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
        return self._level

    def __exit__(self, *exc):
        exit_dual_level(level=self._level)
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
    dt = dtype_of(tensor)
    if not np.issubdtype(dt, np.inexact):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {dt.name}")
    if not np.issubdtype(dtype_of(tangent), np.inexact):
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
    if dtype_of(tangent) != dt:
        tangent = astype(tangent, dt)
    return ForwardTracer(tensor, trace, tangent)


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
