"""vmap semantics, Jacobians and Hessians, per-example gradients, batched pullbacks."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


rng = np.random.default_rng(0)


def test_in_axes_pytree_prefix_and_out_axes():
    def f(p, x):
        return {"y": p["w"] * x + p["b"], "s": anp.sum(x)}

    p = {"w": rng.normal(size=(4, 3)), "b": np.ones(3)}
    x = rng.normal(size=(3, 4))
    out = ad.vmap(f, in_axes=({"w": 0, "b": None}, 1), out_axes={"y": 1, "s": 0})(p, x)
    for i in range(4):
        want = f({"w": p["w"][i], "b": p["b"]}, x[:, i])
        np.testing.assert_allclose(out["y"][:, i], want["y"])
        np.testing.assert_allclose(out["s"][i], want["s"])


def test_unbatched_output_is_broadcast_and_out_axes_none():
    out = ad.vmap(lambda x: 2.0, axis_size=None, in_axes=0)(np.ones(3))
    np.testing.assert_array_equal(out, np.full(3, 2.0))
    v, c = ad.vmap(lambda x: (x * 2.0, np.ones(2)), out_axes=(0, None))(np.arange(3.0))
    np.testing.assert_array_equal(c, np.ones(2))


def test_nested_vmap_outer_product():
    a, b = rng.normal(size=3), rng.normal(size=4)
    out = ad.vmap(ad.vmap(lambda x, y: x * y, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(out, np.outer(a, b))


def test_size_one_and_zero_batches():
    np.testing.assert_allclose(ad.vmap(anp.sin)(np.ones((1, 2))), np.sin(np.ones((1, 2))))
    out = ad.vmap(lambda x: anp.sin(x) * 2.0)(np.ones((0, 2)))
    assert out.shape == (0, 2)


def test_vmap_errors_name_arguments_and_sizes():
    with pytest.raises(
        ValueError,
        match=(
            r"vmap got inconsistent sizes for array axes to be mapped:\n"
            r"  \* one axis had size 3: axis 0 of argument a of type float64\[3\];\n"
            r"  \* one axis had size 4: axis 0 of argument b of type float64\[4\]"
        ),
    ):
        ad.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="along axis 2.*rank.*only 1.*argument x"):
        ad.vmap(anp.sin, in_axes=2)(np.ones(3))
    with pytest.raises(ValueError, match="in_axes"):
        ad.vmap(lambda a, b: a, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="at least one non-None"):
        ad.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(TypeError, match="control flow"):
        ad.vmap(lambda a: a if a > 0 else -a)(np.ones(3))


def test_chunk_size_matches_unchunked():
    x = rng.normal(size=(10, 3))
    f = lambda r: anp.sin(r) * anp.sum(r)
    np.testing.assert_allclose(ad.vmap(f, chunk_size=3)(x), ad.vmap(f)(x))
    np.testing.assert_allclose(
        ad.vmap(f, in_axes=1, out_axes=1, chunk_size=2)(x.T), ad.vmap(f)(x).T
    )


# ----------------------------------------------------------------------- derivatives & vmap

W = rng.normal(size=(5, 5)) / 2


def tanh_layer(x):
    return anp.tanh(W @ x) + x**2


def rosen(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _fd_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


VECTOR_FUNCS = [
    tanh_layer,
    lambda x: anp.sin(x) * x[0] + anp.sum(x**2),
    lambda x: x * x[::-1],
    lambda x: x[np.array([0, 2, 2, 4])] * anp.exp(x[1]),
    lambda x: anp.outer(x, x).ravel()[:7] / (1.0 + anp.sum(anp.abs(x))),
]


@pytest.mark.parametrize("f", VECTOR_FUNCS)
def test_jacobians_agree_with_each_other_and_differences(f):
    x = rng.normal(size=5)
    jr = ad.jacrev(f)(x)
    jf = ad.jacfwd(f)(x)
    np.testing.assert_allclose(jr, jf, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jr, _fd_jacobian(f, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ad.jacrev(f, chunk_size=2)(x), jr)
    np.testing.assert_allclose(ad.jacfwd(f, chunk_size=3)(x), jf)


def test_jacobian_shapes_pytrees_and_argnums():
    def f(a, b):
        return {"p": a[:, None] * b[None, :], "q": anp.sum(a)}

    a, b = rng.normal(size=3), rng.normal(size=(2,))
    for jac in (ad.jacrev, ad.jacfwd):
        j = jac(f, argnums=(0, 1))(a, b)
        assert j["p"][0].shape == (3, 2, 3) and j["p"][1].shape == (3, 2, 2)
        assert j["q"][0].shape == (3,) and j["q"][1].shape == (2,)
        np.testing.assert_allclose(j["q"][0], np.ones(3))
        (j1, aux) = jac(lambda a: (a * 2.0, a + 1.0), has_aux=True)(a)
        np.testing.assert_allclose(j1, 2 * np.eye(3))
        np.testing.assert_allclose(aux, a + 1.0)


def test_hessian_of_rosenbrock_matches_loops():
    x = rng.normal(size=6)
    h = ad.hessian(rosen)(x)
    rows = np.stack([ad.grad(lambda x, i=i: ad.grad(rosen)(x)[i])(x) for i in range(6)])
    np.testing.assert_allclose(h, rows, rtol=1e-10)
    np.testing.assert_allclose(h, h.T, rtol=1e-10)
    v = rng.normal(size=6)
    np.testing.assert_allclose(ad.hvp(rosen, (x,), (v,)), h @ v, rtol=1e-10)


def test_per_example_gradients_of_an_mlp():
    w1, w2 = rng.normal(size=(3, 8)), rng.normal(size=(8, 1))
    xs, ys = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))

    def loss(params, x, y):
        a, b = params
        return anp.sum((anp.tanh(x @ a) @ b - y) ** 2)

    per_ex = ad.vmap(ad.grad(loss), in_axes=(None, 0, 0))((w1, w2), xs, ys)
    for i in (0, 7, 15):
        gi = ad.grad(loss)((w1, w2), xs[i], ys[i])
        np.testing.assert_allclose(per_ex[0][i], gi[0], rtol=1e-10)
        np.testing.assert_allclose(per_ex[1][i], gi[1], rtol=1e-10)


def test_grad_of_vmap_and_vmap_of_jvp():
    x = rng.normal(size=(4, 3))
    g = ad.grad(lambda x: anp.sum(ad.vmap(lambda r: anp.sum(anp.sin(r) * r))(x)))(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x))
    t = ad.vmap(lambda r: ad.jvp(anp.sin, (r,), (np.ones(3),))[1])(x)
    np.testing.assert_allclose(t, np.cos(x))


def test_batched_pullback_is_one_backward_pass():
    x = rng.normal(size=5)
    out, pull = ad.vjp(tanh_layer, x)
    cts = rng.normal(size=(7, 5))
    batched = ad.vmap(pull)(cts)[0]
    np.testing.assert_allclose(batched, np.stack([pull(c)[0] for c in cts]), rtol=1e-12)
