"""custom_jvp, custom_vjp and checkpoint under every transform and the torch-style API."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


@ad.custom_jvp
def safe_norm(x):
    return anp.sqrt(anp.sum(x * x))


@safe_norm.defjvp
def _safe_norm_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    n = safe_norm(x)
    return n, anp.sum(x * t) / anp.where(n == 0, 1.0, n)


def test_custom_jvp_used_by_forward_and_reverse():
    x = np.array([3.0, 4.0])
    assert safe_norm(x) == 5.0
    np.testing.assert_allclose(ad.grad(safe_norm)(x), x / 5.0)
    np.testing.assert_allclose(ad.jvp(safe_norm, (x,), (np.array([1.0, 0.0]),))[1], 0.6)
    # the rule, not the naive formula, runs at the origin: no nan
    np.testing.assert_array_equal(ad.grad(safe_norm)(np.zeros(2)), np.zeros(2))


def test_custom_jvp_second_order_and_vmap():
    x = np.array([3.0, 4.0])
    h = ad.hessian(safe_norm)(x)
    expected = (np.eye(2) - np.outer(x, x) / 25.0) / 5.0
    np.testing.assert_allclose(h, expected, rtol=1e-12)
    xs = np.array([[3.0, 4.0], [6.0, 8.0]])
    np.testing.assert_allclose(ad.vmap(safe_norm)(xs), [5.0, 10.0])
    np.testing.assert_allclose(ad.vmap(ad.grad(safe_norm))(xs), xs / np.array([[5.0], [10.0]]))


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @ad.custom_jvp
    def scaled_sin(x, y):
        return anp.sin(x) * y

    scaled_sin.defjvps(
        lambda tx, out, x, y: anp.cos(x) * y * tx, lambda ty, out, x, y: anp.sin(x) * ty
    )
    gx, gy = ad.grad(scaled_sin, argnums=(0, 1))(0.5, 2.0)
    assert np.isclose(gx, np.cos(0.5) * 2.0) and np.isclose(gy, np.sin(0.5))

    def power(n, x):
        return x**n

    power = ad.custom_jvp(power, nondiff_argnums=(0,))

    @power.defjvp
    def _(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return power(n, x), n * x ** (n - 1) * t

    assert ad.grad(lambda x: power(3, x))(2.0) == 12.0


@pytest.mark.parametrize("decorator", [ad.custom_jvp, ad.custom_vjp], ids=lambda d: d.__name__)
def test_nondiff_argnums_are_checked_as_argnums(decorator):
    def power(n, x):
        return x**n

    def make(nums):
        f = decorator(power, nondiff_argnums=nums)
        if decorator is ad.custom_jvp:
            f.defjvp(lambda n, primals, tangents: (power(n, *primals), tangents[0]))
        else:
            f.defvjp(lambda n, x: (power(n, x), None), lambda n, res, g: (g,))
        return f

    for nums in [(0, 0), (0, -2)]:
        with pytest.raises(ValueError, match="nondiff_argnums must not contain duplicates"):
            make(nums)(3, ad.tensor(2.0))
    with pytest.raises(TypeError, match="nondiff_argnums must be an int or a sequence of ints"):
        make((0.0,))(3, ad.tensor(2.0))


def test_custom_jvp_negative_nondiff_argnums():
    power = ad.custom_jvp(lambda n, x: x**n, nondiff_argnums=(-2,))

    @power.defjvp
    def _(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return power(n, x), n * x ** (n - 1) * t

    assert ad.grad(lambda x: power(3, x))(2.0) == 12.0


def test_custom_jvp_with_tensors_backward():
    x = ad.tensor([3.0, 4.0], requires_grad=True)
    safe_norm(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.6, 0.8])


@ad.custom_vjp
def clip_grad(x, lo, hi):
    return x


clip_grad.defvjp(
    lambda x, lo, hi: (x, (lo, hi)),
    lambda res, g: (anp.clip(g, res[0], res[1]), None, None),
)


def test_custom_vjp_reverse_vmap_and_jvp_error():
    f = lambda x: anp.sum(10.0 * clip_grad(x, -1.0, 1.0))
    np.testing.assert_allclose(ad.grad(f)(np.ones(3)), np.ones(3))
    per_ex = ad.vmap(ad.grad(lambda x: 10.0 * clip_grad(x, -1.0, 1.0)))(np.ones(4))
    np.testing.assert_allclose(per_ex, np.ones(4))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        ad.jvp(lambda x: clip_grad(x, -1.0, 1.0), (1.0,), (1.0,))


def test_custom_vjp_residuals_pytrees_and_nondiff():
    def f(scale, p):
        return {"y": anp.exp(p["a"]) * scale + p["b"]}

    f = ad.custom_vjp(f, nondiff_argnums=(0,))

    def fwd(scale, p):
        e = anp.exp(p["a"])
        return {"y": e * scale + p["b"]}, (e,)

    def bwd(scale, res, ct):
        (e,) = res
        return ({"a": ct["y"] * e * scale, "b": anp.sum(ct["y"])},)

    f.defvjp(fwd, bwd)
    p = {"a": np.array([0.0, 1.0]), "b": np.float64(2.0)}
    g = ad.grad(lambda p: anp.sum(f(3.0, p)["y"]))(p)
    np.testing.assert_allclose(g["a"], 3.0 * np.exp(p["a"]))
    assert np.isclose(g["b"], 2.0)


def test_custom_vjp_second_order_when_bwd_is_differentiable():
    @ad.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (3.0 * x**2 * g,))
    assert ad.grad(ad.grad(cube))(2.0) == 12.0


@ad.custom_vjp
def sin_times(x, y):
    return anp.sin(x) * y


def _sin_times_fwd(x, y):
    # (JAX's documented pattern: fwd calls the custom function itself.)
    return sin_times(x, y), (anp.cos(x), anp.sin(x), y)


def _sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return cos_x * g * y, sin_x * g


sin_times.defvjp(_sin_times_fwd, _sin_times_bwd)


def test_custom_vjp_fwd_may_call_the_function_under_every_transform():
    x, y = np.array([0.3, -1.2, 2.0]), 1.5
    loss = lambda x: anp.sum(sin_times(x, y))
    want = np.cos(x) * y
    np.testing.assert_allclose(ad.grad(loss)(x), want)
    np.testing.assert_allclose(ad.jit(ad.grad(loss))(x), want)
    np.testing.assert_allclose(ad.grad(ad.jit(loss))(x), want)
    np.testing.assert_allclose(ad.jit(loss)(x), np.sum(np.sin(x) * y))
    np.testing.assert_allclose(ad.vmap(ad.grad(lambda v: sin_times(v, y)))(x), want)
    # Second order (reverse over reverse: forward mode raises, as in JAX) differentiates
    # through the residuals (cos x depends on x).
    hess = np.diag(-np.sin(x) * y)
    np.testing.assert_allclose(ad.jacrev(ad.grad(loss))(x), hess, atol=1e-12)
    np.testing.assert_allclose(ad.jit(ad.jacrev(ad.grad(loss)))(x), hess, atol=1e-12)
    t = ad.Tensor(x, requires_grad=True)
    (gx,) = ad.autograd.grad(sin_times(t, y).sum(), t, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), want)
    gx.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), -np.sin(x) * y)


def test_custom_vjp_fwd_must_return_the_function_output_structure():
    @ad.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: ((x * 2.0, x), None), lambda res, g: (g * 2.0,))
    with pytest.raises(TypeError, match="structure of the function's output"):
        f(ad.Tensor(np.ones(2), requires_grad=True)).sum().backward()  # (function, then fwd)
    f.defvjp(lambda x: x * 2.0, lambda res, g: (g * 2.0,))
    with pytest.raises(TypeError, match=r"pair \(output, residuals\)"):
        ad.grad(lambda x: anp.sum(f(x)))(np.ones(2))
    assert ad.grad(lambda x: anp.sum(x * 3.0))(np.ones(2)).tolist() == [3.0, 3.0]


def test_custom_vjp_bwd_may_return_python_numbers():
    # A number from bwd is the cotangent of every element, in the input's dtype; the rules
    # upstream (add, subtract, multiply) then run on an array, as for any other cotangent.
    @ad.custom_vjp
    def twice(x):
        return 2.0 * x

    twice.defvjp(lambda x: (2.0 * x, None), lambda res, g: (2.0,))
    assert ad.grad(lambda x: twice(x * x))(np.array(3.0)) == 12.0
    assert ad.grad(lambda x: twice(1.0 - x))(np.array(3.0)) == -2.0
    g = ad.grad(lambda x: anp.sum(twice(x + x)))(np.ones(3, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [4.0, 4.0, 4.0])


def test_checkpoint_matches_and_composes():
    block = ad.checkpoint(lambda x, w: anp.tanh(x * w) + x)
    f = lambda x: anp.sum(block(block(x, 0.5), 2.0))
    g = lambda x: anp.sum((lambda y: anp.tanh(y * 2.0) + y)(anp.tanh(x * 0.5) + x))
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(ad.grad(f)(x), ad.grad(g)(x))
    np.testing.assert_allclose(ad.hessian(f)(x), ad.hessian(g)(x), rtol=1e-10)
    np.testing.assert_allclose(
        ad.vmap(ad.grad(f))(np.stack([x, 2 * x])), np.stack([ad.grad(g)(x), ad.grad(g)(2 * x)])
    )
    t = ad.tensor(x, requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), ad.grad(g)(x))


def test_jvp_of_checkpoint_with_an_integer_argument():
    block = ad.checkpoint(lambda x, n: x**n)
    _, t = ad.jvp(lambda x: block(x, 3), (2.0,), (1.0,))
    assert t == 12.0
    np.testing.assert_allclose(ad.jacfwd(lambda x: block(x, 2))(np.ones(2)), 2.0 * np.eye(2))


def test_checkpoint_cuts_memory_of_a_deep_chain():
    import tracemalloc

    n_layers, segment = 1000, 32
    x = np.linspace(-1, 1, 20_000)

    def plain(x):
        for _ in range(n_layers):
            x = anp.sin(x) * 0.999
        return anp.sum(x)

    seg = ad.checkpoint(lambda x: _chain(x, segment))

    def remat(x):
        for _ in range(n_layers // segment):
            x = seg(x)
        return anp.sum(_chain(x, n_layers % segment))

    peaks = []
    for f in (plain, remat):
        tracemalloc.start()
        g = ad.grad(f)(x)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        peaks.append(g)
    np.testing.assert_allclose(peaks[1], peaks[3], rtol=1e-12)
    assert peaks[0] > 5 * peaks[2], (peaks[0], peaks[2])


def _chain(x, n):
    for _ in range(n):
        x = anp.sin(x) * 0.999
    return x
