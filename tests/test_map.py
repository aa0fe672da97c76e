"""`autodiff.map` (JAX's lax.map): a scan over the leading axis of a pytree, with `batch_size`
chunks vmapped — values against a Python loop, derivatives against central differences in
both modes to order 2, vmap, jit (one scan equation), the torch face, JAX where installed."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth
from autodiff.staging.api import jit
from autodiff.testing import check_grads

rng = np.random.default_rng(3)
XS = rng.uniform(-1.5, 1.5, size=(7, 3))


def body(x):
    return anp.sin(x) * anp.sum(x * x)


def body_pytree(x):
    return {"s": anp.sum(anp.tanh(x["a"]) * x["b"]), "v": x["a"] * x["b"][0]}


def _stack_loop(f, xs):
    return np.stack([f(x) for x in xs])


@pytest.mark.parametrize("batch_size", [None, 0, 1, 2, 3, 7, 10])
def test_values_match_a_loop(batch_size):
    want = _stack_loop(body, XS)
    np.testing.assert_allclose(ad.map(body, XS, batch_size=batch_size), want, rtol=1e-14)
    np.testing.assert_allclose(jit(lambda xs: ad.map(body, xs, batch_size=batch_size))(XS), want)


@pytest.mark.parametrize("batch_size", [None, 2, 7])
def test_pytrees_in_and_out(batch_size):
    xs = {"a": XS, "b": XS[:, ::-1] * 2.0}
    got = ad.map(body_pytree, xs, batch_size=batch_size)
    rows = [body_pytree({"a": a, "b": b}) for a, b in zip(xs["a"], xs["b"])]
    np.testing.assert_allclose(got["s"], [r["s"] for r in rows], rtol=1e-14)
    np.testing.assert_allclose(got["v"], np.stack([r["v"] for r in rows]), rtol=1e-14)


@pytest.mark.parametrize("batch_size", [None, 0, 3])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_derivatives_match_central_differences(batch_size, staged):
    def f(xs):
        w = anp.cos(xs[0])  # (closed over by the body: its derivative flows too)
        return ad.map(lambda x: body(x) * w, xs, batch_size=batch_size)

    fun = jit(f) if staged else f
    check_grads(fun, (XS,), order=2, modes=("fwd", "rev"))
    assert trace_stack_depth() == 1


@pytest.mark.parametrize("batch_size", [None, 2])
def test_vmap_and_per_example_gradients(batch_size):
    batch = np.stack([XS * s for s in (0.5, 1.0, -1.3)])

    def f(xs):
        return ad.map(body, xs, batch_size=batch_size)

    want = np.stack([_stack_loop(body, b) for b in batch])
    np.testing.assert_allclose(ad.vmap(f)(batch), want, rtol=1e-13)
    np.testing.assert_allclose(jit(ad.vmap(f))(batch), want, rtol=1e-13)
    np.testing.assert_allclose(
        ad.vmap(f, in_axes=1, out_axes=1)(batch.swapaxes(0, 1)).swapaxes(0, 1), want, rtol=1e-13
    )
    g = ad.grad(lambda xs: anp.sum(f(xs)))
    np.testing.assert_allclose(ad.vmap(g)(batch), np.stack([g(b) for b in batch]), rtol=1e-12)


def test_staged_as_one_scan():
    graph = jit(lambda xs: ad.map(body, xs)).graph(XS)
    assert [e.prim.name for e in graph.equations].count("scan") == 1
    graph = jit(lambda xs: ad.map(body, xs, batch_size=3)).graph(XS)
    names = [e.prim.name for e in graph.equations]
    assert names.count("scan") == 1  # (the two chunks of 3; the last slice vmapped outside)
    assert names.count("concatenate") == 1


def test_eager_calls_f_once_per_slice_or_chunk():
    shapes = []

    def f(x):
        shapes.append(np.shape(x))
        return x * 2.0

    ad.map(f, XS)
    assert shapes == [(3,)] * 7
    shapes.clear()
    ad.map(f, np.ones((5, 3)), batch_size=2)
    assert shapes == [(3,)] * 3  # (two chunks of two, then the last slice: each vmapped)


def test_empty_and_torch_face():
    out = ad.map(lambda x: {"y": x * 2.0}, np.zeros((0, 2)), batch_size=3)
    assert out["y"].shape == (0, 2)
    x = ad.tensor(XS, requires_grad=True)
    anp.sum(ad.map(body, x, batch_size=2)).backward()
    want = ad.grad(lambda xs: anp.sum(ad.map(body, xs)))(XS)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-13)


def test_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f_jax(x):
        return jnp.sin(x) * jnp.sum(x * x)

    for batch_size in (None, 0, 2, 3):
        want = jax.lax.map(f_jax, XS, batch_size=batch_size)
        np.testing.assert_allclose(ad.map(body, XS, batch_size=batch_size), want, rtol=1e-14)
        want = jax.grad(lambda xs: jnp.sum(jax.lax.map(f_jax, xs, batch_size=batch_size)))(XS)
        got = ad.grad(lambda xs: anp.sum(ad.map(body, xs, batch_size=batch_size)))(XS)
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_errors():
    with pytest.raises(ValueError, match="different leading axis sizes"):
        ad.map(lambda x: x["a"], {"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match="non-negative"):
        ad.map(body, XS, batch_size=-1)
    with pytest.raises(TypeError):
        ad.map(body, XS, batch_size=1.5)
