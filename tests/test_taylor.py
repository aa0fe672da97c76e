"""Taylor mode (autodiff/taylor/): jet against jax.experimental.jet and nested jvp, per
primitive rule and on composites; under jit, vmap and grad; derivatives; errors; which
primitives fall back to their jvp rule."""

from __future__ import annotations

import importlib
import math
import time

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
import autodiff.scipy.special as asp
from autodiff.autograd import _function_rules
from autodiff.core.primitive import all_primitives
from autodiff.ops.at import at

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
from jax.experimental.jet import jet as jax_jet  # noqa: E402

RTOL = 1e-12
ORDERS = (1, 2, 3, 6)


def _close(ours, theirs, rtol=RTOL):
    """Each term within `rtol` of the oracle's, relative to that order's largest entry."""
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs), start=1):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        err = float(np.max(np.abs(a - b), initial=0.0))
        assert err <= rtol * scale, f"order {k}: error {err:.3g} at scale {scale:.3g}"


def nested_jvp(fun, primals, series):
    """The oracle: the derivatives in t at 0 of fun(x(t)), x(t) = x0 + sum_k x_k t^k / k!,
    by nesting jvp in t once per order."""
    order = len(series[0])

    def along(t):
        xs = [
            x + sum(term * (t**k / math.factorial(k)) for k, term in enumerate(terms, start=1))
            for x, terms in zip(primals, series)
        ]
        return fun(*xs)

    derivs, g = [], along
    for _ in range(order):
        g = (lambda h: lambda t: ad.jvp(h, (t,), (1.0,))[1])(g)
        derivs.append(g(0.0))
    return along(0.0), derivs


def _series(rng, shapes, order):
    return tuple([rng.uniform(-1.0, 1.0, s) for _ in range(order)] for s in shapes)


# ---- one row per primitive with a taylor rule: (name, f(m, sp, *args), the args) ----
# `m` is autodiff.numpy or jax.numpy, `sp` the scipy.special of either; None for JAX: it has
# no jet rule for it (checked against nested jvp only).
A = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
B = np.array([[0.7, 0.2], [-0.3, 0.5], [0.4, -0.1]])
POS = np.array([[0.3, 1.2, 0.5], [0.9, 0.4, 1.6]])
UNIT = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
BIG = np.array([[1.3, 1.2, 2.5], [1.9, 1.4, 1.6]])

IDX = np.array([[2, 0], [1, 1]])

UNARY = [
    ("exp", lambda m, sp, x: m.exp(x), POS, True),
    ("exp2", lambda m, sp, x: m.exp2(x), POS, False),
    ("expm1", lambda m, sp, x: m.expm1(x), UNIT, True),
    ("log", lambda m, sp, x: m.log(x), POS, True),
    ("log2", lambda m, sp, x: m.log2(x), POS, False),
    ("log10", lambda m, sp, x: m.log10(x), POS, False),
    ("log1p", lambda m, sp, x: m.log1p(x), UNIT, True),
    ("sqrt", lambda m, sp, x: m.sqrt(x), POS, True),
    ("cbrt", lambda m, sp, x: m.cbrt(x), POS, False),
    ("square", lambda m, sp, x: m.square(x), UNIT, True),
    ("reciprocal", lambda m, sp, x: m.reciprocal(x), POS, True),
    ("sin", lambda m, sp, x: m.sin(x), UNIT, True),
    ("cos", lambda m, sp, x: m.cos(x), UNIT, True),
    ("tan", lambda m, sp, x: m.tan(x), UNIT, False),
    ("arcsin", lambda m, sp, x: m.arcsin(x), UNIT, False),
    ("arccos", lambda m, sp, x: m.arccos(x), UNIT, False),
    ("arctan", lambda m, sp, x: m.arctan(x), UNIT, False),
    ("sinh", lambda m, sp, x: m.sinh(x), UNIT, True),
    ("cosh", lambda m, sp, x: m.cosh(x), UNIT, True),
    ("tanh", lambda m, sp, x: m.tanh(x), UNIT, True),
    ("arcsinh", lambda m, sp, x: m.arcsinh(x), UNIT, False),
    ("arccosh", lambda m, sp, x: m.arccosh(x), BIG, False),
    ("arctanh", lambda m, sp, x: m.arctanh(x), UNIT, False),
    ("negative", lambda m, sp, x: -x, UNIT, True),
    ("expit", lambda m, sp, x: sp.expit(x), UNIT, True),
    ("erf", lambda m, sp, x: sp.erf(x), UNIT, True),
    ("erfc", lambda m, sp, x: sp.erfc(x), UNIT, False),
    ("integer_power", lambda m, sp, x: x**3, UNIT, True),
    ("integer_power_0", lambda m, sp, x: x**0 + x, UNIT, True),
    ("power_at_zero", lambda m, sp, x: (x - x) ** 2 + x, UNIT, True),
    ("power_const", lambda m, sp, x: x**2.5, POS, True),
    ("power_negative", lambda m, sp, x: x**-1.5, POS, True),
    ("astype", lambda m, sp, x: m.sin(x).astype(np.float32).astype(np.float64), UNIT, True),
    ("real_conj", lambda m, sp, x: m.real(m.conj(x * (1 + 1j))), UNIT, True),
    ("imag", lambda m, sp, x: m.imag(x * (2 - 1j)), UNIT, True),
    ("reshape", lambda m, sp, x: m.reshape(m.sin(x), (3, 2)), UNIT, True),
    ("transpose", lambda m, sp, x: m.transpose(m.sin(x)), UNIT, True),
    ("broadcast_to", lambda m, sp, x: m.broadcast_to(m.sin(x[0]), (4, 3)), UNIT, True),
    ("sum", lambda m, sp, x: m.sum(m.sin(x), axis=0), UNIT, True),
    ("mean_keepdims", lambda m, sp, x: m.mean(m.sin(x), axis=1, keepdims=True), UNIT, True),
    ("getitem", lambda m, sp, x: m.sin(x)[1, ::2], UNIT, True),
    ("getitem_array", lambda m, sp, x: m.sin(x)[np.array([1, 0, 1])], UNIT, True),
    ("take_along_axis", lambda m, sp, x: m.take_along_axis(m.sin(x), IDX, 1), UNIT, True),
    ("sort", lambda m, sp, x: m.sort(m.sin(x), axis=1), UNIT, False),
    ("flip", lambda m, sp, x: m.flip(m.sin(x), 1), UNIT, False),
    ("concatenate", lambda m, sp, x: m.concatenate([m.sin(x), x, np.ones((1, 3))]), UNIT, True),
    ("stack", lambda m, sp, x: m.stack([m.sin(x), np.ones((2, 3))]), UNIT, False),
    ("split", lambda m, sp, x: m.split(m.sin(x), [1], axis=1)[1], UNIT, False),
    ("repeat", lambda m, sp, x: m.repeat(m.sin(x), 2, axis=0), UNIT, False),
    ("cumsum", lambda m, sp, x: m.cumsum(m.sin(x), axis=1), UNIT, True),
    ("where", lambda m, sp, x: m.where(x > 0, m.sin(x), 2.0), UNIT, True),
    ("fft", lambda m, sp, x: m.real(m.fft.fft(m.sin(x))), UNIT, False),
    ("rfft_irfft", lambda m, sp, x: m.fft.irfft(m.fft.rfft(m.sin(x)), 3), UNIT, False),
    ("matmul", lambda m, sp, x: m.sin(x) @ m.cos(x).T, UNIT, True),
    ("matmul_const", lambda m, sp, x: m.sin(x) @ B, UNIT, True),
    ("dot", lambda m, sp, x: m.dot(m.sin(x[0]), m.cos(x[1])), UNIT, True),
    ("dot_3d", lambda m, sp, x: m.dot(m.sin(x)[None], m.cos(x).T), UNIT, True),
    ("einsum", lambda m, sp, x: m.einsum("ij,kj->ik", m.sin(x), m.exp(x)), UNIT, False),
    ("einsum3", lambda m, sp, x: m.einsum("ij,ij,ij->i", x, m.sin(x), x), UNIT, False),
    ("correlate", lambda m, sp, x: m.correlate(m.sin(x[0]), m.exp(x[1]), "full"), UNIT, False),
]

BINARY = [
    ("add", lambda m, sp, x, y: x + y, True),
    ("add_broadcast", lambda m, sp, x, y: x[0] + y, True),
    ("subtract", lambda m, sp, x, y: x - y, True),
    ("multiply", lambda m, sp, x, y: x * y, True),
    ("divide", lambda m, sp, x, y: x / (y + 2.0), True),
    ("divide_const", lambda m, sp, x, y: 3.0 / (y + 2.0) + x / 2.0, True),
    ("power", lambda m, sp, x, y: (x + 2.0) ** y, True),
    ("power_const_base", lambda m, sp, x, y: 2.0**y + x, True),
]


def _jax_fun(f):
    return lambda *a: f(jnp, jsp, *a)


def _our_fun(f):
    return lambda *a: f(anp, asp, *a)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name, f, x, in_jax", UNARY, ids=[r[0] for r in UNARY])
def test_rule(name, f, x, in_jax, order):
    ser = _series(np.random.default_rng(order), [x.shape], order)
    y, terms = ad.jet(_our_fun(f), (x,), ser)
    y_ref, terms_ref = nested_jvp(_our_fun(f), (x,), ser)
    np.testing.assert_allclose(y, y_ref, rtol=1e-14)
    rtol = 1e-6 if name == "astype" else RTOL  # (through float32)
    _close(terms, terms_ref, rtol=max(rtol, 1e-10))
    if in_jax:
        y_jax, terms_jax = jax_jet(_jax_fun(f), (x,), ser)
        np.testing.assert_allclose(y, y_jax, rtol=1e-13)
        _close(terms, terms_jax, rtol=rtol)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name, f, in_jax", BINARY, ids=[r[0] for r in BINARY])
def test_binary_rule(name, f, in_jax, order):
    x, y = UNIT, np.array([0.4, -0.7, 0.2])
    rng = np.random.default_rng(order)
    for which in ("both", "x", "y"):  # (the other a constant: its series is None)
        if which == "both":
            fun, primals = _our_fun(f), (x, y)
            jfun = _jax_fun(f)
        elif which == "x":
            fun, primals = (lambda a: f(anp, asp, a, y)), (x,)
            jfun = lambda a: f(jnp, jsp, a, y)
        else:
            fun, primals = (lambda b: f(anp, asp, x, b)), (y,)
            jfun = lambda b: f(jnp, jsp, x, b)
        ser = _series(rng, [p.shape for p in primals], order)
        out, terms = ad.jet(fun, primals, ser)
        _close(terms, nested_jvp(fun, primals, ser)[1], rtol=1e-10)
        out_jax, terms_jax = jax_jet(jfun, primals, ser)
        np.testing.assert_allclose(out, out_jax, rtol=1e-13)
        _close(terms, terms_jax)


def test_rules_are_used():
    """Every primitive the rows above exercise that has a taylor rule is run by it (no row
    silently tests the fallback instead): each rule called at least once."""
    called = set()
    wrapped = {}
    for p in all_primitives():
        if p.taylor is not None:
            wrapped[p] = p.taylor

            def spy(*a, _p=p, **k):
                called.add(_p.name)
                return wrapped[_p](*a, **k)

            p.taylor = spy
    try:
        for _, f, x, _ in UNARY:
            ad.jet(_our_fun(f), (x,), _series(np.random.default_rng(0), [x.shape], 2))
        for _, f, _ in BINARY:
            y = np.array([0.4, -0.7, 0.2])
            ad.jet(_our_fun(f), (UNIT, y), _series(np.random.default_rng(0), [(2, 3), (3,)], 2))
    finally:
        for p, rule in wrapped.items():
            p.taylor = rule
    untested = {p.name for p in wrapped} - called
    # (rules reached only through other paths: scatter and update ops under indexing with
    # `.at`, vmap's and grad's helpers; each is a linear_rule, as those tested)
    assert untested <= {
        "sum_to_shape",
        "copy",
        "unstack",
        "segment_sum",
        "scatter_add",
        "index_set",
        "dynamic_slice",
        "dynamic_update_slice",
        "expand_reduced",
        "scatter_add_along",
    }, untested


def test_index_and_update_rules():
    x = UNIT
    ser = _series(np.random.default_rng(3), [x.shape], 4)

    def f(x):
        s = anp.sin(x)
        a = ad.dynamic_slice(s, (0, 1), (2, 2))
        b = ad.dynamic_update_slice(s, anp.exp(a), (0, 0))
        c = at(s)[0, 1].set(x[1, 2] ** 2)
        d = at(s)[np.array([0, 0, 1])].add(x[np.array([1, 0, 1])] * 2.0)
        return anp.sum(b, axis=0) + anp.sum(c) + anp.sum(d) + anp.stack(list(s))[1, 0]

    _close(ad.jet(f, (x,), ser)[1], nested_jvp(f, (x,), ser)[1], rtol=1e-10)


# ---- composites, other primitives (the jvp fallback), factorial scaling ----

COMPOSITES = [
    lambda m, sp, x: m.sum(m.tanh(x @ x.T) * m.exp(-x[:, :2] @ x[:, 1:].T)),
    lambda m, sp, x: m.log(1.0 + m.exp(x)) / m.sqrt(1.0 + x * x) - sp.erf(x) ** 2,
    lambda m, sp, x: m.sin(m.cos(m.sin(x))) * (x + 2.0) ** (x + 1.0),
    lambda m, sp, x: sp.expit(m.sum(m.sinh(x) * m.cosh(x), axis=1) / (x[:, 0] ** 3 + 2.0)),
]


@pytest.mark.parametrize("order", (1, 4, 6))
@pytest.mark.parametrize("k", range(len(COMPOSITES)))
def test_composites(k, order):
    f = COMPOSITES[k]
    ser = _series(np.random.default_rng(k), [UNIT.shape], order)
    out, terms = ad.jet(_our_fun(f), (UNIT,), ser)
    out_jax, terms_jax = jax_jet(_jax_fun(f), (UNIT,), ser)
    np.testing.assert_allclose(out, out_jax, rtol=1e-13)
    _close(terms, terms_jax)


FALLBACKS = [
    ("maximum", lambda m, sp, x: m.maximum(x, 0.1 * x + 0.05)),
    ("logaddexp", lambda m, sp, x: m.logaddexp(x, 2 * x)),
    ("reduce_max", lambda m, sp, x: m.max(m.sin(x), axis=1)),
    ("reduce_prod", lambda m, sp, x: m.prod(x + 2.0, axis=0)),
    ("cumprod", lambda m, sp, x: m.cumprod(x + 2.0, axis=1)),
    ("absolute", lambda m, sp, x: m.abs(m.sin(x))),
    ("gammaln", lambda m, sp, x: sp.gammaln(x + 2.0)),
    ("logsumexp", lambda m, sp, x: sp.logsumexp(x, axis=1)),
    ("arctan2", lambda m, sp, x: m.arctan2(x, x * x + 1.0)),
]


@pytest.mark.parametrize("order", (1, 3, 5))
@pytest.mark.parametrize("name, f", FALLBACKS, ids=[r[0] for r in FALLBACKS])
def test_jvp_fallback(name, f, order):
    ser = _series(np.random.default_rng(order), [UNIT.shape], order)
    out, terms = ad.jet(_our_fun(f), (UNIT,), ser)
    _close(terms, nested_jvp(_our_fun(f), (UNIT,), ser)[1], rtol=1e-10)
    try:
        out_jax, terms_jax = jax_jet(_jax_fun(f), (UNIT,), ser)
    except (KeyError, NotImplementedError, TypeError):  # (JAX has no jet rule for it)
        return
    np.testing.assert_allclose(out, out_jax, rtol=1e-13)
    _close(terms, terms_jax, rtol=1e-11)


def test_fallback_through_custom_jvp_and_jit():
    @ad.custom_jvp
    def softplus(x):
        return anp.log1p(anp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * asp.expit(p[0])))
    inner = ad.jit(lambda x: anp.sin(x) * x**2)

    def f(x):
        return softplus(x) * inner(x)

    ser = ([0.8, -0.3, 0.5, 0.1],)
    terms = ad.jet(f, (0.4,), ser)[1]
    _close(terms, nested_jvp(f, (0.4,), ser)[1], rtol=1e-10)
    reference = jax_jet(lambda x: jnp.log1p(jnp.exp(x)) * jnp.sin(x) * x**2, (0.4,), ser)[1]
    _close(terms, reference)


# The primitives whose series come from their jvp rule (no taylor rule yet): a new rule
# removes its name here. Non-differentiable primitives need neither.
FALLBACK_PRIMITIVES = {
    "absolute", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
    "logaddexp2", "remainder", "fmod", "tanh_backward", "log1p_backward", "reduce_max",
    "reduce_min", "reduce_prod", "cumprod", "linear_recurrence", "index_multiply", "index_min", "index_max", "copy_slices",
    "invalid_view", "inv", "solve", "triangular_solve", "cholesky", "eigh", "svd", "eig",
    "qr", "expm", "adjugate", "det", "slogdet", "pinv", "lstsq", "jit_call", "cond", "while",
    "scan", "custom_jvp_call", "custom_vjp_call", "checkpoint_name", "optimization_barrier",
    "remat", "remat_saved", "logit", "entr", "erfinv", "ndtri", "log_ndtr", "gammaln",
    "gamma", "digamma", "xlogy", "xlog1py", "polygamma", "logsumexp", "rgamma", "i0e", "i1e",
    "riemann_zeta", "gammainc", "gammaincc", "betainc", "zeta", "gammainc_da",
    "delayed_error", "custom_root", "custom_linear_solve",
}  # fmt: skip


def _library_primitives() -> list:
    """autodiff's primitives: those defined once its modules are imported (see _LIBRARY), not
    those other tests, run in the same process, define (their own, and the autograd.Function
    subclasses they apply, each a primitive)."""
    return [
        p
        for p in all_primitives()
        if id(p) in _LIBRARY
        and p.impl is not _function_rules._impl
        and not (getattr(p.impl, "__module__", None) or "").split(".")[0].startswith("test")
    ]


# (the modules defining primitives on first use, loaded; then every primitive there is, before
# any test defines its own)
importlib.import_module("autodiff.implicit")
importlib.import_module("autodiff.torch.compile")
importlib.import_module("autodiff.staging.numba.executor")
_LIBRARY = {id(p) for p in all_primitives()}


def test_coverage_listing():
    with_rule = sorted(p.name for p in _library_primitives() if p.taylor is not None)
    fallback = sorted(
        p.name
        for p in _library_primitives()
        if p.taylor is None and p.differentiable and p.jvp is not None
    )
    print(f"\ntaylor rules ({len(with_rule)}): {' '.join(with_rule)}")
    print(f"jvp fallback ({len(fallback)}): {' '.join(fallback)}")
    assert set(fallback) - FALLBACK_PRIMITIVES == set(), "new fallback primitives"
    assert FALLBACK_PRIMITIVES & set(with_rule) == set(), "listed, but has a rule now"


def test_factorial_scaled_false():
    ser = ([0.5, -0.2, 0.3, 0.7],)
    f = lambda x: anp.tanh(x) * anp.exp(x)
    ours = ad.jet(f, (0.3,), ser, factorial_scaled=False)
    theirs = jax_jet(lambda x: jnp.tanh(x) * jnp.exp(x), (0.3,), ser, factorial_scaled=False)
    _close(ours[1], theirs[1])


def test_pytree_outputs_and_constant_outputs():
    def f(x, y):
        return {"a": anp.sin(x) * y, "b": (anp.ones(2), 3.0 * y)}

    x, y = np.array([0.1, 0.2]), np.array(0.5)
    ser = ([np.ones(2), np.zeros(2)], [np.array(0.3), np.array(-1.0)])
    out, terms = ad.jet(f, (x, y), ser)
    out_jax, terms_jax = jax_jet(
        lambda x, y: {"a": jnp.sin(x) * y, "b": (jnp.ones(2), 3.0 * y)}, (x, y), ser
    )
    assert set(terms) == {"a", "b"} and len(terms["b"]) == 2
    _close(terms["a"], terms_jax["a"])
    _close(terms["b"][0], terms_jax["b"][0])
    _close(terms["b"][1], terms_jax["b"][1])


def test_empty_series():
    out, terms = ad.jet(anp.sin, (0.5,), ([],))
    assert float(out) == np.sin(0.5) and terms == []


def test_float32_stays_float32():
    x = np.float32(0.3)
    out, terms = ad.jet(lambda v: anp.exp(v) * anp.sin(v), (x,), ([np.float32(1.0)] * 3,))
    assert out.dtype == np.float32 and all(t.dtype == np.float32 for t in terms)
    ref = jax_jet(lambda v: jnp.exp(v) * jnp.sin(v), (0.3,), ([1.0] * 3,))[1]
    _close(terms, ref, rtol=1e-5)


# ---- composition: jit, vmap, grad ----

F = (lambda m: lambda x: m.sin(x) * m.exp(x) / (1.0 + x * x))(anp)
F_JAX = lambda x: jnp.sin(x) * jnp.exp(x) / (1.0 + x * x)


def test_jet_under_jit():
    g = ad.jit(lambda x: ad.jet(F, (x,), ([1.0, 0.5, 0.0, 0.0],))[1])
    for x in (0.3, 0.7):
        _close(g(x), jax_jet(F_JAX, (x,), ([1.0, 0.5, 0.0, 0.0],))[1])


def test_jet_of_jitted_function():
    _close(
        ad.jet(ad.jit(F), (0.3,), ([1.0, 0.0, 0.0],))[1], jax_jet(F_JAX, (0.3,), ([1.0, 0, 0],))[1]
    )


def test_jet_under_vmap():
    xs = np.array([0.1, 0.4, -0.3])
    ours = ad.vmap(lambda x: ad.jet(F, (x,), ([anp.ones_like(x), x, 0.0 * x],))[1])(xs)
    theirs = jax.vmap(lambda x: jax_jet(F_JAX, (x,), ([jnp.ones_like(x), x, 0.0 * x],))[1])(xs)
    _close(ours, theirs)


def test_vmap_under_jet():
    xs = np.array([0.1, 0.4, -0.3])
    ser = ([np.ones(3), xs, np.zeros(3)],)
    _close(ad.jet(ad.vmap(F), (xs,), ser)[1], jax_jet(F_JAX, (xs,), ser)[1])


def test_grad_of_jet():
    def third(x):
        return ad.jet(F, (x,), ([1.0, 0.0, 0.0],))[1][2]

    def third_jax(x):
        return jax_jet(F_JAX, (x,), ([1.0, 0.0, 0.0],))[1][2]

    for x in (0.3, -0.5):
        np.testing.assert_allclose(ad.grad(third)(x), jax.grad(third_jax)(x), rtol=1e-12)
        np.testing.assert_allclose(ad.grad(third)(x), ad.derivatives(F, order=4)(x)[4], rtol=1e-12)


def test_grad_through_series_arguments():
    g = ad.grad(lambda s: ad.jet(F, (0.3,), ([s, s * s],))[1][1])(0.7)
    g_jax = jax.grad(lambda s: jax_jet(F_JAX, (0.3,), ([s, s * s],))[1][1])(0.7)
    np.testing.assert_allclose(g, g_jax, rtol=1e-12)


def test_nested_jet():
    inner = lambda x: ad.jet(F, (x,), ([1.0, 0.0],))[1][1]
    terms = ad.jet(inner, (0.3,), ([1.0, 0.0],))[1]  # (F''', F'''')
    _close(terms, ad.derivatives(F, order=4)(0.3)[3:])


# ---- derivatives ----


@pytest.mark.parametrize("x", (0.0, 0.3, -1.2))
def test_derivatives_closed_forms(x):
    n = 8
    _close(ad.derivatives(anp.exp, order=n)(x), [np.exp(x)] * (n + 1))
    sin_derivs = [np.sin(x), np.cos(x), -np.sin(x), -np.cos(x)] * 3
    _close(ad.derivatives(anp.sin, order=n)(x), sin_derivs[: n + 1])
    geometric = [math.factorial(k) / (1.0 - x) ** (k + 1) for k in range(n + 1)]
    _close(ad.derivatives(lambda v: 1.0 / (1.0 - v), order=n)(x), geometric)
    log_derivs = [np.log(2.0 + x)] + [
        (-1) ** (k - 1) * math.factorial(k - 1) / (2.0 + x) ** k for k in range(1, n + 1)
    ]
    _close(ad.derivatives(lambda v: anp.log(2.0 + v), order=n)(x), log_derivs)


def test_derivatives_order_zero_and_errors():
    assert [float(v) for v in ad.derivatives(anp.sin, order=0)(0.5)] == [np.sin(0.5)]
    with pytest.raises(ValueError, match="non-negative"):
        ad.derivatives(anp.sin, order=-1)
    with pytest.raises(TypeError, match="integer"):
        ad.derivatives(anp.sin, order=2.0)
    with pytest.raises(ValueError, match="scalar x"):
        ad.derivatives(anp.sin, order=2)(np.ones(2))
    with pytest.raises(ValueError, match="scalar function"):
        ad.derivatives(lambda x: anp.stack([x, x]), order=2)(0.5)
    with pytest.raises(TypeError):
        ad.derivatives(anp.sin, order=2, bogus=1)


# ---- bad input ----


def test_errors():
    with pytest.raises(TypeError, match="must be tuples or lists; found float and tuple"):
        ad.jet(anp.sin, 0.5, ([1.0],))
    with pytest.raises(TypeError, match="series entry 0"):
        ad.jet(anp.sin, (0.5,), (np.ones(1),))
    with pytest.raises(ValueError, match="jet terms have inconsistent lengths"):
        ad.jet(lambda a, b: a * b, (1.0, 2.0), ([1.0], [1.0, 2.0]))
    with pytest.raises(ValueError, match="1 primals and 2 series"):
        ad.jet(anp.sin, (0.5,), ([1.0], [2.0]))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        ad.jet(anp.sin, ((0.5, 0.2),), ([1.0],))
    with pytest.raises(ValueError, match="term 1 for argument 0 is not an array"):
        ad.jet(anp.sin, (0.5,), ([1.0, [1.0, 2.0]],))
    with pytest.raises(ValueError, match=r"primal 0 has shape \(2,\) and its term 0 has shape"):
        ad.jet(anp.sin, (np.ones(2),), ([np.ones(3)],))
    with pytest.raises(TypeError, match="primal 0 has dtype float64 and its term 0 has dtype"):
        ad.jet(anp.sin, (np.ones(2),), ([np.ones(2, np.float32)],))
    with pytest.raises(TypeError, match="floating or complex dtype"):
        ad.jet(anp.sin, (np.arange(2),), ([np.ones(2)],))
    with pytest.raises(TypeError, match="callable"):
        ad.jet(3, (0.5,), ([1.0],))
    with pytest.raises(TypeError, match="unexpected keyword"):
        ad.jet(anp.sin, (0.5,), ([1.0],), bogus=True)
    with pytest.raises(TypeError, match="output component 0"):
        ad.jet(lambda x: "no", (0.5,), ([1.0],))


# ---- measurement (printed, not asserted) ----


def test_measure_derivatives_vs_nested_grad():
    f = lambda x: anp.sin(x) * anp.exp(-x * x) / (1.0 + x * x)
    g = f
    for _ in range(8):
        g = ad.grad(g)
    ours = ad.derivatives(f, order=8)(0.3)
    np.testing.assert_allclose(ours[8], g(0.3), rtol=1e-9)
    timings = {}
    for name, call in (("derivatives(f, order=8)", lambda: ad.derivatives(f, order=8)(0.3)),
                       ("8 nested grads", lambda: g(0.3))):  # fmt: skip
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            call()
            runs.append(time.perf_counter() - start)
        timings[name] = min(runs)
    print("\n" + ", ".join(f"{k}: {v * 1e3:.2f} ms (best of 5)" for k, v in timings.items()))


def test_complex():
    z = np.array([0.3 + 0.2j, -0.1 + 0.5j])
    ser = ([np.array([1 + 1j, 0.5j]), np.array([0.2, 0.1 + 0j]), np.array([0.3j, 1.0 + 0j])],)
    ours = ad.jet(lambda z: anp.exp(z) * anp.sin(z) / (1 + z * z), (z,), ser)[1]
    theirs = jax_jet(lambda z: jnp.exp(z) * jnp.sin(z) / (1 + z * z), (z,), ser)[1]
    _close(ours, theirs)


def test_no_perturbation_confusion():
    def d(f, x):  # (the first derivative, by jet)
        return ad.jet(f, (x,), ([1.0],))[1][0]

    assert float(d(lambda x: x * d(lambda y: x + y, 2.0), 1.0)) == 1.0


def test_escaped_tracer():
    leaked = []
    ad.jet(lambda x: leaked.append(x * 2.0) or x, (0.5,), ([1.0],))
    with pytest.raises(ad.EscapedTracerError):
        anp.sin(leaked[0])


def test_derivatives_compose():
    x = 0.4
    fourth = ad.derivatives(F, order=4)(x)[4]
    np.testing.assert_allclose(ad.grad(lambda v: ad.derivatives(F, 3)(v)[3])(x), fourth, 1e-12)
    xs = np.array([0.1, 0.4])
    batched = ad.vmap(lambda v: anp.stack(ad.derivatives(F, 4)(v)))(xs)
    for i, v in enumerate(xs):
        _close(batched[i], ad.derivatives(F, 4)(v))
    staged = ad.jit(lambda v: anp.stack(ad.derivatives(F, 4)(v)))
    _close(staged(x), ad.derivatives(F, 4)(x))
