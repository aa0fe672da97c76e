"""autodiff.scipy.optimize: SciPy's `root`, `minimize` (unconstrained) and `fixed_point`,
differentiable in `args` by the implicit function theorem.

SciPy solves, on concrete values (the same calls, so the same values and results as
scipy.optimize's); `custom_root` then attaches the solution's derivative with respect to
`args` from the equation it satisfies (`fun(x, *args) = 0` for root, the gradient's zero for
minimize, `func(x, *args) = x` for fixed_point), never from SciPy's iterations. Under jit or
vmap, where values are unknown, SciPy cannot run: these raise a TypeError there (write the
solver with `autodiff.custom_root` and structured control flow instead). This module loads
SciPy, so it is loaded on first use (`autodiff.scipy.optimize`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.optimize as _scipy
from scipy.optimize import OptimizeResult

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of
from autodiff.core.errors import TracerConversionError
from autodiff.core.pytree import tree_flatten, tree_map
from autodiff.core.tensor import Tensor
from autodiff.implicit import custom_root, dense_tangent_solve
from autodiff.ops.structural import shape_of
from autodiff.reverse.transforms import grad

__all__ = ["OptimizeResult", "fixed_point", "minimize", "root"]

ROOT_METHODS = (
    "hybr",
    "lm",
    "broyden1",
    "broyden2",
    "anderson",
    "linearmixing",
    "diagbroyden",
    "excitingmixing",
    "krylov",
    "df-sane",
)
# SciPy's methods that solve unconstrained problems (bounds and constraints are refused).
MINIMIZE_METHODS = (
    "nelder-mead",
    "powell",
    "cg",
    "bfgs",
    "newton-cg",
    "l-bfgs-b",
    "tnc",
    "cobyla",
    "cobyqa",
    "slsqp",
    "trust-constr",
    "dogleg",
    "trust-ncg",
    "trust-exact",
    "trust-krylov",
)


def _concrete(value, fname: str, what: str):
    """`value` (a pytree) as NumPy values: a tracer's concrete primal."""

    def leaf(x):
        if not isinstance(x, Tensor):
            return x
        try:
            return x.primal()
        except TracerConversionError as e:
            raise TypeError(
                f"autodiff.scipy.optimize.{fname} runs SciPy on concrete values, but its {what} "
                "is traced here (under jit or vmap, values are unknown). Call it outside jit "
                "and vmap, or write the solver with autodiff.custom_root and structured "
                "control flow (autodiff.while_loop)."
            ) from e

    return tree_map(leaf, value)


def _args_tuple(args) -> tuple:
    return args if isinstance(args, tuple) else (args,)


def _method(method, methods: tuple, fname: str) -> str:
    if not isinstance(method, str):
        raise TypeError(
            f"autodiff.scipy.optimize.{fname}'s method must be one of SciPy's names "
            f"{methods}, got {method!r} (a custom solver has no implicit derivative here: use "
            "autodiff.custom_root)"
        )
    if method.lower() not in methods:
        raise ValueError(f"Unknown solver {method!r} for {fname}: one of {methods}")
    return method


def _traced(*values) -> bool:
    return any(isinstance(x, Tensor) for x in tree_flatten(values)[0])


def _implicit(root_fun: Callable, x_star, fname: str, result) -> object:
    """`x_star` (SciPy's solution) with the derivative of the root of `root_fun` (a function
    of x closing over the traced arguments) attached."""
    if not result.get("success", True):
        warnings.warn(
            f"autodiff.scipy.optimize.{fname} did not converge ({result.get('message')}): "
            "the derivative assumes the returned x solves the problem.",
            RuntimeWarning,
            stacklevel=3,
        )
    return custom_root(root_fun, x_star, lambda f, x: x, dense_tangent_solve)


def _value_part(out, jac) -> object:
    return out[0] if jac is True else out


def root(
    fun: Callable,
    x0,
    args=(),
    method: str = "hybr",
    jac=None,
    tol: float | None = None,
    callback: Callable | None = None,
    options: dict | None = None,
) -> OptimizeResult:
    """A root of `fun(x, *args)` (SciPy's `scipy.optimize.root`), differentiable in `args`.

    SciPy solves (with its own defaults: `jac=None` is its finite differences); the
    returned `.x` carries the implicit derivative `dx/dargs = -(∂fun/∂x)⁻¹ ∂fun/∂args` at
    the root, with `∂fun/∂x` by autodiff (a dense Jacobian). `fun` must be written with
    autodiff's (or NumPy's) functions so that it differentiates. Not under jit or vmap.

    Arguments:
        fun, x0, args, method, jac, tol, callback, options: as SciPy's (`jac=True`: `fun`
            returns `(value, jacobian)`).

    Returns:
        SciPy's `OptimizeResult`, whose `.x` is differentiable in `args`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> from autodiff.scipy.optimize import root
        >>> sqrt = lambda a: root(lambda x, a: x ** 2 - a, np.ones(1), args=(a,)).x[0]
        >>> round(float(sqrt(2.0)), 10), round(float(ad.grad(sqrt)(2.0)), 10)
        (1.4142135624, 0.3535533906)
    """
    _method(method, ROOT_METHODS, "root")
    args = _args_tuple(args)
    args_np = _concrete(args, "root", "args")
    result = _scipy.root(
        fun,
        _concrete(x0, "root", "x0"),
        args=args_np,
        method=method,
        jac=jac,
        tol=tol,
        callback=callback,
        options=options,
    )
    if _traced(args):

        def equation(x):
            return anp.reshape(_value_part(fun(x, *args), jac), shape_of(x))

        result.x = _implicit(equation, result.x, "root", result)
    return result


def minimize(
    fun: Callable,
    x0,
    args=(),
    method: str = "BFGS",
    jac=None,
    hess=None,
    hessp=None,
    bounds=None,
    constraints=(),
    tol: float | None = None,
    callback: Callable | None = None,
    options: dict | None = None,
) -> OptimizeResult:
    """A minimum of `fun(x, *args)` (SciPy's `scipy.optimize.minimize`), for unconstrained
    problems, differentiable in `args`.

    SciPy minimizes (with its own defaults: `jac=None` is its finite differences; pass
    `jac=autodiff.grad(fun)` for exact gradients); `.x` then carries the implicit
    derivative of the gradient's root, `dx/dargs = -H⁻¹ ∂²fun/∂x∂args` (the Hessian `H` by
    autodiff, dense), and `.fun` is `fun(x, *args)` recomputed from it (its derivative in
    `args` is `∂fun/∂args`, the envelope theorem). `bounds` and `constraints` are refused: a
    constrained optimum has another implicit equation. Not under jit or vmap.

    Arguments:
        fun, x0, args, method, jac, hess, hessp, tol, callback, options: as SciPy's.

    Returns:
        SciPy's `OptimizeResult`, whose `.x` and `.fun` are differentiable in `args`.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> from autodiff.scipy.optimize import minimize
        >>> fun = lambda x, a: anp.sum((x - a) ** 2) + anp.sum(x ** 4)
        >>> best = lambda a: minimize(fun, np.zeros(2), args=(a,), jac=ad.grad(fun)).x
        >>> a = np.array([1.0, 2.0])
        >>> x = best(a)  # (where 2 (x - a) + 4 x^3 = 0: dx/da = 1 / (1 + 6 x^2))
        >>> np.allclose(ad.jacrev(best)(a), np.diag(1 / (1 + 6 * x ** 2)), atol=1e-6)
        True
    """
    _method(method, MINIMIZE_METHODS, "minimize")
    if bounds is not None or (constraints is not None and len(constraints) > 0):
        raise ValueError(
            "autodiff.scipy.optimize.minimize handles unconstrained problems only: bounds "
            "and constraints are not supported (the implicit derivative here is that of the "
            "gradient's root)."
        )
    args = _args_tuple(args)
    result = _scipy.minimize(
        fun,
        _concrete(x0, "minimize", "x0"),
        args=_concrete(args, "minimize", "args"),
        method=method,
        jac=jac,
        hess=hess,
        hessp=hessp,
        tol=tol,
        callback=callback,
        options=options,
    )
    if _traced(args):

        def objective(x, *a):
            return _value_part(fun(x, *a), jac)

        def gradient(x):
            return grad(objective)(x, *args)

        x = _implicit(gradient, result.x, "minimize", result)
        result.x = x
        result.fun = objective(x, *args)
    return result


def fixed_point(
    func: Callable,
    x0,
    args=(),
    xtol: float = 1e-08,
    maxiter: int = 500,
    method: str = "del2",
):
    """The fixed point `x = func(x, *args)` (SciPy's `scipy.optimize.fixed_point`, which
    raises RuntimeError when it does not converge), differentiable in `args`.

    SciPy iterates (Steffensen's `del2`, or plain `iteration`); the result carries the
    implicit derivative `dx/dargs = (I - ∂func/∂x)⁻¹ ∂func/∂args` at the fixed point (a dense
    solve). `autodiff.fixed_point` is the same idea under jit and vmap. Not under jit or vmap.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> from autodiff.scipy.optimize import fixed_point
        >>> x = lambda a: fixed_point(lambda x, a: anp.cos(a * x), 0.5, args=(a,))
        >>> round(float(x(1.0)), 8), round(float(ad.grad(x)(1.0)), 8)
        (0.73908513, -0.29747434)
    """
    if method not in ("del2", "iteration"):
        raise ValueError(f"fixed_point's method must be 'del2' or 'iteration', got {method!r}")
    args = _args_tuple(args)
    x_star = _scipy.fixed_point(
        func,
        _concrete(x0, "fixed_point", "x0"),
        args=_concrete(args, "fixed_point", "args"),
        xtol=xtol,
        maxiter=maxiter,
        method=method,
    )
    if not _traced(args):
        return x_star

    def equation(x):
        return anp.reshape(func(x, *args), shape_of(x)) - x

    x_star = np.asarray(x_star, np.result_type(dtype_of(x_star), np.float64))
    return custom_root(equation, x_star, lambda f, x: x, dense_tangent_solve)
