"""Products (matmul, dot, einsum, ...): dtypes, complex convention, NumPy dispatch, hot path, errors."""
import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.ops import linalg
from autodiff.testing import check_grads

rng = np.random.default_rng(0)


def _vjp(f, *args, ct=None):
    out, pullback = ad.vjp(f, *args)
    ct = np.ones_like(out) if ct is None else ct
    return out, pullback(ct)


# ------------------------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("name", ["matmul", "dot", "inner", "tensordot", "vdot"])
def test_float32_stays_float32(name):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3) if name in ("matmul", "dot") else (3, 4)).astype(np.float32)
    f = getattr(anp, name)
    out, (ga, gb) = _vjp(f, a, b)
    assert out.dtype == getattr(np, name)(a, b).dtype == np.float32
    assert ga.dtype == gb.dtype == np.float32


def test_float32_einsum_and_outer():
    a = rng.standard_normal((3, 3)).astype(np.float32)
    out, (g,) = _vjp(lambda x: anp.einsum("ii->i", x), a)
    assert out.dtype == g.dtype == np.float32
    out, (g,) = _vjp(lambda x: anp.outer(x, x), a[0])
    assert out.dtype == g.dtype == np.float32


def test_int_times_float_follows_numpy_and_differentiates_the_float():
    i = np.arange(12).reshape(3, 4)
    w32 = rng.standard_normal((4, 2)).astype(np.float32)
    assert anp.matmul(i, w32).dtype == np.matmul(i, w32).dtype
    assert anp.dot(i, w32).dtype == np.dot(i, w32).dtype
    out, (g,) = _vjp(lambda w: i @ w, w32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, i.T @ np.ones_like(out), rtol=1e-6)


def test_mixed_precision_cotangents_have_their_primal_dtype():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2))
    for f in (anp.matmul, anp.dot, lambda x, y: anp.einsum("ij,jk", x, y)):
        out, (ga, gb) = _vjp(f, a, b)
        assert out.dtype == np.float64
        assert ga.dtype == np.float32 and gb.dtype == np.float64


def test_python_scalars_and_lists_as_numpy():
    assert anp.dot(2.0, np.ones(3, np.float32)).dtype == np.dot(2.0, np.ones(3, np.float32)).dtype
    np.testing.assert_array_equal(anp.outer([1.0, 2.0], [3, 4]), np.outer([1.0, 2.0], [3, 4]))
    assert anp.matmul([1.0, 2.0], [3.0, 4.0]) == 11.0
    assert type(anp.dot(np.ones(3), np.ones(3))) is np.float64


# ----------------------------------------------------------------------------------- complex


def test_complex_vjp_is_the_plain_transpose():
    """Cotangent of a in a @ b is g @ b.T, without conjugation (complex conventions: later issue)."""
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    g = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    _, (ga, gb) = _vjp(anp.matmul, a, b, ct=g)
    np.testing.assert_allclose(ga, g @ b.T)
    np.testing.assert_allclose(gb, a.T @ g)
    _, (ga, gb) = _vjp(lambda x, y: anp.einsum("ij,jk->ik", x, y), a, b, ct=g)
    np.testing.assert_allclose(ga, g @ b.T)
    np.testing.assert_allclose(gb, a.T @ g)


def test_vdot_conjugates_its_first_argument():
    a = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    assert anp.vdot(a, b) == np.vdot(a, b)
    _, (ga, gb) = _vjp(anp.vdot, a, b, ct=np.complex128(1.0))
    np.testing.assert_allclose(ga, np.conj(b))  # d/da of sum(conj(a) b), transposed plainly
    np.testing.assert_allclose(gb, np.conj(a))


# ------------------------------------------------------------------------ dispatch and methods


def test_plain_numpy_calls_dispatch_inside_grad():
    w = rng.standard_normal((4, 3))
    x = rng.standard_normal((2, 4))
    v = rng.standard_normal(3)

    def f(x):
        h = np.matmul(x, w) + np.dot(x, w) + np.einsum("ij,jk->ik", x, w)
        h = h + np.tensordot(x, w, axes=1) + np.inner(x, w.T)
        return np.vdot(np.ravel(np.outer(h, v)), np.ones(h.size * v.size))

    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, 5 * v.sum() * np.outer(np.ones(2), w @ np.ones(3)), rtol=1e-12)


def test_matmul_operator_with_raw_array_on_either_side():
    w = rng.standard_normal((4, 4))
    x = rng.standard_normal(4)
    g = ad.grad(lambda x: anp.vdot(w @ x, x @ w))(x)
    np.testing.assert_allclose(g, w.T @ (x @ w) + w @ (w @ x), rtol=1e-12)


def test_tensor_operator_and_methods():
    a = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = ad.tensor([1.0, -1.0])
    assert isinstance(a @ b, ad.Tensor)
    np.testing.assert_array_equal((a @ b).numpy(), [-1.0, -1.0])
    np.testing.assert_array_equal(a.dot(b).numpy(), [-1.0, -1.0])
    np.testing.assert_array_equal((b @ a).numpy(), [-2.0, -2.0])


# ---------------------------------------------------------------------------------- hot path


def test_2d_matmul_backward_is_two_matmuls_and_no_einsum(monkeypatch):
    calls = []
    impl = linalg.matmul_p.impl
    monkeypatch.setattr(linalg.matmul_p, "impl", lambda a, b: calls.append("mm") or impl(a, b))
    monkeypatch.setattr(linalg.einsum_p, "impl", lambda *a, **k: pytest.fail("einsum called"))
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    _, pullback = ad.vjp(lambda x, w: x @ w, x, w)
    assert calls == ["mm"]
    gx, gw = pullback(np.ones((5, 3)))
    assert calls == ["mm"] * 3
    np.testing.assert_allclose(gx, np.ones((5, 3)) @ w.T)
    np.testing.assert_allclose(gw, x.T @ np.ones((5, 3)))


def test_broadcast_batch_dims_are_summed_back():
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((2, 5, 4, 3))
    _, (ga, gb) = _vjp(anp.matmul, a, b)
    np.testing.assert_allclose(ga, np.ones((3, 3)) @ b.sum((0, 1)).T)
    assert gb.shape == b.shape


# ------------------------------------------------------------------------------ higher order


def test_hessian_vector_product_of_a_quadratic_form():
    A = rng.standard_normal((4, 4))
    v = rng.standard_normal(4)
    f = lambda x: anp.einsum("i,ij,j", x, A, x)  # noqa: E731
    hv = ad.grad(lambda x: anp.vdot(v, ad.grad(f)(x)))(rng.standard_normal(4))
    np.testing.assert_allclose(hv, (A + A.T) @ v, rtol=1e-12)


def test_third_order_through_diagonal_einsum():
    # f(x) = trace(x @ x @ x) for x = t * M: f = t^3 trace(M^3), f''' = 6 trace(M^3)
    M = rng.standard_normal((3, 3))
    f = lambda t: anp.einsum("ii", (t * M) @ (t * M) @ (t * M))  # noqa: E731
    assert np.isclose(ad.grad(ad.grad(ad.grad(f)))(0.7), 6 * np.trace(M @ M @ M))


def test_forward_mode_with_one_constant_operand():
    w = rng.standard_normal((4, 3))
    x, dx = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    out, t = ad.jvp(lambda x: anp.einsum("ij,jk->ik", x, w) + x @ w, (x,), (dx,))
    np.testing.assert_allclose(t, 2 * dx @ w)


@pytest.mark.parametrize("spec, shapes", [("ii->", [(3, 3)]), ("i,->i", [(3,), ()]), ("ij,j->i", [(2, 3), (3,)])])
def test_einsum_derivatives_to_order_three(spec, shapes):
    args = tuple(rng.standard_normal(s) for s in shapes)
    check_grads(lambda *xs: anp.einsum(spec, *xs), args, order=3, modes=("fwd", "rev"))


# ------------------------------------------------------------------------------ einsum forms


def test_einsum_forms_match_numpy():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_array_equal(anp.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_array_equal(anp.einsum("bA", a), np.einsum("bA", a))
    path = np.einsum_path("ij,jk->ik", a, b, optimize="greedy")[0]
    np.testing.assert_allclose(anp.einsum("ij,jk->ik", a, b, optimize=path), a @ b)
    _, (ga, gb) = _vjp(lambda x, y: anp.einsum("ij,jk->ik", x, y, optimize=path), a, b)
    np.testing.assert_allclose(ga, np.ones((3, 5)) @ b.T)


# ------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("call", [
    lambda x: anp.matmul(x, x, out=np.empty((2, 2))),
    lambda x: anp.dot(x, x, out=np.empty((2, 2))),
    lambda x: anp.outer(x, x, out=np.empty((4, 4))),
    lambda x: anp.einsum("ij,jk", x, x, out=np.empty((2, 2))),
    lambda x: anp.einsum("ij,jk", x, x, dtype=np.float32),
])
def test_unsupported_arguments_raise(call):
    with pytest.raises(NotImplementedError):
        call(np.ones((2, 2)))


@pytest.mark.parametrize("call", [
    lambda x: anp.matmul(x[0, 0], x),
    lambda x: anp.matmul(x, np.ones((3, 2))),
    lambda x: anp.tensordot(x, np.ones((3, 2)), axes=1),
    lambda x: anp.tensordot(x, x, axes=([0, 1], [0])),
    lambda x: anp.einsum("ij,jk", x, np.ones((3, 2))),
    lambda x: anp.einsum("ii", np.ones((1, 2))),
    lambda x: anp.einsum("ij->k", x),
    lambda x: anp.einsum("ij->ii", x),
    lambda x: anp.einsum("...i->i", x),
    lambda x: anp.einsum("ij", x, x),
    lambda x: anp.einsum("i.j", x),
])
def test_invalid_shapes_and_subscripts_raise_value_error(call):
    with pytest.raises(ValueError):
        call(np.ones((2, 2)))
    with pytest.raises(ValueError):
        ad.grad(lambda x: anp.vdot(call(x), np.ones(1)))(np.ones((2, 2)))


@pytest.mark.parametrize("sa, sb", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)), ((3, 4), (4, 2))])
def test_mixed_dtype_dot_derivatives(sa, sb):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb)
    check_grads(anp.dot, (a, b), order=2, modes=("fwd", "rev"))
    check_grads(anp.inner, (a, b.T), order=2, modes=("fwd", "rev"))
