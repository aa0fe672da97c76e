"""autodiff.numpy: NumPy's names and semantics, every function differentiable and batchable.

Functions come from the op families in `autodiff.ops`; array creation and dtype
names are NumPy's own. Plain `numpy` calls on Tensors and tracers land here
through the protocols installed on `Tensor` (see `_tensor_methods`).
"""

import numpy as _np

from autodiff.numpy import _creation
from autodiff.ops import arrays as _arrays
from autodiff.ops import elementwise as _elementwise
from autodiff.ops import index as _index
from autodiff.ops import linalg as _linalg
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape

FUNCTIONS: dict = {}
for _family in (_elementwise, _reduce, _shape, _index, _linalg, _arrays, _creation):
    FUNCTIONS.update(_family.FUNCTIONS)
FUNCTIONS.update(
    {
        "abs": _elementwise.FUNCTIONS["absolute"],
        "conj": _elementwise.FUNCTIONS["conjugate"],
        "true_divide": _elementwise.FUNCTIONS["divide"],
        "mod": _elementwise.FUNCTIONS["remainder"],
        "pow": _elementwise.FUNCTIONS["power"],
        "where": _elementwise.where,
        "clip": _elementwise.clip,
        "round": _elementwise.round,
        "around": _elementwise.round,
        "astype": _elementwise.astype,
    }
)
globals().update(FUNCTIONS)
for _name in _creation.PASSTHROUGH:
    globals()[_name] = getattr(_np, _name)

# These need FUNCTIONS above; linalg receives numpy.linalg calls on Tensors.
from autodiff.numpy import _tensor_methods, linalg  # noqa: E402, F401

_tensor_methods.install()

__all__ = sorted(FUNCTIONS) + list(_creation.PASSTHROUGH)
