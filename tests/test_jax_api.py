"""JAX's parameters and helpers on the functional face: linearize(has_aux), hessian
(holomorphic), linear_transpose, float0 derivatives of integer values, jacrev(allow_int),
vmap's axis_name; each against JAX when it is installed."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp

rng = np.random.default_rng(5)


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_linearize_has_aux():
    def fn(x):
        return x * 2 - 3, x > 0

    out, f_jvp, aux = ad.linearize(fn, 3.4, has_aux=True)
    assert np.isclose(out, 3.8) and np.isclose(f_jvp(5.0), 10.0) and aux
    jax = _jax()
    j_out, j_jvp, j_aux = jax.linearize(fn, 3.4, has_aux=True)
    assert np.isclose(out, j_out) and np.isclose(f_jvp(5.0), j_jvp(5.0)) and aux == j_aux


def test_linearize_checks_tangents_against_primals():
    _, f_jvp = ad.linearize(lambda x, n: x * n, np.ones(2), np.arange(2))
    np.testing.assert_array_equal(f_jvp(np.ones(2), np.zeros(2, ad.float0)), [0.0, 1.0])
    with pytest.raises(ValueError, match="tangent values inconsistent"):
        f_jvp(np.ones(2), np.ones(2, np.int64))
    with pytest.raises(ValueError, match="tangent values inconsistent"):
        f_jvp(np.ones(3), np.zeros(2, ad.float0))


def test_hessian_holomorphic():
    a = rng.normal(size=(4, 4))
    x = rng.normal(size=4) * (1 + 2j)

    def f(x):
        return anp.dot(x, anp.dot(a.astype(x.dtype), x))

    np.testing.assert_allclose(ad.hessian(f, holomorphic=True)(x), a + a.T, rtol=1e-12)
    jax = _jax()
    theirs = jax.hessian(lambda x: jax.numpy.dot(x, jax.numpy.dot(a, x)), holomorphic=True)(x)
    np.testing.assert_allclose(ad.hessian(f, holomorphic=True)(x), np.asarray(theirs))


def test_linear_transpose():
    t = ad.linear_transpose(lambda x: (1 + 2j) * x, 1j)
    (ct,) = t(3 + 4j)
    assert ct == -5 + 10j  # the plain transpose (JAX's), no conjugate
    (ct,) = ad.linear_transpose(lambda x: 2 * x, 1)(3)
    assert ct == 6 and np.asarray(ct).dtype.kind == "i"  # integer -> integer
    (ct,) = ad.linear_transpose(lambda x: x[0], [1.0, 2.0])(3.0)
    assert [float(v) for v in ct] == [3.0, 0.0]

    class Abstract:
        shape, dtype = (3,), np.dtype(np.float32)

    (ct,) = ad.linear_transpose(lambda x: 2 * x, Abstract())(np.arange(3, dtype=np.float32))
    assert ct.dtype == np.float32
    np.testing.assert_array_equal(ct, [0.0, 2.0, 4.0])
    a = rng.normal(size=(3, 2))
    (ct,) = ad.linear_transpose(lambda x: anp.matmul(a, x), np.zeros(2))(np.ones(3))
    np.testing.assert_allclose(ct, a.T @ np.ones(3))


def test_linear_transpose_errors():
    with pytest.raises(TypeError, match="linear_transpose only supports"):
        ad.linear_transpose(lambda x: 2.0 * x, 1)
    with pytest.raises(TypeError, match="cotangent tree does not match"):
        ad.linear_transpose(lambda x: [x, x], 1.0)(1.0)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        ad.linear_transpose(lambda x: anp.stack([x, x]), 1.0)(1.0)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        ad.linear_transpose(lambda x: 1j * x, 1.0)(1.0)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        ad.linear_transpose(lambda x: x, 1.0)(1j)


def test_integer_values_get_float0_derivatives():
    g = ad.grad(lambda x: x + 0.0, allow_int=True)(1)
    assert g.dtype == ad.float0 and g.shape == ()
    gx, gi = ad.grad(lambda x, i: x[i], argnums=(0, 1), allow_int=True)(np.ones(2), 1)
    np.testing.assert_array_equal(gx, [0.0, 1.0])
    assert gi.dtype == ad.float0
    _, t = ad.jvp(lambda x: x + 1, (2,), (np.zeros((), ad.float0),))
    assert t.dtype == ad.float0
    _, t = ad.jvp(lambda x: x.astype(np.int32) + 1, (2.0,), (1.0,))
    assert t.dtype == ad.float0
    (ct,) = ad.vjp(lambda x: x.reshape(2, 2), np.ones((4, 1), int))[1](np.zeros((2, 2), ad.float0))
    assert ct.dtype == ad.float0 and ct.shape == (4, 1)
    jax = _jax()
    assert jax.grad(lambda x: x + 0.0, allow_int=True)(1).dtype == jax.dtypes.float0


def test_jacrev_allow_int():
    jx, jn = ad.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(np.ones(2), np.arange(2))
    np.testing.assert_array_equal(jx, np.diag([0.0, 1.0]))
    assert jn.dtype == ad.float0 and jn.shape == (2, 2)
    with pytest.raises(TypeError, match="allow_int"):
        ad.jacrev(lambda x, n: x * n, argnums=(0, 1))(np.ones(2), np.arange(2))


def test_nonholomorphic_jacobians_match_jax():
    jax = _jax()
    z = rng.normal(size=3) + 1j * rng.normal(size=3)

    def f(np_, z):
        return np_.real(z) ** 2 + np_.imag(z) * np_.real(z[::-1])

    np.testing.assert_allclose(
        ad.jacrev(lambda z: f(anp, z))(z), np.asarray(jax.jacrev(lambda z: f(jax.numpy, z))(z))
    )


def test_vmap_axis_name_is_accepted():
    out = ad.vmap(lambda x: x * 2.0, axis_name="batch")(np.arange(3.0))
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
