"""autodiff.numpy: NumPy's names and semantics, every function differentiable and batchable.

Functions are the op families' functions (`autodiff.ops`: primitives, as JAX's lax) and the
composites written from them here (as jax.numpy), in private modules by family: _cumulative
(cumsum, the nan* functions), _sorting (sort, partition, unique, ...), _rearranging (pad,
roll, insert, select, ...), _matrices (diagonals, kron, cross, grids), _sequences (diff,
interp, convolve), _mathematical, _statistics, _polynomials, _histograms, _index_tricks
(r_, c_), _precision (the products' jax.numpy keywords), and _arguments (how they read their
arguments); array creation and dtype names
are NumPy's own (_creation). Plain `numpy` calls on Tensors and tracers land here
through the protocols installed on `Tensor` (see `_tensor_methods`). The names are
built at import; `__init__.pyi` lists them for editors and type checkers
(`python tools/make_stubs.py` writes it).
"""

import importlib as _importlib

import numpy as _np

from autodiff.core.dtypes import bfloat16_dtype as _bfloat16_dtype
from autodiff.numpy import (
    _creation,
    _cumulative,
    _elementwise_namespace,
    _histograms,
    _index_tricks,
    _mathematical,
    _matrices,
    _polynomials,
    _precision,
    _rearranging,
    _sequences,
    _shape_composites,
    _sorting,
    _statistics,
)
from autodiff.ops import elementwise as _elementwise
from autodiff.ops import index as _index
from autodiff.ops import products as _products
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape

FUNCTIONS: dict = {}
for _family in (
    _elementwise,
    _reduce,
    _shape,
    _shape_composites,
    _index,
    _products,
    _cumulative,
    _sorting,
    _rearranging,
    _matrices,
    _sequences,
    _statistics,
    _mathematical,
    _polynomials,
    _histograms,
    _creation,
):
    FUNCTIONS.update(_family.FUNCTIONS)
# (the matrix products again, with jax.numpy's precision= and preferred_element_type=)
FUNCTIONS.update(_precision.FUNCTIONS)
# (the elementwise functions again, reading lists of Tensors as arrays; where, clip, aliases)
FUNCTIONS.update(_elementwise_namespace.FUNCTIONS)
FUNCTIONS.update(
    {
        "abs": FUNCTIONS["absolute"],
        "conj": FUNCTIONS["conjugate"],
        "true_divide": FUNCTIONS["divide"],
        "mod": FUNCTIONS["remainder"],
        "pow": FUNCTIONS["power"],
        "row_stack": _shape.vstack,
        "round": _elementwise.round,
        "around": _elementwise.round,
        "astype": _elementwise.astype,
    }
)
globals().update(FUNCTIONS)
for _name in _creation.PASSTHROUGH:
    if _name != "random":  # (numpy.random's import is slow: on first use, by __getattr__)
        globals()[_name] = getattr(_np, _name)
r_, c_ = _index_tricks.r_, _index_tricks.c_

# linalg and fft receive numpy.linalg and numpy.fft calls on Tensors.
from autodiff.numpy import fft, linalg  # noqa: E402


def __getattr__(name: str):
    if name == "random":  # (autodiff/numpy/random.py: numpy.random's own functions)
        return _importlib.import_module("autodiff.numpy.random")
    if name == "bfloat16":  # (ml_dtypes' scalar type, as jax.numpy's; imported on first use)
        return _bfloat16_dtype().type
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(FUNCTIONS) + list(_creation.PASSTHROUGH) + ["r_", "c_"]
