"""torch's predicates and whole-tensor comparisons: `is_tensor`, `is_floating_point`,
`numel`, `allclose`, `equal`, `is_conj`, ..."""

from __future__ import annotations

import builtins

import numpy as np

from autodiff.core.dtypes import float_kind
from autodiff.core.tensor import Tensor
from autodiff.torch import conversions
from autodiff.torch._args import _concrete

# ---- predicates and sizes ----


def is_tensor(obj) -> bool:
    """`torch.is_tensor(obj)`: whether `obj` is a Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    """`torch.is_floating_point(input)`."""
    return float_kind(input.dtype) == "f"


def is_complex(input) -> bool:
    """`torch.is_complex(input)`."""
    return input.dtype.kind == "c"


def is_nonzero(input) -> bool:
    """`torch.is_nonzero(input)`: the truth of a one-element tensor."""
    if np.size(_concrete(input)) != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(np.asarray(_concrete(input)).reshape(()))


def numel(input) -> int:
    """`torch.numel(input)`: the number of elements."""
    return builtins.int(np.size(input) if not isinstance(input, Tensor) else input.size)


def allclose(
    input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """`torch.allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)`."""
    return conversions.allclose(input, other, rtol, atol, equal_nan)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """`torch.isclose(input, other, ...)`: a bool tensor."""
    return conversions.isclose(input, other, rtol, atol, equal_nan)


def equal(input, other) -> bool:
    """`torch.equal(input, other)`: same shape and values."""
    return conversions.equal(input, other)


def resolve_conj(input):
    """`torch.resolve_conj(input)`: `input` itself (conjugation is never lazy here)."""
    return input


def resolve_neg(input):
    """`torch.resolve_neg(input)`: `input` itself (negation is never lazy here)."""
    return input


def is_conj(input) -> builtins.bool:
    """`torch.is_conj(input)`: False (conjugation is never lazy here)."""
    return False


def is_neg(input) -> builtins.bool:
    """`torch.is_neg(input)`: False (negation is never lazy here)."""
    return False
