"""Complex numbers: derivatives to order 2 in both modes; JAX's convention on the functional
face, PyTorch's (the conjugate) on the torch face (tests/test_complex_faces.py: both
against the peers)."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd
from autodiff.testing import check_grads

rng = np.random.default_rng(3)
Z = rng.normal(size=4) + 1j * rng.normal(size=4)
W = rng.normal(size=4) + 1j * rng.normal(size=4)

FUNCS = {
    "exp": lambda z: anp.exp(z),
    "sin_cos": lambda z: anp.sin(z) * anp.cos(z),
    "log": lambda z: anp.log(z),
    "sqrt": lambda z: anp.sqrt(z),
    "tanh": lambda z: anp.tanh(z),
    "square_div": lambda z: z * z / (z + 3.0),
    "power": lambda z: z**3,
    "abs": lambda z: anp.abs(z),
    "abs_times": lambda z: anp.abs(z) * z,
    "real_imag": lambda z: anp.real(z) * anp.imag(z),
    "conj": lambda z: anp.conj(z) * z,
    "sum_abs2": lambda z: anp.sum(anp.abs(z) ** 2),
    "matmul": lambda z: anp.outer(z, z) @ z,
    "mixed_real": lambda z: anp.exp(z) * 2.0 + anp.real(z),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_derivatives(name, dtype):
    tol = {} if dtype == np.complex128 else {"rtol": 5e-3, "atol": 5e-3}
    check_grads(FUNCS[name], (Z.astype(dtype),), order=2, modes=("fwd", "rev"), **tol)


def test_gradient_of_a_real_loss_follows_jax():
    # The functional face follows JAX: grad of a real L(z) is dL/dx - i dL/dy (the plain
    # transpose of the JVP); for L = |z|^2 that is 2 conj(z). `.grad` is its conjugate.
    np.testing.assert_allclose(ad.grad(lambda z: anp.sum(anp.abs(z) ** 2))(Z), 2 * np.conj(Z))
    np.testing.assert_allclose(ad.grad(lambda z: anp.sum(anp.real(z * W)))(Z), W)
    np.testing.assert_allclose(ad.grad(lambda z: anp.sum(anp.imag(z)))(Z), np.full(4, -1j))


def test_torch_style_backward_on_complex_tensors():
    z = ad.tensor(Z, requires_grad=True)
    anp.sum(anp.real(z * W)).backward()
    np.testing.assert_allclose(z.grad.numpy(), np.conj(W))


def test_torch_style_gradient_seen_by_accumulate_grad_hooks_is_the_grad():
    # AccumulateGrad's post hook gets the gradient it accumulated (conjugate convention).
    z = ad.tensor(Z, requires_grad=True)
    seen = []
    node = autograd.graph.get_gradient_edge(z).node
    node.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_outputs[0].numpy()))
    anp.sum(anp.real(z * W)).backward()
    np.testing.assert_allclose(seen[0], np.conj(W))
    np.testing.assert_allclose(z.grad.numpy(), np.conj(W))


def test_holomorphic_grad_is_the_complex_derivative():
    assert np.isclose(ad.grad(lambda z: z * z, holomorphic=True)(1.0 + 2.0j), 2.0 + 4.0j)
    j = ad.jacfwd(lambda z: z**2, holomorphic=True)(Z[:2])
    np.testing.assert_allclose(j, np.diag(2 * Z[:2]))
    np.testing.assert_allclose(ad.jacrev(lambda z: z**2, holomorphic=True)(Z[:2]), j)


def test_complex_output_to_grad_needs_holomorphic():
    with pytest.raises(TypeError, match="holomorphic=True"):
        ad.grad(lambda z: anp.sum(z))(Z)
