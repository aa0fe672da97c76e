"""Complex linear algebra and eig: svd, eigh / eigvalsh, the nuclear norm and eig / eigvals,
compared with JAX (when installed; float64) at several points, with central differences, and
at their edge points (repeated eigenvalues, zero singular values, ties); HIPS autograd's own
checks of these functions, mirrored.

Conventions: `ad.grad` of a real function of a complex input follows JAX (df/dx - i df/dy, the
plain transpose of the JVP), as `jax.grad`; `Tensor.grad` (the torch face) is its conjugate.
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
import autodiff.numpy.linalg as la
from autodiff.testing import check_grads

SEEDS = (0, 1, 2)


def _complex(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.fixture(scope="module")
def jax_np():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


# ------------------------------------------------------------------ gauge-invariant functions
# Each is written once for a namespace `xp` (autodiff.numpy or jax.numpy) and a linalg module.


def _svd_functions(xp, lin):
    def nuclear(a):
        return xp.sum(lin.svd(a, compute_uv=False))

    def weighted_u(a):
        u, s, vh = lin.svd(a, full_matrices=False)
        weights = np.arange(1.0, 1.0 + u.shape[-2] * u.shape[-1]).reshape(u.shape[-2:])
        return xp.sum(xp.abs(u) ** 2 * weights) + xp.sum(xp.abs(vh) ** 2 * weights.sum())

    def reconstruction(a):
        u, s, vh = lin.svd(a, full_matrices=False)
        r = (u * xp.tanh(s)[..., None, :]) @ vh
        return xp.sum(xp.real(r) * xp.imag(r)) + xp.sum(xp.abs(r))

    def norm_nuc(a):
        return lin.norm(a, "nuc") + lin.norm(a, 2)

    return {
        "nuclear": nuclear,
        "weighted_u": weighted_u,
        "reconstruction": reconstruction,
        "norm": norm_nuc,
    }


def _eigh_functions(xp, lin):
    """Functions of a Hermitian matrix built from any square `a` (JAX symmetrizes its input,
    NumPy reads one triangle: the two agree on matrices built Hermitian)."""

    def hermitian(a):
        return a + xp.conj(xp.swapaxes(a, -1, -2))

    def eigenvalues(a):
        return xp.sum(lin.eigvalsh(hermitian(a)) ** 3)

    def eigenvectors(a):
        w, v = lin.eigh(hermitian(a))
        return xp.sum(xp.abs(v) ** 2 * np.arange(v.shape[-1])) + xp.sum(w * xp.abs(v[..., 0, :]))

    def matrix_function(a):
        w, v = lin.eigh(hermitian(a))
        f = (v * xp.tanh(w)[..., None, :]) @ xp.conj(xp.swapaxes(v, -1, -2))
        return xp.sum(xp.real(f) ** 2 - xp.imag(f))

    return {"eigenvalues": eigenvalues, "eigenvectors": eigenvectors, "matrix": matrix_function}


def _eig_functions(xp, lin):
    def eigenvalues(a):
        w = lin.eigvals(a)
        return xp.sum(xp.real(w) * np.arange(1.0, 1.0 + w.shape[-1])) + xp.sum(xp.imag(w) ** 2)

    def eigenvalue_moduli(a):
        w, v = lin.eig(a)
        return xp.sum(xp.abs(w) ** 2 * np.arange(w.shape[-1]))

    return {"eigenvalues": eigenvalues, "moduli": eigenvalue_moduli}


def _combined(functions: dict):
    """One scalar function summing all of `functions`."""
    return lambda a: sum(f(a) for f in functions.values())


def _compare_with_jax(jax, ours, theirs, points):
    """Values, grad, jvp and the second order (jvp of grad) agree at each `(a, t)` of `points`.
    (JAX's side is one jitted function: one compilation per shape, for all the points.)"""

    def derivatives(a, t):
        return (
            theirs(a),
            jax.grad(theirs)(a),
            jax.jvp(theirs, (a,), (t,))[1],
            jax.jvp(jax.grad(theirs), (a,), (t,))[1],
        )

    derivatives = jax.jit(derivatives)
    for a, t in points:
        value, grad, jvp, jvp_of_grad = derivatives(a, t)
        np.testing.assert_allclose(ours(a), value, rtol=1e-10)
        np.testing.assert_allclose(ad.grad(ours)(a), grad, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(ad.jvp(ours, (a,), (t,))[1], jvp, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(
            ad.jvp(ad.grad(ours), (a,), (t,))[1], jvp_of_grad, rtol=1e-7, atol=1e-9
        )


def _points(shape, real: bool = False):
    """(point, direction) pairs, complex (or real), one per seed."""
    points = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        a, t = _complex(rng, *shape), _complex(rng, *shape)
        points.append((a.real, t.real) if real else (a, t))
    return points


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_complex_svd_matches_jax(jax_np, shape):
    """Singular values, |U|^2 and |Vh|^2 weighted, U tanh(S) Vh, and (one matrix) the norms."""
    jax, jnp = jax_np
    ours, theirs = _svd_functions(anp, la), _svd_functions(jnp, jnp.linalg)
    if len(shape) > 2:  # (norm's matrix orders take one matrix)
        del ours["norm"], theirs["norm"]
    _compare_with_jax(jax, _combined(ours), _combined(theirs), _points(shape))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_complex_eigh_matches_jax(jax_np, shape):
    """Eigenvalues, |V|^2 weighted, V tanh(W) V^H, of matrices built Hermitian."""
    jax, jnp = jax_np
    ours, theirs = _eigh_functions(anp, la), _eigh_functions(jnp, jnp.linalg)
    _compare_with_jax(jax, _combined(ours), _combined(theirs), _points(shape))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_complex_cholesky_derivatives_match_jax(jax_np, shape):
    """Forward and reverse Jacobians (holomorphic=True: the derivative's matrix on complex
    tangents, as JAX defines it) and the gradient of a real function, of a Hermitian
    positive definite matrix."""
    jax, jnp = jax_np
    rng = np.random.default_rng(3)
    b = _complex(rng, *shape)
    a = b @ _H(b) + shape[-1] * np.eye(shape[-1])
    for ours, theirs in ((ad.jacfwd, jax.jacfwd), (ad.jacrev, jax.jacrev)):
        got = ours(la.cholesky, holomorphic=True)(a)
        want = theirs(jnp.linalg.cholesky, holomorphic=True)(a)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
    weights = np.arange(1.0, 1.0 + shape[-1] ** 2).reshape(shape[-2:])

    def loss(xp, lin):
        return lambda a: xp.sum(xp.abs(lin.cholesky(a)) ** 2 * weights)

    got = ad.grad(loss(anp, la))(a)
    want = jax.grad(loss(jnp, jnp.linalg))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("real", [True, False])
def test_eig_eigenvalues_match_jax(jax_np, real):
    jax, _ = jax_np
    ours, theirs = _eig_functions(anp, la), _eig_functions(jax.numpy, _JaxEig(jax))
    _compare_with_jax(jax, _combined(ours), _combined(theirs), _points((4, 4), real))


class _JaxEig:
    """jnp.linalg's eig and eigvals with the second derivatives JAX has behind a flag."""

    def __init__(self, jax):
        self.lax_eig = jax.lax.linalg.eig

    def eig(self, x):
        return self.lax_eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)

    def eigvals(self, x):
        return self.lax_eig(
            x,
            compute_left_eigenvectors=False,
            compute_right_eigenvectors=False,
            enable_eigvec_derivs=True,
        )[0]


@pytest.mark.parametrize("real", [True, False])
def test_eig_eigenvector_derivatives_match_jax(jax_np, real):
    """JAX's lax.linalg.eig (enable_eigvec_derivs) differentiates LAPACK's normalization, as we
    do: the eigenvectors' tangents are the same, and equal central differences of NumPy's."""
    jax, _ = jax_np
    jax_eig = _JaxEig(jax).eig
    jax_jvp = jax.jit(lambda a, t: jax.jvp(jax_eig, (a,), (t,)))
    for a, t in _points((4, 4), real):
        (w_j, v_j), (dw_j, dv_j) = jax_jvp(a, t)
        (w, v), (dw, dv) = ad.jvp(lambda x: tuple(la.eig(x)), (a,), (t,))
        np.testing.assert_allclose(w, w_j, rtol=1e-10)
        np.testing.assert_allclose(v, v_j, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dw, dw_j, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(dv, dv_j, rtol=1e-8, atol=1e-10)
        eps = 1e-6
        plus, minus = np.linalg.eig(a + eps * t), np.linalg.eig(a - eps * t)
        np.testing.assert_allclose(dv, (plus[1] - minus[1]) / (2 * eps), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ central differences


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (4, 3, 5)])
def test_complex_svd_central_differences(dtype, shape):
    """HIPS autograd's svd checks (|U|, S, |V| of every shape), to order 2 in both modes."""
    rng = np.random.default_rng(7)
    a = _complex(rng, *shape).astype(dtype)
    tol = {} if dtype == np.complex128 else {"rtol": 5e-3, "atol": 5e-3}

    def f(x):
        u, s, vh = la.svd(x, full_matrices=False)
        return anp.abs(u), s, anp.abs(vh)

    check_grads(f, (a,), order=2, modes=("fwd", "rev"), **tol)
    check_grads(lambda x: la.svd(x, compute_uv=False), (a,), order=2, modes=("fwd", "rev"), **tol)


@pytest.mark.parametrize("shape", [(6, 5), (6, 5, 4)])
def test_complex_nuclear_norm_central_differences(shape):
    rng = np.random.default_rng(8)
    a = _complex(rng, *shape)
    axis = None if len(shape) == 2 else (0, 1)
    check_grads(lambda x: la.norm(x, "nuc", axis=axis), (a,), order=2, modes=("fwd", "rev"))
    u, _, vh = np.linalg.svd(a if axis is None else np.moveaxis(a, 2, 0), full_matrices=False)
    if axis is None:  # the gradient of the nuclear norm: conj(U Vh) (JAX's convention)
        g = ad.grad(lambda x: la.norm(x, "nuc"))(a)
        np.testing.assert_allclose(g, np.conj(u @ vh), atol=1e-12)
        t = ad.tensor(a, requires_grad=True)  # the torch face: U Vh
        la.norm(t, "nuc").backward()
        np.testing.assert_allclose(t.grad.numpy(), u @ vh, atol=1e-12)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 4, 4)])
def test_complex_eigh_of_any_matrix_central_differences(uplo, shape):
    """HIPS autograd's eigh checks: a complex matrix that is not Hermitian, read as NumPy
    reads it (one triangle, the real part of the diagonal), with |v| for the phases."""
    rng = np.random.default_rng(9)
    a = _complex(rng, *shape)

    def f(x):
        w, v = la.eigh(x, uplo)
        return w, anp.abs(v)

    check_grads(f, (a,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: la.eigvalsh(x, uplo), (a,), order=2, modes=("fwd", "rev"))
    g = ad.grad(lambda x: anp.sum(la.eigvalsh(x, uplo) * np.arange(shape[-1])))(a)
    ignored = np.triu(np.ones(shape[-2:]), 1) if uplo == "L" else np.tril(np.ones(shape[-2:]), -1)
    assert np.all(g[..., ignored == 1] == 0)  # the other triangle is not read
    assert np.all(np.imag(np.diagonal(g, axis1=-2, axis2=-1)) == 0)  # nor the diagonal's imag


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.complex64])
@pytest.mark.parametrize("shape", [(6, 6), (3, 4, 4)])
def test_eig_central_differences(dtype, shape):
    """HIPS autograd's eig checks (real and complex, batched), with the eigenvectors themselves:
    their derivative is that of LAPACK's normalization, so it matches central differences."""
    rng = np.random.default_rng(10)
    a = _complex(rng, *shape)
    a = (a if np.dtype(dtype).kind == "c" else a.real).astype(dtype)
    tol = {} if np.finfo(dtype).bits == 64 else {"rtol": 2e-2, "atol": 2e-2}
    if np.finfo(dtype).bits != 64 and len(shape) > 2:
        pytest.skip("one single-precision case is enough")
    check_grads(lambda x: tuple(la.eig(x)), (a,), order=2, modes=("fwd", "rev"), **tol)
    check_grads(la.eigvals, (a,), order=2, modes=("fwd", "rev"), **tol)


# ------------------------------------------------------------------ eig: results and edge points


def test_eig_results_are_always_complex_and_batched_like_numpy():
    real_spectrum = np.array([[2.0, 1.0], [1.0, 3.0]])
    rotation = np.array([[0.0, 1.0], [-1.0, 0.0]])
    assert np.linalg.eigvals(real_spectrum).dtype == np.float64  # NumPy: dtype by value
    for a in (real_spectrum, rotation, np.stack([real_spectrum, rotation])):
        w, v = la.eig(a)
        ref_w, ref_v = np.linalg.eig(a)
        assert w.dtype == v.dtype == np.complex128
        np.testing.assert_allclose(w, ref_w, rtol=1e-12)
        np.testing.assert_allclose(v, ref_v, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(la.eigvals(a), np.linalg.eigvals(a), rtol=1e-12)
    assert la.eigvals(real_spectrum.astype(np.float32)).dtype == np.complex64
    assert la.eig(np.eye(2, dtype=np.int64)).eigenvalues.dtype == np.complex128
    assert la.eig(np.zeros((0, 3, 3))).eigenvectors.shape == (0, 3, 3)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        la.eig(np.zeros((2, 3)))
    # plain NumPy dispatches on tensors
    w = np.linalg.eigvals(ad.tensor(rotation))
    np.testing.assert_allclose(w.numpy(), [1j, -1j])


def test_eig_gradient_does_not_depend_on_the_result_dtype():
    """A real spectrum (NumPy: real arrays) and a complex one (complex arrays) differentiate
    the same way; the gradient of a real eigenvalue is the outer product of the left and right
    eigenvectors, u v^T / (u^T v)."""
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, 0.2, -1.0]])
    w, v = np.linalg.eig(a)
    left = np.linalg.inv(v).T
    for i in range(3):
        g = ad.grad(lambda a, i=i: anp.real(la.eigvals(a)[i]))(a)
        np.testing.assert_allclose(g, np.outer(left[:, i], v[:, i]).real, atol=1e-12)


def test_eig_derivatives_are_nan_at_a_repeated_eigenvalue():
    with np.errstate(all="ignore"):
        g = ad.grad(lambda a: anp.real(la.eigvals(a)[0]))(np.eye(3))
        assert np.all(np.isnan(g))
        t = ad.jvp(la.eigvals, (np.diag([1.0, 2.0, 2.0]),), (np.ones((3, 3)),))[1]
        assert np.isfinite(t[0]) and np.all(np.isnan(t[1:]))
        # a simple eigenvalue of a matrix with a repeated one is differentiable
        g = ad.grad(lambda a: anp.real(la.eigvals(a)[0]))(np.diag([1.0, 2.0, 2.0]))
        np.testing.assert_allclose(g, np.diag([1.0, 0.0, 0.0]))
        # eigenvectors at a repetition: NaN (1 / 0 in the gaps), as JAX's
        g = ad.grad(lambda a: anp.sum(anp.abs(la.eig(a)[1])))(np.diag([1.0, 2.0, 2.0]))
        assert np.all(np.isnan(g))


def test_eig_near_a_repeated_eigenvalue_is_large_and_finite():
    delta = 1e-8
    a = np.array([[1.0, 1.0], [delta, 1.0]])  # eigenvalues 1 +- 1e-4: derivatives ~ 1e4
    g = ad.grad(lambda a: anp.max(anp.real(la.eigvals(a))))(a)
    assert np.all(np.isfinite(g)) and np.abs(g).max() > 1e3
    fd = np.zeros((2, 2))
    h = 1e-11
    for i in np.ndindex(2, 2):
        e = np.zeros((2, 2))
        e[i] = h
        fd[i] = (np.linalg.eigvals(a + e).real.max() - np.linalg.eigvals(a - e).real.max()) / (
            2 * h
        )
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(g, [[0.5, 0.5e-4], [0.5e4, 0.5]], rtol=1e-6)


def test_complex_svd_at_a_zero_singular_value():
    """Square, rank deficient: the phase term (1 / s) is 0 there, as JAX's; the reconstruction
    U diag(s) Vh still differentiates to dA exactly."""
    rng = np.random.default_rng(11)
    a = _complex(rng, 3, 2) @ _complex(rng, 2, 3)
    t = _complex(rng, 3, 3)

    def reconstruct(x):
        u, s, vh = la.svd(x)
        return (u * s[None, :]) @ vh

    _, d = ad.jvp(reconstruct, (a,), (t,))
    assert np.all(np.isfinite(d))
    np.testing.assert_allclose(d, t, atol=1e-8)


def test_complex_svd_matches_jax_at_a_zero_singular_value(jax_np):
    jax, jnp = jax_np
    rng = np.random.default_rng(12)
    a = _complex(rng, 3, 2) @ _complex(rng, 2, 3)
    t = _complex(rng, 3, 3)
    fun = "reconstruction"
    ours, theirs = _svd_functions(anp, la)[fun], _svd_functions(jnp, jnp.linalg)[fun]
    np.testing.assert_allclose(
        ad.jvp(ours, (a,), (t,))[1], jax.jvp(theirs, (a,), (t,))[1], rtol=1e-6, atol=1e-8
    )


def test_eigh_differs_from_jax_on_a_non_hermitian_input_as_documented(jax_np):
    """JAX symmetrizes (a + a^H) / 2; NumPy and autodiff read one triangle."""
    jax, jnp = jax_np
    a = np.random.default_rng(13).standard_normal((3, 3))
    np.testing.assert_allclose(la.eigvalsh(a), np.linalg.eigvalsh(a), rtol=1e-12)
    np.testing.assert_allclose(jnp.linalg.eigvalsh(a), np.linalg.eigvalsh((a + a.T) / 2))
    assert not np.allclose(la.eigvalsh(a), jnp.linalg.eigvalsh(a))
    # on a symmetric matrix the values agree, and the gradients agree once folded
    s = a + a.T
    ours = ad.grad(lambda x: anp.sum(la.eigvalsh(x) ** 3))(s)
    theirs = np.asarray(jax.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x) ** 3))(s))
    np.testing.assert_allclose(ours, np.tril(theirs + theirs.T) - np.diag(np.diag(theirs)))
