"""Elementwise rules compiled from derivative formulas: one formula per operand, every rule.

An elementwise primitive's derivative is written once per operand, as a Python expression
of `g`, the operands (`x`, and `y` for binary primitives) and the output `out`: `g` times
the partial derivative in that operand, e.g. `"g * cos(x)"` for sin. Elementwise, a tangent
and a cotangent meet the derivative the same way, so the one expression gives every rule:

- `jvp` and `vjp`: with autodiff's functions (`Formulas.ad`), so they differentiate, batch
  and stage again; operators become calls of those functions.
- `fast_vjp` (`Primitive.fast.vjp`): with NumPy directly (`Formulas.numpy`), for a backward
  pass on plain arrays that nobody records; operators stay operators (NumPy's ufuncs on
  arrays, its scalar math on NumPy scalars: what `bind` runs on plain values).
- its lazy form, for large arrays of one shape and dtype: with lazy arithmetic
  (`Formulas.lazy`, kernels/fused.py), so whole chains of rules run as one pass.

Each rule is generated as Python source with the expression written into it, and compiled
once, the first time that form of the rule runs (ops/elementwise.py): the backward pass of a
small op pays no call per formula, and neither `import autodiff` nor a first call compiles a
form it does not use. All forms
compute the same operations in the same order, so their results are bitwise the same
(tests/test_ops.py checks it on every row of the op table).

A formula may call the functions of the namespaces (`cos`, `where`, `tanh_backward`, ...),
use the constants they hold, read `out.dtype`, and use `+ - * /`, unary minus and the
comparisons `> < ==`.
"""

from __future__ import annotations

import ast
from functools import cache, partial

from autodiff.kernels import fused

NUMBERS = frozenset((int, float, complex, bool))


class Namespace:
    """Attribute access to a formulas namespace (a plain dict: the compiled rules' globals,
    which CPython reads fastest from an exact dict): `ns.cos` is `ns.names["cos"]`."""

    __slots__ = ("names",)

    def __init__(self, names: dict):
        self.names = names

    def __getattr__(self, name):
        try:
            return self.names[name]
        except KeyError:
            raise AttributeError(name) from None


class Formulas:
    """The three namespaces formulas compute with (name -> value dicts). The module that
    defines the functions (ops/elementwise.py) fills them; compiled rules look names up when
    they run."""

    def __init__(self):
        base = {"fused": fused, "NUMBERS": NUMBERS}
        self.ad, self.numpy, self.lazy = dict(base), dict(base), dict(base)

    def define(self, name: str, *, ad, numpy, lazy) -> None:
        """Give `name` its meaning in each namespace."""
        self.ad[name], self.numpy[name], self.lazy[name] = ad, numpy, lazy

    def define_with(self, name: str, function) -> None:
        """Define `name` as `function(ns, *args)` in each namespace `ns` (a `Namespace`): a
        helper written in Python, computing with the namespace it is called in."""
        for names in (self.ad, self.numpy, self.lazy):
            names[name] = partial(function, Namespace(names))

    def helper(self, name: str, params: str, expr: str) -> None:
        """Define `name(params)` as the formula `expr`, compiled for each namespace."""
        for names, calls in ((self.ad, True), (self.numpy, False), (self.lazy, True)):
            source = f"def {name}({params}):\n    return {_expression(expr, calls)}\n"
            names[name] = _compile(source, name, names)


# ---------------------------------------------------------------------------------------------
# Operators as calls (the AD and lazy namespaces: a NumPy array on an operator's left would
# otherwise take NumPy's operator, which knows nothing of tracers or lazy values).

_BINARY_CALLS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_COMPARE_CALLS = {ast.Gt: "greater", ast.Lt: "less", ast.Eq: "equal"}


class _OperatorsAsCalls(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        return _call(_BINARY_CALLS[type(node.op)], node.left, node.right)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.USub):
            raise ValueError(f"unsupported operator in a formula: {ast.unparse(node)}")
        return _call("neg", node.operand)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1:
            raise ValueError(f"chained comparison in a formula: {ast.unparse(node)}")
        return _call(_COMPARE_CALLS[type(node.ops[0])], node.left, node.comparators[0])


class _FoldNegativeConstants(ast.NodeTransformer):
    """`-2.0` is a constant, not `neg(2.0)` (a NumPy scalar, which would promote float32)."""

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return ast.Constant(-node.operand.value)
        return node


def _call(name: str, *args) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


@cache
def _expression(expr: str, calls: bool) -> str:
    """The formula `expr` as source, its operators as calls when `calls`."""
    tree = _FoldNegativeConstants().visit(ast.parse(expr, mode="eval"))
    if calls:
        tree = _OperatorsAsCalls().visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def _compile(source: str, name: str, names: dict):
    local: dict = {}
    exec(compile(source, f"<formula {name}>", "exec"), names, local)  # (`names`: its globals)
    return local[name]


# ---------------------------------------------------------------------------------------------
# The rules' sources, one per form. `{d}`, `{dx}`, `{dy}` stand for the formulas; `{same}` for
# what a binary rule does when both operands are one value (a symmetric one computes one
# cotangent).

_UNARY = {
    "jvp": """
def jvp(primals, tangents, *, out):
    g, x = tangents[0], primals[0]
    return {d}
""",
    "vjp": """
def vjp(g, x, *, out):
    return ({d},)
""",
    "lazy_vjp": """
def vjp(g, out, x):
    return ({d},)
""",
}
_UNARY["numpy_vjp"] = _UNARY["lazy_vjp"]
_BINARY = {
    "jvp": """
def jvp(primals, tangents, *, out):
    (x, y), (tx, ty) = primals, tangents
    g = tx
    t_x = None if tx is None else {dx}
    g = ty
    t_y = None if ty is None else {dy}
    return sum_tangents(t_x, t_y, out)
""",
    "vjp": """
def vjp(g, x, y, *, out):
    cx, cy = type(x) in NUMBERS, type(y) in NUMBERS{same}
    return (None if cx else unbroadcast({dx}, x), None if cy else unbroadcast({dy}, y))
""",
    "lazy_vjp": """
def vjp(g, out, x, y):
    cx, cy = type(x) in NUMBERS, type(y) in NUMBERS
    if not (cx or cy):
        g = fused.shared(g)  # (read by both operands' expressions){same}
    return (None if cx else unbroadcast({dx}, x), None if cy else unbroadcast({dy}, y))
""",
    # The NumPy form runs once per binary node of a backward pass on small arrays, whose
    # cotangents mostly have their operands' shapes and dtypes already: tested inline.
    "numpy_vjp": """
def vjp(g, out, x, y):
    cx, cy = type(x) in NUMBERS, type(y) in NUMBERS{same}
    ct_x = None if cx else {dx}
    ct_y = None if cy else {dy}
    try:  # (the sum over a scalar operand, written out: `unbroadcast`'s commonest reduction)
        if ct_x is not None and (ct_x.shape != x.shape or ct_x.dtype is not x.dtype):
            same = ct_x.dtype is x.dtype and not x.shape
            ct_x = add_reduce(ct_x, None) if same else unbroadcast(ct_x, x)
        if ct_y is not None and (ct_y.shape != y.shape or ct_y.dtype is not y.dtype):
            same = ct_y.dtype is y.dtype and not y.shape
            ct_y = add_reduce(ct_y, None) if same else unbroadcast(ct_y, y)
    except AttributeError:  # a list or other array-like operand
        return unbroadcast(ct_x, x), unbroadcast(ct_y, y)
    return ct_x, ct_y
""",
}
_SYMMETRIC = """
    if x is y and not cx:
        ct = unbroadcast({dx}, x)
        return ct, ct"""

# The forms of a primitive's rules: the slot each fills, and the namespace each computes with.
# `jvp` and `vjp` (autodiff's functions), `numpy_vjp` (NumPy, for plain arrays: the engine's
# `Primitive.fast.vjp`), `fused_vjp` (for large cotangents: lazily when the cotangent, output
# and operands fit together, else `numpy_vjp`; `Primitive.fast.fused_vjp`).
FORMS = ("jvp", "vjp", "numpy_vjp", "fused_vjp")
_NAMESPACE = {"jvp": "ad", "vjp": "ad", "lazy_vjp": "lazy", "numpy_vjp": "numpy"}


def unary_rule(name: str, d: str, formulas: Formulas, form: str, sibling):
    """The `form` (of FORMS) of the rules of a unary elementwise primitive whose formula is
    `d` (see the module); `sibling(form)` gives another form of the same rules."""
    if form == "fused_vjp":
        return _fused(unary_rule(name, d, formulas, "lazy_vjp", sibling), sibling("numpy_vjp"))
    return _compile_rule(
        _UNARY[form], name, getattr(formulas, _NAMESPACE[form]), d=_formula(d, form)
    )


def binary_rule(
    name: str, dx: str, dy: str, formulas: Formulas, symmetric: bool, form: str, sibling
):
    """The `form` (of FORMS) of the rules of a binary elementwise primitive with broadcasting
    operands, whose formulas are `dx` and `dy` (see the module); `sibling(form)` gives another
    form. `symmetric`: `dy` is `dx` with the operands swapped, so that `f(x, x)` computes one
    of them."""
    if form == "fused_vjp":
        lazy = binary_rule(name, dx, dy, formulas, symmetric, "lazy_vjp", sibling)
        return _fused(lazy, sibling("numpy_vjp"))
    parts = {"dx": _formula(dx, form), "dy": _formula(dy, form)}
    parts["same"] = _SYMMETRIC.format(**parts) if symmetric else ""
    return _compile_rule(_BINARY[form], name, getattr(formulas, _NAMESPACE[form]), **parts)


def _formula(expr: str, form: str) -> str:
    """The formula as the source of `form`: operators as calls except in the NumPy form."""
    return _expression(expr, form != "numpy_vjp")


def _fused(lazy_vjp, numpy_vjp):
    def fused_vjp(g, out, *operands):
        if fused.fusable(g, out, operands):
            return lazy_vjp(g, out, *operands)
        return numpy_vjp(fused.materialize(g), out, *operands)

    return fused_vjp


def _compile_rule(template: str, name: str, names: dict, **parts):
    """The one function `template` (with `parts` written in) defines, compiled with `names`
    as its globals."""
    source = template.format(**parts)
    local: dict = {}
    exec(compile(source, f"<rules of {name}>", "exec"), names, local)
    (rule,) = local.values()
    return rule
