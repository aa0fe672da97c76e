"""The methods whose meanings differ between NumPy and torch: one dispatcher each.

Two faces, one Tensor
---------------------
`import autodiff as torch` and `import autodiff.numpy as np` share one array type. Most
names mean the same in both (`x.sum()`, `x.reshape(2, 3)`, `x.T`); some do not: NumPy's
`x.transpose(0, 1)` is an axes permutation (the identity on a matrix) where torch's swaps two
dims, `x.var()` is biased in NumPy and unbiased in torch, `x.max(1)` gives values in NumPy and
`(values, indices)` in torch, `x.repeat(2, 1)` repeats elements in NumPy and tiles in torch,
`x.sort()` sorts in place in NumPy and returns `(values, indices)` in torch.

A value's face is the type of the concrete value underneath it (`autodiff.core.tensor.face_of`):

- a level-0 Tensor is torch's: only the torch face makes them (`autodiff.tensor`, `zeros`,
  `randn`, ..., `Tensor(...)`, `requires_grad=True`, parameters), and every operation on one
  returns one, so results inherit the face with no bookkeeping on the hot path;
- a NumPy array or a Python number is NumPy's: `autodiff.numpy` functions on them return
  arrays, and function transforms (`grad`, `vmap`, ...) trace them with tracers over them;
- a tracer has the face of the value it traces (its primal chain ends at a level-0 Tensor
  or at a NumPy array), so `autodiff.grad(f)(np_array)` runs `f` with NumPy's meanings and
  `autograd.functional.jacobian(f, tensor)` with torch's; a dual tensor is torch's;
- a staged value (inside `jit`) has only a shape and a dtype: its face is unknown.

A method whose meanings differ is installed once, as a dispatcher, and reads its call so:

- a call both libraries accept with different meanings runs with the value's face's meaning
  (`x.var()`, `x.max(1)`, `x.transpose(0, 1)` on a matrix, `x.repeat(2, 1)`, `x.sort()`);
  for a staged value, whose face is unknown, it raises a TypeError naming both readings and
  the function that says which is meant (`autodiff.numpy.var(x)` or `autodiff.var(x)`);
- a call spelled in one library's signature only runs with that library's meaning on
  either face, since there is no other reading to confuse it with: NumPy's `x.transpose()`,
  `x.cumsum()` without an axis, `x.repeat(2, axis=0)`, `x.sum(0, np.float32)`; torch's
  `x.sum(1, True)`, `x.max(other)`, `x.flatten(1)`, `x.view(2, 3)`. Keywords never clash:
  `dim=`, `keepdim=`, `axis=`, `keepdims=` are accepted on both faces;
- a library's errors for the values given stay that face's errors: NumPy's squeeze of an
  axis of length 2, torch's `dot` of two matrices, torch's `imag` of a real tensor;
- NumPy's in-place methods (`sort`, `put`, `resize`) cannot run on a traced value: on the
  NumPy face they raise, naming the functional spelling.

`x.size` is an int that is also callable on the torch face (`x.size()` is `torch.Size`,
`x.size(0)` an int; on the NumPy face it is NumPy's plain int). `autodiff.<name>` functions
are torch's (`autodiff.max(x, 1)` returns `(values, indices)`); `autodiff.numpy` functions
are NumPy's. `tests/test_two_faces.py` tests every name ndarray and torch.Tensor share from
both faces, against NumPy and against torch.

What stays one way on both faces, on purpose: `x.shape` is a tuple (it compares equal to
`torch.Size`, but prints as a tuple). `x.dtype` of a torch-face tensor is torch's dtype object
(`torch.float64`, with `is_floating_point`), which compares equal to the NumPy dtype it stands
for, is accepted by NumPy as that dtype and answers NumPy's dtype attributes (`kind`,
`itemsize`, ...); a function transform's value has NumPy's dtype (`autodiff/torch/dtypes.py`).

This module holds those dispatchers, which `autodiff/torch/_tensor_methods.py` installs; the
torch meanings they dispatch to are the torch functions of the package's other modules.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor, face_of
from autodiff.numpy import _tensor_methods as _ndarray
from autodiff.torch._args import _ambiguous, _concrete, _dims_arg, _no_extra, _pick, _too_many
from autodiff.torch.indexing import torch_nonzero, torch_put
from autodiff.torch.joining import torch_diagonal, torch_repeat
from autodiff.torch.linalg import torch_dot
from autodiff.torch.pointwise import clamp
from autodiff.torch.reductions import (  # (torch's sum, all, any, max, min: not the builtins)
    all,
    any,
    argmax,
    argmin,
    argsort,
    cumprod,
    cumsum,
    max,
    mean,
    min,
    prod,
    sort,
    std,
    sum,
    var,
)
from autodiff.torch.views import _view_dtype, torch_flatten, torch_squeeze, torch_transpose, view

# NumPy's keyword spellings for torch's, accepted on both faces (keywords never clash).
_NUMPY_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}


def _numpy_kwargs(kwargs: dict) -> dict:
    if not kwargs or not ("dim" in kwargs or "keepdim" in kwargs):
        return kwargs
    out = {}
    for k, v in kwargs.items():
        name = _NUMPY_KEYWORDS.get(k, k)
        if name in out:
            raise TypeError(f"got both {k}= and {name}=")
        out[name] = v
    return out


# NumPy's keywords torch's reductions do not have: a call with one is NumPy's.
_NUMPY_ONLY = ("out", "initial", "where", "ddof", "kind", "order")


def _torch_call(self, args: tuple, kwargs: dict) -> bool:
    """Whether a call of a shared reduction reads as torch's. Both libraries read the
    reduced axes alike; their second positional argument differs (torch's `keepdim`, a
    bool; NumPy's `dtype` or `out`), so it says which is meant, and so do NumPy's own
    keywords. Otherwise the face decides (a staged value: torch's, which reads alike)."""
    if len(args) >= 2:
        return isinstance(args[1], builtins.bool)
    if kwargs and builtins.any(k in kwargs for k in _NUMPY_ONLY):
        return False
    return face_of(self) != "numpy"


def _shared_reduction(
    name: str, torch_impl: Callable, numpy_impl: Callable, alike: bool = False
) -> Callable:
    """`x.sum(...)` and its kind: the same meaning in both libraries, positional arguments
    aside (NumPy's second is `dtype` or `out`, torch's `keepdim`). `alike`: torch's form
    called without arguments is NumPy's (over every axis, no dtype): `x.sum()` takes it
    without reading its arguments."""

    def method(self, *args, **kwargs):
        if alike and not (args or kwargs):
            return numpy_impl(self)
        if _torch_call(self, args, kwargs):
            return torch_impl(self, *args, **kwargs)
        return numpy_impl(self, *args, **_numpy_kwargs(kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(...)`: NumPy's `{name}(axis, ...)` and torch's `{name}(dim, keepdim)`, "
        "which agree; `dim=`/`keepdim=` and `axis=`/`keepdims=` on both faces."
    )
    return method


t_sum = _shared_reduction("sum", sum, anp.sum, alike=True)
t_mean = _shared_reduction("mean", mean, anp.mean, alike=True)
t_prod = _shared_reduction("prod", prod, anp.prod, alike=True)
t_all = _shared_reduction("all", all, anp.all, alike=True)
t_any = _shared_reduction("any", any, anp.any, alike=True)
t_argmax = _shared_reduction("argmax", argmax, anp.argmax)
t_argmin = _shared_reduction("argmin", argmin, anp.argmin)


def t_argsort(self, *args, **kwargs) -> Tensor:
    """`x.argsort(...)`: NumPy's `argsort(axis=-1, kind=None)` and torch's
    `argsort(dim=-1, descending=False)`, which agree (`descending=` is torch's)."""
    face = face_of(self)
    if "kind" in kwargs or "order" in kwargs or (len(args) >= 2 and isinstance(args[1], str)):
        face = "numpy"  # (NumPy's own arguments)
    elif (
        "descending" in kwargs
        or "stable" in kwargs
        or (len(args) >= 2 and isinstance(args[1], builtins.bool))
    ):
        face = "torch"  # (torch's own)
    if face != "numpy":  # (a staged value: both read the rest alike)
        return argsort(self, *args, **kwargs)
    return anp.argsort(self, *args, **_numpy_kwargs(kwargs))


def t_cumsum(self, *args, **kwargs) -> Tensor:
    """`x.cumsum(dim)`: torch's requires `dim`; NumPy's `cumsum()` runs over the flattened
    array."""
    if _with_dim(self, args, kwargs):
        return cumsum(self, *args, **kwargs)
    return anp.cumsum(self, *args, **_numpy_kwargs(kwargs))


def t_cumprod(self, *args, **kwargs) -> Tensor:
    """`x.cumprod(dim)`: as `cumsum`."""
    if _with_dim(self, args, kwargs):
        return cumprod(self, *args, **kwargs)
    return anp.cumprod(self, *args, **_numpy_kwargs(kwargs))


def _with_dim(self, args: tuple, kwargs: dict) -> bool:
    """A torch-face `cumsum`/`cumprod` call in torch's spelling (with `dim`; without it,
    only NumPy's reading exists: over the flattened array)."""
    if face_of(self) == "numpy" or "out" in kwargs:
        return False
    return builtins.bool(args) or "dim" in kwargs or "axis" in kwargs


def t_transpose(self, *args, **kwargs) -> Tensor:
    """`x.transpose(...)`: torch's `transpose(dim0, dim1)` swaps two dimensions; NumPy's
    `transpose(*axes)` permutes them (reverses them without arguments)."""
    torch_spelling = builtins.bool(kwargs) or (
        len(args) == 2 and builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args)
    )
    face = face_of(self) if torch_spelling else "numpy"  # (no dims, or all: NumPy's only)
    if face is None:
        face = _transpose_reading(self, args, kwargs)
    if face == "torch":
        return torch_transpose(self, *args, **kwargs)
    return _ndarray.transpose(self, *args, **kwargs)


def _transpose_reading(self, args, kwargs) -> str:
    if "dim0" in kwargs or "dim1" in kwargs:
        return "torch"
    if len(args) == 2 and builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args):
        ndim = self.ndim
        if ndim != 2:
            return "torch"  # (NumPy's reading needs as many axes as dimensions)
        if {a % 2 for a in args} == {0, 1} and args[0] % 2 == 0:
            _ambiguous(
                "transpose",
                "the identity permutation",
                "a swap of dims 0 and 1",
                "autodiff.numpy.transpose(x, (0, 1))",
                "autodiff.transpose(x, 0, 1)",
            )
    return "numpy"


def t_var(self, *args, **kwargs) -> Tensor:
    """`x.var(...)`: unbiased in torch (`correction=1`), biased in NumPy (`ddof=0`)."""
    return _var_std_method("var", var, anp.var, self, args, kwargs)


def t_std(self, *args, **kwargs) -> Tensor:
    """`x.std(...)`: unbiased in torch (`correction=1`), biased in NumPy (`ddof=0`)."""
    return _var_std_method("std", std, anp.std, self, args, kwargs)


def _var_std_method(name, torch_impl, numpy_impl, self, args, kwargs):
    face = face_of(self)
    if (len(args) >= 2 and not isinstance(args[1], builtins.bool)) or builtins.any(
        k in kwargs for k in ("out", "where", "mean")
    ):
        face = "numpy"  # (NumPy's positional dtype, out, ...: torch has none of them)
    elif builtins.any(isinstance(a, builtins.bool) for a in args[1:]) or "unbiased" in kwargs:
        face = "torch"  # (torch's positional unbiased / keepdim: NumPy has none)
    if face is None:
        explicit = (
            builtins.any(k in kwargs for k in ("ddof", "correction", "unbiased"))
            or builtins.any(isinstance(a, builtins.bool) for a in args)
            or len(args) >= 4
        )
        if not explicit:
            _ambiguous(
                name,
                "the biased estimate (ddof=0)",
                "the unbiased one (correction=1)",
                f"autodiff.numpy.{name}(x, ...)",
                f"autodiff.{name}(x, ...)",
            )
        face = (
            "torch"
            if (builtins.any(isinstance(a, builtins.bool) for a in args) or "unbiased" in kwargs)
            else "numpy"
        )
    if face == "torch":
        return torch_impl(self, *args, **kwargs)
    return numpy_impl(self, *args, **_numpy_kwargs(kwargs))


def _max_min_method(name: str, torch_impl: Callable, numpy_impl: Callable) -> Callable:
    def method(self, *args, **kwargs) -> Any:
        face = face_of(self)
        if builtins.any(k in kwargs for k in ("out", "initial", "where")) or (
            len(args) >= 2 and not isinstance(args[1], builtins.bool)
        ):
            face = "numpy"  # (NumPy's own arguments: torch has none of them)
        elif (args and isinstance(args[0], (Tensor, np.ndarray))) or (
            len(args) >= 2 and isinstance(args[1], builtins.bool)
        ):
            face = "torch"  # (torch's elementwise form and positional keepdim)
        if face is None:
            reduces_dim = (
                args
                and not isinstance(args[0], (Tensor, np.ndarray, tuple, list))
                and args[0] is not None
            ) or builtins.any(
                kwargs.get(k) is not None and not isinstance(kwargs.get(k), (tuple, list))
                for k in ("dim", "axis")
            )
            if args and isinstance(args[0], (Tensor, np.ndarray)):
                face = "torch"
            elif reduces_dim:
                _ambiguous(
                    name,
                    f"the {name}imum values along the axis",
                    "the named tuple (values, indices)",
                    f"autodiff.numpy.{name}(x, axis)",
                    f"autodiff.{name}(x, dim)",
                )
            else:
                face = "numpy"
        if face == "torch":
            return torch_impl(self, *args, **kwargs)
        return numpy_impl(self, *args, **_numpy_kwargs(kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(...)`: torch's `{name}(dim)` returns (values, indices) and `{name}(other)` "
        f"the elementwise {name}imum; NumPy's `{name}(axis)` returns the values."
    )
    return method


t_max = _max_min_method("max", max, anp.max)
t_min = _max_min_method("min", min, anp.min)


def t_repeat(self, *args, **kwargs) -> Tensor:
    """`x.repeat(...)`: torch's `repeat(*sizes)` tiles the tensor; NumPy's
    `repeat(repeats, axis=None)` repeats each element."""
    face = face_of(self)
    if "axis" in kwargs or len(_dims_arg(args)) < self.ndim:
        face = "numpy"  # (torch's reading needs a size for every dimension)
    if face is None:
        _ambiguous(
            "repeat",
            "each element repeated",
            "the whole tensor tiled",
            "autodiff.numpy.repeat(x, repeats, axis)",
            "autodiff.tile(x, sizes)",
        )
    if face == "torch":
        return torch_repeat(self, *args, **kwargs)
    return anp.repeat(self, *args, **kwargs)


def t_sort(self, *args, **kwargs) -> Any:
    """`x.sort(...)`: torch's returns (values, indices); NumPy's sorts in place, which a
    traced value cannot do."""
    face = face_of(self)
    if face == "torch":
        return sort(self, *args, **kwargs)
    if face == "numpy":
        raise TypeError(
            "x.sort() sorts a NumPy array in place, which a traced value cannot do: write "
            "x = autodiff.numpy.sort(x) (autodiff.sort(x) is torch's, returning (values, indices))."
        )
    _ambiguous(
        "sort",
        "an in-place sort",
        "(values, indices)",
        "x = autodiff.numpy.sort(x)",
        "autodiff.sort(x)",
    )


def t_squeeze(self, *args, **kwargs) -> Tensor:
    """`x.squeeze(dim)`: a dimension of length other than 1 is left alone in torch and an
    error in NumPy."""
    face = face_of(self)
    if face == "numpy":
        return anp.squeeze(self, *args, **_numpy_kwargs(kwargs))
    dim = args[0] if args else _pick(kwargs, "dim", "axis", None)
    _too_many("squeeze", args, 1)
    _no_extra("squeeze", kwargs)
    return torch_squeeze(self, dim)


def t_flatten(self, *args, **kwargs) -> Tensor:
    """`x.flatten(...)`: torch's `flatten(start_dim=0, end_dim=-1)`, NumPy's
    `flatten(order='C')` (a string): the argument says which; both flatten everything
    without one."""
    if (args and isinstance(args[0], str)) or "order" in kwargs:
        return _ndarray.flatten(self, *args, **kwargs)
    if face_of(self) == "numpy" and not args and not kwargs:
        return _ndarray.flatten(self)
    return torch_flatten(self, *args, **kwargs)


def t_dot(self, other, *args, **kwargs) -> Tensor:
    """`x.dot(other)`: torch's is for two vectors only; NumPy's also multiplies matrices."""
    if face_of(self) == "torch":
        return torch_dot(self, other)
    return anp.dot(self, other, *args, **kwargs)


def t_nonzero(self, *args, **kwargs) -> Any:
    """`x.nonzero()`: torch's is an (n, ndim) tensor (`as_tuple=True`: NumPy's tuple)."""
    face = face_of(self)
    if face is None and not kwargs.get("as_tuple"):
        _ambiguous(
            "nonzero",
            "a tuple of index arrays",
            "an (n, ndim) tensor",
            "autodiff.numpy.nonzero(x)",
            "autodiff.nonzero(x)",
        )
    if face == "numpy":
        return tuple(np.nonzero(np.asarray(_concrete(self))))
    return torch_nonzero(self, *args, **kwargs)


def t_put(self, *args, **kwargs) -> Tensor:
    """`x.put(...)`: torch's returns a new tensor; NumPy's writes in place, which a traced
    value cannot do."""
    face = face_of(self)
    if face == "torch":
        return torch_put(self, *args, **kwargs)
    if face == "numpy":
        raise TypeError(
            "x.put() writes into a NumPy array in place, which a traced value cannot do: "
            "write x = x.at[indices].set(values) (on the flattened array)."
        )
    _ambiguous(
        "put", "an in-place write", "a new tensor", "x.at[...].set(...)", "autodiff.put(x, ...)"
    )


def t_resize(self, *args, **kwargs) -> Tensor:
    """`x.resize(...)`: torch's (deprecated) gives a reshaped tensor of the same number of
    elements; NumPy's resizes the array in place, which a traced value cannot do."""
    face = face_of(self)
    if face == "torch":
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        sizes = _dims_arg(args)
        if math.prod(sizes) != self.size:
            raise RuntimeError(
                "resize(): the number of elements must stay the same (use resize_ for other sizes)"
            )
        return anp.reshape(self, sizes)
    if face == "numpy":
        raise TypeError(
            "x.resize() resizes a NumPy array in place, which a traced value cannot do: write "
            "x = autodiff.numpy.reshape(x, shape) (or numpy.resize's repetition with tile)."
        )
    _ambiguous(
        "resize",
        "an in-place resize",
        "a reshaped tensor",
        "autodiff.numpy.reshape(x, shape)",
        "x.reshape(shape)",
    )


def t_view(self, *args, **kwargs) -> Tensor:
    """`x.view(...)`: torch's `view(*shape)` (a reshape without copy) and `view(dtype)`;
    NumPy's `view(dtype)` (the same: a reinterpretation of the bytes)."""
    if "dtype" in kwargs:
        return _view_dtype(self, kwargs.pop("dtype"))
    _no_extra("view", kwargs)
    return view(self, *args)


def t_real(self) -> Tensor:
    """`x.real`: the real part (a real tensor itself)."""
    return anp.real(self)


def t_imag(self) -> Tensor:
    """`x.imag`: the imaginary part; torch raises for a real tensor where NumPy gives zeros."""
    if self.dtype.kind != "c" and face_of(self) == "torch":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return anp.imag(self)


def t_round(self, *args, **kwargs) -> Tensor:
    """`x.round(decimals=0)` (half to even, in both)."""
    return anp.round(self, *args, **kwargs)


def t_clip(self, *args, **kwargs) -> Tensor:
    """`x.clip(min, max)`: NumPy's and torch's (a_min=/a_max= or min=/max=)."""
    lo = args[0] if len(args) > 0 else kwargs.pop("min", kwargs.pop("a_min", None))
    hi = args[1] if len(args) > 1 else kwargs.pop("max", kwargs.pop("a_max", None))
    _too_many("clip", args, 2)
    _no_extra("clip", kwargs)
    if face_of(self) == "torch":
        return clamp(self, lo, hi)
    return anp.clip(self, lo, hi)


def t_diagonal(self, *args, **kwargs) -> Tensor:
    """`x.diagonal(offset=0, dim1=0, dim2=1)` (NumPy's axis1=/axis2= too)."""
    return torch_diagonal(self, *args, **kwargs)


def t_take(self, indices, *args, **kwargs) -> Tensor:
    """`x.take(indices, axis=None)`: from the flattened tensor (both), along `axis` (NumPy)."""
    return anp.take(self, indices, *args, **kwargs)
