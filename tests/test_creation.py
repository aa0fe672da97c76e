"""Array creation: what the op table (tests/cases_creation.py) cannot express — empty and
integer ranges, the errors, the torch-style factory."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp


def test_grad_of_linspace_in_its_endpoints():
    f = lambda a: anp.sum(anp.linspace(a, 3, 5) ** 2)
    assert ad.grad(f)(1.0) == 7.5  # (JAX's value)
    g = ad.grad(lambda a, b: anp.sum(np.linspace(a, b, 5) ** 2), argnums=(0, 1))(1.0, 3.0)
    np.testing.assert_allclose(g, (7.5, 12.5))


@pytest.mark.parametrize("name", ["linspace", "logspace", "geomspace"])
def test_empty_and_integer_ranges_are_numpys(name):
    f, ref = getattr(anp, name), getattr(np, name)
    for kw in [dict(num=0), dict(num=6, dtype=np.int64), dict(num=3, dtype=np.float32)]:
        got = ad.vjp(lambda a: f(a, np.array([8.0, 9.0]), **kw), 2.0)[0]
        want = ref(2.0, np.array([8.0, 9.0]), **kw)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    g = ad.grad(lambda a: anp.sum(f(a, 9.0, num=0)))(2.0)
    assert g == 0.0
    g = ad.grad(lambda a: anp.sum(f(a, 9.0, num=6, dtype=np.int64) * 1.0))(2.0)
    assert g == 0.0  # (integer values: a constant, as any cast to an integer dtype)


def test_linspace_step():
    y, step = ad.vjp(lambda a: anp.linspace(a, 3.0, 1, retstep=True), 1.0)[0]
    assert np.isnan(step) and y.tolist() == [1.0]
    assert ad.grad(lambda a: anp.linspace(a, 3.0, 5, retstep=True)[1])(1.0) == -0.25


def test_errors_are_numpys():
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative"):
        ad.grad(lambda a: anp.sum(anp.linspace(a, 3.0, -1)))(1.0)
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        ad.grad(lambda a: anp.sum(anp.geomspace(a, 3.0, 4)))(0.0)
    with pytest.raises(TypeError):
        ad.grad(lambda a: anp.sum(anp.linspace(a, 3.0, 2.5)))(1.0)


def test_torch_style_linspace_is_differentiable_in_its_endpoints():
    a = ad.tensor(1.0, requires_grad=True)
    ad.linspace(a, 3.0, 5).pow(2).sum().backward()
    assert a.grad.item() == 7.5
    leaf = ad.linspace(a, 3.0, 5, requires_grad=True)  # a new leaf, as torch's
    assert leaf.is_leaf and leaf.requires_grad
    np.testing.assert_allclose(ad.grad(lambda a: ad.linspace(a, 3.0, 5).sum())(1.0), 2.5)
