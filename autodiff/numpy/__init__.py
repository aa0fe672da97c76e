"""autodiff.numpy: NumPy's names and semantics, every function differentiable and batchable.

Functions come from the op families in `autodiff.ops`; array creation and dtype
names are NumPy's own. Plain `numpy` calls on Tensors and tracers land here
through the protocols installed on `Tensor` (see `_tensor_methods`). The names are
built at import; `__init__.pyi` lists them for editors and type checkers
(`python tools/make_stubs.py` writes it).
"""

import numpy as _np

from autodiff.numpy import _creation
from autodiff.ops import arrays as _arrays
from autodiff.ops import elementwise as _elementwise
from autodiff.ops import index as _index
from autodiff.ops import products as _products
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape

FUNCTIONS: dict = {}
for _family in (_elementwise, _reduce, _shape, _index, _products, _arrays, _creation):
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

# linalg receives numpy.linalg calls on Tensors.
from autodiff.numpy import linalg  # noqa: E402, F401

__all__ = sorted(FUNCTIONS) + list(_creation.PASSTHROUGH)
