"""How each primitive becomes Numba code: the lowering rules of the Numba backend.

Three kinds of rule, by what the code generator (`codegen.py`) can do with the primitive:

- **Elementwise** (`ELEMENTWISE`): the output element at loop index `i` is a scalar
  expression of input elements, each read through an *access* — the input position that
  index `i` reads. Ufuncs read their operands broadcast; `getitem` with a basic index,
  `transpose`, `flip`, `broadcast_to`, `expand_reduced`, `stack`, `unstack`,
  `concatenate` and `scatter_add` with a basic index are elementwise too, with other
  accesses (a gather of one position, or a choice between operands). Elementwise
  equations of one loop shape fuse into one loop without temporaries.
- **Reductions** (`REDUCTIONS`): an accumulator updated with each element of the input,
  fused into the loop that computes the input.
- **Statements** (`STATEMENTS`): array code on whole values (matmul through BLAS,
  reshape, control flow with sub-graphs), written in `codegen.py`.

An equation none of these lowers — or one with a dtype Numba lacks (float16, strings,
objects) — runs as a NumPy call between compiled segments (`executor.py`). `lowering_of`
says which, and `tests/test_numba_backend.py` lists the primitives of each kind.

Scalar expressions compute in the dtypes NumPy would: the loop dtypes of the ufunc for the
operands' dtypes (`ufunc.resolve_dtypes`, NEP 50: a weakly typed operand takes the other's
precision), with casts written where Numba's own promotion would differ (a float32 times
a Python float stays float32).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from autodiff.core.abstract import ShapedArray, ufunc_operand
from autodiff.ops.gather_scatter import _Arg
from autodiff.staging.ir import Literal
from autodiff.staging.numba import approx

# The dtypes the generated code handles (Numba has no float16, strings or objects).
SUPPORTED = frozenset(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
)


def dtype_name(dtype) -> str:
    """The expression naming a dtype's scalar type in generated code: `np.float64`."""
    return "np." + np.dtype(dtype).type.__name__


def cast(expr: str, have, want) -> str:
    """`expr` (of dtype `have`) as dtype `want`."""
    have, want = np.dtype(have), np.dtype(want)
    if have == want:
        return expr
    if want.kind == "b":
        return f"({expr} != 0)"
    if have.kind == "c" and want.kind != "c":  # (NumPy drops the imaginary part)
        expr = f"({expr}).real"
    return f"{dtype_name(want)}({expr})"


def _float_source(value: float) -> str:
    """A float as source text (nan and the infinities by name: their reprs are not Python)."""
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "-np.inf" if value < 0 else "np.inf"
    return repr(value)


def literal(value, dtype) -> str:
    """A Python scalar as a constant of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind == "c":
        value = complex(value)
        parts = (_float_source(value.real), _float_source(value.imag))
        return f"{dtype_name(dtype)}(complex({parts[0]}, {parts[1]}))"
    if dtype.kind == "f":
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            return f"{dtype_name(dtype)}({_float_source(value)})"
        # (a float64 is Numba's type of a float literal: no call to type, ~30% less compile)
        return repr(value) if dtype == np.float64 else f"{dtype_name(dtype)}({value!r})"
    if dtype == np.int64 and abs(int(value)) < 2**62:  # (likewise an int64)
        return repr(int(value))
    return f"{dtype_name(dtype)}({int(value)!r})"


# ---------------------------------------------------------------------------------------------
# Accesses: for an output index (a list of index expressions, one per output axis), the
# index each operand reads.


def broadcast_access(in_shape: tuple, index: list) -> list:
    """The index an operand of `in_shape` reads when broadcast to the loop's shape."""
    lead = len(index) - len(in_shape)
    return [index[k + lead] if n != 1 else "0" for k, n in enumerate(in_shape)]


class Operand:
    """An operand as a rule reads it: `read(index)` is the expression of its element at
    `index` (a list of index expressions over the operand's own axes); `value`, a literal's
    Python value (written in whatever dtype the rule reads it as)."""

    __slots__ = ("aval", "read", "value")

    def __init__(self, aval: ShapedArray, read: Callable[[list], str], value=None):
        self.aval = aval
        self.read = read
        self.value = value


# An elementwise rule: (eqn, operands, index) -> one expression per output (a list), where
# `index` is the loop index over the output's shape. None from `accepts` means the rule does
# not apply to these params (the equation then runs in NumPy).
class Elementwise:
    __slots__ = ("accepts", "expressions", "identity_operands")

    def __init__(self, expressions, accepts=None, identity_operands: bool = True):
        self.expressions = expressions
        self.accepts = accepts or (lambda eqn: True)
        # True when every operand is read broadcast (at most): operands computed in the same
        # loop can then be read as scalars. False: the rule reads other positions (a gather),
        # so its operands must be whole arrays computed before the loop.
        self.identity_operands = identity_operands


ELEMENTWISE: dict[str, Elementwise] = {}

# Ufunc primitives written with Python operators (same results as the ufunc on scalars of
# the loop dtype); the rest call the NumPy ufunc, which Numba compiles for scalars.
_OPERATORS = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "divide": "({0} / {1})",
    "negative": "(-{0})",
    "equal": "({0} == {1})",
    "not_equal": "({0} != {1})",
    "less": "({0} < {1})",
    "less_equal": "({0} <= {1})",
    "greater": "({0} > {1})",
    "greater_equal": "({0} >= {1})",
}
# float64 ufuncs written with Python's math module: the same libm calls as Numba's ufuncs,
# typed in a fraction of the time (compiling scalar code is Numba's front end's work).
_MATH = {
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "log": "log",
    "log1p": "log1p",
    "expm1": "expm1",
}
# Operators whose boolean form NumPy computes as logic, not arithmetic.
_BOOL_OPERATORS = {"add": "({0} or {1})", "multiply": "({0} and {1})"}
# Floating forms that are NumPy's where Numba's ufunc is not: Python's float `//` and `%`
# are CPython's divmod, as NumPy's (-inf // 2 is nan where Numba's np.floor_divide gives
# -inf; 0.5 % -0.5 is -0.0 where its np.remainder gives 0.0); NumPy's sign of -0.0 is 0.0.
_FLOAT_OPERATORS = {
    "floor_divide": "({0} // {1})",
    "remainder": "({0} % {1})",
    "sign": "(1.0 if {0} > 0 else (-1.0 if {0} < 0 else {0} * 0.0 + 0.0))",
}
# Ufuncs Numba compiles with other results than NumPy's, by the kinds of their loop dtypes
# (checked by the op table and tests/test_numba_backend.py).
_UFUNC_EXCLUDED = {
    "sign": "cu",  # NumPy 2's complex sign is z/|z|; Numba's of uint8 200 is 255
    "power": "iuc",  # NumPy raises on negative integer powers; complex: as below
    "floor_divide": "c",
    "remainder": "c",
    "fmod": "iu",  # Numba's integer fmod is not C's (fmod(-1, 3) gives 0)
    "reciprocal": "iuc",  # integer reciprocal truncates in NumPy; complex: as below
    # NumPy orders complex numbers lexicographically; Numba has no complex `<`.
    **dict.fromkeys(("less", "less_equal", "greater", "greater_equal"), "c"),
    # Numba's complex arithmetic loses C99's special values where NumPy keeps them: a
    # product with an infinite factor (inf+nanj for inf+infj), a quotient by zero (Python's
    # `/` raises) or of infinities, exp of 1e30+0j (inf+nanj, not inf+0j), tanh of -1e30+1j
    # (nan, not -1), arctan of nan+0j (nan+nanj, not nan+0j), powers and squares that
    # overflow; and its expm1 is exp(z) - 1, which loses every digit near 0.
    **dict.fromkeys(
        "multiply divide square exp exp2 expm1 sin cos tan sinh cosh tanh arcsin arccos arctan "
        "arcsinh arccosh arctanh".split(),
        "c",
    ),
}


# Dtypes in which Numba's scalar arithmetic on operands of that dtype stays in that dtype.
_NATURAL = frozenset(np.dtype(t) for t in (np.float64, np.int64, np.complex128, np.bool_))


def _operand_dtype(aval: ShapedArray):
    return ufunc_operand(aval)


def _loop_dtypes(ufunc, avals: list) -> tuple:
    """The ufunc's loop dtypes for these operands (NEP 50), or None when it has none or
    one Numba lacks (`signbit` of int8 loops in float16)."""
    operands = tuple(_operand_dtype(a) for a in avals)
    if not any(isinstance(d, np.dtype) for d in operands):
        # All weak (a loop counter against a Python int): no dtype to yield to, so their own
        # (NumPy would resolve Python ints compared with each other to an object loop).
        operands = tuple(a.dtype for a in avals)
    try:
        dtypes = ufunc.resolve_dtypes(operands + (None,) * ufunc.nout)
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    return dtypes if all(d in SUPPORTED for d in dtypes) else None


def _ufunc_rule(name: str, ufunc) -> Elementwise:
    def accepts(eqn) -> bool:
        avals = [x.aval for x in eqn.inputs]
        dtypes = _loop_dtypes(ufunc, avals)
        excluded = _UFUNC_EXCLUDED.get(name, "")
        if dtypes is None or any(d.kind in excluded for d in dtypes[: ufunc.nin]):
            return False
        # A Python int outside its loop dtype (uint8 > -1): NumPy compares it exactly (and
        # raises in arithmetic); as a constant of that dtype it would wrap around.
        return all(_fits(x, d) for x, d in zip(eqn.inputs, dtypes))

    def expressions(eqn, operands: list, index: list) -> list:
        avals = [x.aval for x in eqn.inputs]
        dtypes = _loop_dtypes(ufunc, avals)
        loop_in, loop_out = dtypes[: ufunc.nin], dtypes[ufunc.nin]
        args = [_read_as(op, index, want) for op, want in zip(operands, loop_in)]
        expr = _ufunc_expression(name, ufunc, operands, args, loop_in[0])
        out = eqn.outputs[0].aval.dtype
        natural = out in _NATURAL and loop_out == out and all(d == loop_out for d in loop_in)
        if out.kind != "b" and not natural:
            expr = f"{dtype_name(out)}({expr})"  # (Numba's promotion may differ from NumPy's)
        return [expr]

    return Elementwise(expressions, accepts)


def _ufunc_expression(name: str, ufunc, operands: list, args: list, loop_dtype) -> str:
    """The scalar expression of ufunc `name` on `args` (the operands read in the loop's first
    input dtype, `loop_dtype`): an operator, a vectorizable approximation, `math`'s function,
    or NumPy's ufunc itself."""
    if loop_dtype.kind == "b" and name in _BOOL_OPERATORS:
        return _BOOL_OPERATORS[name].format(*args)
    if loop_dtype.kind == "f" and name in _FLOAT_OPERATORS:
        return _FLOAT_OPERATORS[name].format(*args)
    if name in _OPERATORS:
        return _OPERATORS[name].format(*args)
    if name in approx.NAMES and loop_dtype in (np.float64, np.float32):
        return f"{approx.NAMES[name]}({cast(args[0], loop_dtype, np.float64)})"
    if name == "power" and operands[1].aval.ndim == 0:
        return _scalar_power(operands[1], *args)
    if name in _MATH and loop_dtype == np.float64:
        return f"math.{_MATH[name]}({args[0]})"
    return f"np.{ufunc.__name__}({', '.join(args)})"


def _fits(x, dtype) -> bool:
    """Is `x` (a variable or literal) representable in `dtype` as itself?"""
    if type(x) is not Literal or dtype.kind not in "iu" or isinstance(x.value, (bool, np.bool_)):
        return True
    info = np.iinfo(dtype)
    return info.min <= int(x.value) <= info.max


def _scalar_power(exponent: Operand, base: str, power: str) -> str:
    """`base ** power` for a 0-d exponent, as NumPy computes it: a 0-d exponent 0.5 takes
    its square-root path (sqrt(-inf) is nan where pow(-inf, 0.5) is inf; -0.0 stays -0.0)."""
    if exponent.value is not None:
        return f"np.sqrt({base})" if exponent.value == 0.5 else f"np.power({base}, {power})"
    return f"(np.sqrt({base}) if {power} == 0.5 else np.power({base}, {power}))"


def _read_as(op: Operand, index: list, dtype) -> str:
    """Operand `op` at the loop index, broadcast, as `dtype`."""
    if op.value is not None:
        return literal(op.value, dtype)
    return cast(op.read(broadcast_access(op.aval.shape, index)), op.aval.dtype, dtype)


def define_ufuncs(primitives) -> None:
    """Elementwise rules for every registered primitive whose impl is a NumPy ufunc."""
    for p in primitives:
        if isinstance(p.impl, np.ufunc) and p.name not in ELEMENTWISE and p.impl.nout == 1:
            ELEMENTWISE[p.name] = _ufunc_rule(p.name, p.impl)


def _out_dtype(eqn, k: int = 0):
    return eqn.outputs[k].aval.dtype


def _formula(template: str, ufunc=np.multiply) -> Elementwise:
    """A rule for a fused derivative primitive: `template` over operands `{0}`, `{1}`, with
    `{one}` the constant 1 in the loop dtype; computed in `ufunc`'s loop dtypes."""

    def expressions(eqn, operands, index):
        dtypes = _loop_dtypes(ufunc, [x.aval for x in eqn.inputs])
        args = [_read_as(op, index, dt) for op, dt in zip(operands, dtypes)]
        expr = template.format(*args, one=literal(1, dtypes[-1]))
        return [cast(expr, dtypes[-1], _out_dtype(eqn))]

    def accepts(eqn):
        dtypes = _loop_dtypes(ufunc, [x.aval for x in eqn.inputs])
        return dtypes is not None and dtypes[-1].kind == "f"  # (complex products: above)

    return Elementwise(expressions, accepts)


ELEMENTWISE["tanh_backward"] = _formula("({0} * ({one} - {1} * {1}))")
ELEMENTWISE["log1p_backward"] = _formula("({0} / ({one} + {1}))")


def _identity(eqn, operands, index):
    op = operands[0]
    return [cast(op.read(broadcast_access(op.aval.shape, index)), op.aval.dtype, _out_dtype(eqn))]


for _name in ("copy", "stop_gradient", "broadcast_to", "checkpoint_name"):
    ELEMENTWISE[_name] = Elementwise(_identity)


def _sum_to_same_shape(eqn) -> bool:
    return eqn.inputs[0].aval.shape == eqn.outputs[0].aval.shape


ELEMENTWISE["sum_to_shape"] = Elementwise(_identity, _sum_to_same_shape)
ELEMENTWISE["astype"] = Elementwise(_identity)


def _real_imag(part: str):
    def expressions(eqn, operands, index):
        op = operands[0]
        value = op.read(broadcast_access(op.aval.shape, index))
        if op.aval.dtype.kind != "c":
            value = value if part == "real" else literal(0, _out_dtype(eqn))
            return [
                cast(value, op.aval.dtype if part == "real" else _out_dtype(eqn), _out_dtype(eqn))
            ]
        return [f"({value}).{part}"]

    return Elementwise(expressions)


ELEMENTWISE["real"] = _real_imag("real")
ELEMENTWISE["imag"] = _real_imag("imag")


def _where(eqn, operands, index):
    out = _out_dtype(eqn)
    c, x, y = (_read_as(op, index, want) for op, want in zip(operands, (np.bool_, out, out)))
    return [f"({x} if {c} else {y})"]


ELEMENTWISE["where"] = Elementwise(_where)

# ---- gathers: elementwise with other accesses (operands read whole, computed before) ----


def basic_index(index) -> bool:
    """Is `index` (a getitem/scatter param) made of ints, slices, None and Ellipsis only?"""
    for part in index:
        if isinstance(part, _Arg) or not (
            part is None
            or part is Ellipsis
            or type(part) is slice
            or (isinstance(part, (int, np.integer)) and not isinstance(part, (bool, np.bool_)))
        ):
            return False
    return True


def expanded(index: tuple, ndim: int) -> list:
    """`index` with its Ellipsis written out as full slices (and missing trailing axes)."""
    used = sum(1 for p in index if p is not None and p is not Ellipsis)
    out: list = []
    for part in index:
        if part is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
            used = ndim
        else:
            out.append(part)
    out.extend([slice(None)] * (ndim - used))
    return out


def _slice_read(start: int, step: int, i: str) -> str:
    if step == 1:
        return i if start == 0 else f"{start} + {i}"
    return f"{start} + {step} * {i}"


def getitem_access(shape: tuple, index: tuple, out_index: list) -> list:
    """The position of `x` (of `shape`) that `x[index][out_index]` reads (basic index)."""
    read: list = []
    k = 0  # the output axis
    axis = 0  # the input axis
    for part in expanded(index, len(shape)):
        if part is None:
            k += 1
        elif type(part) is slice:
            start, _, step = part.indices(shape[axis])
            read.append(_slice_read(start, step, out_index[k]))
            k += 1
            axis += 1
        else:
            read.append(str(int(part) % shape[axis]))
            axis += 1
    return read


def _getitem(eqn, operands, index):
    op = operands[0]
    return [op.read(getitem_access(op.aval.shape, eqn.params["index"], index))]


ELEMENTWISE["getitem"] = Elementwise(
    _getitem,
    lambda eqn: len(eqn.inputs) == 1 and basic_index(eqn.params["index"]),
    identity_operands=False,
)


def _gather_known(eqn, operands, index):
    """A vector read at the positions of an integer constant, all in bounds (executor.py's
    `known_gathers` checked them)."""
    x, positions = operands
    return [x.read([positions.read(index)])]


ELEMENTWISE["gather_known"] = Elementwise(_gather_known, identity_operands=False)


def _transpose(eqn, operands, index):
    op = operands[0]
    axes = eqn.params["axes"]
    ndim = op.aval.ndim
    perm = tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)
    read = [""] * ndim
    for j, a in enumerate(perm):
        read[a] = index[j]
    return [op.read(read)]


ELEMENTWISE["transpose"] = Elementwise(_transpose, identity_operands=False)


def _flip(eqn, operands, index):
    op = operands[0]
    shape = op.aval.shape
    axis = eqn.params["axis"]
    axes = range(len(shape)) if axis is None else [a % len(shape) for a in _as_tuple(axis)]
    read = list(index)
    for a in axes:
        read[a] = f"{shape[a] - 1} - {index[a]}"
    return [op.read(read)]


def _as_tuple(axis) -> tuple:
    return tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)


ELEMENTWISE["flip"] = Elementwise(_flip, identity_operands=False)


def _expand_reduced(eqn, operands, index):
    op = operands[0]
    axes = [a % len(index) for a in eqn.params["axes"]]
    kept = [index[k] for k in range(len(index)) if k not in axes]
    if op.aval.ndim == len(index):  # (reduced with keepdims)
        kept = list(index)
    return [op.read(broadcast_access(op.aval.shape, kept) if kept else [])]


ELEMENTWISE["expand_reduced"] = Elementwise(_expand_reduced, identity_operands=False)


def _stack(eqn, operands, index):
    axis = eqn.params["axis"] % len(index)
    inner = index[:axis] + index[axis + 1 :]
    out = _out_dtype(eqn)
    reads = [
        cast(op.read(broadcast_access(op.aval.shape, inner)), op.aval.dtype, out) for op in operands
    ]
    expr = reads[-1]
    for k in range(len(reads) - 2, -1, -1):
        expr = f"({reads[k]} if {index[axis]} == {k} else {expr})"
    return [expr]


ELEMENTWISE["stack"] = Elementwise(
    _stack, lambda eqn: eqn.params.get("dtype") is None, identity_operands=False
)


def _concatenate(eqn, operands, index):
    axis = eqn.params["axis"]
    axis = 0 if axis is None else axis % len(index)
    out = _out_dtype(eqn)
    reads, starts = [], []
    start = 0
    for op in operands:
        shifted = list(index)
        shifted[axis] = index[axis] if start == 0 else f"({index[axis]} - {start})"
        reads.append(cast(op.read(shifted), op.aval.dtype, out))
        starts.append(start)
        start += op.aval.shape[axis]
    expr = reads[-1]
    for k in range(len(reads) - 2, -1, -1):
        expr = f"({reads[k]} if {index[axis]} < {starts[k + 1]} else {expr})"
    return [expr]


ELEMENTWISE["concatenate"] = Elementwise(
    _concatenate,
    lambda eqn: (
        eqn.params.get("axis") is not None
        and eqn.params.get("dtype") is None
        and all(x.aval.ndim == eqn.outputs[0].aval.ndim for x in eqn.inputs)
    ),
    identity_operands=False,
)


def _unstack(eqn, operands, index):
    op = operands[0]
    axis = eqn.params["axis"] % op.aval.ndim
    return [op.read(index[:axis] + [str(k)] + index[axis:]) for k in range(len(eqn.outputs))]


ELEMENTWISE["unstack"] = Elementwise(_unstack, identity_operands=False)


def scatter_condition(shape: tuple, index: tuple, out_index: list) -> tuple[str, list, int]:
    """For `zeros(shape)[index] = values` (a basic index of ints, slices of positive step and
    None): the condition that `out_index` is written, the position of `values` it takes, and
    how many axes that position has."""
    conds: list = []
    read: list = []
    axis = 0
    for part in expanded(index, len(shape)):
        if part is None:
            read.append("0")
        elif type(part) is slice:
            start, stop, step = part.indices(shape[axis])
            i = out_index[axis]
            if start != 0 or stop != shape[axis]:
                conds.append(f"{start} <= {i} < {stop}")
            offset = i if start == 0 else f"({i} - {start})"
            if step != 1:  # (every step-th position from start; `//` and `%` floor)
                conds.append(f"{offset} % {step} == 0")
                offset = f"({offset} // {step})"
            read.append(offset)
            axis += 1
        else:
            conds.append(f"{out_index[axis]} == {int(part) % shape[axis]}")
            axis += 1
    return " and ".join(conds) or "True", read, len(read)


def _scatter_accepts(eqn) -> bool:
    index = eqn.params["index"]
    if len(eqn.inputs) != 1 or not basic_index(index):
        return False
    return all(type(p) is not slice or p.step is None or p.step > 0 for p in index)


def _scatter_add(eqn, operands, index):
    op = operands[0]
    out = _out_dtype(eqn)
    cond, read, _ = scatter_condition(eqn.params["shape"], eqn.params["index"], index)
    value = cast(op.read(broadcast_access(op.aval.shape, read)), op.aval.dtype, out)
    if cond == "True":
        return [value]
    return [f"({value} if {cond} else {literal(0, out)})"]


ELEMENTWISE["scatter_add"] = Elementwise(_scatter_add, _scatter_accepts, identity_operands=False)

# ---------------------------------------------------------------------------------------------
# Reductions: (accumulator's initial value, update) per primitive, over params `axes` and
# `keepdims`. Floating sums accumulate in double precision, then round once.


class Reduction:
    __slots__ = ("init", "update", "accumulator_dtype")

    def __init__(self, init, update, accumulator_dtype=None):
        self.init = init  # dtype -> the initial value's expression
        self.update = update  # (acc, value) -> the new accumulator's expression (or statement)
        self.accumulator_dtype = accumulator_dtype or (lambda dtype: dtype)


def _wide(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.dtype(np.float64)
    if dtype == np.complex64:
        return np.dtype(np.complex128)
    return dtype


def _extreme(dtype, largest: bool) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return literal(-np.inf if largest else np.inf, dtype)
    if dtype.kind == "b":
        return repr(not largest)
    info = np.iinfo(dtype)
    return literal(info.min if largest else info.max, dtype)


REDUCTIONS: dict[str, Reduction] = {
    "reduce_sum": Reduction(lambda dt: literal(0, dt), "{acc} + {x}", _wide),
    "sum_to_shape": Reduction(lambda dt: literal(0, dt), "{acc} + {x}", _wide),
    "reduce_prod": Reduction(lambda dt: literal(1, dt), "{acc} * {x}", _wide),
    # NaN wins, as in np.max: once the accumulator is NaN it stays.
    "reduce_max": Reduction(
        lambda dt: _extreme(dt, True),
        "({x} if ({x} > {acc} or {x} != {x}) and {acc} == {acc} else {acc})",
    ),
    "reduce_min": Reduction(
        lambda dt: _extreme(dt, False),
        "({x} if ({x} < {acc} or {x} != {x}) and {acc} == {acc} else {acc})",
    ),
    # (the operand cast to the accumulator's bool: nonzero, NaN included, as NumPy's)
    "all": Reduction(lambda dt: "True", "({acc} and {x})"),
    "any": Reduction(lambda dt: "False", "({acc} or {x})"),
}


def reduction_axes(eqn) -> tuple:
    """The input axes an equation of `REDUCTIONS` sums over."""
    x = eqn.inputs[0].aval
    if eqn.prim.name == "sum_to_shape":
        shape = eqn.params["shape"]
        lead = x.ndim - len(shape)
        return tuple(range(lead)) + tuple(
            i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1
        )
    axes = eqn.params["axes"]
    return tuple(range(x.ndim)) if axes is None else tuple(a % max(x.ndim, 1) for a in axes)


def _reduction_accepts(eqn) -> bool:
    x = eqn.inputs[0].aval
    return not (eqn.prim.name in ("reduce_max", "reduce_min") and x.dtype.kind == "c")


# ---------------------------------------------------------------------------------------------
# What lowers, and how.


def _dtypes_supported(eqn) -> bool:
    for x in eqn.inputs:
        if x.aval.dtype not in SUPPORTED:
            return False
    return all(v.aval.dtype in SUPPORTED for v in eqn.outputs)


def lowering_of(eqn, statements) -> str | None:
    """ "elementwise", "reduction", "statement" (one of `statements`, codegen's table), or
    None (the equation runs in NumPy)."""
    if not _dtypes_supported(eqn):
        return None
    name = eqn.prim.name
    rule = ELEMENTWISE.get(name)
    if rule is not None and rule.accepts(eqn):
        return "elementwise"
    if name in REDUCTIONS and eqn.inputs[0].aval.ndim > 0 and _reduction_accepts(eqn):
        return "reduction"
    entry = statements.get(name)  # (check, write)
    if entry is not None and entry[0](eqn):
        return "statement"
    return None


def literal_operand(x: Literal) -> Operand:
    """A literal as an operand (its value in its own weak dtype; casts happen in rules)."""
    value = literal(x.value, x.aval.dtype)
    return Operand(x.aval, lambda index: value, x.value)


__all__ = [
    "ELEMENTWISE",
    "REDUCTIONS",
    "SUPPORTED",
    "Elementwise",
    "Operand",
    "Reduction",
    "broadcast_access",
    "cast",
    "define_ufuncs",
    "dtype_name",
    "expanded",
    "literal",
    "literal_operand",
    "lowering_of",
    "reduction_axes",
]
