"""Forward mode: jvp, linearize, hvp, the four compositions, and torch-style nested dual levels."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import forward_ad as fwAD
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


def poly(x):
    return 3.0 * x**4 - 2.0 * x**3 + x


def mixed(x):
    return anp.tanh(anp.sin(x) * x) + anp.exp(-x * x) * anp.log1p(x * x)


def rosen(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


SCALAR_FUNCS = [anp.sin, anp.tanh, poly, mixed, lambda x: x / (1.0 + x * x) ** 0.5]


def _numeric(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("f", SCALAR_FUNCS)
def test_jvp_matches_grad_and_differences(f):
    x = 0.37
    out, t = ad.jvp(f, (x,), (1.0,))
    assert np.isclose(out, f(x))
    assert np.isclose(t, ad.grad(f)(x))
    assert np.isclose(t, _numeric(f, x), rtol=1e-6)


@pytest.mark.parametrize("f", SCALAR_FUNCS)
def test_four_second_order_compositions_agree(f):
    x = 0.37
    d_fwd = lambda x: ad.jvp(f, (x,), (1.0,))[1]
    d_rev = ad.grad(f)
    fwd_fwd = ad.jvp(d_fwd, (x,), (1.0,))[1]
    fwd_rev = ad.jvp(d_rev, (x,), (1.0,))[1]
    rev_fwd = ad.grad(d_fwd)(x)
    rev_rev = ad.grad(d_rev)(x)
    expected = _numeric(d_rev, x)
    for value in (fwd_fwd, fwd_rev, rev_fwd, rev_rev):
        assert np.isclose(value, expected, rtol=1e-6)


def test_third_order_mixed_nesting():
    f = mixed
    d3_rev = ad.grad(ad.grad(ad.grad(f)))(0.3)
    d_fwd = lambda g: lambda x: ad.jvp(g, (x,), (1.0,))[1]
    assert np.isclose(d_fwd(ad.grad(d_fwd(f)))(0.3), d3_rev)
    assert np.isclose(d_fwd(d_fwd(d_fwd(f)))(0.3), d3_rev)


def test_jvp_pytrees_and_has_aux():
    def f(p):
        return {"y": p["a"] * p["b"]}, p["a"] + 1.0

    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    t = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    out, t_out, aux = ad.jvp(f, (p,), (t,), has_aux=True)
    np.testing.assert_allclose(out["y"], [3.0, 8.0])
    np.testing.assert_allclose(t_out["y"], [3.0, 2.0])
    np.testing.assert_allclose(aux, [2.0, 3.0])


def test_jvp_constant_output_has_zero_tangent():
    out, t = ad.jvp(lambda x: np.ones(3), (1.0,), (1.0,))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_jvp_errors():
    with pytest.raises(TypeError, match="must be tuples or lists"):
        ad.jvp(anp.sin, 1.0, 1.0)
    with pytest.raises(ValueError, match="different primal and tangent shapes"):
        ad.jvp(anp.sin, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match="different primal and tangent dtypes"):
        ad.jvp(anp.sin, (np.ones(2),), (np.ones(2, np.float32),))
    with pytest.raises(TypeError, match="same tree structure"):
        ad.jvp(lambda a, b: a, (1.0, 2.0), (1.0,))


def test_jvp_of_an_integer_primal_needs_a_float0_tangent():
    double = lambda x, n: x * n
    x, n = np.array([1.0, 2.0]), np.array([3, 4])
    for t in (np.ones(2, np.int64), np.ones(2)):
        with pytest.raises(TypeError, match="primal 1 has dtype int64") as info:
            ad.jvp(double, (x, n), (np.ones(2), t))
        assert "float0" in str(info.value)
    float0 = np.zeros(2, dtype=ad.float0)
    out, t_out = ad.jvp(double, (x, n), (np.ones(2), float0))
    np.testing.assert_array_equal(out, [3.0, 8.0])
    np.testing.assert_array_equal(t_out, [3.0, 4.0])
    _, t_out = ad.jvp(lambda n: n * 2.0, (n,), (float0,))
    np.testing.assert_array_equal(t_out, [0.0, 0.0])


def test_jvp_float32():
    x = np.linspace(0, 1, 4, dtype=np.float32)
    out, t = ad.jvp(lambda x: anp.exp(x) * 2.0, (x,), (np.ones(4, np.float32),))
    assert out.dtype == np.float32 and t.dtype == np.float32


def test_perturbation_confusion_forward():
    # d/dx [x * d/dy (x + y)] = 1, with both derivatives in forward mode
    def d(f):
        return lambda x: ad.jvp(f, (x,), (1.0,))[1]

    assert d(lambda x: x * d(lambda y: x + y)(2.0))(1.0) == 1.0
    assert d(lambda x: x * d(lambda y: x * y)(2.0))(3.0) == 6.0
    # mixed: forward outside, reverse inside and vice versa
    assert d(lambda x: x * ad.grad(lambda y: x + y)(2.0))(1.0) == 1.0
    assert ad.grad(lambda x: x * d(lambda y: x + y)(2.0))(1.0) == 1.0


def test_linearize_matches_jvp_without_recomputing():
    calls = []

    def f(x):
        calls.append(1)
        return anp.sin(x) * x**2

    x = np.array([0.1, 0.5, 1.2])
    out, f_jvp = ad.linearize(f, x)
    n = len(calls)
    for v in (np.ones(3), np.array([1.0, -2.0, 0.5])):
        np.testing.assert_allclose(f_jvp(v), ad.jvp(f, (x,), (v,))[1])
    assert len(calls) == n + 2  # only the two reference jvp calls evaluated f


def test_hvp_rosenbrock():
    x = np.array([0.5, -0.3, 1.2, 0.8])
    v = np.array([1.0, 2.0, -1.0, 0.5])
    hv = ad.hvp(rosen, (x,), (v,))
    h = np.array([ad.grad(lambda x: ad.grad(rosen)(x)[i])(x) for i in range(4)])
    np.testing.assert_allclose(hv, h @ v, rtol=1e-10)


# ----------------------------------------------------------------------------- dual levels


def test_dual_level_first_derivative_and_exit_clears_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(ad.tensor([0.0, 1.0]), ad.tensor([1.0, 1.0]))
        y = anp.sin(x) * 2.0
        primal, tangent = fwAD.unpack_dual(y)
        np.testing.assert_allclose(tangent.numpy(), 2 * np.cos([0.0, 1.0]))
        np.testing.assert_allclose(primal.numpy(), 2 * np.sin([0.0, 1.0]))
    assert fwAD.unpack_dual(y).tangent is None
    z = y + 1.0  # a tensor of an exited level behaves as its primal
    assert type(z) is ad.Tensor


@pytest.mark.parametrize("f, x0", [(anp.sin, 0.3), (poly, 1.1), (anp.tanh, 0.4)])
def test_nested_dual_levels_give_higher_derivatives(f, x0):
    with fwAD.dual_level() as outer:
        with fwAD.dual_level() as inner:
            assert (outer, inner) == (0, 1)
            x = fwAD.make_dual(ad.tensor(x0), ad.tensor(1.0), level=outer)
            x = fwAD.make_dual(x, ad.tensor(1.0), level=inner)
            y = f(x)
            first = fwAD.unpack_dual(y, level=inner).tangent
            second = fwAD.unpack_dual(first, level=outer).tangent
    d2 = ad.grad(ad.grad(f))(x0)
    assert np.isclose(float(second), d2)
    assert np.isclose(float(first.primal()), ad.grad(f)(x0))


def test_third_derivative_of_tanh_by_three_dual_levels():
    with fwAD.dual_level(), fwAD.dual_level(), fwAD.dual_level():
        x = ad.tensor(0.4)
        for level in range(3):
            x = fwAD.make_dual(x, ad.tensor(1.0), level=level)
        t = anp.tanh(x)
        for level in (2, 1, 0):
            t = fwAD.unpack_dual(t, level=level).tangent
    th = np.tanh(0.4)
    assert np.isclose(float(t), -2 * (1 - th**2) * (1 - 3 * th**2))


def test_nested_dual_levels_on_an_mlp():
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(3, 5)), rng.normal(size=5)

    def net(s):
        return anp.sum(anp.tanh(s * w1[0] + w1[1]) * w2)

    with fwAD.dual_level(), fwAD.dual_level():
        s = fwAD.make_dual(
            fwAD.make_dual(ad.tensor(0.2), ad.tensor(1.0), level=0), ad.tensor(1.0), level=1
        )
        second = fwAD.unpack_dual(fwAD.unpack_dual(net(s), level=1).tangent, level=0).tangent
    assert np.isclose(float(second), ad.grad(ad.grad(net))(0.2))


def test_dual_level_errors_leave_stack_intact():
    depth = trace_stack_depth()
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(ad.tensor(1.0), ad.tensor(1.0))
    a = fwAD.enter_dual_level()
    b = fwAD.enter_dual_level()
    with pytest.raises(
        RuntimeError, match="Trying to exit a forward AD level that was not the last one"
    ):
        fwAD.exit_dual_level(level=a)
    assert trace_stack_depth() == depth + 2
    with pytest.raises(
        RuntimeError,
        match="different size than that of the original Tensor.*size \\[2\\].*size \\[3\\]",
    ):
        fwAD.make_dual(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        fwAD.make_dual(ad.tensor([1, 2]), ad.tensor([1.0, 2.0]))
    fwAD.exit_dual_level(level=b)
    fwAD.exit_dual_level(level=a)
    assert trace_stack_depth() == depth


def test_dual_levels_mix_with_functional_transforms():
    with fwAD.dual_level():
        x = fwAD.make_dual(ad.tensor(0.5), ad.tensor(1.0))
        g = ad.grad(lambda y: anp.sin(y) * y)(x)  # gradient carries a tangent: the 2nd derivative
        d2 = fwAD.unpack_dual(g).tangent
    assert np.isclose(float(d2), ad.grad(ad.grad(lambda y: anp.sin(y) * y))(0.5))
