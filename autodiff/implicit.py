"""Implicit differentiation: custom_root, custom_linear_solve (JAX's lax semantics), fixed_point.

A solver's derivative comes from the equation its solution satisfies (the implicit
function theorem), not from its iterations. Each is one primitive whose operands are the
initial guess (or right-hand side) and the values the user's function closes over (staged
as `jit` stages it, so an enclosing transform's tracers become operands and derivatives
reach them):

- `root_p` (custom_root, fixed_point): `impl` runs the solver on plain values (nothing
  differentiates it: the solver runs under stop_gradient); `jvp` solves the linearised
  system `∂f/∂x · ẋ = -∂f/∂θ · θ̇` at the solution with the user's `tangent_solve`; `vjp`
  transposes that tangent map (as JAX does: `tangent_solve` must be linear in its right-hand
  side, which a `custom_linear_solve` inside it makes cheap); `batch` vmaps the solver and
  the tangent map.
- `linear_solve_p` (custom_linear_solve): `jvp` is another linear solve, `ẋ = A⁻¹(ḃ - Ȧx)`;
  `vjp` solves the transposed system with `transpose_solve` (`Aᵀ b̄ = x̄`, `θ̄ = -∂(Ax)/∂θᵀ b̄`);
  `batch` vmaps matvec and both solvers.

The primitives' parameters are small spec objects holding the flat functions their rules
call; a batched spec is the same spec with each function vmapped.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.control import while_loop
from autodiff.core.abstract import aval_of
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.errors import TracerConversionError
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import current_level
from autodiff.forward_ad.transforms import jvp
from autodiff.ops.elementwise import stop_gradient
from autodiff.ops.sparsity import DENSE
from autodiff.ops.structural import move_to_front, shape_of
from autodiff.reverse.transforms import pullback
from autodiff.staging.ir import eval_graph
from autodiff.staging.trace import stage
from autodiff.vmap.transform import vmap

__all__ = ["custom_linear_solve", "custom_root", "fixed_point"]


def _name(fun, default: str) -> str:
    return getattr(fun, "__name__", default)


def _closure_converted(fun: Callable, leaves: list, tree, what: str, like: str):
    """`fun` (of one pytree argument shaped as `leaves`/`tree`) staged: its graph, whose
    extra inputs are the values it closes over, and those values. Its output must have the
    structure and shapes of its argument (as JAX checks)."""
    avals = [aval_of(x) for x in leaves]
    arg_tree = tree_flatten((tree_unflatten(tree, leaves),))[1]
    graph, consts = stage(fun, avals, arg_tree, name=_name(fun, what))
    if graph.out_tree != tree:
        raise TypeError(
            f"{what}() output pytree structure must match {like}, got {graph.out_tree} and {tree}."
        )
    got = [a.shape for a in graph.out_avals]
    want = [a.shape for a in avals]
    if got != want:
        raise ValueError(f"{what}() output shapes must match {like}, got {got} and {want}")
    return graph, consts


def _check_leaves(leaves: list, what: str) -> None:
    for x in leaves:
        if not is_inexact(dtype_of(x)):
            raise TypeError(
                f"{what} must be floating-point or complex arrays (a pytree of them), got a "
                f"leaf of dtype {dtype_of(x)}"
            )


def _split_output(out, tree, has_aux: bool, what: str, like: str) -> tuple:
    """A solver's result `x` (or `(x, aux)`), checked against `tree`: (x leaves, aux leaves,
    aux structure)."""
    aux: object = None
    if has_aux:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError(
                f"{what}() produced {type(out).__name__}, but a pytree tuple with auxiliary "
                "output was expected because has_aux was set to True."
            )
        out, aux = out
    leaves, got = tree_flatten(out)
    if got != tree:
        raise TypeError(
            f"{what}() output pytree structure must match {like}, got {got} and {tree}."
        )
    aux_leaves, aux_tree = tree_flatten(aux)
    return leaves, aux_leaves, aux_tree


def _as_constants(leaves: list, operands) -> list:
    """A solver's outputs for plain operands, as plain values: a solver that closes over an
    enclosing transform's values computes with them as constants (their concrete values:
    the solver runs under stop_gradient; under vmap or jit there is none, and this raises)."""
    if any(isinstance(v, Tensor) for v in operands):
        return leaves
    return [v.primal() if isinstance(v, Tensor) else v for v in leaves]


# How many objects `_reaches_tensor` looks at, at most, before it assumes a Tensor is there.
CLOSURE_SCAN_LIMIT = 10_000


def _reaches_tensor(fun) -> bool:
    """Might `fun` compute with a Tensor it holds (a traced value of an enclosing transform)?
    Looks through what it closes over and its defaults, and through the functions, partials,
    bound methods, containers and objects found there (not through modules or globals)."""
    stack, seen = [fun], set()
    while stack:
        obj = stack.pop()
        if isinstance(obj, Tensor):
            return True
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type, np.ndarray, str)):
            continue
        seen.add(id(obj))
        if len(seen) > CLOSURE_SCAN_LIMIT:
            return True
        stack.extend(_held_by(obj))
    return False


def _held_by(obj) -> list:
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, types.FunctionType):
        cells = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
        return cells + list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
    if isinstance(obj, types.MethodType):
        return [obj.__func__, obj.__self__]
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    return list(getattr(obj, "__dict__", {}).values())


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _solver_closure(run: Callable, solver: Callable, operands: list, name: str) -> tuple:
    """`run` (the user's `solver`, of flat operands) and the traced values the solver closes
    over, which become extra operands (constants: nothing differentiates them). A solver
    that may hold some is staged to find them, and then runs as its staged graph. A solver
    with Python control flow on values cannot be staged: it runs as it is, on plain values
    (a traced value it holds is then a constant where it has one concrete value)."""
    if current_level() == 0 or not _reaches_tensor(solver):
        return run, []
    avals = [aval_of(v) for v in operands]
    try:
        graph, captured = stage(run, avals, tree_flatten(tuple(avals))[1], name=name)
    except TracerConversionError:
        return run, []
    if not captured:
        return run, []
    return (lambda *ops: eval_graph(graph, *ops)), captured


def _inexact_positions(values) -> list:
    return [i for i, v in enumerate(values) if is_inexact(dtype_of(v))]


def _zeros(x):
    return np.zeros(shape_of(x), dtype_of(x))


def _batch_size(values, dims) -> int:
    return next(shape_of(v)[d] for v, d in zip(values, dims) if d is not None)


def _to_front(values, dims) -> tuple:
    """Batched operands with their batch axis first, and their in_axes (0 or None)."""
    moved = tuple(v if d is None else move_to_front(v, d) for v, d in zip(values, dims))
    return moved, tuple(None if d is None else 0 for d in dims)


def _broadcast_front(values, axes, size: int) -> tuple:
    """`values` all batched along a first axis (broadcast where they are not)."""
    return tuple(
        v if a is not None else anp.broadcast_to(v, (size, *shape_of(v)))
        for v, a in zip(values, axes)
    )


# ------------------------------------------------------------------------------ custom_root


class _RootSpec:
    """What root_p's rules call, on flat values.

    - `solve(*operands)`: the solution's leaves, then aux's (operands: guess, then consts);
    - `tangent(sol, consts, const_tangents)`: the solution's tangent leaves, linear in
      `const_tangents` (one per inexact const, in `inexact` order);
    - `n_x`: the solution's number of leaves; `aux_tree`: aux's structure, set by the first
      run of `solve` (with `has_aux`).
    """

    __slots__ = (
        "solve", "tangent", "n_x", "has_aux", "inexact", "aux_tree", "name",
        "solve_tangent", "tangent_graph", "tangent_start",
    )  # fmt: skip

    def __init__(self, solve, tangent, n_x, has_aux, inexact, name):
        self.solve = solve
        self.tangent = tangent
        self.n_x = n_x
        self.has_aux = has_aux
        self.inexact = inexact
        self.aux_tree = None
        self.name = name
        # tangent_solve staged, when it closes over traced values (`_tangent_closure`): its
        # graph, and where those values start among the operands.
        self.solve_tangent = None
        self.tangent_graph = None
        self.tangent_start = 0

    def batched(self, axes: tuple) -> _RootSpec:
        """This spec for operands batched along `axes` (0 or None each; solutions at 0)."""
        n_x = self.n_x
        const_axes = tuple(axes[n_x + i] for i in self.inexact)
        spec = _RootSpec(
            vmap(self.solve, in_axes=axes),
            vmap(self.tangent, in_axes=((0,) * n_x, axes[n_x:], const_axes)),
            n_x,
            self.has_aux,
            self.inexact,
            f"vmap({self.name})",
        )
        spec.aux_tree = self.aux_tree
        return spec  # (its tangent: this one's, batched, staged tangent_solve included)


def _root_impl(*operands, spec):
    return tuple(spec.solve(*operands))


def _root_abstract_eval(*avals, spec):
    if not spec.has_aux:  # (the solution has the guess's types)
        return tuple(a.strengthened() for a in avals[: spec.n_x])
    graph, _ = stage(spec.solve, list(avals), tree_flatten(tuple(avals))[1], name=spec.name)
    return tuple(a.strengthened() for a in graph.out_avals)


def _root_jvp(primals, tangents, *, out, spec):
    consts = primals[spec.n_x :]
    dots = [tangents[spec.n_x + i] for i in spec.inexact]
    if all(t is None for t in dots):
        return (None,) * len(out)
    dots = [_zeros(consts[i]) if t is None else t for i, t in zip(spec.inexact, dots)]
    x_dot = spec.tangent(out[: spec.n_x], consts, tuple(dots))
    return tuple(x_dot) + (None,) * (len(out) - spec.n_x)


def _root_vjp(cts, *primals, out, spec):
    n_x = spec.n_x
    consts = primals[n_x:]
    sol = out[:n_x]
    ct_x = tuple(_zeros(s) if c is None else c for s, c in zip(sol, cts[:n_x]))
    zeros = [_zeros(consts[i]) for i in spec.inexact]

    def tangent_map(*dots):
        return tuple(spec.tangent(sol, consts, dots))

    _, pull = pullback(tangent_map, zeros, False)
    ct_inexact = iter(pull(ct_x))
    ct_consts = [None] * len(consts)
    for i in spec.inexact:
        ct_consts[i] = next(ct_inexact)
    return (None,) * n_x + tuple(ct_consts)


def _root_batch(values, dims, *, spec):
    size = _batch_size(values, dims)
    values, axes = _to_front(values, dims)
    n_x = spec.n_x  # (every member starts from its own guess: solutions are batched)
    values = _broadcast_front(values[:n_x], axes[:n_x], size) + values[n_x:]
    axes = (0,) * n_x + axes[n_x:]
    outs = bind(root_p, *values, spec=spec.batched(axes))
    return _broadcast_front(outs, (0,) * len(outs), size), (0,) * len(outs)


root_p = Primitive("custom_root", multiple_results=True)
root_p.sparsity = DENSE  # (the solution depends on everything f reads)
root_p.impl = _root_impl
root_p.abstract_eval = _root_abstract_eval
root_p.jvp = _root_jvp
root_p.vjp = _root_vjp
root_p.batch = _root_batch


def _root_spec(graph, x_tree, n_x, solve, tangent_solve, has_aux, avals, consts) -> _RootSpec:
    """custom_root's spec: `graph` is f staged (x leaves, then the consts it closes over;
    operands after those are the solver's own, which `tangent` does not read)."""
    inexact = _inexact_positions(consts)
    n_f = len(consts)
    fname = graph.name

    def f_of(const_values):
        def f(x):
            leaves = tree_flatten(x)[0]
            return tree_unflatten(x_tree, eval_graph(graph, *leaves, *const_values))

        return f

    def run(*operands):
        operands = [stop_gradient(v) for v in operands]
        guess = tree_unflatten(x_tree, operands[:n_x])
        out = solve(f_of(operands[n_x : n_x + n_f]), guess)
        x, aux, spec.aux_tree = _split_output(out, x_tree, has_aux, "solve", "initial_guess")
        x, aux = _as_constants(x, operands), _as_constants(aux, operands)
        shapes, want = [shape_of(v) for v in x], [a.shape for a in avals]
        if shapes != want:
            raise ValueError(
                f"solve() output shapes must match initial_guess, got {shapes} and {want}"
            )
        return [anp.astype(v, a.dtype) for v, a in zip(x, avals)] + aux

    def linearized_at(sol, const_values):
        def linearized(v):
            v_leaves = tree_flatten(v)[0]
            t = jvp(lambda *x: tuple(eval_graph(graph, *x, *const_values)), list(sol), v_leaves)
            return tree_unflatten(x_tree, list(t[1]))

        return linearized

    def solve_tangent(*flat):  # (solution, f's consts, right-hand side: flat leaves)
        sol, const_values, rhs = flat[:n_x], flat[n_x : n_x + n_f], flat[n_x + n_f :]
        x_dot = tangent_solve(linearized_at(sol, const_values), tree_unflatten(x_tree, rhs))
        leaves, got = tree_flatten(x_dot)
        if got != x_tree:
            raise TypeError(
                f"tangent_solve() output pytree structure must match x, got {got} and {x_tree}."
            )
        return leaves

    def tangent(sol, const_values, dots):
        f_consts = const_values[:n_f]

        def f_of_inexact(*cs):
            full = list(f_consts)
            for i, c in zip(inexact, cs):
                full[i] = c
            return tuple(eval_graph(graph, *sol, *full))

        rhs = jvp(f_of_inexact, [f_consts[i] for i in inexact], list(dots))[1]
        if spec.tangent_graph is None:
            leaves = solve_tangent(*sol, *f_consts, *rhs)
        else:  # (tangent_solve staged: the traced values it closes over are operands)
            captured = const_values[spec.tangent_start - n_x :]
            leaves = eval_graph(spec.tangent_graph, *sol, *f_consts, *rhs, *captured)
        return [-v for v in leaves]

    spec = _RootSpec(run, tangent, n_x, has_aux, inexact, f"solve({fname})")
    spec.solve_tangent = solve_tangent
    return spec


def _tangent_closure(spec, tangent_solve, avals: tuple, consts: list, start: int) -> list:
    """The traced values `tangent_solve` closes over (a parameter-dependent preconditioner,
    a derivative at the parameters), which become operands of root_p from position `start`
    on: it is staged with the linearized map (as jit stages a function) and runs as its graph.
    A tangent_solve that holds none, or that cannot be staged (Python control flow on
    values), runs as it is."""
    if current_level() == 0 or not _reaches_tensor(tangent_solve):
        return []
    in_avals = [*avals, *(aval_of(c) for c in consts), *avals]
    try:
        graph, captured = stage(
            spec.solve_tangent, in_avals, tree_flatten(tuple(in_avals))[1], name="tangent_solve"
        )
    except TracerConversionError:
        return []
    if captured:
        spec.tangent_graph, spec.tangent_start = graph, start
    return list(captured)


def custom_root(
    f: Callable,
    initial_guess,
    solve: Callable,
    tangent_solve: Callable,
    has_aux: bool = False,
):
    """The root `x` of `f(x) = 0` found by `solve`, differentiated implicitly (JAX's
    `jax.lax.custom_root`).

    The derivative with respect to the values `f` closes over comes from the implicit
    function theorem at the solution, never from `solve`'s iterations (which run under
    stop_gradient); the initial guess gets no derivative. Forward and reverse mode, vmap and
    jit all apply.

    Arguments:
        f: the function whose root is sought, of one pytree of arrays shaped as
            `initial_guess`, returning the same structure. It is staged (as jit stages it):
            the values it closes over are what the root is differentiated with respect to.
        initial_guess: where `solve` starts (a pytree of floating-point arrays).
        solve: `solve(f, initial_guess) -> x` (or `(x, aux)` with `has_aux`), never
            differentiated. It runs on plain values, under jit too (when the jitted
            function runs), so Python control flow on values works there; under vmap it
            runs on batched values (write it with structured control flow, `while_loop`),
            and so does it under jit with `has_aux` (aux's types come from staging it).
            Values it closes over are constants to it.
        tangent_solve: `tangent_solve(g, y) -> z` solving the linear system `g(z) = y`
            for the linear map `g` (f's Jacobian at the root). Reverse mode transposes it,
            so it must be linear in `y`: for scalars `lambda g, y: y / g(1.0)`; for vectors
            a linear solve with `autodiff.jacfwd(g)(y)`, or `custom_linear_solve`.
        has_aux: `solve` returns `(x, aux)`; aux gets no derivative.

    Returns:
        `x` (or `(x, aux)`).

    Example:
        >>> import autodiff as ad
        >>> def newton(f, x):
        ...     for _ in range(30):
        ...         x = x - f(x) / ad.grad(f)(x)
        ...     return x
        >>> def cube_root(a):
        ...     return ad.custom_root(lambda x: x ** 3 - a, 1.0, newton, lambda g, y: y / g(1.0))
        >>> round(float(cube_root(8.0)), 12), round(float(ad.grad(cube_root)(8.0)), 12)
        (2.0, 0.083333333333)
    """
    if not (callable(f) and callable(solve) and callable(tangent_solve)):
        raise TypeError("custom_root's f, solve and tangent_solve must be callable")
    leaves, x_tree = tree_flatten(initial_guess)
    _check_leaves(leaves, "custom_root's initial_guess")
    graph, consts = _closure_converted(f, leaves, x_tree, "f", "initial_guess")
    avals = tuple(aval_of(x).strengthened() for x in leaves)
    spec = _root_spec(graph, x_tree, len(leaves), solve, tangent_solve, has_aux, avals, consts)
    spec.solve, captured = _solver_closure(spec.solve, solve, leaves + consts, spec.name)
    start = len(leaves) + len(consts) + len(captured)
    captured += _tangent_closure(spec, tangent_solve, avals, consts, start)
    outs = bind(root_p, *leaves, *consts, *captured, spec=spec)
    x = tree_unflatten(x_tree, list(outs[: len(leaves)]))
    if not has_aux:
        return x
    return x, tree_unflatten(spec.aux_tree, list(outs[len(leaves) :]))


# ---------------------------------------------------------------------- custom_linear_solve


class _LinearSpec:
    """What linear_solve_p's rules call, on flat values (the right-hand side's leaves `b`,
    then the consts `c` matvec closes over):

    - `matvec(x, c)`: A x (leaves), linear in `x`;
    - `run(b, c)`: x's leaves, then aux's, by the solver;
    - `transposed()`: the spec of the transposed system (None without transpose_solve);
    - `batched(b_axes, c_axes)`: the spec for batched operands (solutions batched at 0).

    `solve(matvec, b, c)` and `transpose_solve` are the user's solvers, flat;
    `symmetric`: Aᵀ = A (the transposed system's matvec is matvec itself). The first `n_c`
    consts are matvec's (differentiated), the others the solvers' own (constants).
    """

    __slots__ = ("matvec", "solve", "transpose_solve", "symmetric", "n_b", "n_c", "has_aux")

    def __init__(self, matvec, solve, transpose_solve, symmetric, n_b, n_c, has_aux):
        self.matvec = matvec
        self.solve = solve
        self.transpose_solve = transpose_solve
        self.symmetric = symmetric
        self.n_b = n_b
        self.n_c = n_c
        self.has_aux = has_aux

    def run(self, b, c) -> list:
        return self.solve(self.matvec, b, c)

    def vecmat(self, y, c) -> list:
        """Aᵀ y: the transpose of the linear map matvec."""
        if self.symmetric:
            return self.matvec(y, c)
        _, pull = pullback(lambda *x: tuple(self.matvec(x, c)), [_zeros(v) for v in y], False)
        return list(pull(tuple(y)))

    def transposed(self) -> _LinearSpec | None:
        if self.transpose_solve is None:
            return None
        return _LinearSpec(
            self.vecmat,
            self.transpose_solve,
            self.solve,
            self.symmetric,
            self.n_b,
            self.n_c,
            self.has_aux,
        )

    def batched(self, b_axes: tuple, c_axes: tuple) -> _BatchedLinearSpec:
        return _BatchedLinearSpec(self, b_axes, c_axes)


class _BatchedLinearSpec:
    """A `_LinearSpec` for operands batched along `b_axes`, `c_axes` (0 or None each): each
    function vmapped (the transposed system's too)."""

    __slots__ = ("base", "axes", "n_b", "n_c", "has_aux", "matvec", "run")

    def __init__(self, base, b_axes: tuple, c_axes: tuple):
        self.base = base
        self.axes = (b_axes, c_axes)
        self.n_b = base.n_b
        self.n_c = base.n_c
        self.has_aux = base.has_aux
        self.matvec = self._vmapped(base.matvec)
        self.run = self._vmapped(base.run)

    def _vmapped(self, fun):
        batched = vmap(lambda x, c: tuple(fun(list(x), list(c))), in_axes=self.axes)
        return lambda x, c: list(batched(tuple(x), tuple(c)))

    def transposed(self) -> _BatchedLinearSpec | None:
        base = self.base.transposed()
        return None if base is None else base.batched(*self.axes)

    def batched(self, b_axes: tuple, c_axes: tuple) -> _BatchedLinearSpec:
        return _BatchedLinearSpec(self, b_axes, c_axes)


def _linear_impl(*operands, spec):
    return tuple(spec.run(list(operands[: spec.n_b]), list(operands[spec.n_b :])))


def _linear_abstract_eval(*avals, spec):
    if not spec.has_aux:  # (the solution has b's types)
        return tuple(a.strengthened() for a in avals[: spec.n_b])

    def run(*xs):
        return tuple(spec.run(list(xs[: spec.n_b]), list(xs[spec.n_b :])))

    graph, _ = stage(run, list(avals), tree_flatten(tuple(avals))[1], name="linear_solve")
    return tuple(a.strengthened() for a in graph.out_avals)


def _linear_jvp(primals, tangents, *, out, spec):
    n_b = spec.n_b
    b, c = primals[:n_b], primals[n_b:]
    b_dot, c_dot = tangents[:n_b], tangents[n_b:]
    inexact = _inexact_positions(c[: spec.n_c])
    c_dot_in = [c_dot[i] for i in inexact]
    if all(t is None for t in b_dot) and all(t is None for t in c_dot_in):
        return (None,) * len(out)
    x = out[:n_b]
    rhs = [_zeros(v) if t is None else t for v, t in zip(b, b_dot)]
    if any(t is not None for t in c_dot_in):

        def matvec_of(*cs):
            full = list(c)
            for i, ci in zip(inexact, cs):
                full[i] = ci
            return tuple(spec.matvec(list(x), full))

        dots = [_zeros(c[i]) if t is None else t for i, t in zip(inexact, c_dot_in)]
        a_dot_x = jvp(matvec_of, [c[i] for i in inexact], dots)[1]
        rhs = [r - d for r, d in zip(rhs, a_dot_x)]
    x_dot = bind(linear_solve_p, *rhs, *c, spec=spec)[:n_b]
    return tuple(x_dot) + (None,) * (len(out) - n_b)


def _linear_vjp(cts, *primals, out, spec):
    transposed = spec.transposed()
    if transposed is None:
        raise TypeError(
            "transpose_solve required for backwards mode automatic differentiation of "
            "custom_linear_solve"
        )
    n_b = spec.n_b
    c = primals[n_b:]
    x = out[:n_b]
    ct_x = [_zeros(v) if g is None else g for v, g in zip(x, cts[:n_b])]
    ct_b = bind(linear_solve_p, *ct_x, *c, spec=transposed)[:n_b]
    inexact = _inexact_positions(c[: spec.n_c])
    ct_c: list = [None] * len(c)
    if inexact:

        def matvec_of(*cs):
            full = list(c)
            for i, ci in zip(inexact, cs):
                full[i] = ci
            return tuple(spec.matvec(list(x), full))

        _, pull = pullback(matvec_of, [c[i] for i in inexact], False)
        for i, g in zip(inexact, pull(tuple(-v for v in ct_b))):
            ct_c[i] = g
    return tuple(ct_b) + tuple(ct_c)


def _linear_batch(values, dims, *, spec):
    size = _batch_size(values, dims)
    values, axes = _to_front(values, dims)
    n_b = spec.n_b
    b = _broadcast_front(values[:n_b], axes[:n_b], size)
    c_axes = axes[n_b:]
    outs = bind(linear_solve_p, *b, *values[n_b:], spec=spec.batched((0,) * n_b, c_axes))
    return _broadcast_front(outs, (0,) * len(outs), size), (0,) * len(outs)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.sparsity = DENSE
linear_solve_p.impl = _linear_impl
linear_solve_p.abstract_eval = _linear_abstract_eval
linear_solve_p.jvp = _linear_jvp
linear_solve_p.vjp = _linear_vjp
linear_solve_p.batch = _linear_batch


def _flat_solver(solver, b_tree, has_aux: bool, what: str, store: list):
    """`solver(matvec, b)` as a function of a flat matvec and flat leaves (b's, matvec's
    consts)."""
    if solver is None:
        return None

    def run(matvec, b, c):
        b = [stop_gradient(v) for v in b]
        c = [stop_gradient(v) for v in c]

        def mv(x):
            return tree_unflatten(b_tree, matvec(tree_flatten(x)[0], c))

        out = solver(mv, tree_unflatten(b_tree, b))
        x, aux, store[0] = _split_output(out, b_tree, has_aux, what, "b")
        x, aux = _as_constants(x, b + c), _as_constants(aux, b + c)
        shapes, want = [shape_of(v) for v in x], [shape_of(v) for v in b]
        if shapes != want:
            raise ValueError(f"{what}() output shapes must match b, got {shapes} and {want}")
        return [anp.astype(v, dtype_of(w)) for v, w in zip(x, b)] + aux

    return run


def _linear_solver_closures(spec: _LinearSpec, operands: list, user: tuple) -> list:
    """The traced values the solvers (`user`: the user's solve and transpose_solve) close
    over (`_solver_closure`), each solver made to read its own among the operands after
    matvec's consts."""
    n_b, n_c = spec.n_b, spec.n_c
    solve, tsolve = spec.solve, spec.transpose_solve
    run, captured = _solver_closure(
        lambda *o: solve(spec.matvec, list(o[:n_b]), list(o[n_b:])), user[0], operands, "solve"
    )
    n_s = len(captured)
    if n_s:
        spec.solve = lambda matvec, b, c: run(*b, *c[:n_c], *c[n_c : n_c + n_s])
    if tsolve is None:
        return captured
    run_t, captured_t = _solver_closure(
        lambda *o: tsolve(spec.vecmat, list(o[:n_b]), list(o[n_b:])),
        user[1],
        operands,
        "transpose_solve",
    )
    if captured_t:
        spec.transpose_solve = lambda vecmat, b, c: run_t(*b, *c[:n_c], *c[n_c + n_s :])
    return captured + captured_t


def custom_linear_solve(
    matvec: Callable,
    b,
    solve: Callable,
    transpose_solve: Callable | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
):
    """The solution `x` of `matvec(x) = b` found by `solve`, differentiated implicitly
    (JAX's `jax.lax.custom_linear_solve`).

    The derivatives assume `matvec(x) == b` (not checked), never `solve`'s iterations:
    forward mode solves `A ẋ = ḃ - Ȧ x` with `solve`; reverse mode solves the transposed
    system with `transpose_solve` (whose matvec, the transpose of `matvec`, is derived by
    autodiff). vmap and jit apply.

    Arguments:
        matvec: the linear map `A` (a function of a pytree shaped as `b`, returning the same
            structure); it is staged, and the values it closes over get derivatives.
        b: the right-hand side: a pytree of floating-point arrays.
        solve: `solve(matvec, b) -> x` (or `(x, aux)` with `has_aux`); never
            differentiated (it runs as custom_root's `solve` does; values it closes over
            are constants to it).
        transpose_solve: `transpose_solve(vecmat, b) -> x` for the transposed system;
            reverse mode needs it, unless `symmetric` (then `solve` serves), and raises a
            TypeError without it, as JAX does.
        symmetric: `A` is symmetric (`vecmat` is `matvec`).
        has_aux: `solve` and `transpose_solve` return `(x, aux)`; aux gets no derivative.

    Returns:
        `x` (or `(x, aux)`).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
        >>> def solve(matvec, b):  # (a dense solve: A's columns from matvec)
        ...     return anp.linalg.solve(ad.jacfwd(matvec)(b), b)
        >>> f = lambda b: ad.custom_linear_solve(lambda x: a @ x, b, solve, symmetric=True)
        >>> np.allclose(f(np.array([1.0, 2.0])), np.linalg.solve(a, [1.0, 2.0]))
        True
        >>> np.allclose(ad.jacrev(f)(np.ones(2)), np.linalg.inv(a))
        True
    """
    if not (callable(matvec) and callable(solve)):
        raise TypeError("custom_linear_solve's matvec and solve must be callable")
    if transpose_solve is not None and not callable(transpose_solve):
        raise TypeError(f"transpose_solve must be callable or None, got {transpose_solve!r}")
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    leaves, b_tree = tree_flatten(b)
    _check_leaves(leaves, "custom_linear_solve's b")
    graph, consts = _closure_converted(matvec, leaves, b_tree, "matvec", "b")

    n_c = len(consts)

    def flat_matvec(x, c):
        return eval_graph(graph, *x, *c[:n_c])

    store: list = [None]  # (aux's structure, set by a solver's first run)
    spec = _LinearSpec(
        flat_matvec,
        _flat_solver(solve, b_tree, has_aux, "solve", store),
        _flat_solver(transpose_solve, b_tree, has_aux, "transpose_solve", store),
        symmetric,
        len(leaves),
        n_c,
        has_aux,
    )
    captured = _linear_solver_closures(spec, leaves + consts, (solve, transpose_solve))
    outs = bind(linear_solve_p, *leaves, *consts, *captured, spec=spec)
    x = tree_unflatten(b_tree, list(outs[: len(leaves)]))
    if not has_aux:
        return x
    return x, tree_unflatten(store[0], list(outs[len(leaves) :]))


# ------------------------------------------------------------------------------ fixed_point


def dense_tangent_solve(g: Callable, y):
    """`z` with `g(z) = y` for a linear map `g` of pytrees, by a dense linear solve of its
    Jacobian (built column by column with vmap): a `tangent_solve` for `custom_root` with
    small and moderate systems."""
    leaves, tree = tree_flatten(y)
    sizes = [int(np.prod(shape_of(v))) for v in leaves]
    shapes = [shape_of(v) for v in leaves]
    n = sum(sizes)
    dtype = np.result_type(*[dtype_of(v) for v in leaves])

    def unravel(vec):
        parts, start = [], 0
        for size, shape in zip(sizes, shapes):
            parts.append(anp.reshape(vec[start : start + size], shape))
            start += size
        return tree_unflatten(tree, parts)

    def ravel(t):
        return anp.concatenate([anp.reshape(v, (-1,)) for v in tree_flatten(t)[0]])

    rows = vmap(lambda e: ravel(g(unravel(e))))(np.eye(n, dtype=dtype))  # (row i: g(e_i))
    return unravel(anp.linalg.solve(anp.transpose(rows), ravel(y)))


class _Iteration:
    """fixed_point's solver: `x = f(x)` until the step is within the tolerance."""

    __slots__ = ("tol", "max_iter", "name")

    def __init__(self, tol: float, max_iter: int, name: str):
        self.tol = tol
        self.max_iter = max_iter
        self.name = name

    def __call__(self, residual: Callable, x0):
        def step(x):
            return tree_map(lambda a, r: a + r, x, residual(x))

        def size(x, y):
            diffs = [
                anp.max(anp.abs(a - b)) for a, b in zip(tree_flatten(x)[0], tree_flatten(y)[0])
            ]
            scale = [anp.max(anp.abs(a)) for a in tree_flatten(y)[0]]
            return anp.max(anp.stack(diffs)), anp.max(anp.stack(scale))

        def going(carry):
            i, _, err, scale = carry
            return anp.logical_and(i < self.max_iter, err > self.tol * anp.maximum(scale, 1.0))

        def body(carry):
            i, x, _, _ = carry
            new = step(x)
            err, scale = size(x, new)
            return i + 1, new, err, scale

        dtype = np.result_type(*[dtype_of(v) for v in tree_flatten(x0)[0]]).type
        i, x, err, scale = while_loop(going, body, (0, x0, dtype(np.inf), dtype(1.0)))
        self._check(i, err, scale)
        return x

    def _check(self, i, err, scale) -> None:
        if any(type(v) in TENSOR_TYPES for v in (i, err, scale)):
            return  # (traced, under vmap: no one value to check)
        if not err <= self.tol * max(float(scale), 1.0):
            raise RuntimeError(
                f"fixed_point of {self.name} did not converge in max_iter={self.max_iter} "
                f"iterations: the last step was {float(err):.3g} (tol={self.tol:g}, relative "
                "to max(1, |x|)). Raise max_iter, start closer, or check that the map is a "
                "contraction near its fixed point."
            )


def fixed_point(f: Callable, x0, *params, tol: float | None = None, max_iter: int = 1000):
    """The fixed point `x* = f(x*, *params)` reached by iterating `f` from `x0`,
    differentiable in `params` by the implicit function theorem (not through the
    iterations).

    The iteration is a `while_loop` (so it stages under jit and batches under vmap); the
    derivative solves `(I - ∂f/∂x) ẋ = ∂f/∂θ θ̇` at the fixed point with a dense linear
    solve (suited to small and moderate sizes). `x0` gets no derivative.

    Arguments:
        f: `f(x, *params)`, returning a pytree shaped as `x`; a contraction near `x*`.
        x0: the starting point (a pytree of floating-point arrays).
        params: the parameters, differentiated through the fixed point.
        tol: the iteration stops once the largest change of an element is at most
            `tol * max(1, max|x|)` (the error is then about `tol * q / (1 - q)` for a
            contraction of rate q). None: 1e-10 in double precision, 1e-5 in single.
        max_iter: the most iterations. Not converging within them raises RuntimeError
            (values are checked wherever they are concrete: eagerly, under grad and jvp,
            and when a jitted function runs; under vmap the members are not checked).

    Returns:
        `x*`, shaped as `x0`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> x = ad.fixed_point(lambda x, a: anp.cos(a * x), 0.5, 1.0)
        >>> round(float(x), 8)
        0.73908513
        >>> d = ad.grad(lambda a: ad.fixed_point(lambda x, a: anp.cos(a * x), 0.5, a))(1.0)
        >>> round(float(d), 8)  # -x sin(x) / (1 + sin(x))
        -0.29747434
    """
    if not callable(f):
        raise TypeError(f"fixed_point's f must be callable, got {f!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"fixed_point's max_iter must be a positive int, got {max_iter!r}")
    if tol is None:
        dtypes = [dtype_of(v) for v in tree_flatten(x0)[0]]
        double = any(d in (np.float64, np.complex128) for d in dtypes)
        tol = 1e-10 if double or not dtypes else 1e-5
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not tol > 0:
        raise ValueError(f"fixed_point's tol must be a positive number, got {tol!r}")
    name = _name(f, "f")

    def residual(x):
        return tree_map(lambda a, b: a - b, f(x, *params), x)

    residual.__name__ = name
    solver = _Iteration(float(tol), int(max_iter), name)
    return custom_root(residual, x0, solver, dense_tangent_solve)
