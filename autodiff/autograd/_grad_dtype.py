"""`Tensor.grad_dtype`: the dtype a leaf's `.grad` takes (torch's), kept on the leaf's gradient
accumulator node (core's `_NodeExtra.grad_dtype`; AccumulateGrad's `grad_dtype_of` reads it when
it accumulates, casting each gradient to it).

By default it is the leaf's own dtype; `None` lets gradients of any dtype through uncast.
`check_grad_assignment` is torch's check of `t.grad = g` against it.
"""

from __future__ import annotations

import numpy as np

from autodiff.autograd._accumulate_grad import grad_dtype_of
from autodiff.autograd._record import gradient_edge
from autodiff.core.graph import SAME_DTYPE
from autodiff.core.tensor import Tensor
from autodiff.torch.dtypes import dtype as torch_dtype
from autodiff.torch.dtypes import dtype_of_torch, to_numpy_dtype

# torch's names of dtypes in these messages: c10's ScalarType names ("Float") and the
# TypeMeta names of a tensor's data ("float").
_SCALAR_TYPE = {
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint8": "Byte",
    "bool": "Bool",
}
_TYPE_META = {
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
    "int8": "signed char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "uint8": "unsigned char",
    "bool": "bool",
}


def _scalar_type(d) -> str:
    d = np.dtype(d)
    return _SCALAR_TYPE.get(d.name, d.name)


def _type_meta(d) -> str:
    d = np.dtype(d)
    return _TYPE_META.get(d.name, d.name)


def get_grad_dtype(tensor: Tensor):
    """`t.grad_dtype`: the torch dtype of the leaf's gradients (its own by default), or None
    when gradients of any dtype are accepted.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, dtype=torch.float32, requires_grad=True)
        >>> x.grad_dtype
        torch.float32
    """
    if tensor._edge is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    want = grad_dtype_of(tensor)
    return None if want is None else dtype_of_torch(want)


def set_grad_dtype(tensor: Tensor, value) -> None:
    """`t.grad_dtype = d`: the dtype the leaf's gradients take (cast to it as they accumulate),
    or None to accept any; not while a `.grad` of another dtype is there.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> set_grad_dtype(x, torch.float32)
        >>> (x * 2).sum().backward(); x.grad.dtype
        torch.float32
    """
    if tensor._edge is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, torch_dtype):
        raise RuntimeError(
            f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}"
        )
    want = None if value is None else to_numpy_dtype(value)
    grad = tensor._grad
    if grad is not None and want is not None and grad.dtype != want:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{_scalar_type(want)}' because there is already a "
            f"gradient with dtype '{_type_meta(grad.dtype)}'. Please clear the gradient (.grad = "
            "None) before changing grad_dtype, or ensure the new grad_dtype matches the existing "
            "gradient's dtype."
        )
    same = want is not None and want == tensor.dtype
    if same and tensor._accumulator is None:
        return  # (the default: nothing to keep)
    node, _ = gradient_edge(tensor)  # (the leaf's accumulator keeps it, made if need be)
    node._extra().grad_dtype = SAME_DTYPE if same else want


def check_grad_assignment(tensor: Tensor, grad) -> None:
    """torch's check of `t.grad = grad` against `t.grad_dtype` (a leaf's; a non-leaf's is its
    own dtype).

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, dtype=torch.float32, requires_grad=True)
        >>> try:
        ...     check_grad_assignment(x, torch.ones(2, dtype=torch.float64))
        ... except RuntimeError as e:
        ...     print(str(e)[:60])
        attempting to assign a gradient with dtype 'double' to a ten
    """
    if grad is None:
        return
    want = grad_dtype_of(tensor)
    if want is not None and grad.dtype != want:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_type_meta(grad.dtype)}' to a tensor "
            f"with grad_dtype '{_scalar_type(want)}'. The gradient must match the tensor's "
            "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype "
            "attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with "
            "caution. Diverging the dtypes of a tensor and its gradient may break downstream "
            "systems that assume they match."
        )


__all__ = ["check_grad_assignment", "get_grad_dtype", "set_grad_dtype"]
