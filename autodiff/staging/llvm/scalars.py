"""Expressions of the LLVM translator: scalar arithmetic with Numba's types and NumPy's
results, casts, math calls, array reads and views, and the loops that copy and fill arrays.

Every math call goes through `math_call(name, dtype)`, the one place that says which
function computes it: our vectorizable definitions (mathlib.py) where they exist, else the
C library's, or an LLVM intrinsic.
"""

from __future__ import annotations

import ast

import numpy as np

from autodiff.staging.llvm import mathlib, products
from autodiff.staging.llvm.values import (
    BOOL,
    F64,
    I64,
    U64,
    Array,
    Function,
    Scalar,
    Unsupported,
    c_strides,
    constant_int,
    constant_shape,
    dtype_of,
    float_constant,
    ir_type,
    mem_type,
    np_attr,
)

# NumPy ufuncs and math functions computed by the C library (float64, or float32 with "f").
_LIBM = {
    "exp": "exp",
    "exp2": "exp2",
    "expm1": "expm1",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "cbrt": "cbrt",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
}
_LIBM2 = {"arctan2": "atan2", "hypot": "hypot", "fmod": "fmod"}
# LLVM intrinsics (exact operations: the same results as NumPy's).
_INTRINSIC = {
    "sqrt": "sqrt",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "rint",
    "fabs": "fabs",
    "absolute": "fabs",
}
# (pow as LLVM's intrinsic: pow(x, 2.0) becomes x * x, the same correctly rounded value)
_INTRINSIC2 = {"copysign": "copysign", "fmax": "maxnum", "fmin": "minnum", "power": "pow"}
# approx.py's vectorizable functions, computed as the C library's (within 3 ulp of them).
_APPROX = {"_exp": "exp", "_tanh": "tanh"}


LIBM_PREFIX = "autodiff.libm."
# A math call in a loop of at least this many iterations (the innermost) is mathlib.py's
# vectorized function; elsewhere (scalar code, short loops, where vector lanes would idle
# and the inlined code costs compile time) the C library's.
VECTOR_MIN_TRIP = 32


def math_call(name: str, dtype, trip: int = 1, lanes: int = 0) -> tuple[list, str, str]:
    """(module lines, callee, call attributes) of the function computing `name` (a C library
    or LLVM intrinsic name) on `dtype` floats: the one place a math call is routed. `lines` are
    (symbol, text) pairs. In a loop of `trip` >= VECTOR_MIN_TRIP iterations, a function
    mathlib.py has is its branch-free definition, inlined there, where LLVM vectorizes it.
    Otherwise the call is a declaration of the intrinsic, or of the C library's function under
    a name of ours (`LIBM_PREFIX` + name, bound to libm's addresses by engine.py): LLVM then
    treats it as a plain call, never rewriting it (its code generator fails an assertion when
    it fuses `sin` and `cos` of one value into `sincos`); in a shorter loop of at least a
    vector's `lanes` iterations, the call also carries the mapping to mathlib's vector version
    of that width (`mathlib.vector_mapping`), which the loop vectorizer uses."""
    t = ir_type(dtype)
    if trip >= VECTOR_MIN_TRIP and name in mathlib.NAMES:
        text, callee = mathlib.definition(name, t)
        lines = [(callee, text)]
        for line in mathlib.declarations([(name, t)]).splitlines():
            lines.append((line.split("@", 1)[1].split("(", 1)[0], line))
        return lines, callee, ""
    if name in _INTRINSIC.values() or name in _INTRINSIC2.values():
        suffix = "f64" if t == "double" else "f32"
        callee = f"llvm.{name}.{suffix}"
        arity = 2 if name in _INTRINSIC2.values() else 1
    else:
        callee = LIBM_PREFIX + (name if t == "double" else name + "f")
        arity = 2 if name in _LIBM2.values() else 1
    args = ", ".join([t] * arity)
    declaration = f'declare {t} @"{callee}"({args}) nounwind willreturn memory(none)'
    lines, attributes = [(callee, declaration)], ""
    if name in mathlib.NAMES and 2 <= lanes <= trip:
        mapping, attributes = mathlib.vector_mapping(name, t, lanes, callee)
        lines += mapping
    return lines, f'"{callee}"', attributes


def promote(a, b):
    """The dtype Numba computes `a op b` in, for two scalar dtypes."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b and a.kind in "fb":
        return a
    if a.kind == "f" or b.kind == "f":
        if a.kind == "f" and b.kind == "f":
            return a if a.itemsize >= b.itemsize else b
        other = b if a.kind == "f" else a
        small = other.kind == "b" or other.itemsize <= 2
        return np.dtype(np.float32) if small and F64 not in (a, b) else F64
    signed = [d.kind in "ib" for d in (a, b)]
    if all(signed):
        return I64
    if not any(signed):
        return U64
    unsigned = a if not signed[0] else b
    return I64 if unsigned.itemsize < 8 else F64


_FCMP = {
    ast.Eq: "oeq",
    ast.NotEq: "une",
    ast.Lt: "olt",
    ast.LtE: "ole",
    ast.Gt: "ogt",
    ast.GtE: "oge",
}
_ICMP = {
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Lt: "slt",
    ast.LtE: "sle",
    ast.Gt: "sgt",
    ast.GtE: "sge",
}


class Expressions:
    """Translates expressions into `self.f` (a `Function`); `lookup(name)` is the
    statement translator's."""

    def __init__(self, f: Function, blas: bool = False, vector_bits: int = 0):
        self.f = f
        self.blas = blas  # (runtime.blas_address finds a BLAS to call)
        self.vector_bits = vector_bits  # (the host's vector registers: math_call's lanes)
        self.trip = 1  # the trip count of the innermost `for` loop around (1: none)

    def lookup(self, name: str):
        raise NotImplementedError

    # ---- constants ----
    def const(self, value, dtype) -> Scalar:
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return Scalar(float_constant(float(value), dtype), dtype)
        if dtype.kind == "b":
            return Scalar("true" if value else "false", dtype)
        return Scalar(str(int(value)), dtype)

    # ---- expressions ----
    def expr(self, node):
        method = _EXPRESSIONS.get(type(node))
        if method is None:
            raise Unsupported(f"expression {type(node).__name__}")
        return getattr(self, method)(node)

    def _name(self, node: ast.Name):
        return self.lookup(node.id)

    def _binop_node(self, node: ast.BinOp) -> Scalar:
        return self.binop(node.op, self.scalar(node.left), self.scalar(node.right))

    def _unary_node(self, node: ast.UnaryOp) -> Scalar:
        return self._unary(node.op, self.scalar(node.operand))

    def _constant_node(self, node: ast.Constant) -> Scalar:
        return self._constant(node.value)

    def scalar(self, node) -> Scalar:
        value = self.expr(node)
        if not isinstance(value, Scalar):
            raise Unsupported("an array where a scalar is expected")
        return value

    def _constant(self, value) -> Scalar:
        if type(value) is bool:
            return self.const(value, BOOL)
        if type(value) is int:
            if not -(2**63) <= value < 2**63:
                raise Unsupported("int literal out of range")
            return self.const(value, I64)
        if type(value) is float:
            return self.const(value, F64)
        raise Unsupported(f"constant {value!r}")

    def _attribute(self, node: ast.Attribute):
        name = np_attr(node)
        if name in ("nan", "inf"):
            return self.const(float(name), F64)
        if node.attr == "T":
            value = self.expr(node.value)
            if isinstance(value, Array):
                return value.view(value.shape[::-1], value.strides[::-1])
        raise Unsupported(f"attribute {node.attr}")

    # ---- conversions ----
    def truth(self, value: Scalar) -> Scalar:
        if value.dtype.kind == "b":
            return value
        if value.dtype.kind == "f":
            zero = float_constant(0.0, value.dtype)
            ref = self.f.value(f"fcmp {self.f.flags}une {ir_type(value.dtype)} {value.ref}, {zero}")
        else:
            ref = self.f.value(f"icmp ne {ir_type(value.dtype)} {value.ref}, 0")
        return Scalar(ref, BOOL)

    def convert(self, value: Scalar, dtype) -> Scalar:
        have, want = value.dtype, np.dtype(dtype)
        if have == want:
            return value
        if want.kind == "b":
            return self.truth(value)
        src, dst = ir_type(have), ir_type(want)
        if have.kind == "f" and want.kind == "f":
            op = "fpext" if want.itemsize > have.itemsize else "fptrunc"
        elif have.kind == "f":
            return self._float_to_int(value, want)
        elif want.kind == "f":
            op = "sitofp" if have.kind == "i" else "uitofp"
        elif src == dst:
            return Scalar(value.ref, want)
        elif want.itemsize < have.itemsize:
            op = "trunc"
        else:
            op = "sext" if have.kind == "i" else "zext"
        return Scalar(self.f.value(f"{op} {src} {value.ref} to {dst}"), want)

    def _float_to_int(self, value: Scalar, want) -> Scalar:
        """A float converted as x86's cvttsd2si does (NumPy's cast here): truncated, and the
        minimum integer for NaN and values out of range; int8/16 and uint8/16/32 through a
        wider signed integer, as C compilers write their casts."""
        if want.kind == "u" and want.itemsize == 8:
            raise Unsupported("float to uint64")
        bits = 64 if want.itemsize == 8 or (want.kind == "u" and want.itemsize == 4) else 32
        f, t = self.f, ir_type(value.dtype)
        lo, hi = (
            float_constant(-(2.0 ** (bits - 1)), value.dtype),
            float_constant(2.0 ** (bits - 1), value.dtype),
        )
        above = f.value(f"fcmp oge {t} {value.ref}, {lo}")
        below = f.value(f"fcmp olt {t} {value.ref}, {hi}")
        inside = f.value(f"and i1 {above}, {below}")
        safe = f.value(
            f"select i1 {inside}, {t} {value.ref}, {t} {float_constant(0.0, value.dtype)}"
        )
        raw = f.value(f"fptosi {t} {safe} to i{bits}")
        result = f.value(f"select i1 {inside}, i{bits} {raw}, i{bits} {-(2 ** (bits - 1))}")
        wide = np.dtype(f"int{bits}")
        return self.convert(Scalar(result, wide), want)

    # ---- arithmetic ----
    def binop(self, op, a: Scalar, b: Scalar) -> Scalar:
        kind = type(op)
        if kind is ast.Div:
            dtype = promote(a.dtype, b.dtype)
            dtype = dtype if dtype.kind == "f" else F64
            return self._float_op("fdiv", self.convert(a, dtype), self.convert(b, dtype))
        if kind in (ast.BitAnd, ast.BitOr, ast.BitXor):
            return self._bitwise(kind, a, b)
        dtype = promote(a.dtype, b.dtype)
        a, b = self.convert(a, dtype), self.convert(b, dtype)
        if dtype.kind == "f":
            if kind is ast.FloorDiv or kind is ast.Mod:
                return self._float_divmod(a, b, kind is ast.FloorDiv)
            if kind is ast.Pow:
                return self.call_math("pow", [a, b])  # (the intrinsic: see _INTRINSIC2)
            name = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul"}.get(kind)
            if name is None:
                raise Unsupported(f"float {kind.__name__}")
            return self._float_op(name, a, b)
        if kind is ast.FloorDiv or kind is ast.Mod:
            return self._int_divmod(a, b, kind is ast.FloorDiv)
        name = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}.get(kind)
        if name is None:
            raise Unsupported(f"integer {kind.__name__}")
        t = ir_type(dtype)
        return Scalar(self.f.value(f"{name} {t} {a.ref}, {b.ref}"), dtype)

    def _float_op(self, name: str, a: Scalar, b: Scalar) -> Scalar:
        t = ir_type(a.dtype)
        return Scalar(self.f.value(f"{name} {self.f.flags}{t} {a.ref}, {b.ref}"), a.dtype)

    def _bitwise(self, kind, a: Scalar, b: Scalar) -> Scalar:
        if a.dtype.kind == "b" and b.dtype.kind == "b":
            dtype = BOOL
        elif a.dtype.kind in "iub" and b.dtype.kind in "iub":
            dtype = promote(a.dtype, b.dtype)
            if dtype.kind == "f":
                raise Unsupported("bitwise of mixed signedness")
        else:
            raise Unsupported("bitwise of floats")
        a, b = self.convert(a, dtype), self.convert(b, dtype)
        name = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}[kind]
        return Scalar(self.f.value(f"{name} {ir_type(dtype)} {a.ref}, {b.ref}"), dtype)

    def _float_divmod(self, a: Scalar, b: Scalar, floor: bool) -> Scalar:
        """NumPy's float floor_divide and remainder (npy_divmod): by zero, a / b and
        fmod(a, b)."""
        f, t, fl = self.f, ir_type(a.dtype), self.f.flags
        zero, one = float_constant(0.0, a.dtype), float_constant(1.0, a.dtype)
        mod = self.call_math("fmod", [a, b]).ref
        by_zero = f.value(f"fcmp {fl}oeq {t} {b.ref}, {zero}")
        div = f.value(f"fdiv {fl}{t} {f.value(f'fsub {fl}{t} {a.ref}, {mod}')}, {b.ref}")
        b_neg = f.value(f"fcmp {fl}olt {t} {b.ref}, {zero}")
        mod_neg = f.value(f"fcmp {fl}olt {t} {mod}, {zero}")
        differ = f.value(f"xor i1 {b_neg}, {mod_neg}")
        nonzero = f.value(f"fcmp {fl}une {t} {mod}, {zero}")
        fix = f.value(f"and i1 {differ}, {nonzero}")
        if not floor:
            shifted = f.value(f"fadd {fl}{t} {mod}, {b.ref}")
            signed_zero = self.call_math("copysign", [Scalar(zero, a.dtype), b]).ref
            fixed = f.value(f"select i1 {fix}, {t} {shifted}, {t} {mod}")
            result = f.value(f"select i1 {nonzero}, {t} {fixed}, {t} {signed_zero}")
            return Scalar(f.value(f"select i1 {by_zero}, {t} {mod}, {t} {result}"), a.dtype)
        div1 = f.value(f"fsub {fl}{t} {div}, {one}")
        div = f.value(f"select i1 {fix}, {t} {div1}, {t} {div}")
        floored = self.call_math("floor", [Scalar(div, a.dtype)]).ref
        frac = f.value(f"fsub {fl}{t} {div}, {floored}")
        up = f.value(f"fcmp {fl}ogt {t} {frac}, {float_constant(0.5, a.dtype)}")
        rounded = f.value(
            f"select i1 {up}, {t} {f.value(f'fadd {fl}{t} {floored}, {one}')}, {t} {floored}"
        )
        quotient = f.value(f"fdiv {fl}{t} {a.ref}, {b.ref}")
        zero_div = self.call_math("copysign", [Scalar(zero, a.dtype), Scalar(quotient, a.dtype)])
        div_nonzero = f.value(f"fcmp {fl}une {t} {div}, {zero}")
        result = f.value(f"select i1 {div_nonzero}, {t} {rounded}, {t} {zero_div.ref}")
        return Scalar(f.value(f"select i1 {by_zero}, {t} {quotient}, {t} {result}"), a.dtype)

    def _int_divmod(self, a: Scalar, b: Scalar, floor: bool) -> Scalar:
        """NumPy's integer floor_divide and remainder: 0 when dividing by 0; MIN // -1 wraps."""
        f, t, dtype = self.f, ir_type(a.dtype), a.dtype
        by_zero = f.value(f"icmp eq {t} {b.ref}, 0")
        if dtype.kind == "u":
            safe = f.value(f"select i1 {by_zero}, {t} 1, {t} {b.ref}")
            r = f.value(f"{'udiv' if floor else 'urem'} {t} {a.ref}, {safe}")
            return Scalar(f.value(f"select i1 {by_zero}, {t} 0, {t} {r}"), dtype)
        minus_one = f.value(f"icmp eq {t} {b.ref}, -1")
        special = f.value(f"or i1 {by_zero}, {minus_one}")
        safe = f.value(f"select i1 {special}, {t} 1, {t} {b.ref}")
        q = f.value(f"sdiv {t} {a.ref}, {safe}")
        r = f.value(f"srem {t} {a.ref}, {safe}")
        r_nonzero = f.value(f"icmp ne {t} {r}, 0")
        signs = f.value(f"icmp slt {t} {f.value(f'xor {t} {r}, {b.ref}')}, 0")
        fix = f.value(f"and i1 {r_nonzero}, {signs}")
        if floor:
            value = f.value(f"sub {t} {q}, {f.value(f'zext i1 {fix} to {t}')}")
            negated = f.value(f"sub {t} 0, {a.ref}")
            value = f.value(f"select i1 {minus_one}, {t} {negated}, {t} {value}")
        else:
            adjusted = f.value(f"add {t} {r}, {b.ref}")
            value = f.value(f"select i1 {fix}, {t} {adjusted}, {t} {r}")
            value = f.value(f"select i1 {minus_one}, {t} 0, {t} {value}")
        return Scalar(f.value(f"select i1 {by_zero}, {t} 0, {t} {value}"), dtype)

    def _unary(self, op, value: Scalar) -> Scalar:
        f = self.f
        if isinstance(op, ast.Not):
            truth = self.truth(value)
            return Scalar(f.value(f"xor i1 {truth.ref}, true"), BOOL)
        if isinstance(op, ast.UAdd):
            return value
        if not isinstance(op, ast.USub):
            raise Unsupported(f"unary {type(op).__name__}")
        if value.dtype.kind == "b":
            value = self.convert(value, I64)
        t = ir_type(value.dtype)
        if value.dtype.kind == "f":
            return Scalar(f.value(f"fneg {f.flags}{t} {value.ref}"), value.dtype)
        return Scalar(f.value(f"sub {t} 0, {value.ref}"), value.dtype)

    def _compare(self, node: ast.Compare) -> Scalar:
        left = self.scalar(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.scalar(right_node)
            test = self._compare_two(op, left, right)
            result = (
                test
                if result is None
                else Scalar(self.f.value(f"and i1 {result.ref}, {test.ref}"), BOOL)
            )
            left = right
        assert result is not None  # (a comparison has an operator)
        return result

    def _compare_two(self, op, a: Scalar, b: Scalar) -> Scalar:
        kind = type(op)
        if a.dtype.kind == "b" and b.dtype.kind == "b" and kind in (ast.Eq, ast.NotEq):
            dtype = BOOL
        else:
            dtype = promote(a.dtype, b.dtype)
            if dtype == F64 and a.dtype.kind in "iub" and b.dtype.kind in "iub":
                raise Unsupported("comparison of int64 and uint64")
        a, b = self.convert(a, dtype), self.convert(b, dtype)
        t = ir_type(dtype)
        if dtype.kind == "f":
            code = _FCMP.get(kind)
            text = f"fcmp {self.f.flags}{code} {t} {a.ref}, {b.ref}"
        else:
            code = _ICMP.get(kind)
            if code and dtype.kind in "ub":
                code = code.replace("s", "u", 1) if code[0] == "s" else code
            text = f"icmp {code} {t} {a.ref}, {b.ref}"
        if code is None:
            raise Unsupported(f"comparison {kind.__name__}")
        return Scalar(self.f.value(text), BOOL)

    def _boolop(self, node: ast.BoolOp) -> Scalar:
        values = [self.scalar(v) for v in node.values]
        if any(v.dtype.kind != "b" for v in values):
            raise Unsupported("and/or of non-bools")
        name = "and" if isinstance(node.op, ast.And) else "or"
        result = values[0]
        for v in values[1:]:
            result = Scalar(self.f.value(f"{name} i1 {result.ref}, {v.ref}"), BOOL)
        return result

    def _ifexp(self, node: ast.IfExp) -> Scalar:
        """`x if c else y` with branches (a branch not taken may read out of bounds)."""
        f = self.f
        test = self.truth(self.scalar(node.test))
        then, other, done = f.label("ift"), f.label("iff"), f.label("ifd")
        f.branch(f"br i1 {test.ref}, label %{then}, label %{other}")
        f.start(then)
        x = self.scalar(node.body)
        x_label, x_at = f.current, len(f.lines)
        f.branch(f"br label %{done}")
        f.start(other)
        y = self.scalar(node.orelse)
        if x.dtype != y.dtype:
            if BOOL in (x.dtype, y.dtype):
                raise Unsupported("a conditional of bool and a number")
            dtype = promote(x.dtype, y.dtype)
            y = self.convert(y, dtype)
            block = f.lines[x_at:]  # (x's conversion belongs in its own branch)
            del f.lines[x_at:]
            x = self.convert(x, dtype)
            f.lines.extend(block)
        y_label = f.current
        f.start(done)
        t = ir_type(x.dtype)
        phi = f"phi {t} [ {x.ref}, %{x_label} ], [ {y.ref}, %{y_label} ]"
        return Scalar(f.value(phi), x.dtype)

    # ---- calls ----
    def call_math(self, name: str, args: list) -> Scalar:
        dtype = args[0].dtype
        lanes = self.vector_bits // (8 * np.dtype(dtype).itemsize)
        lines, callee, attributes = math_call(name, dtype, self.trip, lanes)
        for symbol, line in lines:
            self.f.declare(symbol, line)
        t = ir_type(dtype)
        text = ", ".join(f"{t} {a.ref}" for a in args)
        callee = callee.lstrip("@")
        call = f"call {self.f.flags}{t} @{callee}({text}){attributes}"
        self.f.mapped_calls += bool(attributes)
        return Scalar(self.f.value(call), dtype)

    def call(self, node: ast.Call):
        if node.keywords:
            raise Unsupported("keyword arguments")
        func = node.func
        if isinstance(func, ast.Name):
            return self._builtin(func.id, node.args)
        if not isinstance(func, ast.Attribute):
            raise Unsupported("call")
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "math":
            return self._math(func.attr, node.args)
        name = np_attr(func)
        if name is not None:
            return self.numpy_call(name, node.args)
        return self.method(func.attr, owner, node.args)

    def _math(self, name: str, args: list) -> Scalar:
        if name not in _LIBM and name not in ("sqrt", "floor", "ceil", "fabs"):
            raise Unsupported(f"math.{name}")
        values = [self.convert(self.scalar(a), F64) for a in args]
        if name in _LIBM:
            name = _LIBM[name]
        return self.call_math(_INTRINSIC.get(name, name), values)

    def _builtin(self, name: str, arg_nodes: list) -> Scalar:
        args = [self.scalar(a) for a in arg_nodes]
        if name in _APPROX and len(args) == 1:
            return self.call_math(_APPROX[name], [self.convert(args[0], F64)])
        if name == "int" and len(args) == 1:
            return self.convert(args[0], I64)
        if name == "float" and len(args) == 1:
            return self.convert(args[0], F64)
        if name == "abs" and len(args) == 1:
            return self.absolute(args[0])
        if name in ("min", "max") and len(args) == 2:
            a, b = args
            if a.dtype.kind == "f" or b.dtype.kind == "f":
                raise Unsupported(f"{name} of floats")
            op = ast.Gt() if name == "max" else ast.Lt()
            dtype = promote(a.dtype, b.dtype)
            a, b = self.convert(a, dtype), self.convert(b, dtype)
            pick = self._compare_two(op, b, a)
            t = ir_type(dtype)
            return Scalar(self.f.value(f"select i1 {pick.ref}, {t} {b.ref}, {t} {a.ref}"), dtype)
        raise Unsupported(f"call {name}")

    def absolute(self, value: Scalar) -> Scalar:
        if value.dtype.kind == "f":
            return self.call_math("fabs", [value])
        if value.dtype.kind == "b":
            value = self.convert(value, I64)
        if value.dtype.kind == "u":
            return value
        f, t = self.f, ir_type(value.dtype)
        negative = f.value(f"icmp slt {t} {value.ref}, 0")
        negated = f.value(f"sub {t} 0, {value.ref}")
        return Scalar(f.value(f"select i1 {negative}, {t} {negated}, {t} {value.ref}"), value.dtype)

    def numpy_call(self, name: str, arg_nodes: list):
        if name in _DTYPE_NAMES:
            (arg,) = arg_nodes
            return self.convert(self.scalar(arg), np.dtype(getattr(np, name)))
        if name in _ARRAY_CALLS:
            return getattr(self, _ARRAY_CALLS[name])(arg_nodes)
        args = [self.scalar(a) for a in arg_nodes]
        return self.ufunc(name, args)

    def ufunc(self, name: str, args: list) -> Scalar:
        """NumPy's scalar ufunc `name` on operands of one dtype (the generated code casts them
        to the ufunc's loop dtypes first)."""
        dtype = args[0].dtype
        if any(a.dtype != dtype for a in args):
            raise Unsupported(f"np.{name} of mixed dtypes")
        if name.startswith("logical_"):
            return self._logical(name[8:], args)
        if name in ("maximum", "minimum"):
            return self._extreme(name == "maximum", *args)
        if name in ("floor_divide", "remainder") and dtype.kind in "iuf":
            op = ast.FloorDiv() if name == "floor_divide" else ast.Mod()
            return self.binop(op, *args)
        if dtype.kind != "f":
            return self._integer_ufunc(name, args)
        return self._float_ufunc(name, args)

    def _integer_ufunc(self, name: str, args: list) -> Scalar:
        dtype = args[0].dtype
        if dtype.kind == "b" and name in ("negative", "square", "absolute"):
            raise Unsupported(f"np.{name} of bools")
        if name in ("positive", "conjugate"):
            return args[0]
        if name == "negative":
            return self._unary(ast.USub(), args[0])
        if name == "square":
            return self.binop(ast.Mult(), args[0], args[0])
        if name == "absolute":
            return self.absolute(args[0])
        if name in _BITWISE:
            return self._bitwise(_BITWISE[name], *args)
        raise Unsupported(f"np.{name} of {dtype}")

    def _float_ufunc(self, name: str, args: list) -> Scalar:
        x = args[0]
        if name in ("positive", "conjugate"):
            return x
        if name == "negative":
            return self._unary(ast.USub(), x)
        if name == "square":
            return self.binop(ast.Mult(), x, x)
        if name in ("logaddexp", "logaddexp2"):
            return self._logaddexp(name == "logaddexp2", *args)
        if name in ("isnan", "isinf", "isfinite", "signbit"):
            return self._predicate(name, x)
        if name == "reciprocal":
            return self._float_op("fdiv", self.const(1.0, x.dtype), x)
        callee = (
            _LIBM.get(name) or _LIBM2.get(name) or _INTRINSIC.get(name) or _INTRINSIC2.get(name)
        )
        if callee is None:
            raise Unsupported(f"np.{name}")
        return self.call_math(callee, args)

    def _logical(self, name: str, args: list) -> Scalar:
        values = [self.truth(a) for a in args]
        if name == "not" and len(values) == 1:
            return Scalar(self.f.value(f"xor i1 {values[0].ref}, true"), BOOL)
        op = {"and": "and", "or": "or", "xor": "xor"}.get(name)
        if op is None or len(values) != 2:
            raise Unsupported(f"np.logical_{name}")
        return Scalar(self.f.value(f"{op} i1 {values[0].ref}, {values[1].ref}"), BOOL)

    def _extreme(self, largest: bool, a: Scalar, b: Scalar) -> Scalar:
        """np.maximum/minimum: NaN propagates (`a` kept when it is NaN or wins an ordered
        comparison; `b` otherwise, so a NaN `b` too)."""
        f, t = self.f, ir_type(a.dtype)
        if a.dtype.kind == "f":
            wins = f.value(f"fcmp {'oge' if largest else 'ole'} {t} {a.ref}, {b.ref}")
            nan = f.value(f"fcmp uno {t} {a.ref}, {a.ref}")
            keep = f.value(f"or i1 {wins}, {nan}")
        elif a.dtype.kind == "b":
            keep = f.value(f"icmp {'uge' if largest else 'ule'} {t} {a.ref}, {b.ref}")
        else:
            s = "s" if a.dtype.kind == "i" else "u"
            keep = f.value(f"icmp {s}{'ge' if largest else 'le'} {t} {a.ref}, {b.ref}")
        return Scalar(f.value(f"select i1 {keep}, {t} {a.ref}, {t} {b.ref}"), a.dtype)

    def _logaddexp(self, base2: bool, x: Scalar, y: Scalar) -> Scalar:
        """NumPy's npy_logaddexp(2): x + log(2) (or + 1) when x == y, else the larger plus
        log1p(exp(-|x - y|)) (in base 2: log1p(exp2(.)) / ln 2); NaN when x - y is."""
        f, t, fl = self.f, ir_type(x.dtype), self.f.flags
        same = f.value(f"fcmp {fl}oeq {t} {x.ref}, {y.ref}")
        step = float_constant(1.0 if base2 else np.log(2.0), x.dtype)
        equal = f.value(f"fadd {fl}{t} {x.ref}, {step}")
        d = f.value(f"fsub {fl}{t} {x.ref}, {y.ref}")
        positive = f.value(f"fcmp {fl}ogt {t} {d}, {float_constant(0.0, x.dtype)}")
        magnitude = self.call_math("fabs", [Scalar(d, x.dtype)])
        negated = f.value(f"fneg {fl}{t} {magnitude.ref}")
        power = self.call_math("exp2" if base2 else "exp", [Scalar(negated, x.dtype)])
        tail = self.call_math("log1p", [power]).ref
        if base2:
            tail = f.value(f"fmul {fl}{t} {tail}, {float_constant(1.0 / np.log(2.0), x.dtype)}")
        larger = f.value(f"select i1 {positive}, {t} {x.ref}, {t} {y.ref}")
        value = f.value(f"fadd {fl}{t} {larger}, {tail}")
        ordered = f.value(f"fcmp ord {t} {d}, {d}")
        value = f.value(f"select i1 {ordered}, {t} {value}, {t} {d}")
        return Scalar(f.value(f"select i1 {same}, {t} {equal}, {t} {value}"), x.dtype)

    def _predicate(self, name: str, x: Scalar) -> Scalar:
        f, t = self.f, ir_type(x.dtype)
        if name == "signbit":
            bits = "i64" if t == "double" else "i32"
            raw = f.value(f"bitcast {t} {x.ref} to {bits}")
            return Scalar(f.value(f"icmp slt {bits} {raw}, 0"), BOOL)
        if name == "isnan":
            return Scalar(f.value(f"fcmp uno {t} {x.ref}, {x.ref}"), BOOL)
        magnitude = self.call_math("fabs", [x]).ref
        inf = float_constant(float("inf"), x.dtype)
        code = "oeq" if name == "isinf" else "olt"
        return Scalar(f.value(f"fcmp {code} {t} {magnitude}, {inf}"), BOOL)

    # ---- arrays ----
    def _subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if not isinstance(base, Array):
            raise Unsupported("subscript of a scalar")
        index = self.index_list(node.slice)
        if len(index) == len(base.shape) and not any(isinstance(i, slice) for i in index):
            return self.load_element(base, index)
        return self.view_of(base, index)

    def index_list(self, node) -> list:
        """The parts of an index: int64 scalars, and slices `slice(start, length)`."""
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        out: list = []
        for part in parts:
            if isinstance(part, ast.Slice):
                out.append(self._slice(part))
                continue
            value = self.scalar(part)
            if value.dtype.kind not in "iu":
                raise Unsupported("a non-integer index")
            if value.dtype.kind == "u" and value.dtype.itemsize == 8:
                raise Unsupported("a uint64 index")
            out.append(self.convert(value, I64))
        return out

    def _slice(self, part: ast.Slice) -> slice:
        if part.step is not None:
            raise Unsupported("a slice step")
        if part.lower is None and part.upper is None:
            return slice(None, None)
        upper = part.upper
        if (
            part.lower is None
            or not isinstance(upper, ast.BinOp)
            or not isinstance(upper.op, ast.Add)
            or ast.dump(upper.left) != ast.dump(part.lower)
        ):
            raise Unsupported("a slice")
        start = self.convert(self.scalar(part.lower), I64)
        return slice(start, constant_int(upper.right))

    def view_of(self, array: Array, index: list) -> Array:
        """`array[index]` for ints and slices (missing trailing axes are whole)."""
        if len(index) > len(array.shape):
            raise Unsupported("too many indices")
        offsets, shape, strides = [], [], []
        for axis, part in enumerate(index):
            n, stride = array.shape[axis], array.strides[axis]
            if isinstance(part, slice):
                if part.start is not None:
                    if not 0 <= part.stop <= n:
                        raise Unsupported("slice length")
                    offsets.append((part.start, stride))
                shape.append(n if part.start is None else part.stop)
                strides.append(stride)
            else:
                offsets.append((part, stride))
        shape += array.shape[len(index) :]
        strides += array.strides[len(index) :]
        ptr = self.offset(array, offsets)
        return Array(ptr, array.dtype, tuple(shape), tuple(strides))

    def offset(self, array: Array, terms: list) -> str:
        f = self.f
        total = None
        for value, stride in terms:
            term = value.ref if stride == 1 else f.value(f"mul i64 {value.ref}, {stride}")
            total = term if total is None else f.value(f"add i64 {total}, {term}")
        if total is None:
            return array.ptr
        return f.value(
            f"getelementptr inbounds {mem_type(array.dtype)}, ptr {array.ptr}, i64 {total}"
        )

    def element(self, array: Array, index: list) -> str:
        return self.offset(array, list(zip(index, array.strides)))

    def load_element(self, array: Array, index: list) -> Scalar:
        ptr = self.element(array, index)
        raw = self.f.value(f"load {mem_type(array.dtype)}, ptr {ptr}")
        if array.dtype.kind == "b":
            raw = self.f.value(f"icmp ne i8 {raw}, 0")
        return Scalar(raw, array.dtype)

    def store_element(self, array: Array, index: list, value: Scalar) -> None:
        value = self.convert(value, array.dtype)
        ref = value.ref
        if array.dtype.kind == "b":
            ref = self.f.value(f"zext i1 {ref} to i8")
        ptr = self.element(array, index)
        self.f.emit(f"store {mem_type(array.dtype)} {ref}, ptr {ptr}")

    def loop(self, start: int, stop: int, step: int, body) -> None:
        """`for i in range(start, stop, step): body(i)` (constant bounds)."""
        f = self.f
        counter = f.new("i")
        f.entry.append(f"  {counter} = alloca i64")
        f.emit(f"store i64 {start}, ptr {counter}")
        head, inside, done = f.label("for"), f.label("body"), f.label("end")
        f.start(head)
        i = f.value(f"load i64, ptr {counter}")
        test = f.value(f"icmp {'slt' if step > 0 else 'sgt'} i64 {i}, {stop}")
        f.branch(f"br i1 {test}, label %{inside}, label %{done}")
        f.start(inside)
        outer, f.mapped_calls = f.mapped_calls, 0
        body(Scalar(i, I64))
        # (a short loop calling math with a vector version: LLVM's cost model leaves loops
        # of under 16 iterations scalar unless asked)
        hint = f.loop_hint() if f.mapped_calls else ""
        f.mapped_calls = outer
        if not f.terminated:
            f.emit(f"store i64 {f.value(f'add i64 {i}, {step}')}, ptr {counter}")
            f.branch(f"br label %{head}{hint}")
        f.start(done)

    def nest(self, shape: tuple, body, index: tuple = ()) -> None:
        """Loops over every index of `shape` (no loop for a 0-d shape)."""
        if len(index) == len(shape):
            body(list(index))
            return
        n = shape[len(index)]
        self.loop(0, n, 1, lambda i: self.nest(shape, body, (*index, i)))

    def copy(self, dst: Array, src: Array) -> None:
        if dst.shape != src.shape:
            raise Unsupported("copy between shapes")
        self.nest(dst.shape, lambda i: self.store_element(dst, i, self.load_element(src, i)))

    def fill(self, dst: Array, value: Scalar) -> None:
        self.nest(dst.shape, lambda i: self.store_element(dst, i, value))

    def new_array(self, dtype, shape: tuple) -> Array:
        return Array(self.f.storage(dtype, shape), dtype, shape)

    # ---- array calls and methods ----
    def _empty(self, args: list) -> Array:
        if len(args) != 2:
            raise Unsupported("np.empty")
        return self.new_array(dtype_of(args[1]), constant_shape(args[0]))

    def _zeros(self, args: list) -> Array:
        array = self._empty(args)
        self.fill(array, self.const(0, array.dtype))
        return array

    def _full(self, args: list) -> Array:
        if len(args) != 2:
            raise Unsupported("np.full")
        value = self.scalar(args[1])
        array = self.new_array(value.dtype, constant_shape(args[0]))
        self.fill(array, value)
        return array

    def _contiguous(self, args: list) -> Array:
        (arg,) = args
        value = self.expr(arg)
        if not isinstance(value, Array):
            raise Unsupported("np.ascontiguousarray of a scalar")
        array = self.new_array(value.dtype, value.shape)
        self.copy(array, value)
        return array

    def method(self, name: str, owner, args: list):
        if (
            isinstance(owner, ast.Call)
            and np_attr(owner.func) == "ascontiguousarray"
            and name in ("reshape", "ravel")
        ):
            (inner,) = owner.args
            base = self.expr(inner)
            if not isinstance(base, Array):
                raise Unsupported("reshape of a scalar")
            if not base.contiguous:
                base = self._contiguous(owner.args)
            shape = constant_shape(args[0]) if name == "reshape" else (int(np.prod(base.shape)),)
            if int(np.prod(shape)) != int(np.prod(base.shape)):
                raise Unsupported("reshape size")
            return Array(base.ptr, base.dtype, shape, c_strides(shape))
        value = self.expr(owner)
        if not isinstance(value, Array):
            raise Unsupported(f"method {name} of a scalar")
        if name == "copy" and not args:
            array = self.new_array(value.dtype, value.shape)
        elif name == "astype" and len(args) == 1:
            array = self.new_array(dtype_of(args[0]), value.shape)
        else:
            raise Unsupported(f"method {name}")
        self.copy(array, value)
        return array

    def _dot(self, args: list):
        a, b = (self.expr(x) for x in args)
        if not (isinstance(a, Array) and isinstance(b, Array)) or a.dtype != b.dtype:
            raise Unsupported("np.dot operands")
        if a.dtype.kind != "f" or not 1 <= len(a.shape) <= 2 or not 1 <= len(b.shape) <= 2:
            raise Unsupported("np.dot dtypes or ranks")
        if a.shape[-1] != b.shape[0]:
            raise Unsupported("np.dot shapes")
        return products.product(self, a, b)


_DTYPE_NAMES = frozenset(
    "bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64".split()
)
_ARRAY_CALLS = {
    "empty": "_empty",
    "zeros": "_zeros",
    "full": "_full",
    "ascontiguousarray": "_contiguous",
    "dot": "_dot",
}


_BITWISE = {"bitwise_and": ast.BitAnd, "bitwise_or": ast.BitOr, "bitwise_xor": ast.BitXor}
_EXPRESSIONS = {
    ast.Constant: "_constant_node",
    ast.Name: "_name",
    ast.BinOp: "_binop_node",
    ast.UnaryOp: "_unary_node",
    ast.Compare: "_compare",
    ast.BoolOp: "_boolop",
    ast.IfExp: "_ifexp",
    ast.Call: "call",
    ast.Subscript: "_subscript",
    ast.Attribute: "_attribute",
}


__all__ = ["LIBM_PREFIX", "Expressions", "math_call", "promote"]
