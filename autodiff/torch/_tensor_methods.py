"""Tensor's operators, methods, properties and protocols: one table, installed once.

`autodiff.core.tensor` defines what a Tensor is (its value, trace, metadata and autograd
state). What a Tensor does is written with the op families, the NumPy namespace and the
autograd engine, which sit above the core, so it is gathered here, at the top of the
package, and installed on Tensor when `autodiff` is imported. Each entry is the
implementation itself, never a wrapper around it: `t + u` and `t[i]` cost no extra frame.
Nothing else attaches attributes to Tensor (tests/test_public_surface.py checks), and
`autodiff/core/tensor.pyi` shows the whole class (`python tools/make_stubs.py` writes it).

Where NumPy and torch give a name different meanings (`transpose`, `var`, `max`, `repeat`,
`sort`, ...), the entry of `SHARED_METHODS` reads each call with the meaning of the tensor's
face: torch's for torch-face tensors, NumPy's for NumPy-face values (the rules are in
`autodiff/torch/faces.py`'s docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd import _grad_dtype
from autodiff.autograd import _inplace_views as inplace_views
from autodiff.autograd import _tensor_api as autograd
from autodiff.core.tensor import Tensor
from autodiff.numpy import _tensor_methods as ndarray
from autodiff.ops.at import at
from autodiff.ops.index import getitem
from autodiff.torch import (
    _args,
    conversions,
    creation,
    dtypes,
    faces,
    indexing,
    inplace,
    joining,
    linalg,
    pointwise,
    random,
    reductions,
    types,
    views,
)

OPERATORS = {
    "__add__": ndarray.binary_operator("add"),
    # (commutative: `2 * b` records b's node first, as torch's `b.mul(2)` does)
    "__radd__": ndarray.binary_operator("add"),
    "__iadd__": ndarray.in_place_operator("add", np.add),
    "__sub__": ndarray.binary_operator("subtract"),
    "__rsub__": ndarray.reflected_operator("subtract"),
    "__isub__": ndarray.in_place_operator("subtract", np.subtract),
    "__mul__": ndarray.binary_operator("multiply"),
    "__rmul__": ndarray.binary_operator("multiply"),
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

# NumPy's ndarray methods torch.Tensor does not have (the NumPy function, array first).
NDARRAY_METHODS = {
    "astype": anp.astype,
    "conjugate": anp.conjugate,
    "copy": anp.copy,
    "ptp": anp.ptp,
    "at": property(at, doc="Functional updates: `x.at[idx].set(v)`, `.add(v)`, ..."),
}

# The names both NumPy's ndarray and torch.Tensor define. Where the meanings differ (or the
# arguments do), the entry dispatches on the tensor's face (autodiff/torch/faces.py's docstring);
# tests/test_two_faces.py tests each from both faces. (`data`, `dtype`, `item`, `ndim`,
# `shape`, `size`, `tolist` are core/tensor.py's.)
SHARED_METHODS = {
    "all": faces.t_all,
    "any": faces.t_any,
    "argmax": faces.t_argmax,
    "argmin": faces.t_argmin,
    "argsort": faces.t_argsort,
    "clip": faces.t_clip,
    "conj": anp.conj,
    "cumprod": faces.t_cumprod,
    "cumsum": faces.t_cumsum,
    "diagonal": faces.t_diagonal,
    "dot": faces.t_dot,
    "flatten": faces.t_flatten,
    "max": faces.t_max,
    "mean": faces.t_mean,
    "min": faces.t_min,
    "nonzero": faces.t_nonzero,
    "prod": faces.t_prod,
    "put": faces.t_put,
    "ravel": anp.ravel,
    "repeat": faces.t_repeat,
    "reshape": views.reshape,
    "resize": faces.t_resize,
    "round": faces.t_round,
    "sort": faces.t_sort,
    "squeeze": faces.t_squeeze,
    "std": faces.t_std,
    "sum": faces.t_sum,
    "swapaxes": anp.swapaxes,
    "take": faces.t_take,
    "trace": anp.trace,
    "transpose": faces.t_transpose,
    "var": faces.t_var,
    "view": faces.t_view,
    "T": property(anp.transpose, doc="The transpose (axes reversed)."),
    "mT": property(ndarray.matrix_transpose, doc="The last two axes swapped."),
    "real": property(faces.t_real, doc=faces.t_real.__doc__),
    "imag": property(faces.t_imag, doc=faces.t_imag.__doc__),
    "device": property(conversions.device_of, doc=conversions.device_of.__doc__),
    "itemsize": property(conversions.itemsize, doc=conversions.itemsize.__doc__),
    "nbytes": property(conversions.nbytes, doc=conversions.nbytes.__doc__),
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
    "grad": property(
        autograd.grad, autograd.set_grad, autograd.del_grad, doc=autograd.grad.__doc__
    ),
    "output_nr": property(autograd.output_nr, doc=autograd.output_nr.__doc__),
    "detach_": autograd.detach_,
    "_backward_hooks": property(
        autograd.backward_hooks,
        autograd.set_backward_hooks,
        autograd.del_backward_hooks,
        doc=autograd.backward_hooks.__doc__,
    ),
    "grad_dtype": property(
        _grad_dtype.get_grad_dtype,
        _grad_dtype.set_grad_dtype,
        doc=_grad_dtype.get_grad_dtype.__doc__,
    ),
    "_grad_fn": property(
        autograd.grad_fn_attr,
        autograd.set_grad_fn_attr,
        autograd.del_grad_fn_attr,
        doc=autograd.grad_fn_attr.__doc__,
    ),
    "__reduce_ex__": autograd.reduce_ex,
    "__deepcopy__": autograd.deepcopy,
}

# torch.Tensor's methods where NumPy's ndarray has none of that name (autodiff/torch/).
_UNARY: dict[str, Callable] = {
    "abs": anp.abs,
    "absolute": anp.abs,
    "acos": anp.arccos,
    "acosh": anp.arccosh,
    "arccos": anp.arccos,
    "arccosh": anp.arccosh,
    "arcsin": anp.arcsin,
    "arcsinh": anp.arcsinh,
    "arctan": anp.arctan,
    "arctanh": anp.arctanh,
    "asin": anp.arcsin,
    "asinh": anp.arcsinh,
    "atan": anp.arctan,
    "atanh": anp.arctanh,
    "ceil": anp.ceil,
    "cos": anp.cos,
    "cosh": anp.cosh,
    "deg2rad": pointwise.deg2rad,
    "digamma": pointwise.digamma,
    "erf": pointwise.erf,
    "erfc": pointwise.erfc,
    "erfinv": pointwise.erfinv,
    "exp": anp.exp,
    "exp2": anp.exp2,
    "expm1": anp.expm1,
    "floor": anp.floor,
    "frac": pointwise.frac,
    "lgamma": pointwise.lgamma,
    "log": anp.log,
    "log10": anp.log10,
    "log1p": anp.log1p,
    "log2": anp.log2,
    "logit": pointwise.logit,
    "nan_to_num": conversions.nan_to_num,
    "neg": anp.negative,
    "negative": anp.negative,
    "rad2deg": pointwise.rad2deg,
    "reciprocal": anp.reciprocal,
    "relu": pointwise.relu,
    "rsqrt": pointwise.rsqrt,
    "sgn": pointwise.sgn,
    "sigmoid": pointwise.sigmoid,
    "sign": anp.sign,
    "sin": anp.sin,
    "sinh": anp.sinh,
    "sqrt": anp.sqrt,
    "square": anp.square,
    "tan": anp.tan,
    "tanh": anp.tanh,
    "trunc": anp.trunc,
    "fix": anp.trunc,
}
_BINARY: dict[str, Callable] = {
    "add": pointwise.add,
    "addcdiv": pointwise.addcdiv,
    "addcmul": pointwise.addcmul,
    "arctan2": anp.arctan2,
    "atan2": anp.arctan2,
    "div": pointwise.div,
    "divide": pointwise.div,
    "float_power": pointwise.float_power,
    "floor_divide": anp.floor_divide,
    "fmax": anp.fmax,
    "fmin": anp.fmin,
    "fmod": pointwise.fmod,
    "hypot": anp.hypot,
    "lerp": pointwise.lerp,
    "logaddexp": anp.logaddexp,
    "maximum": anp.maximum,
    "minimum": anp.minimum,
    "mul": pointwise.mul,
    "multiply": pointwise.mul,
    "pow": pointwise.pow,
    "remainder": pointwise.remainder,
    "sub": pointwise.sub,
    "subtract": pointwise.sub,
    "true_divide": anp.true_divide,
    "xlogy": pointwise.xlogy,
    "clamp": pointwise.clamp,
    "clamp_min": pointwise.clamp_min,
    "clamp_max": pointwise.clamp_max,
}
_COMPARISONS: dict[str, Callable] = {
    "eq": anp.equal,
    "ne": anp.not_equal,
    "lt": anp.less,
    "le": anp.less_equal,
    "gt": anp.greater,
    "ge": anp.greater_equal,
    "greater": anp.greater,
    "greater_equal": anp.greater_equal,
    "less": anp.less,
    "less_equal": anp.less_equal,
    "not_equal": anp.not_equal,
    "logical_and": anp.logical_and,
    "logical_or": anp.logical_or,
    "logical_xor": anp.logical_xor,
}
# Shape, indexing and everything else, out of place; in-place versions are made below.
_OTHER: dict[str, Any] = {
    "addbmm": linalg.addbmm,
    "addmm": linalg.addmm,
    "addmv": linalg.addmv,
    "addr": linalg.addr,
    "adjoint": conversions.adjoint,
    "allclose": conversions.allclose,
    "amax": reductions.amax,
    "amin": reductions.amin,
    "argwhere": indexing.argwhere,
    "as_strided": views.as_strided,
    "baddbmm": linalg.baddbmm,
    "bernoulli": random.bernoulli,
    "bmm": linalg.bmm,
    "cholesky": linalg.cholesky,
    "chunk": views.chunk,
    "clone": views.clone,
    "contiguous": views.contiguous,
    "count_nonzero": reductions.count_nonzero,
    "cpu": conversions.cpu,
    "cross": linalg.cross,
    "cuda": conversions.cuda,
    "det": linalg.det,
    "diag": joining.diag,
    "diag_embed": joining.diag_embed,
    "dim": conversions.dim,
    "dist": reductions.dist,
    "element_size": conversions.element_size,
    "equal": conversions.equal,
    "expand": views.expand,
    "expand_as": views.expand_as,
    "flip": joining.flip,
    "fliplr": joining.fliplr,
    "flipud": joining.flipud,
    "gather": indexing.gather,
    "get_device": conversions.get_device,
    "index_add": indexing.index_add,
    "index_copy": indexing.index_copy,
    "index_fill": indexing.index_fill,
    "index_put": indexing.index_put,
    "index_select": indexing.index_select,
    "inner": linalg.inner,
    "inverse": linalg.inverse,
    "is_complex": conversions.is_complex,
    "is_contiguous": views.is_contiguous,
    "is_floating_point": conversions.is_floating_point,
    "is_same_size": conversions.is_same_size,
    "is_signed": conversions.is_signed,
    "isclose": conversions.isclose,
    "isfinite": anp.isfinite,
    "isinf": anp.isinf,
    "isnan": anp.isnan,
    "kron": linalg.kron,
    "kthvalue": reductions.kthvalue,
    "log_softmax": reductions.log_softmax,
    "logdet": linalg.logdet,
    "logical_not": anp.logical_not,
    "logsumexp": reductions.logsumexp,
    "masked_fill": indexing.masked_fill,
    "masked_scatter": indexing.masked_scatter,
    "masked_select": indexing.masked_select,
    "matmul": anp.matmul,
    "matrix_power": linalg.matrix_power,
    "median": reductions.median,
    "mm": linalg.mm,
    "moveaxis": views.movedim,
    "movedim": views.movedim,
    "mv": linalg.mv,
    "nanmean": reductions.nanmean,
    "nansum": reductions.nansum,
    "narrow": views.narrow,
    "ndimension": conversions.dim,
    "nelement": conversions.numel,
    "new": creation.new,
    "new_empty": creation.new_empty,
    "new_full": creation.new_full,
    "new_ones": creation.new_ones,
    "new_tensor": creation.new_tensor,
    "new_zeros": creation.new_zeros,
    "norm": reductions.norm,
    "numel": conversions.numel,
    "outer": linalg.outer,
    "ger": linalg.outer,
    "permute": views.permute,
    "pinverse": linalg.pinverse,
    "repeat_interleave": joining.repeat_interleave,
    "reshape_as": views.reshape_as,
    "roll": joining.roll,
    "rot90": joining.rot90,
    "scatter": indexing.scatter,
    "scatter_add": indexing.scatter_add,
    "scatter_reduce": indexing.scatter_reduce,
    "select": views.select,
    "signbit": anp.signbit,
    "slogdet": linalg.slogdet,
    "softmax": reductions.softmax,
    "split": views.split,
    "split_with_sizes": views.split_with_sizes,
    "storage": conversions.storage,
    "storage_offset": conversions.storage_offset,
    "stride": conversions.stride,
    "sum_to_size": joining.sum_to_size,
    "swapdims": views.torch_transpose,
    "t": views.t,
    "take_along_dim": indexing.take_along_dim,
    "tensor_split": views.tensor_split,
    "tile": joining.tile,
    "to": conversions.to,
    "topk": reductions.topk,
    "tril": joining.tril,
    "triu": joining.triu,
    "type": conversions.type_,
    "type_as": conversions.type_as,
    "unbind": joining.unbind,
    "unflatten": views.unflatten,
    "unique": reductions.unique,
    "unsqueeze": views.unsqueeze,
    "untyped_storage": conversions.untyped_storage,
    "vdot": linalg.vdot,
    "view_as": views.view_as,
    "where": pointwise.where_method,
    "data_ptr": conversions.data_ptr,
    "H": property(conversions.adjoint, doc="The conjugate transpose (a matrix)."),
    "mH": property(conversions.adjoint, doc="The conjugate transpose of the last two dimensions."),
    "is_cuda": property(conversions._false, doc="False: autodiff computes on the CPU."),
    "is_sparse": property(conversions._false, doc="False: tensors are dense."),
    "is_quantized": property(conversions._false, doc="False."),
    "is_meta": property(conversions.is_meta, doc=conversions.is_meta.__doc__),
    "is_mkldnn": property(conversions._false, doc="False."),
    "is_nested": property(conversions._false, doc="False."),
    "volatile": property(conversions.volatile, doc=conversions.volatile.__doc__),
    "resolve_conj": conversions.resolve,
    "resolve_neg": conversions.resolve,
    "is_conj": conversions.is_conj,
    "is_neg": conversions.is_conj,
    "layout": property(lambda self: types.strided, doc="types.strided."),
}
# In place, through `Tensor._assign_inplace` (torch's version counter and leaf checks).
_IN_PLACE_OF = [
    *(n for n in _UNARY if n not in ("nan_to_num",)),
    "nan_to_num",
    *_BINARY,
    "masked_fill",
    "masked_scatter",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "tril",
    "triu",
    "logical_not",
]
_SPECIAL_IN_PLACE = {
    "add_": inplace.add_,
    "sub_": inplace.sub_,
    "mul_": inplace.mul_,
    "div_": inplace.div_,
    "clip_": _args.in_place(pointwise.clamp),
    "put_": _args.in_place(indexing.torch_put),
    "copy_": inplace.copy_,
    "fill_": inplace.fill_,
    "zero_": inplace.zero_,
    "uniform_": random.uniform_,
    "normal_": random.normal_,
    "bernoulli_": random.bernoulli_,
    "exponential_": random.exponential_,
    "random_": random.random_,
}
# torch's in-place view operations: the tensor's own shape and strides change (its data stay).
_IN_PLACE_VIEWS: dict[str, Callable] = {
    "as_strided_": inplace_views.as_strided_,
    "squeeze_": inplace_views.squeeze_,
    "swapaxes_": inplace_views.swapaxes_,
    "swapdims_": inplace_views.swapdims_,
    "t_": inplace_views.t_,
    "transpose_": inplace_views.transpose_,
    "unsqueeze_": inplace_views.unsqueeze_,
}
TORCH_METHODS: dict[str, Any] = {
    **_UNARY,
    **{
        name: pointwise._binary_method(f, name) if f.__name__ != name else f
        for name, f in _BINARY.items()
    },
    **_COMPARISONS,
    **_OTHER,
    **{
        f"{name}_": _args.in_place({**_UNARY, **_BINARY, **_OTHER}[name])
        for name in _IN_PLACE_OF
        if f"{name}_" not in _SPECIAL_IN_PLACE
    },
    **{f"{name}_": inplace.comparison_in_place(f, f"{name}_") for name, f in _COMPARISONS.items()},
    **_SPECIAL_IN_PLACE,
    **_IN_PLACE_VIEWS,
    # (last: in the stubs, these names shadow the builtins in annotations that follow them)
    "double": conversions._conversion("double", np.float64),
    "float": conversions._conversion("float", np.float32),
    "half": conversions._conversion("half", np.float16),
    "bfloat16": conversions._conversion("bfloat16", "torch.bfloat16"),  # (ml_dtypes: on use)
    "long": conversions._conversion("long", np.int64),
    "int": conversions._conversion("int", np.int32),
    "short": conversions._conversion("short", np.int16),
    "char": conversions._conversion("char", np.int8),
    "byte": conversions._conversion("byte", np.uint8),
    "bool": conversions._conversion("bool", np.bool_),
    "cfloat": conversions._conversion("cfloat", np.complex64),
    "cdouble": conversions._conversion("cdouble", np.complex128),
}

# The groups above, in order (a name in two groups is an error: tests/test_public_surface.py).
TABLE: dict[str, dict[str, Any]] = {
    "operators": OPERATORS,
    "ndarray methods": NDARRAY_METHODS,
    "shared methods": SHARED_METHODS,
    "NumPy protocols": NUMPY_PROTOCOLS,
    "autograd methods": AUTOGRAD_METHODS,
    "torch-style methods": TORCH_METHODS,
}

for _group in TABLE.values():
    for _name, _implementation in _group.items():
        setattr(Tensor, _name, _implementation)

# `x.dtype` of a level-0 Tensor (the torch face's) is torch's dtype object (`torch.float64`,
# with `is_floating_point`, ...), which also reads as the NumPy dtype it stands for (it
# compares equal to it, NumPy accepts it, and it answers NumPy's dtype attributes); a
# function transform's value keeps NumPy's dtype (the NumPy face's).
_numpy_dtype = vars(Tensor)["dtype"].fget


def _dtype(self) -> Any:
    d = _numpy_dtype(self)
    return dtypes._BY_NUMPY.get(d, d) if type(self) is Tensor else d


_FACED = {"dtype": property(_dtype, doc="The dtype: torch's dtype object at level 0.")}
for _name, _implementation in _FACED.items():
    setattr(Tensor, _name, _implementation)
