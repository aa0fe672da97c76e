"""Tensor: the array type of the imperative API and the base class of every tracer.

A level-0 Tensor holds a concrete NumPy array in `_value`. A tracer (a subclass
defined by its transform) holds its primal in `_value` — a raw array or a tracer
of a lower level — and its trace in `_trace`. Operators, ndarray-style and torch-style
methods, the NumPy protocols (`__array_ufunc__`, `__array_function__`) and the autograd
methods (`backward`, hooks, `.grad`) are installed by `autodiff/torch/_tensor_methods.py`, from one
table, because they are written with the op families and the engine and the core must not
import upward. `tensor.pyi` beside this file shows the whole class.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from autodiff.core import views as _views
from autodiff.core.dtypes import is_bfloat16, is_inexact
from autodiff.core.errors import (
    EscapedTracerError,
    TracerConversionError,
    conversion_hint,
    index_hint,
)
from autodiff.core.graph import observed, share_version, version_of
from autodiff.core.sizes import _COUNTS, ElementCount, _element_count
from autodiff.core.trace import EVAL_TRACE, TENSOR_TYPES, Trace, state

if TYPE_CHECKING:
    from autodiff.core.graph import Node

# Those of them whose shape is their value's (every Tensor's dtype is its value's): code that
# compares the metadata of two values walks down through them (see `unbroadcast`).
SHAPE_OF_VALUE: set[type[Tensor]] = set()


class Tensor:
    """An n-dimensional array that autodiff can differentiate.

    Example:
        >>> import autodiff as ad
        >>> t = ad.tensor([1.0, 2.0])
        >>> (t * 3).numpy()
        array([3., 6.])
    """

    __slots__ = (
        "_value",
        "_trace",
        "_edge",
        "_requires_grad",
        "_grad",
        "_vc",
        "_accumulator",
        "_view",
        "__weakref__",
    )
    _value: Any  # a raw array or scalar; a tracer's primal (raw, or a lower level's tracer)
    _trace: Trace
    _edge: Any  # (node, output index) of a recorded result; None for leaves
    _requires_grad: bool
    _grad: Tensor | None
    _vc: int
    _accumulator: Any  # a leaf's gradient-accumulator Node, made on first need
    _view: Any  # level 0: a ViewMeta (core/views.py) when this shares a base's memory
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            data = data._value if data._trace is EVAL_TRACE else data.__array__()
        self._value = np.asarray(data, dtype=dtype)
        self._trace = EVAL_TRACE
        self._edge = None
        self._requires_grad = False
        self._grad = None
        self._vc = 0
        self._accumulator = None
        self._view = None
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _from(cls, value, edge=None) -> Tensor:
        """A level-0 Tensor around a fresh result (no copy, no checks): the recording fast path."""
        t = cls.__new__(cls)
        t._value = value
        t._trace = EVAL_TRACE
        t._edge = edge
        t._requires_grad = False
        t._grad = None
        t._vc = 0
        t._accumulator = None
        t._view = None
        return t

    # ---- autograd state (level-0 Tensors; tracers report no graph) ----
    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor: a leaf that asked for them, or a graph result."""
        if self._trace is not EVAL_TRACE:
            # A dual tensor (torch forward AD) requires grad when its primal does.
            dual = getattr(self._trace, "dual", False)
            return dual and isinstance(self._value, Tensor) and self._value.requires_grad
        return self._requires_grad or self._edge is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool and not isinstance(flag, np.bool_):
            raise RuntimeError("requires_grad must be a bool")  # (torch's; also for `del`)
        if self._edge is not None:
            hint = (
                ""
                if flag
                else (
                    " If you want to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            )  # torch gives the hint only when turning requires_grad off
            raise RuntimeError(f"you can only change requires_grad flags of leaf variables.{hint}")
        if flag and not is_inexact(self._value.dtype):
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._requires_grad = bool(flag)

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool")  # (torch's message for `del`)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set `requires_grad` in place (leaves only; on a graph result `True` is a no-op, as
        in torch) and return self."""
        if not (requires_grad and self._edge is not None and self._trace is EVAL_TRACE):
            self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation."""
        if self._trace is not EVAL_TRACE:
            return True
        if self._view is not None:
            message = _views.stale(self)  # (as grad_fn: see autograd/_views.py)
            if message is not None:
                raise RuntimeError(message)
        return self._edge is None

    @property
    def _base(self) -> Tensor | None:
        """The tensor whose memory this view shares (torch's `_base`: never itself a view);
        None for a tensor that is not a view."""
        meta = getattr(self, "_view", None)
        return None if meta is None else meta.base

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another's memory (torch's `_is_view()`)."""
        return getattr(self, "_view", None) is not None

    @property
    def grad_fn(self) -> Node | None:
        """The Node that produced this tensor (None for leaves)."""
        if self._trace is EVAL_TRACE:
            if self._view is not None:
                message = _views.stale(self)  # (its base was written: autograd/_views.py)
                if message is not None:
                    raise RuntimeError(message)
            if self._edge is not None:
                return observed(self._edge[0])  # (its torch class, e.g. MulBackward0)
        return None

    @property
    def _version(self) -> int:
        """How many in-place modifications this tensor has seen (shared with its aliases)."""
        return version_of(self)

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's data and version counter, cut from the graph."""
        if self._trace is not EVAL_TRACE:
            return Tensor._from(self.primal())
        alias = Tensor._from(self._value)
        share_version(self, alias)  # (in-place on either bumps both, as torch's)
        return alias

    @property
    def data(self) -> Tensor:
        """torch's `.data`: this tensor's data as a new leaf, outside autograd (`detach()`).

        NumPy's `ndarray.data` (the raw memory buffer) has no meaning for a traced NumPy
        value: asking a NumPy-face tracer for it raises rather than drop its derivative."""
        if face_of(self) == "numpy":
            raise TracerConversionError(
                f"Cannot take .data of a {type(self).__name__} of NumPy code: NumPy's "
                "ndarray.data is the raw memory buffer, which would lose the derivative "
                "(torch's .data is a detached tensor). Use autodiff.stop_gradient(x) for a "
                "constant."
            )
        # (unlike detach(), torch's .data shares no version counter: its in-place changes go
        # unnoticed by autograd)
        return Tensor._from(self._value if self._trace is EVAL_TRACE else self.primal())

    @data.setter
    def data(self, value: Tensor) -> None:
        # torch's `x.data = y`: x now holds y's data (shared, any shape), outside autograd:
        # no version bump, no graph.
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._trace is not EVAL_TRACE or value._trace is not EVAL_TRACE:
            raise RuntimeError("`.data` can be assigned only outside function transforms")
        if self._requires_grad and not np.issubdtype(value.dtype, np.inexact):
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or "
                "complex dtype"
            )
        self._value = value._value

    @data.deleter
    def data(self) -> None:
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        TENSOR_TYPES.add(cls)
        if cls.shape is Tensor.__dict__["shape"]:  # (vmap's BatchTracer has its own)
            SHAPE_OF_VALUE.add(cls)

    # ---- array metadata (read through to the primal, however deeply nested) ----
    # A loop down the levels rather than a property call per level (nested transforms ask
    # often: every broadcasting rule compares shapes and dtypes), testing types in a set.
    @property
    def shape(self) -> tuple[int, ...]:
        v = self._value
        while type(v) in SHAPE_OF_VALUE:
            v = v._value
        try:  # arrays and NumPy scalars, and Tensors with a shape of their own
            return v.shape
        except AttributeError:
            return np.shape(v)

    @property
    def dtype(self) -> np.dtype:
        v = self._value
        while type(v) in TENSOR_TYPES:
            v = v._value
        try:
            return v.dtype
        except AttributeError:
            return np.asarray(v).dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> ElementCount:
        """The number of elements: on the torch face an int that torch code can call
        (`x.size()` is torch's `Size`, `x.size(d)` the length of dimension `d`); on the NumPy
        face (and for staged values) NumPy's plain int, which arithmetic treats as a weakly
        typed Python number (an int subclass would be a strong int64 to NumPy)."""
        shape = self.shape
        if self._trace is not EVAL_TRACE and face_of(self) != "torch":
            return math.prod(shape)  # type: ignore[return-value]  # (a plain int: see above)
        count = _COUNTS.get(shape)
        if count is None:
            count = _element_count(shape)
        return count

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- in-place updates ----
    def _ufunc_in_place(self, ufunc, other) -> bool:
        """`ufunc(self, other)` written straight into this tensor's buffer, where that is what
        the general path (`_assign_inplace` of the out-of-place result) would do: a level-0
        tensor holding a writable float array, nothing recorded (grad mode off, or no operand
        needs a gradient), and `other` a Python number or an array of the same dtype and
        shape (or 0-d). Returns False, having done nothing, otherwise. An optimizer's
        `p -= lr * p.grad` then makes no new array and no copy, as in torch."""
        value = self._value
        if (
            self._trace is not EVAL_TRACE
            or type(value) is not np.ndarray
            or value.dtype.kind not in "fc"
            or not value.flags.writeable
        ):
            return False
        grad_enabled = state().grad_enabled
        if grad_enabled and (
            self._requires_grad or self._edge is not None or self._view is not None
        ):
            return False
        if isinstance(other, Tensor):
            if other._trace is not EVAL_TRACE or (
                grad_enabled and (other._requires_grad or other._edge is not None)
            ):
                return False
            other = other._value
        if type(other) is np.ndarray:
            if other.dtype != value.dtype or (other.shape != value.shape and other.ndim):
                return False
        elif type(other) not in (float, int):
            return False
        _views.memory_written(self)  # (its producer may have saved it: exp's output)
        ufunc(value, other, out=value)
        self._vc += 1
        return True

    def _assign_inplace(self, result, since=None) -> Tensor:
        """Make this tensor hold `result` (an in-place operator's out-of-place value).

        Without recording, the data are written into the existing buffer. When the update is
        recorded, the tensor takes the new buffer and the new grad_fn, leaving saved
        residuals intact; either way the version counter grows, so a backward pass that
        saved the old value raises. A view, or a tensor whose memory views or `detach()`
        aliases share, is written into in place and the graph rebased as torch's (CopySlices:
        autograd/_views.py); so is a recorded tensor overwritten by a constant (`zero_()`).
        """
        if self._trace is not EVAL_TRACE:  # inside a transform: functional update
            return result
        if isinstance(result, Tensor) and result._trace is not EVAL_TRACE:
            # (writing its value here would drop its derivative: a tangent, a gradient path)
            raise RuntimeError(
                "An in-place operation would write a value that carries a derivative (of a "
                f"dual level or transform: a {type(result).__name__}) into a tensor that has "
                "none, dropping the derivative (torch makes such a tensor dual in place; "
                "autodiff does not). Use the out-of-place form, e.g. `x = x + y` for `x += y`."
            )
        if self._view is not None:  # (a view: written into its base, CopySlices)
            return _views.WRITER.write(self, result, since)
        recording = isinstance(result, Tensor) and result._edge is not None
        grad = state().grad_enabled
        if self._requires_grad and self._edge is None and grad:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        if type(self._vc) is not int or (grad and self._edge is not None and not recording):
            # (others share this memory, or a recorded history is overwritten by a constant)
            return _views.WRITER.write_aliased(self, result, since)
        value = self._inplace_value(result)
        if recording:
            # The op's own nodes saved the old buffer, which stays intact (as torch's
            # original_self): they expect the new version.
            _views.adopt_saved(self, result, since, copy_buffer=False)
            self._value = np.asarray(value, dtype=self.dtype)
            self._rebase(result._edge)
        elif isinstance(self._value, np.ndarray) and self._value.flags.writeable:
            _views.memory_written(self)
            self._value[...] = value
        else:
            self._value = np.array(value, dtype=self.dtype)
        self._vc += 1
        return self

    def _inplace_method(self, result, since=None) -> Tensor:
        """`_assign_inplace` for a torch-style in-place method (`x.mul_(y)`): a function
        transform's tracer is immutable, so the statement would leave `x` unchanged while the
        code goes on as if it had changed: it raises instead. (Python's `x *= y` rebinds `x`
        and stays functional; torch's dual tensors are updated in place.)"""
        if self._trace is not EVAL_TRACE and not getattr(self._trace, "dual", False):
            raise RuntimeError(
                "An in-place method (such as x.mul_(y) or x.zero_()) cannot update a traced "
                f"value ({type(self).__name__}) inside a function transform: traced values are "
                "immutable, and the tensor would silently keep its old value. Use the "
                "out-of-place form (x = x * y) or an augmented assignment (x *= y)."
            )
        return self._assign_inplace(result, since)

    def _inplace_value(self, result):
        """The raw value of an in-place operation's `result`, checked to fit this tensor (its
        shape; a dtype that casts to this one, as NumPy's `out=`)."""
        value = result._value if isinstance(result, Tensor) else np.asarray(result)
        if np.shape(value) != self.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {self.shape} doesn't match the "
                f"broadcast shape {np.shape(value)}"
            )
        if not np.can_cast(np.result_type(value), self.dtype, "same_kind"):
            raise TypeError(
                f"result type {np.result_type(value).name} can't be cast to the desired output "
                f"type {self.dtype.name}"
            )
        return value

    def _rebase(self, edge) -> None:
        """Make `edge` this tensor's history; retain_grad() follows it (as torch's)."""
        old, self._edge = self._edge, edge
        if old is not None and edge is not None:
            retains = old[0].extra.retains if old[0].extra is not None else None
            if retains and old[1] in retains and retains[old[1]]() is self:
                del retains[old[1]]
                edge[0]._retain(edge[1], self)

    # ---- concrete values: a tracer's primal is concrete, so control flow works ----
    def primal(self) -> Any:
        """The concrete NumPy value underneath all levels."""
        v = self._value
        return v.primal() if isinstance(v, Tensor) else v

    def _python_value(self, conversion: str) -> Any:
        """The concrete value for `conversion` to a Python value (float(), .item(), ...).

        A float or complex tracer of a function transform raises `TracerConversionError`:
        the number would be a constant, and the derivative through it silently lost. Values
        that carry no derivative convert: level 0 (the torch face), integers, and the dual
        tensors of torch's forward AD (as in torch). A staged or vmapped level below has no
        one value, and raises from `primal`."""
        if not self._trace.alive:  # an escaped tracer: as any use of it (EscapedTracerError)
            lowered = self._trace.lower(self)
            return lowered._python_value(conversion) if isinstance(lowered, Tensor) else lowered
        try:
            value = self.primal()
        except TracerConversionError:
            # (a staged or vmapped value below: its own error for this conversion, in its words)
            convert = _CONVERSIONS.get(conversion)
            inner = _innermost(self)
            if convert is not None and inner is not self:
                convert(inner)
            raise
        if self._trace is not EVAL_TRACE and np.issubdtype(self.dtype, np.inexact):
            t = self
            while type(t) in TENSOR_TYPES and t._trace is not EVAL_TRACE:
                if not getattr(t._trace, "dual", False):
                    hint = _HINTS[conversion](self) if conversion in _HINTS else ""
                    raise TracerConversionError(
                        f"Cannot convert a {type(self).__name__} to a Python number with "
                        f"{conversion}: the result would lose its derivative. Keep it as an "
                        "array (autodiff.numpy functions work on it), use "
                        "autodiff.stop_gradient(x) if a constant is really meant, or call "
                        f".item() outside the transform. {hint}".rstrip()
                    )
                t = t._value
        return value

    def __bool__(self) -> bool:
        # Python control flow (`if x > 0:`) on the concrete value, as HIPS autograd and torch:
        # a truth value is piecewise constant, so no derivative is lost.
        if not self._trace.alive:  # an escaped tracer: as any use of it (EscapedTracerError)
            return bool(self._trace.lower(self))
        inner = _innermost(self)  # (a staged value below raises in its own words)
        return bool(inner.primal()) if inner is self else bool(inner)

    def __float__(self) -> float:
        value = self._python_value("float()")
        _warn_if_requires_grad(self)
        return float(_one_element(value))

    def __int__(self) -> int:
        return int(_one_element(self._python_value("int()")))

    def __index__(self) -> int:
        return int(np.asarray(self._python_value("operator.index()")).__index__())

    def __complex__(self) -> complex:
        value = self._python_value("complex()")
        _warn_if_requires_grad(self)
        return complex(_one_element(value))

    def __format__(self, format_spec: str) -> str:
        # As torch and NumPy: a 0-d value formats as its number; f"{x}" shows a tracer.
        if self.ndim == 0 and (format_spec or self._trace is EVAL_TRACE):
            return format(np.asarray(self._python_value("a format spec")).item(), format_spec)
        return object.__format__(self, format_spec)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        return np.asarray(self._python_value(".item()")).item()

    def tolist(self) -> Any:
        return np.asarray(self._python_value(".tolist()")).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The value as a NumPy array sharing its memory (level-0 Tensors). As in torch, a
        Tensor that requires grad gives it only with grad mode off or `force=True`."""
        if force:
            return np.asarray(self.detach().__array__())
        if self.requires_grad and state().grad_enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return np.asarray(self.__array__())

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if not self._trace.alive:  # an escaped tracer: as any use of it (EscapedTracerError)
            return np.asarray(self._trace.lower(self), dtype=dtype)
        if dtype is not None and np.dtype(dtype).kind in "biu":
            # (np.int64(x), np.asarray(x, int): integers carry no derivative, nothing is lost)
            return np.asarray(self.primal(), dtype=dtype)
        if self._trace is not EVAL_TRACE:
            raise TracerConversionError(
                f"Cannot convert a {type(self).__name__} to a NumPy array: the result would "
                "lose its derivative. Use autodiff.numpy functions on it, or "
                "autodiff.stop_gradient / .primal() if a constant is really meant. (NumPy does "
                "not dispatch on a list: np.mean([x, y]) converts the list itself; use "
                "autodiff.numpy.mean([x, y]), or np.stack([x, y]) first.)"
            )
        v = self._value
        return np.asarray(v, dtype=dtype) if dtype is not None else np.asarray(v)

    def __repr__(self) -> str:
        if not self._trace.alive:  # (its transform has finished: no value to show as its own)
            try:
                return repr(self._trace.lower(self))  # (torch's dual tensors become values)
            except EscapedTracerError:
                return (
                    f"<escaped tracer: {type(self).__name__} of a finished "
                    f"{type(self._trace).__name__} (level {self._trace.level}), "
                    f"{np.dtype(self.dtype).name}{list(self.shape)}>"
                )
        value = np.asarray(self.primal())
        if is_bfloat16(value.dtype):  # (NumPy prints it as integers where values are whole)
            value = value.astype(np.float32)
        body = np.array2string(value, separator=", ", prefix="tensor(")
        if self._trace is EVAL_TRACE:
            if self._view is not None and _views.stale(self) is not None:
                return f"tensor({body}, grad_fn=<Invalid>)"  # (reading grad_fn raises: torch)
            if self._edge is not None:
                name = self._edge[0].name().rsplit("::", 1)[-1]  # (torch::autograd::CopySlices)
                return f"tensor({body}, grad_fn=<{name}>)"
            if self._requires_grad:
                return f"tensor({body}, requires_grad=True)"
            return f"tensor({body})"
        return f"{type(self).__name__}<level {self._trace.level}>({body})"

    __str__ = __repr__


# JAX's words (kept as a prefix) for the conversions of a tracer that would lose a derivative.
_HINTS = {
    "float()": lambda t: conversion_hint("float"),
    "int()": lambda t: conversion_hint("int"),
    "complex()": lambda t: conversion_hint("complex"),
    "operator.index()": index_hint,
}

_CONVERSIONS = {
    "float()": float,
    "int()": int,
    "complex()": complex,
    "operator.index()": operator.index,
}


def _innermost(tensor: Tensor) -> Tensor:
    """The Tensor at the bottom of a tracer's levels (what its concrete value depends on)."""
    while type(tensor._value) in TENSOR_TYPES:
        tensor = tensor._value
    return tensor


# The concrete values NumPy code computes with: a tracer over one of these is NumPy's.
_NUMPY_VALUES = (np.ndarray, np.generic, bool, int, float, complex)


def face_of(x) -> str | None:
    """Which API a value belongs to: 'torch', 'numpy', or None when that cannot be known.

    A value's face is the type of the concrete value underneath all its levels: a level-0
    Tensor (made by the torch face's factories) is torch's, a NumPy array or a number is
    NumPy's, so a tracer of a function transform has the face of what it traces. Results
    of operations inherit it at no cost: an operation on a level-0 Tensor gives one. A staged
    value (inside `jit`) has only a shape and a dtype: None.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> face_of(ad.tensor([1.0])), face_of(np.ones(2)), face_of(3.0)
        ('torch', 'numpy', 'numpy')
    """
    v = x
    while type(v) in TENSOR_TYPES:
        if v._trace is EVAL_TRACE:
            return "torch"
        v = v._value
    return "numpy" if isinstance(v, _NUMPY_VALUES) else None


def _one_element(value) -> Any:
    """A one-element array as 0-d: torch converts one element of any ndim to a number."""
    if type(value) is np.ndarray and value.ndim and value.size == 1:
        return value.reshape(())
    return value


# torch's warning is a TORCH_WARN_ONCE: shown the first time in the process that float() or
# complex() converts a tensor requiring grad with grad mode on, never again.
_requires_grad_scalar_warned: bool = False


def _warn_if_requires_grad(tensor: Tensor) -> None:
    global _requires_grad_scalar_warned
    if not _requires_grad_scalar_warned and state().grad_enabled and tensor.requires_grad:
        _requires_grad_scalar_warned = True
        warnings.warn(
            "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
            "behavior.\nConsider using tensor.detach() first.",
            UserWarning,
            stacklevel=3,  # (the line that converts)
        )


TENSOR_TYPES.add(Tensor)
SHAPE_OF_VALUE.add(Tensor)
EVAL_TRACE.wrap = Tensor._from  # (level 0 wraps its results in Tensors: see EvalTrace)
