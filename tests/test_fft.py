"""numpy.fft: what the op table (tests/cases_fft.py) cannot express — NumPy's semantics over
every function, length, axis, norm and dtype; errors; `numpy.fft.X` on traced values; and
derivatives against JAX's (float64) at several points, lengths and norms.

The functional face follows JAX's convention for complex values (reverse/transforms.py), so
grad, jvp and vjp are compared with JAX's values as they are, for complex inputs and
complex cotangents too.
"""

import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
import autodiff.numpy.fft as afft
from autodiff.core.primitive import bind
from autodiff.ops import fft as fft_ops
from autodiff.testing import check_grads

rng = np.random.default_rng(7)
X = rng.standard_normal((3, 6))
Z = X + 1j * rng.standard_normal((3, 6))
Y = rng.standard_normal((3, 4, 5))
NORMS = [None, "backward", "ortho", "forward"]


def _same(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5 if want.dtype.itemsize <= 8 else 1e-12)


# --------------------------------------------------------------------- NumPy's semantics

ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_INPUT = {"rfft", "ihfft", "rfftn", "rfft2"}


def _inputs(name):
    real = [X, X.astype(np.float32), X.astype(np.float16), (X * 3).astype(np.int64)]
    return real if name in REAL_INPUT else real + [Z, Z.astype(np.complex64)]


@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("n", [None, 1, 4, 6, 9])
@pytest.mark.parametrize("axis", [0, -1])
def test_one_axis_transforms_match_numpy(name, n, axis):
    for a in _inputs(name):
        for norm in NORMS:
            want = getattr(np.fft, name)(a, n=n, axis=axis, norm=norm)
            _same(getattr(afft, name)(a, n=n, axis=axis, norm=norm), want)


ND_LAYOUTS = [
    (None, None),
    ((2, 7), (0, 2)),
    (None, (1,)),
    ((4, 4, 4), (2, 0, 1)),
    ((3, -1), (0, -1)),
    ((5, 3), (-1, -1)),  # an axis twice: transformed twice, as NumPy does
    (None, (0, 2, 0)),
]


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("s, axes", ND_LAYOUTS)
def test_n_dimensional_transforms_match_numpy(name, s, axes):
    kwargs = {} if axes is None else {"axes": axes}
    for a in [Y, Y.astype(np.float32)] + ([] if name in REAL_INPUT else [Y + 0.5j]):
        for norm in (None, "ortho", "forward"):
            want = getattr(np.fft, name)(a, s=s, norm=norm, **kwargs)
            _same(getattr(afft, name)(a, s=s, norm=norm, **kwargs), want)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_two_dimensional_transforms_match_numpy(name):
    a = Y if name in REAL_INPUT else Y + 0.5j
    for s, axes in [(None, (-2, -1)), ((3, 3), (-2, -1)), ((2, 6), (0, 2))]:
        _same(getattr(afft, name)(a, s=s, axes=axes), getattr(np.fft, name)(a, s=s, axes=axes))
    _same(getattr(afft, name)(a), getattr(np.fft, name)(a))


def test_deprecated_s_arguments_warn_as_numpy_does():
    with pytest.warns(DeprecationWarning, match="axes"):
        got = afft.fftn(Y, s=(4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same(got, np.fft.fftn(Y, s=(4, 5)))
    with pytest.warns(DeprecationWarning, match="None"):
        got = afft.irfftn(Y + 1j, s=(3, None), axes=(0, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same(got, np.fft.irfftn(Y + 1j, s=(3, None), axes=(0, 2)))


def test_shifts_and_frequencies_match_numpy():
    matrix, vector = np.arange(10.0).reshape(2, 5), np.arange(7.0)
    layouts = [(matrix, axes) for axes in (None, 0, -1, (0,), (-1, 0), [1, 1])]
    layouts += [(vector, None), (vector, -1)]
    for a, axes in layouts:
        _same(afft.fftshift(a, axes), np.fft.fftshift(a, axes))
        _same(afft.ifftshift(a, axes), np.fft.ifftshift(a, axes))
    for n in (1, 4, 5):
        for d in (1.0, 0.25, np.float32(0.1), np.array(2.0)):
            _same(afft.fftfreq(n, d), np.fft.fftfreq(n, d))
            _same(afft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    _same(afft.fftfreq(6), np.fft.fftfreq(6))


def test_errors_are_numpys():
    with pytest.raises(ValueError, match='Invalid norm value "ortogonal"|Invalid norm value'):
        afft.fft(X, norm="ortogonal")
    with pytest.raises(ValueError, match="Invalid norm value"):
        afft.hfft(X, norm="sideways")
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        afft.fft(X, n=0)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        afft.irfft(np.ones(1))  # n = 2 * (1 - 1)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        afft.fft(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        afft.fftn(Y, s=(2, 3), axes=(0,))
    with pytest.raises(np.exceptions.AxisError):
        afft.fft(X, axis=2)
    with pytest.raises(TypeError, match="real input"):
        afft.rfft(Z)
    with pytest.raises(TypeError, match="real input"):
        ad.grad(lambda z: anp.sum(anp.abs(afft.rfftn(z * 1j))))(X)
    with pytest.raises(NotImplementedError, match="out="):
        afft.fft(X, out=np.empty(X.shape, complex))
    with pytest.raises(ValueError, match="n should be an integer"):
        afft.fftfreq(4.0)


# ------------------------------------------------------------------ numpy.fft on tracers

DISPATCH = {
    "fft": Z,
    "ifft": Z,
    "rfft": X,
    "irfft": Z,
    "hfft": Z,
    "ihfft": X,
    "fftn": Y,
    "ifftn": Y,
    "fft2": Y,
    "ifft2": Y,
    "rfftn": Y,
    "irfftn": Y + 1j,
    "rfft2": Y,
    "irfft2": Y + 1j,
    "fftshift": X,
    "ifftshift": X,
}


@pytest.mark.parametrize("name", sorted(DISPATCH))
def test_numpy_fft_on_traced_values_dispatches_here(name):
    """NumPy 2's numpy.fft functions take `__array_function__`: plain NumPy code differentiates."""
    a = DISPATCH[name]
    weights = rng.standard_normal(np.shape(getattr(np.fft, name)(a)))

    def loss(fft_module):
        return lambda a: anp.sum(anp.abs(getattr(fft_module, name)(a)) ** 2 * weights)

    np.testing.assert_allclose(ad.grad(loss(np.fft))(a), ad.grad(loss(afft))(a), rtol=1e-12)
    t = ad.tensor(a, requires_grad=True)
    out = getattr(np.fft, name)(t)
    assert isinstance(out, ad.Tensor)
    np.testing.assert_allclose(out.detach().numpy(), getattr(np.fft, name)(a), rtol=1e-12)


def test_numpy_fftfreq_takes_a_traced_spacing():
    got = ad.jacfwd(lambda d: np.fft.fftfreq(5, d))(0.5)
    np.testing.assert_allclose(got, -np.fft.fftfreq(5, 0.5) / 0.5)
    assert float(ad.grad(lambda d: anp.sum(np.fft.rfftfreq(4, d)))(2.0)) == pytest.approx(
        -np.sum(np.fft.rfftfreq(4, 2.0)) / 2.0
    )


def test_tensor_backward_through_fft_on_real_input():
    t = ad.tensor(X[0], requires_grad=True)
    anp.sum(anp.abs(np.fft.rfft(t, n=8)) ** 2).backward()
    want = ad.grad(lambda x: anp.sum(anp.abs(afft.rfft(x, n=8)) ** 2))(X[0])
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)


# ----------------------------------------------------------------- rules and staging


def test_abstract_eval_matches_impl_for_every_dtype():
    """The primitives' avals (shape and dtype) against their impls, for the dtypes NumPy
    accepts: float16/int/bool compute in single or double precision as NumPy's do."""
    from autodiff.core.abstract import aval_of

    x = np.arange(12).reshape(3, 4)
    for dtype in ("float64", "float32", "float16", "int64", "int8", "bool", "complex64"):
        a = x.astype(dtype)
        for axes in [(1,), (0,), (1, 0)]:
            for prim, params in [
                (fft_ops.fft_p, dict(axes=axes, inverse=False, norm="ortho")),
                (fft_ops.fft_p, dict(axes=axes, inverse=True, norm="backward")),
                (fft_ops.rfft_p, dict(axes=axes, norm="forward")),
                (fft_ops.irfft_p, dict(axes=axes, n=2 * a.shape[axes[-1]] - 1, norm="ortho")),
            ]:
                if prim is fft_ops.rfft_p and a.dtype.kind == "c":
                    with pytest.raises(TypeError):
                        prim.abstract_eval(aval_of(a), **params)
                    continue
                out = bind(prim, a, **params)
                want = prim.abstract_eval(aval_of(a), **params)
                assert (want.shape, want.dtype) == (out.shape, out.dtype), (prim, dtype, axes)


def test_jit_stages_the_transforms_and_their_gradients():
    def loss(x):
        spectrum = afft.rfft2(x, s=(4, 6), norm="ortho")
        return anp.sum(afft.irfft2(spectrum * anp.conj(spectrum), s=(3, 5)) ** 2)

    jitted = ad.jit(ad.grad(loss), backend="numpy")
    np.testing.assert_allclose(jitted(X), ad.grad(loss)(X), rtol=1e-12)
    names = {eqn.prim.name for eqn in ad.make_graph(ad.grad(loss))(X).equations}
    assert {"rfft", "irfft"} <= names


def test_complex_inputs_to_second_order():
    for f in [
        lambda z: afft.fftn(z, s=(2, 7), axes=(0, 1), norm="ortho"),
        lambda z: afft.irfft(z, n=9),
        lambda z: afft.hfft(z, n=4, axis=0, norm="forward"),
    ]:
        check_grads(f, (Z,), order=2, modes=("fwd", "rev"))


def test_vmap_over_a_transformed_axis_and_a_kept_one():
    f = lambda x: afft.rfftn(x, s=(3, 6), axes=(0, 1))
    want = np.stack([f(Y[:, :, i]) for i in range(5)])
    np.testing.assert_allclose(ad.vmap(f, in_axes=2)(Y), want, rtol=1e-12)
    g = lambda x: afft.ifft(x, n=3, axis=0)
    np.testing.assert_allclose(
        ad.vmap(g, in_axes=1, out_axes=1)(Z), np.stack([g(Z[:, i]) for i in range(6)], 1)
    )


# -------------------------------------------------------------------- against JAX


@pytest.fixture(scope="module")
def jnp():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return jnp


def _jax():
    import jax

    return jax


H = rng.standard_normal(5) + 1j * rng.standard_normal(5)
# (n, norm): n smaller than, equal to and larger than the input's 6, and every norm.
LENGTHS_AND_NORMS = [(3, None), (6, "ortho"), (9, "forward"), (4, "backward")]


def _jax_derivatives(f):
    """JAX's value and grad, and its jvp, of `f`, each compiled once (JAX's op-by-op mode
    compiles every operation for every new shape: slower by far)."""
    jax = _jax()
    return jax.jit(jax.value_and_grad(f)), jax.jit(lambda x, v: jax.jvp(f, (x,), (v,))[1])


def _real_loss(m, kind, n, norm):
    """Real-valued losses of real inputs, run with m = numpy (autodiff dispatches it) and
    m = jax.numpy."""
    k = np.arange(12.0)
    if kind == "power":  # sum |fft(x)|^2, weighted
        return lambda x: m.sum(m.abs(m.fft.fft(x, n=n, norm=norm)) ** 2 * k[:n])
    if kind == "filter":  # irfft(rfft(x) * h)
        h = H[: n // 2 + 1]
        return lambda x: m.sum(
            m.real(m.fft.irfft(m.fft.rfft(x, n=n, norm=norm) * h, n=n + 1, norm=norm)) ** 3
        )
    if kind == "hermitian":
        return lambda x: m.sum(m.fft.hfft(m.fft.ihfft(x, n=n, norm=norm), n=n + 2) * k[: n + 2])
    return lambda x: m.sum(
        m.abs(m.fft.rfftn(m.sin(x), s=(2, n), axes=(0, 1), norm=norm)) ** 2
        + m.fft.irfft2(m.fft.fft2(x, s=(3, n)), s=(2, n - 1), norm=norm)[:, :2].sum()
    )


@pytest.mark.parametrize("n, norm", LENGTHS_AND_NORMS)
@pytest.mark.parametrize("kind", ["power", "filter", "hermitian", "nd"])
def test_real_inputs_match_jax(jnp, kind, n, norm):
    ours = _real_loss(np, kind, n, norm)
    value_and_grad, jvp = _jax_derivatives(_real_loss(jnp, kind, n, norm))
    for seed in range(3):  # several points
        r = np.random.default_rng(seed)
        x = r.standard_normal((3, 6) if kind == "nd" else 6)
        v = r.standard_normal(x.shape)
        value, grad = value_and_grad(x)
        np.testing.assert_allclose(ours(x), value, rtol=1e-10)
        np.testing.assert_allclose(ad.grad(ours)(x), grad, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(ad.jvp(ours, (x,), (v,))[1], jvp(x, v), rtol=1e-9, atol=1e-9)
    if kind == "power":
        hessian = _jax().jit(_jax().hessian(_real_loss(jnp, kind, n, norm)))
        np.testing.assert_allclose(ad.hessian(ours)(x), hessian(x), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "name, n, norm",
    [("fft", 4, None), ("ifft", 8, "ortho"), ("rfft", 5, "forward"), ("ihfft", 7, "backward")],
)
def test_vjp_and_jvp_of_complex_outputs_match_jax(jnp, name, n, norm):
    """A complex output's pullback of a complex cotangent, and its pushforward."""
    jax = _jax()
    x = X[0]
    ours = lambda x: getattr(np.fft, name)(x, n=n, norm=norm)
    theirs = lambda x: getattr(jnp.fft, name)(x, n=n, norm=norm)
    out = ours(x)
    ct = rng.standard_normal(out.shape) + 1j * rng.standard_normal(out.shape)
    (got,) = ad.vjp(ours, x)[1](ct)
    (want,) = jax.jit(lambda x, ct: jax.vjp(theirs, x)[1](ct))(x, ct)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    v = rng.standard_normal(x.shape)
    want = jax.jit(lambda x, v: jax.jvp(theirs, (x,), (v,))[1])(x, v)
    np.testing.assert_allclose(ad.jvp(ours, (x,), (v,))[1], want, rtol=1e-10, atol=1e-12)


COMPLEX_LOSSES = {
    "irfft": lambda m, n, norm: lambda z: m.sum(m.fft.irfft(z, n=n, norm=norm) ** 2 * m.arange(n)),
    "hfft": lambda m, n, norm: lambda z: m.sum(m.sin(m.fft.hfft(z, n=n, norm=norm))),
    "fft": lambda m, n, norm: lambda z: m.sum(m.abs(m.fft.fft(z, n=n, norm=norm)) ** 3),
    "irfftn": lambda m, n, norm: (
        lambda z: m.sum(m.fft.irfftn(m.reshape(z, (2, 3)), s=(3, n), axes=(0, 1), norm=norm) ** 2)
    ),
}


@pytest.mark.parametrize("n, norm", [(3, None), (4, "ortho"), (11, "forward"), (10, "backward")])
@pytest.mark.parametrize("name", sorted(COMPLEX_LOSSES))
def test_complex_inputs_match_jax(jnp, name, n, norm):
    """Complex inputs (the half spectra of irfft and hfft: n odd and even, their inputs
    truncated and padded)."""
    ours = COMPLEX_LOSSES[name](np, n, norm)
    value_and_grad, jvp = _jax_derivatives(COMPLEX_LOSSES[name](jnp, n, norm))
    for seed in range(2):
        r = np.random.default_rng(seed)
        z = r.standard_normal(6) + 1j * r.standard_normal(6)
        v = r.standard_normal(6) + 1j * r.standard_normal(6)
        value, grad = value_and_grad(z)
        np.testing.assert_allclose(ours(z), value, rtol=1e-10)
        np.testing.assert_allclose(ad.grad(ours)(z), grad, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ad.jvp(ours, (z,), (v,))[1], jvp(z, v), rtol=1e-9, atol=1e-12)
