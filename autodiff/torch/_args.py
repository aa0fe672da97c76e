"""Argument adapters of the torch face: dims, keyword aliases, dtypes, and the `out=` and
in-place writers."""

from __future__ import annotations

import builtins
import contextlib
import functools
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core import views as _views
from autodiff.core.dtypes import is_bfloat16
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor, face_of
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.torch import dtypes as torch_dtypes


def _array(x):
    """The concrete NumPy value of a level-0 Tensor (None for tracers)."""
    if isinstance(x, Tensor):
        if x._trace is not EVAL_TRACE:
            return None
        v = x._value
        return v if type(v) is np.ndarray else np.asarray(v)
    return np.asarray(x)


def _grad_mode() -> bool:
    return state().grad_enabled


def wrap_dim(d, ndim: int) -> int:
    """A dimension index in [0, ndim) (torch's range check and message; a 0-d tensor takes
    -1 and 0)."""
    d = operator.index(d)
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return d % n


def _dims_arg(args: tuple) -> tuple:
    """`f(1, 2)` or `f((1, 2))` or `f([1, 2])`, as a tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(args[0])
    if len(args) == 1 and isinstance(args[0], Tensor) and args[0].ndim == 1:
        return tuple(builtins.int(v) for v in args[0].tolist())
    return args


def _reduce_axes(x, dim) -> Any:
    """torch's `dim` (None, an int or a sequence of ints) as autodiff.numpy's `axis`."""
    if dim is None:
        return None
    ndim = x.ndim
    if isinstance(dim, (tuple, list, Size)):
        axes = tuple(wrap_dim(d, ndim) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes} appears multiple times in the list of dims")
        return None if ndim == 0 or not axes else axes
    d = wrap_dim(dim, ndim)
    return None if ndim == 0 else d


def _pick(kwargs: dict, name: str, alias: str, default, value=None):
    """A keyword given under torch's name or NumPy's (not both)."""
    if name in kwargs and alias in kwargs:
        raise TypeError(f"got both {name}= and its alias {alias}=")
    if name in kwargs:
        return kwargs.pop(name)
    if alias in kwargs:
        return kwargs.pop(alias)
    return default if value is None else value


def _alias(kwargs: dict, alias: str, value, default):
    """`value`, or NumPy's spelling `alias=` of it from `kwargs` (not both)."""
    if alias in kwargs:
        if value is not default:
            raise TypeError(f"got a value both for {alias}= and its torch spelling")
        return kwargs.pop(alias)
    return value


def _no_extra(name: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _too_many(name: str, args: tuple, n: int) -> None:
    if len(args) > n:
        raise TypeError(f"{name}() takes at most {n} positional arguments ({len(args)} given)")


def _np_dtype(d):
    return torch_dtypes.to_numpy_dtype(d)


def _cast(x, d):
    """`x` in dtype `d` (None: unchanged)."""
    d = _np_dtype(d)
    if d is None or x.dtype == d:
        return x
    return anp.astype(x, d)


def fused(fn: Callable, x, *args, **kwargs):
    """`fn(x, *args, **kwargs)`, computed in float32 when `x` is bfloat16 and its result rounded
    back once: torch runs these functions (softmax, logsumexp, norms, ...) as one kernel that
    computes a bfloat16 input in float32, where a composite of bfloat16 ops would round after
    each. Its derivative, through the two casts, is rounded once too, as torch's backward
    kernel's. Other dtypes call `fn` unchanged."""
    if not is_bfloat16(getattr(x, "dtype", np.float64)):
        return fn(x, *args, **kwargs)
    out = fn(anp.astype(x, np.float32), *args, **kwargs)
    return anp.astype(out, x.dtype) if out.dtype == np.float32 else out


def _value_like(value, x):
    """A scalar (Python number or 0-d Tensor) in `x`'s dtype, for fills."""
    if isinstance(value, Tensor):
        return _cast(value, x.dtype)
    return np.asarray(value, dtype=x.dtype)


def _ambiguous(name: str, numpy_reading: str, torch_reading: str, numpy_fn: str, torch_fn: str):
    raise TypeError(
        f"x.{name}(...) means {numpy_reading} in NumPy but {torch_reading} in torch, and x is a "
        "staged value (inside jit), which does not say which of the two APIs the code is "
        f"written for. Write {numpy_fn} for NumPy's meaning or {torch_fn} for torch's."
    )


def _face_or_guess(self) -> str | None:
    return face_of(self)


def _narrow(x, dim: int, start: int, length: int):
    index = [slice(None)] * np.ndim(x)
    index[dim] = slice(start, start + length)
    return x[tuple(index)]


def _concrete(x):
    return x.primal() if isinstance(x, Tensor) else x


def in_place(f: Callable) -> Callable:
    """The in-place method `t.<f>_(...)`: `f(t, ...)` written back into `t`."""

    def method(self, *args, **kwargs):
        since = _views.WRITER.clock()  # (f may record several nodes that read self: clamp_)
        return self._inplace_method(f(self, *args, **kwargs), since)

    functools.update_wrapper(method, f)  # (f's signature, for help() and the stubs)
    method.__name__ = method.__qualname__ = f"{f.__name__}_"
    return method


def write_out(name: str, out, result, inputs: tuple):
    """torch's `out=` argument: `result` written into the tensor `out`, which is returned.

    As in torch, an `out=` function does not record a derivative: with grad mode on, an
    input or `out` that requires grad is an error, and a dual tensor (forward AD) or a value
    traced by a function transform is one too. The result is cast to `out`'s dtype (within
    its kind, as torch: a float result does not go into an integer `out`), and a differently
    shaped `out` is resized (with torch's warning when it had elements)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    values = (*inputs, out)
    if builtins.any(isinstance(v, Tensor) and v._trace is not EVAL_TRACE for v in values):
        raise RuntimeError(
            f"Trying to use forward AD (or another function transform) with {name}_out that "
            "does not support it because it is an out= function: use the result instead."
        )
    if (isinstance(result, Tensor) and result._edge is not None) or (
        out.requires_grad and state().grad_enabled
    ):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    value = np.asarray(_concrete(result))
    if not np.can_cast(value.dtype, out.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {value.dtype.name} can't be cast to the desired output type "
            f"{out.dtype.name}"
        )
    if value.shape != out.shape:
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(value.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=3,
            )
        out._value = value.astype(out.dtype)  # (a resize gives `out` a new buffer, as torch)
        out._vc += 1
        return out
    with _no_grad():
        out._assign_inplace(Tensor._from(value))
    return out


@contextlib.contextmanager
def _no_grad():
    st = state()
    previous, st.grad_enabled = st.grad_enabled, False
    try:
        yield
    finally:
        st.grad_enabled = previous
