"""Tensor's operators, methods, properties and protocols: one table, installed once.

`autodiff.core.tensor` defines what a Tensor is (its value, trace, metadata and autograd
state). What a Tensor does is written with the op families, the NumPy namespace and the
autograd engine, which sit above the core, so it is gathered here, at the top of the
package, and installed on Tensor when `autodiff` is imported. Each entry is the
implementation itself, never a wrapper around it: `t + u` and `t[i]` cost no extra frame.
Nothing else attaches attributes to Tensor (tests/test_public_surface.py checks), and
`autodiff/core/tensor.pyi` shows the whole class (`python tools/make_stubs.py` writes it).

Where the two faces give a name different meanings, the NumPy one is installed (`transpose`,
`var`, `max`, `repeat`, ...), as it always has been.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff import torch_compat as torch
from autodiff.autograd import _tensor_api as autograd
from autodiff.core.tensor import Tensor
from autodiff.numpy import _tensor_methods as ndarray
from autodiff.ops.at import at
from autodiff.ops.index import getitem

OPERATORS = {
    "__add__": ndarray.binary_operator("add"),
    "__radd__": ndarray.reflected_operator("add"),
    "__iadd__": ndarray.in_place_operator("add", np.add),
    "__sub__": ndarray.binary_operator("subtract"),
    "__rsub__": ndarray.reflected_operator("subtract"),
    "__isub__": ndarray.in_place_operator("subtract", np.subtract),
    "__mul__": ndarray.binary_operator("multiply"),
    "__rmul__": ndarray.reflected_operator("multiply"),
    "__imul__": ndarray.in_place_operator("multiply", np.multiply),
    "__truediv__": ndarray.binary_operator("divide"),
    "__rtruediv__": ndarray.reflected_operator("divide"),
    "__itruediv__": ndarray.in_place_operator("divide", np.divide),
    "__floordiv__": ndarray.binary_operator("floor_divide"),
    "__rfloordiv__": ndarray.reflected_operator("floor_divide"),
    "__ifloordiv__": ndarray.in_place_operator("floor_divide"),
    "__mod__": ndarray.binary_operator("remainder"),
    "__rmod__": ndarray.reflected_operator("remainder"),
    "__imod__": ndarray.in_place_operator("remainder"),
    "__pow__": ndarray.binary_operator("power"),
    "__rpow__": ndarray.reflected_operator("power"),
    "__ipow__": ndarray.in_place_operator("power"),
    "__matmul__": ndarray.binary_operator("matmul"),
    "__rmatmul__": ndarray.reflected_operator("matmul"),
    "__imatmul__": ndarray.in_place_operator("matmul"),
    "__eq__": ndarray.binary_operator("equal"),
    "__ne__": ndarray.binary_operator("not_equal"),
    "__lt__": ndarray.binary_operator("less"),
    "__le__": ndarray.binary_operator("less_equal"),
    "__gt__": ndarray.binary_operator("greater"),
    "__ge__": ndarray.binary_operator("greater_equal"),
    "__and__": ndarray.binary_operator("logical_and"),
    "__or__": ndarray.binary_operator("logical_or"),
    "__xor__": ndarray.binary_operator("logical_xor"),
    "__neg__": anp.negative,
    "__pos__": ndarray.positive,
    "__abs__": anp.absolute,
    "__invert__": anp.logical_not,
    "__hash__": object.__hash__,  # (by identity, as torch: `__eq__` is elementwise)
    "__getitem__": getitem,
    "__setitem__": ndarray.setitem,
}

# NumPy's ndarray methods and properties (the NumPy function, array first).
NDARRAY_METHODS = {
    "all": anp.all,
    "any": anp.any,
    "argmax": anp.argmax,
    "argmin": anp.argmin,
    "argsort": anp.argsort,
    "astype": anp.astype,
    "clip": anp.clip,
    "conj": anp.conj,
    "conjugate": anp.conjugate,
    "copy": anp.copy,
    "cumprod": anp.cumprod,
    "cumsum": anp.cumsum,
    "diagonal": anp.diagonal,
    "dot": anp.dot,
    "flatten": ndarray.flatten,
    "max": anp.max,
    "mean": anp.mean,
    "min": anp.min,
    "prod": anp.prod,
    "ptp": anp.ptp,
    "ravel": anp.ravel,
    "repeat": anp.repeat,
    "reshape": ndarray.reshape,
    "round": anp.round,
    "squeeze": anp.squeeze,
    "std": anp.std,
    "sum": anp.sum,
    "swapaxes": anp.swapaxes,
    "take": anp.take,
    "trace": anp.trace,
    "transpose": ndarray.transpose,
    "var": anp.var,
    "T": property(anp.transpose, doc="The transpose (axes reversed)."),
    "mT": property(ndarray.matrix_transpose, doc="The last two axes swapped."),
    "real": property(anp.real, doc="The real part."),
    "imag": property(anp.imag, doc="The imaginary part."),
    "at": property(at, doc="Functional updates: `x.at[idx].set(v)`, `.add(v)`, ..."),
}

# `numpy.f(t)` on Tensors runs `autodiff.numpy.f` (see `autodiff/numpy/_tensor_methods.py`).
NUMPY_PROTOCOLS = {
    "__array_ufunc__": ndarray.array_ufunc,
    "__array_function__": ndarray.array_function,
}

# torch.Tensor's autograd methods (the level-0 state they use is core's: `_grad`, `_edge`).
AUTOGRAD_METHODS = {
    "backward": autograd.backward,
    "register_hook": autograd.register_hook,
    "register_post_accumulate_grad_hook": autograd.register_post_accumulate_grad_hook,
    "retain_grad": autograd.retain_grad,
    "retains_grad": property(autograd.retains_grad, doc=autograd.retains_grad.__doc__),
    "grad": property(autograd.grad, autograd.set_grad, doc=autograd.grad.__doc__),
}

# torch.Tensor's methods where NumPy's ndarray has none of that name.
TORCH_METHODS = {
    "abs": torch.abs,
    "ceil": torch.ceil,
    "cos": torch.cos,
    "cosh": torch.cosh,
    "exp": torch.exp,
    "expm1": torch.expm1,
    "floor": torch.floor,
    "log": torch.log,
    "log1p": torch.log1p,
    "reciprocal": torch.reciprocal,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "sign": torch.sign,
    "sin": torch.sin,
    "sinh": torch.sinh,
    "sqrt": torch.sqrt,
    "square": torch.square,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "trunc": torch.trunc,
    "clamp": torch.clamp,
    "clone": torch.clone,
    "dim": torch.dim,
    "matmul": torch.matmul,
    "mm": torch.mm,
    "numel": torch.numel,
    "pow": torch.pow,
    "t": torch.t,
    "unbind": torch.unbind,
    "unsqueeze": torch.unsqueeze,
    "view": torch.view,
    # In place, with torch's version counter (`Tensor._assign_inplace`).
    "abs_": torch.in_place(torch.abs),
    "ceil_": torch.in_place(torch.ceil),
    "cos_": torch.in_place(torch.cos),
    "cosh_": torch.in_place(torch.cosh),
    "exp_": torch.in_place(torch.exp),
    "expm1_": torch.in_place(torch.expm1),
    "floor_": torch.in_place(torch.floor),
    "log_": torch.in_place(torch.log),
    "log1p_": torch.in_place(torch.log1p),
    "reciprocal_": torch.in_place(torch.reciprocal),
    "relu_": torch.in_place(torch.relu),
    "sigmoid_": torch.in_place(torch.sigmoid),
    "sign_": torch.in_place(torch.sign),
    "sin_": torch.in_place(torch.sin),
    "sinh_": torch.in_place(torch.sinh),
    "sqrt_": torch.in_place(torch.sqrt),
    "square_": torch.in_place(torch.square),
    "tan_": torch.in_place(torch.tan),
    "tanh_": torch.in_place(torch.tanh),
    "trunc_": torch.in_place(torch.trunc),
    "clamp_": torch.in_place(torch.clamp),
    "div_": torch.in_place(anp.divide),
    "mul_": torch.in_place(anp.multiply),
    "pow_": torch.in_place(anp.power),
    "add_": torch.add_,
    "sub_": torch.sub_,
    "copy_": torch.copy_,
    "fill_": torch.fill_,
    "zero_": torch.zero_,
}

# The groups above, in order (a name in two groups is an error: tests/test_public_surface.py).
TABLE: dict[str, dict[str, Any]] = {
    "operators": OPERATORS,
    "ndarray methods": NDARRAY_METHODS,
    "NumPy protocols": NUMPY_PROTOCOLS,
    "autograd methods": AUTOGRAD_METHODS,
    "torch-style methods": TORCH_METHODS,
}

for _group in TABLE.values():
    for _name, _implementation in _group.items():
        setattr(Tensor, _name, _implementation)
