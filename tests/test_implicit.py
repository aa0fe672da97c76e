"""Implicit differentiation: custom_root, custom_linear_solve, fixed_point, autodiff.scipy.optimize.

Oracles: JAX's lax.custom_root / custom_linear_solve (jax 0.10, float64), central finite
differences, closed forms, and the derivative through a solver unrolled to convergence.
"""

import numpy as np
import pytest
import scipy.optimize as so

import autodiff as ad
import autodiff.numpy as anp
from autodiff.scipy import optimize as ao

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.3, 0.1, 2.0]])
B = np.array([1.0, 2.0, 3.0])


def fd(f, x, h=1e-6):
    """Central differences of f (array out) in x (array in): shape out + in."""
    x = np.asarray(x, float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(x)) + x.shape)


# ------------------------------------------------------------------------------ custom_root


def newton(f, x):
    """A scalar Newton solver with Python control flow on values (runs on plain values)."""
    for _ in range(50):
        step = f(x) / ad.grad(f)(x)
        x = x - step
        if abs(float(step)) < 1e-15:
            break
    return x


def newton_unrolled(f, x, n=40):
    """Newton with a fixed iteration count, differentiated through (the unrolled oracle)."""
    for _ in range(n):
        x = x - f(x) / ad.grad(f)(x)
    return x


def scalar_solve(g, y):
    return y / g(1.0)


def cube_root(a):
    return ad.custom_root(lambda x: x**3 - a, 1.0, newton, scalar_solve)


def test_custom_root_scalar_against_closed_form_and_fd():
    a = 5.0
    assert float(cube_root(a)) == pytest.approx(a ** (1 / 3), rel=1e-14)
    want = (1 / 3) * a ** (-2 / 3)
    assert float(ad.grad(cube_root)(a)) == pytest.approx(want, rel=1e-12)
    assert float(ad.jvp(cube_root, (a,), (2.0,))[1]) == pytest.approx(2 * want, rel=1e-12)
    assert float(ad.grad(cube_root)(a)) == pytest.approx(float(fd(cube_root, a)), rel=1e-7)
    second = (1 / 3) * (-2 / 3) * a ** (-5 / 3)
    assert float(ad.grad(ad.grad(cube_root))(a)) == pytest.approx(second, rel=1e-10)
    assert float(ad.jacfwd(ad.jacrev(cube_root))(a)) == pytest.approx(second, rel=1e-10)


def test_custom_root_matches_jax_and_unrolled():
    def ours(a):
        return ad.custom_root(lambda x: anp.sin(x) + x * a - 1.0, 0.5, newton, scalar_solve)

    def unrolled(a):
        return newton_unrolled(lambda x: anp.sin(x) + x * a - 1.0, 0.5)

    def jnewton(f, x):
        for _ in range(40):
            x = x - f(x) / jax.grad(f)(x)
        return x

    def theirs(a):
        return jax.lax.custom_root(
            lambda x: jnp.sin(x) + x * a - 1.0, 0.5, jnewton, lambda g, y: y / g(1.0)
        )

    for a in (0.5, 2.0):
        assert float(ours(a)) == pytest.approx(float(theirs(a)), abs=1e-14)
        assert float(ad.grad(ours)(a)) == pytest.approx(float(jax.grad(theirs)(a)), rel=1e-12)
        assert float(ad.grad(ours)(a)) == pytest.approx(float(ad.grad(unrolled)(a)), rel=1e-12)
        h2 = float(ad.grad(ad.grad(ours))(a))
        assert h2 == pytest.approx(float(jax.grad(jax.grad(theirs))(a)), rel=1e-9)


def vector_newton(f, x):
    for _ in range(30):
        x = x - anp.linalg.solve(ad.jacfwd(f)(x), f(x))
    return x


def dense_solve(g, y):
    return anp.linalg.solve(ad.jacfwd(g)(y), y)


def vector_root(p):
    def f(x):
        return anp.stack([x[0] ** 3 + p[0] * x[1] - 1.0, x[1] - p[1] * anp.sin(x[0]) - p[0]])

    return ad.custom_root(f, np.ones(2), vector_newton, dense_solve)


P = np.array([0.3, 0.2])


def test_custom_root_vector_forward_reverse_fd():
    want = fd(vector_root, P)
    np.testing.assert_allclose(ad.jacrev(vector_root)(P), want, atol=1e-8)
    np.testing.assert_allclose(ad.jacfwd(vector_root)(P), want, atol=1e-8)
    x = vector_root(P)
    assert np.abs(x[0] ** 3 + P[0] * x[1] - 1.0) < 1e-14


def test_custom_root_jit_vmap():
    want = ad.jacrev(vector_root)(P)
    np.testing.assert_allclose(ad.jit(vector_root)(P), vector_root(P), rtol=1e-14)
    np.testing.assert_allclose(ad.jit(ad.jacrev(vector_root))(P), want, rtol=1e-12)
    ps = np.stack([P, 1.5 * P])
    batched = ad.vmap(vector_root)(ps)
    np.testing.assert_allclose(batched[1], vector_root(ps[1]), rtol=1e-13)
    jacs = ad.vmap(ad.jacrev(vector_root))(ps)
    np.testing.assert_allclose(jacs[1], ad.jacrev(vector_root)(ps[1]), rtol=1e-12)
    np.testing.assert_allclose(ad.jit(ad.vmap(ad.jacfwd(vector_root)))(ps)[0], want, rtol=1e-12)


def test_custom_root_while_loop_solver_under_jit():
    def solve(f, x):  # (structured control flow: stages under jit, batches under vmap)
        def body(c):
            i, x = c
            return i + 1, x - f(x) / ad.grad(f)(x)

        return ad.while_loop(lambda c: c[0] < 30, body, (0, x))[1]

    def root(a):
        return ad.custom_root(lambda x: x**2 - a, 1.0, solve, scalar_solve)

    assert float(ad.jit(root)(3.0)) == pytest.approx(np.sqrt(3.0), rel=1e-14)
    assert float(ad.jit(ad.grad(root))(3.0)) == pytest.approx(0.5 / np.sqrt(3.0), rel=1e-12)
    got = ad.vmap(ad.grad(root))(np.array([1.0, 4.0]))
    np.testing.assert_allclose(got, [0.5, 0.25], rtol=1e-12)


def test_custom_root_has_aux_and_pytrees():
    def solve(f, x):
        for _ in range(40):
            x = {"u": x["u"] - f(x)["u"] / (3 * x["u"] ** 2), "v": x["v"] - f(x)["v"]}
        return x, {"iterations": np.int64(40), "residual": f(x)["u"]}

    def tangent_solve(g, y):
        return ad.implicit.dense_tangent_solve(g, y)

    def fun(a):
        f = lambda x: {"u": x["u"] ** 3 - a, "v": x["v"] - 2.0 * a}
        guess = {"u": np.ones(2), "v": np.zeros(())}
        x, aux = ad.custom_root(f, guess, solve, tangent_solve, has_aux=True)
        return x["u"].sum() + x["v"], aux

    value, aux = fun(8.0)
    assert float(value) == pytest.approx(2 * 2.0 + 16.0, rel=1e-13)
    assert int(aux["iterations"]) == 40 and abs(float(aux["residual"][0])) < 1e-12
    g, aux2 = ad.grad(fun, has_aux=True)(8.0)
    assert float(g) == pytest.approx(2 * (1 / 3) * 8.0 ** (-2 / 3) + 2.0, rel=1e-12)
    assert int(aux2["iterations"]) == 40
    t = ad.jvp(lambda a: fun(a)[0], (8.0,), (1.0,))[1]
    assert float(t) == pytest.approx(float(g), rel=1e-12)
    jitted, _ = ad.jit(fun)(8.0)
    assert float(jitted) == pytest.approx(float(value), rel=1e-14)


def test_custom_root_solver_runs_under_stop_gradient():
    """A solver no transform could differentiate (SciPy on plain values) is never asked to."""

    def brentq(f, x0):
        return np.float64(so.brentq(lambda x: float(f(x)), 0.0, 10.0, xtol=1e-15))

    def root(a):
        return ad.custom_root(lambda x: x**2 - a, 1.0, brentq, scalar_solve)

    assert float(ad.grad(root)(2.0)) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-12)
    assert float(ad.jvp(root, (2.0,), (1.0,))[1]) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-12)
    # the initial guess gets no derivative
    assert (
        float(ad.grad(lambda g: ad.custom_root(lambda x: x**2 - 2.0, g, brentq, scalar_solve))(1.0))
        == 0.0
    )


def test_solvers_closing_over_traced_values():
    """A solver may close over values of an enclosing transform (a preconditioner, a
    starting scale): they are constants to it, as in JAX, under every transform."""

    def root(a):
        return ad.custom_root(
            lambda x: x**2 - a, 1.0, lambda f, x: anp.sqrt(a), lambda g, y: y / g(1.0)
        )

    grads = 0.5 / np.sqrt(np.array([4.0, 9.0]))
    assert float(ad.grad(root)(4.0)) == pytest.approx(0.25, rel=1e-14)
    assert float(ad.jit(ad.grad(root))(4.0)) == pytest.approx(0.25, rel=1e-14)
    np.testing.assert_allclose(ad.vmap(root)(np.array([4.0, 9.0])), [2.0, 3.0], rtol=1e-14)
    np.testing.assert_allclose(ad.vmap(ad.grad(root))(np.array([4.0, 9.0])), grads, rtol=1e-14)

    def scaled(s):
        diag = s * np.array([1.0, 2.0, 4.0])  # (the solver divides by it: a Jacobi solve)
        return ad.custom_linear_solve(
            lambda x: diag * x, B, lambda mv, b: b / diag, lambda vm, b: b / diag
        )

    def loss(s):
        return anp.sum(scaled(s))

    want = -np.sum(B / np.array([1.0, 2.0, 4.0])) / 4.0
    assert float(ad.grad(loss)(2.0)) == pytest.approx(want, rel=1e-14)
    assert float(ad.jit(ad.grad(loss))(2.0)) == pytest.approx(want, rel=1e-14)
    assert float(ad.jvp(loss, (2.0,), (1.0,))[1]) == pytest.approx(want, rel=1e-14)
    assert float(ad.grad(ad.grad(loss))(2.0)) == pytest.approx(-2 * want / 2.0, rel=1e-13)
    got = ad.vmap(ad.grad(loss))(np.array([2.0, 4.0]))
    np.testing.assert_allclose(got, [want, want / 4.0], rtol=1e-14)


def test_tangent_solve_closing_over_traced_values():
    """tangent_solve may divide by a derivative at the parameters (the common scalar form):
    it is staged, and the values it closes over are operands of the root, so every order
    of every transform is exact (sqrt(a) as the root of x^2 - a)."""

    def newton(g, x):
        for _ in range(40):
            x = x - g(x) / (2.0 * x)
        return x

    def root(a):
        return ad.custom_root(
            lambda x: x * x - a, 1.0 + 0.0 * a, newton, lambda g, y: y / (2.0 * anp.sqrt(a))
        )

    a = np.array([2.0, 3.0, 5.0])
    first, second, third = 0.5 / np.sqrt(a), -0.25 * a**-1.5, 0.375 * a**-2.5
    assert float(ad.jvp(root, (2.0,), (1.0,))[1]) == pytest.approx(first[0], rel=1e-13)
    assert float(ad.grad(root)(3.0)) == pytest.approx(first[1], rel=1e-13)
    assert float(ad.grad(ad.grad(root))(5.0)) == pytest.approx(second[2], rel=1e-12)
    assert float(ad.jit(ad.grad(root))(3.0)) == pytest.approx(first[1], rel=1e-13)
    np.testing.assert_allclose(ad.vmap(ad.grad(root))(a), first, rtol=1e-13)
    np.testing.assert_allclose(ad.jacrev(ad.vmap(root))(a), np.diag(first), rtol=1e-13)
    _, series = ad.jet(root, (2.0,), ([1.0, 0.0, 0.0],))
    np.testing.assert_allclose(series, [first[0], second[0], third[0]], rtol=1e-12)


def test_custom_root_errors():
    with pytest.raises(TypeError, match="f\\(\\) output pytree structure must match"):
        ad.custom_root(lambda x: (x, x), 1.0, newton, scalar_solve)
    with pytest.raises(ValueError, match="output shapes must match initial_guess"):
        ad.custom_root(lambda x: anp.sum(x), np.ones(2), newton, scalar_solve)
    with pytest.raises(ValueError, match="solve\\(\\) output shapes"):
        ad.custom_root(lambda x: x - 1.0, np.ones(2), lambda f, x: np.ones(3), scalar_solve)
    with pytest.raises(ValueError, match="has_aux was set to True"):
        ad.custom_root(lambda x: x - 1.0, 1.0, lambda f, x: x, scalar_solve, has_aux=True)
    with pytest.raises(TypeError, match="floating-point"):
        ad.custom_root(lambda x: x - 1, 1, lambda f, x: x, scalar_solve)
    with pytest.raises(TypeError, match="callable"):
        ad.custom_root(lambda x: x, 1.0, None, scalar_solve)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ad.custom_root(lambda x: x, 1.0, newton, scalar_solve, tol=1e-3)
    bad = lambda a: ad.custom_root(lambda x: x**2 - a, 1.0, newton, lambda g, y: (y, y))
    with pytest.raises(TypeError, match="tangent_solve\\(\\) output pytree structure"):
        ad.grad(bad)(2.0)


# ---------------------------------------------------------------------- custom_linear_solve


def solve_dense(matvec, b):
    return anp.linalg.solve(ad.jacfwd(matvec)(b), b)


def jsolve_dense(matvec, b):
    return jnp.linalg.solve(jax.jacfwd(matvec)(b), b)


def lin(a, b):
    return ad.custom_linear_solve(lambda x: a @ x, b, solve_dense, solve_dense)


def jlin(a, b):
    return jax.lax.custom_linear_solve(lambda x: a @ x, b, jsolve_dense, jsolve_dense)


def test_custom_linear_solve_matches_jax():
    np.testing.assert_allclose(lin(A, B), np.linalg.solve(A, B), rtol=1e-14)
    for jac, jjac in ((ad.jacrev, jax.jacrev), (ad.jacfwd, jax.jacfwd)):
        ours = jac(lin, argnums=(0, 1))(A, B)
        theirs = jjac(jlin, argnums=(0, 1))(A, B)
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o, np.asarray(t), atol=1e-14)
    loss = lambda a, b: anp.sum(lin(a, b) ** 2)
    jloss = lambda a, b: jnp.sum(jlin(a, b) ** 2)
    np.testing.assert_allclose(
        ad.hessian(loss)(A, B), np.asarray(jax.hessian(jloss)(A, B)), atol=1e-13
    )
    np.testing.assert_allclose(
        ad.jacrev(lambda a: lin(a, B))(A), fd(lambda a: lin(a, B), A), atol=1e-8
    )


def test_custom_linear_solve_jit_vmap():
    loss = lambda a, b: anp.sum(lin(a, b) ** 2)
    jloss = lambda a, b: jnp.sum(jlin(a, b) ** 2)
    want = jax.grad(jloss, argnums=(0, 1))(A, B)
    got = ad.jit(ad.grad(loss, argnums=(0, 1)))(A, B)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), atol=1e-14)
    As = np.stack([A, A + np.eye(3)])
    Bs = np.stack([B, 2 * B])
    for axes in ((0, None), (None, 0), (0, 0)):
        ours = ad.vmap(ad.grad(loss, argnums=(0, 1)), in_axes=axes)(
            As if axes[0] == 0 else A, Bs if axes[1] == 0 else B
        )
        theirs = jax.vmap(jax.grad(jloss, argnums=(0, 1)), in_axes=axes)(
            As if axes[0] == 0 else A, Bs if axes[1] == 0 else B
        )
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o, np.asarray(t), atol=1e-13)
    np.testing.assert_allclose(
        ad.jit(ad.vmap(lin))(As, Bs)[1], np.linalg.solve(As[1], Bs[1]), rtol=1e-13
    )


def test_custom_linear_solve_symmetric_and_no_transpose_solve():
    s = A + A.T
    sym = lambda a, b: ad.custom_linear_solve(lambda x: a @ x, b, solve_dense, symmetric=True)
    jsym = lambda a, b: jax.lax.custom_linear_solve(
        lambda x: a @ x, b, jsolve_dense, symmetric=True
    )
    for k in (0, 1):
        np.testing.assert_allclose(
            ad.jacrev(sym, argnums=k)(s, B),
            np.asarray(jax.jacrev(jsym, argnums=k)(s, B)),
            atol=1e-14,
        )
    one_way = lambda a, b: ad.custom_linear_solve(lambda x: a @ x, b, solve_dense)
    jone_way = lambda a, b: jax.lax.custom_linear_solve(lambda x: a @ x, b, jsolve_dense)
    # forward mode needs only solve ...
    t = ad.jvp(lambda b: one_way(A, b), (B,), (np.ones(3),))[1]
    np.testing.assert_allclose(
        t, jax.jvp(lambda b: jone_way(A, b), (B,), (np.ones(3),))[1], atol=1e-14
    )
    # ... reverse mode raises, as JAX does
    with pytest.raises(TypeError, match="transpose_solve required"):
        ad.grad(lambda b: anp.sum(one_way(A, b)))(B)
    with pytest.raises(TypeError, match="transpose_solve required"):
        jax.grad(lambda b: jnp.sum(jone_way(A, b)))(B)


def test_custom_linear_solve_pytrees_and_aux():
    """A block-diagonal system on a (vector, scalar) pair; solvers returning diagnostics."""

    def matvec(x):
        return (A @ x[0], 3.0 * x[1])

    def solve(mv, b):
        return (anp.linalg.solve(A, b[0]), b[1] / 3.0), {"info": np.int32(0)}

    def tsolve(vm, b):
        return (anp.linalg.solve(A.T, b[0]), b[1] / 3.0), {"info": np.int32(1)}

    def f(b0, b1):
        x, aux = ad.custom_linear_solve(matvec, (b0, b1), solve, tsolve, has_aux=True)
        return anp.sum(x[0] * np.arange(3.0)) + x[1] * 2.0, aux

    value, aux = f(B, 6.0)
    assert float(value) == pytest.approx(np.linalg.solve(A, B) @ np.arange(3.0) + 4.0, rel=1e-14)
    assert int(aux["info"]) == 0
    (g0, g1), _ = ad.grad(f, argnums=(0, 1), has_aux=True)(B, 6.0)
    np.testing.assert_allclose(g0, np.linalg.solve(A.T, np.arange(3.0)), rtol=1e-14)
    assert float(g1) == pytest.approx(2.0 / 3.0, rel=1e-14)
    t = ad.jvp(lambda b: f(b, 6.0)[0], (B,), (np.ones(3),))[1]
    assert float(t) == pytest.approx(float(g0 @ np.ones(3)), rel=1e-13)


def test_custom_linear_solve_errors():
    with pytest.raises(TypeError, match="matvec\\(\\) output pytree structure must match b"):
        ad.custom_linear_solve(lambda x: (x,), B, solve_dense)
    with pytest.raises(ValueError, match="matvec\\(\\) output shapes must match b"):
        ad.custom_linear_solve(lambda x: x[:2], B, solve_dense)
    with pytest.raises(ValueError, match="solve\\(\\) output shapes must match b"):
        ad.custom_linear_solve(lambda x: A @ x, B, lambda mv, b: b[:2])
    with pytest.raises(TypeError, match="transpose_solve must be callable"):
        ad.custom_linear_solve(lambda x: A @ x, B, solve_dense, transpose_solve=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ad.custom_linear_solve(lambda x: A @ x, B, solve_dense, tol=1e-6)


# ------------------------------------------------------------------------------ fixed_point


def kepler(e, m=1.0):
    """Kepler's equation E = M + e sin E by fixed-point iteration (a contraction, e < 1)."""
    return ad.fixed_point(lambda x, e: m + e * anp.sin(x), 0.0, e)


def test_fixed_point_value_and_derivatives():
    e = 0.3
    x = float(kepler(e))
    assert x == pytest.approx(1.0 + e * np.sin(x), abs=1e-10)  # (tol=1e-10 on the step)
    want = np.sin(x) / (1 - e * np.cos(x))  # (implicit: dE/de)
    assert float(ad.grad(kepler)(e)) == pytest.approx(want, rel=1e-9)
    assert float(ad.jvp(kepler, (e,), (1.0,))[1]) == pytest.approx(want, rel=1e-9)
    assert float(ad.grad(kepler)(e)) == pytest.approx(float(fd(kepler, e)), rel=1e-6)
    assert float(ad.jit(ad.grad(kepler))(e)) == pytest.approx(want, rel=1e-9)
    es = np.array([0.1, 0.3, 0.6])
    np.testing.assert_allclose(ad.vmap(kepler)(es), [float(kepler(v)) for v in es], rtol=1e-12)
    grads = ad.vmap(ad.grad(kepler))(es)
    np.testing.assert_allclose(grads, [float(ad.grad(kepler)(v)) for v in es], rtol=1e-12)


def test_fixed_point_vector_params_pytree():
    w = np.array([[0.2, 0.1], [-0.1, 0.3]])

    def layer(z, params):  # a deep-equilibrium layer z = tanh(W z + b)
        return anp.tanh(params["w"] @ z + params["b"])

    def fun(params):
        return ad.fixed_point(layer, np.zeros(2), params)

    params = {"w": w, "b": np.array([0.5, -0.4])}
    z = fun(params)
    np.testing.assert_allclose(z, np.tanh(w @ z + params["b"]), atol=1e-12)
    jb = ad.jacrev(fun)(params)["b"]
    np.testing.assert_allclose(jb, fd(lambda b: fun({"w": w, "b": b}), params["b"]), atol=1e-7)
    jw = ad.jacfwd(fun)(params)["w"]
    np.testing.assert_allclose(jw, fd(lambda m: fun({"w": m, "b": params["b"]}), w), atol=1e-7)


def test_fixed_point_non_convergence_and_keywords():
    with pytest.raises(RuntimeError, match="did not converge in max_iter=5"):
        ad.fixed_point(lambda x, a: anp.cos(a * x), 0.5, 1.0, max_iter=5)
    with pytest.raises(RuntimeError, match="did not converge"):
        ad.jit(lambda a: ad.fixed_point(lambda x, a: 2.0 * x + a, 1.0, a))(1.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ad.fixed_point(lambda x: x, 0.5, xtol=1e-3)
    with pytest.raises(ValueError, match="max_iter"):
        ad.fixed_point(lambda x: x, 0.5, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        ad.fixed_point(lambda x: x, 0.5, tol=-1.0)
    x32 = ad.fixed_point(lambda x, a: anp.cos(a * x), np.float32(0.5), np.float32(1.0))
    assert x32.dtype == np.float32 and abs(float(x32) - 0.7390851) < 1e-5


# ---------------------------------------------------------------- autodiff.scipy.optimize


def test_root_equals_scipy_and_differentiates():
    def fun(x, a, c):
        return anp.stack([x[0] + 0.5 * (x[0] - x[1]) ** 3 - a, 0.5 * (x[1] - x[0]) ** 3 + x[1] - c])

    def npfun(x, a, c):
        return np.array([x[0] + 0.5 * (x[0] - x[1]) ** 3 - a, 0.5 * (x[1] - x[0]) ** 3 + x[1] - c])

    for method in ("hybr", "lm", "krylov"):
        ours = ao.root(fun, np.zeros(2), args=(1.0, 0.0), method=method)
        theirs = so.root(npfun, np.zeros(2), args=(1.0, 0.0), method=method)
        np.testing.assert_array_equal(ours.x, theirs.x)
        assert ours.success == theirs.success and ours.nfev == theirs.nfev

    def x_of(p):
        return ao.root(fun, np.zeros(2), args=(p[0], p[1]), tol=1e-13).x

    p = np.array([1.0, 0.0])
    np.testing.assert_allclose(ad.jacrev(x_of)(p), fd(x_of, p), atol=1e-7)
    np.testing.assert_allclose(ad.jacfwd(x_of)(p), fd(x_of, p), atol=1e-7)


def test_minimize_equals_scipy_and_differentiates():
    def rosen(x, a, b):
        return anp.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)

    x0 = np.array([1.3, 0.7, 0.8, 1.9])
    for method in ("BFGS", "Nelder-Mead", "CG", "L-BFGS-B", "Powell"):
        ours = ao.minimize(rosen, x0, args=(1.0, 100.0), method=method)
        theirs = so.minimize(
            lambda x, a, b: np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2),
            x0,
            args=(1.0, 100.0),
            method=method,
        )
        np.testing.assert_array_equal(ours.x, theirs.x)
        assert ours.nit == theirs.nit and ours.fun == theirs.fun


Q = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.5]])


def smooth(x, p):
    return 0.5 * x @ Q @ x - p[0] * anp.sum(anp.sin(x)) + p[1] * anp.sum(x**4) - x[0] * p[0] * p[1]


def argmin(p, method="BFGS"):
    kwargs = {"hess": ad.hessian(smooth)} if method == "trust-exact" else {}
    res = ao.minimize(
        smooth, np.zeros(3), args=(p,), method=method, jac=ad.grad(smooth), tol=1e-10, **kwargs
    )
    return res


def test_minimize_implicit_derivative():
    p = np.array([1.5, 0.2])
    for method in ("BFGS", "trust-exact"):
        x = argmin(p, method).x
        # the implicit function theorem by hand: dx/dp = -H^-1 d(grad)/dp
        h = ad.hessian(smooth)(x, p)
        mixed = ad.jacfwd(ad.grad(smooth), argnums=1)(x, p)
        want = -np.linalg.solve(h, mixed)
        np.testing.assert_allclose(ad.jacrev(lambda p: argmin(p, method).x)(p), want, atol=1e-10)
        np.testing.assert_allclose(ad.jacfwd(lambda p: argmin(p, method).x)(p), want, atol=1e-10)

    def stationary(p):  # (the oracle: the gradient's root by hybr with the exact Hessian)
        grad_of = lambda x: np.asarray(ad.grad(smooth)(x, p))
        hess_of = lambda x: np.asarray(ad.hessian(smooth)(x, p))
        return so.root(grad_of, np.zeros(3), jac=hess_of, tol=1e-15).x

    np.testing.assert_allclose(ad.jacrev(lambda p: argmin(p).x)(p), fd(stationary, p), atol=1e-7)
    # .fun: the envelope theorem, d min/dp = df/dp at the minimum
    x = argmin(p).x
    np.testing.assert_allclose(
        ad.grad(lambda p: argmin(p).fun)(p), ad.grad(smooth, argnums=1)(x, p), atol=1e-10
    )


def test_scipy_fixed_point_equals_scipy_and_differentiates():
    c1, c2 = np.array([10.0, 12.0]), np.array([3.0, 5.0])

    def func(x, c1, c2):
        return anp.sqrt(c1 / (x + c2))

    theirs = so.fixed_point(lambda x, c1, c2: np.sqrt(c1 / (x + c2)), [1.2, 1.3], args=(c1, c2))
    ours = ao.fixed_point(func, [1.2, 1.3], args=(c1, c2))
    np.testing.assert_array_equal(ours, theirs)
    for method in ("del2", "iteration"):
        x_of = lambda c: ao.fixed_point(func, [1.2, 1.3], args=(c, c2), method=method)
        np.testing.assert_allclose(ad.jacrev(x_of)(c1), fd(x_of, c1), atol=1e-7)
    with pytest.raises(RuntimeError, match="Failed to converge"):
        ao.fixed_point(lambda x, a: x + a, 1.0, args=(1.0,), maxiter=10)


def test_scipy_optimize_errors():
    with pytest.raises(TypeError, match="under jit or vmap"):
        ad.jit(lambda a: ao.root(lambda x, a: x**2 - a, 1.0, args=(a,)).x)(2.0)
    with pytest.raises(TypeError, match="under jit or vmap"):
        ad.vmap(
            lambda a: ao.minimize(lambda x, a: anp.sum((x - a) ** 2), np.zeros(1), args=(a,)).x
        )(np.ones(2))
    with pytest.raises(ValueError, match="unconstrained problems only"):
        ao.minimize(lambda x: x @ x, np.ones(2), bounds=[(0, 1)] * 2)
    with pytest.raises(ValueError, match="unconstrained problems only"):
        ao.minimize(
            lambda x: x @ x, np.ones(2), constraints=[{"type": "eq", "fun": lambda x: x[0]}]
        )
    with pytest.raises(ValueError, match="Unknown solver 'newton'"):
        ao.root(lambda x: x, np.ones(2), method="newton")
    with pytest.raises(TypeError, match="method must be one of SciPy's names"):
        ao.minimize(lambda x: x @ x, np.ones(2), method=lambda *a, **k: None)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ao.root(lambda x: x, np.ones(2), adjoint=True)
    with pytest.raises(ValueError, match="'del2' or 'iteration'"):
        ao.fixed_point(lambda x: x, 1.0, method="anderson")
    with pytest.warns(RuntimeWarning, match="did not converge"):
        ad.grad(
            lambda a: ao.root(
                lambda x, a: x**2 - a, np.ones(1), args=(a,), options={"maxfev": 2}
            ).x[0]
        )(2.0)


def test_scipy_optimize_is_loaded_on_first_use():
    assert ad.scipy.optimize is ao
    assert ao.OptimizeResult is so.OptimizeResult
