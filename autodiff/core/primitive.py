"""Primitive: a named operation with its rules side by side, and `bind`, the one dispatch point.

A primitive's rules (all optional except `impl`), written next to its creation in one
module of `autodiff/ops/`:

- `impl(*raw_args, **params)`: NumPy arrays in, NumPy array (or tuple if
  `multiple_results`) out.
- `abstract_eval(*avals, **params)`: the output's `ShapedArray` (core/abstract.py) from the
  inputs' (Python scalars come weakly typed), computing nothing.
- `jvp(primals, tangents, *, out, **params)`: tangent of the output; a tangent
  of `None` is a symbolic zero.
- `vjp(ct, *primals, out, **params)`: a tuple with one cotangent (or `None`) per
  primal; `ct` is a tuple for `multiple_results` primitives. With
  `vjp_takes_needs`, it also gets `needs` (a bool per primal) and may return None
  where a cotangent is not needed.
- `batch(values, batch_dims, **params)`: `(value_out, batch_dim_out)` under vmap.
- `fwd(*primals, **params)`: optional, `(out, residuals)`: the output and what the vjp rule
  needs of the forward computation, computed together (with autodiff ops). Reverse mode
  calls it instead of `impl` and gives the vjp rule `residuals=`; a vjp rule called without
  them (the torch face's level 0 records `impl`'s output only) computes them itself. For
  primitives holding a computation (staged calls, scan) whose intermediates it saves.
- `taylor(primals, series, *, out, **params)`: the output's truncated Taylor series (`jet`):
  `series` holds, per primal, the list of its Taylor coefficients of orders 1..K (normalized:
  x(t) = x0 + x1 t + x2 t^2 + ...), or None for a constant; the rule returns the output's
  K coefficients (a list of them per output for `multiple_results`). Without one, jet
  derives the series from the jvp rule (autodiff/taylor/trace.py).
- `sparsity`: a `SparsityRule` (ops/sparsity.py): which input elements each output element
  depends on, and which interact to second order (sparse/detect.py's pattern detection).

Rules are written with autodiff ops so they differentiate, batch, nest and stage again.
Primitives with `differentiable=False` (comparisons, rounding, integer results)
produce constants under every transform.

`Primitive.fast` (a `FastPaths`) holds what the hot paths may use instead of a rule, each
derived from the rule it stands for (the same formula, computed with NumPy directly), never
a second formula of its own; tests compare every fast path with its rule, bitwise.
"""

from __future__ import annotations

from autodiff.core.dtypes import SCALAR_PAIRS
from autodiff.core.trace import TENSOR_TYPES, dispatch

# Every primitive ever created, in creation order (definitions, filled at import: tests and
# staging walk it; nothing mutates it afterwards).
_REGISTRY: list = []


def all_primitives() -> tuple:
    """Every primitive defined so far, in creation order."""
    return tuple(_REGISTRY)


class FastPaths:
    """What the hot paths may call instead of a primitive's rules, on plain NumPy values.

    - `vjp(ct, out, *primals, **params)`: the vjp rule computed with NumPy directly (no
      dispatch per operation inside the rule), for a pass nobody records: the cotangent
      and every residual are NumPy values. `out` comes positionally, so that calling it
      builds no keyword dict. With the primitive's `vjp_takes_needs`, it gets `needs` too.
    - `fused_vjp(ct, out, *primals)`: `vjp` for a large (or lazy) cotangent of an elementwise
      primitive: it computes lazily (kernels/fused.py) when the cotangent, the output and
      every primal are float arrays of one shape and dtype, so that a large backward pass
      runs whole chains of rules and their sums as one pass over memory; else as `vjp`.
      A lazy cotangent is evaluated before any other rule sees it.
    - `scalar_impl(x, y)`: `impl` of a binary primitive for NumPy scalars (see
      core/dtypes.py's SCALARS), through NumPy's scalar math: the same value, dtype and
      floating-point error handling without a ufunc call (~60 ns against ~1 us).
    - `pooled_ufunc`: the NumPy ufunc that is `impl`, when its result has the shape and float
      dtype of same-shaped float arguments: recorded applications on large arrays then write
      into recycled memory (core/buffers.py).
    """

    __slots__ = ("vjp", "fused_vjp", "scalar_impl", "pooled_ufunc")

    def __init__(self):
        self.vjp = None
        self.fused_vjp = None
        self.scalar_impl = None
        self.pooled_ufunc = None


class Primitive:
    """A named operation. Rules are attached as attributes right after its creation."""

    __slots__ = (
        "name",
        "impl",
        "abstract_eval",
        "jvp",
        "vjp",
        "batch",
        "multiple_results",
        "differentiable",
        "fwd",
        "sparsity",
        "taylor",
        "vjp_takes_needs",
        "jvp_computes_primal",
        "saves_inputs",
        "saves_output",
        "fast",
    )

    def __init__(
        self,
        name: str,
        *,
        multiple_results: bool = False,
        differentiable: bool = True,
    ):
        self.name = name
        self.impl = None
        self.abstract_eval = None
        self.jvp = None
        self.vjp = None
        self.batch = None
        self.fwd = None
        self.sparsity = None
        self.taylor = None
        self.multiple_results = multiple_results
        self.differentiable = differentiable
        # vjp rules of costly ops may accept `needs` (one bool per input: is a cotangent
        # wanted?) and skip work for constant inputs.
        self.vjp_takes_needs = False
        # jvp rules that compute the primal output themselves (custom_jvp): the forward
        # trace then calls `jvp(primals, tangents, **params) -> (out, tangent_out)` only.
        self.jvp_computes_primal = False
        # False for primitives whose vjp reads only its inputs' shapes and dtypes: the
        # level-0 graph then neither version-checks nor packs (saved_tensors_hooks) them.
        self.saves_inputs = True
        # False for primitives whose vjp reads only its output's shape and dtype: reverse
        # mode then keeps a large output's shape and dtype, not its memory (see saves_inputs
        # for the inputs).
        self.saves_output = True
        self.fast = FastPaths()
        # (torch's node names and which primitives return views at level 0 are the torch
        # face's: autodiff/torch/_node_names.py)
        _REGISTRY.append(self)

    def __repr__(self):
        return f"Primitive({self.name})"

    def __str__(self):  # (its name, as JAX's: policies test `str(prim) == "sin"`)
        return self.name

    def rule(self, kind: str):
        """The `kind` rule ("jvp", "vjp", "batch", "taylor"), or a clear NotImplementedError."""
        fn = getattr(self, kind)
        if fn is None:
            mode = {
                "jvp": "Forward-mode (jvp)",
                "vjp": "Reverse-mode (vjp)",
                "batch": "Batching (vmap)",
                "taylor": "Taylor-mode (jet)",
            }
            raise NotImplementedError(
                f"{mode.get(kind, kind)} rule for '{self.name}' is not implemented"
            )
        return fn

    def bind(self, *args, **params):
        return bind(self, *args, **params)


# The params of every application without any (most of them): one shared dict, never mutated.
NO_PARAMS: dict = {}


def bind(prim: Primitive, *args, **params):
    """Apply `prim` to `args`: directly on raw values, else through the highest-level trace.

    Example:
        >>> import numpy as np
        >>> from autodiff.ops.elementwise import sin_p
        >>> float(bind(sin_p, np.float64(0.0)))
        0.0
    """
    return dispatch(prim, args, params)


# `bind` for one and two arguments, the calls of every unary function and binary operator:
# the same dispatch without packing *args and **params (a tuple and a dict per call).


def bind_unary(prim: Primitive, x):
    """`bind(prim, x)`."""
    if type(x) not in TENSOR_TYPES:
        return prim.impl(x)
    top = x._trace
    if top.alive:
        return top.process(prim, (x,), NO_PARAMS)
    return top.process_dead(prim, (x,), NO_PARAMS)


def bind_binary(prim: Primitive, x, y):
    """`bind(prim, x, y)`."""
    if type(x) in TENSOR_TYPES:
        top = x._trace
        if type(y) in TENSOR_TYPES and y._trace.level > top.level:
            top = y._trace
    elif type(y) in TENSOR_TYPES:
        top = y._trace
    else:
        scalar_impl = prim.fast.scalar_impl
        if scalar_impl is not None and (type(x), type(y)) in SCALAR_PAIRS:
            return scalar_impl(x, y)
        return prim.impl(x, y)
    if top.alive:
        return top.process(prim, (x, y), NO_PARAMS)
    return top.process_dead(prim, (x, y), NO_PARAMS)


# The dispatch of Tensor's operators (autodiff/torch/_tensor_methods.py): `bind_binary` where the
# first (or, reflected, the second) operand is known to be a Tensor, so the choice is between
# its trace and the other operand's (one interpreter frame less per operator).


def tensor_operator(prim: Primitive):
    """`Tensor.__add__` and its kind for the binary primitive `prim`: `bind_binary(prim, self,
    other)`."""

    def op(self, other):
        top = self._trace
        if type(other) in TENSOR_TYPES and other._trace.level > top.level:
            top = other._trace
        if top.alive:
            return top.process(prim, (self, other), NO_PARAMS)
        return top.process_dead(prim, (self, other), NO_PARAMS)

    return op


def reflected_tensor_operator(prim: Primitive):
    """`Tensor.__radd__` and its kind: `bind_binary(prim, other, self)`."""

    def rop(self, other):
        if type(other) in TENSOR_TYPES:  # (rare: Python tries `other`'s operator first)
            return bind_binary(prim, other, self)
        top = self._trace
        if top.alive:
            return top.process(prim, (other, self), NO_PARAMS)
        return top.process_dead(prim, (other, self), NO_PARAMS)

    return rop


def bind_with_params(prim: Primitive, x, params: dict):
    """`bind(prim, x, **params)` for one argument and a params dict the caller keeps (a shared
    one: `x[i]`'s)."""
    if type(x) not in TENSOR_TYPES:
        return prim.impl(x, **params)
    top = x._trace
    if top.alive:
        return top.process(prim, (x,), params)
    return top.process_dead(prim, (x,), params)
