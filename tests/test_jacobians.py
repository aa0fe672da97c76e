"""jacrev, jacfwd, hessian, hvp: what the op table does not cover (inputs they refuse)."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp


def scale(x, n):
    return x * n


@pytest.mark.parametrize("transform", [ad.jacrev, ad.jacfwd, ad.hessian], ids=lambda t: t.__name__)
def test_jacobians_of_integer_inputs_raise_as_grad_does(transform):
    name = "jacfwd" if transform is ad.hessian else transform.__name__  # (jacfwd of jacrev)
    with pytest.raises(
        TypeError,
        match=f"{name} requires real- or complex-valued inputs .* but got int64. "
        "Argument 1 of scale has dtype int64",
    ):
        transform(scale, argnums=1)(np.ones(2), np.array([1, 2]))
    with pytest.raises(TypeError, match="Argument 0 of scale has dtype bool"):
        transform(scale, argnums=(0, 1))(np.array([True, False]), np.ones(2))


def test_jacobians_of_float_inputs_beside_integer_ones():
    x, n = np.array([1.0, 2.0]), np.array([3, 4])
    for transform in (ad.jacrev, ad.jacfwd):
        np.testing.assert_array_equal(transform(scale)(x, n), np.diag([3.0, 4.0]))
    np.testing.assert_array_equal(
        ad.hessian(lambda x, n: anp.sum(x**2 * n))(x, n), np.diag([6.0, 8.0])
    )
