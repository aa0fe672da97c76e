"""One Tensor, two faces, two complex conventions, each checked against its peer.

For a real loss L(z) of complex z = x + iy:
- the functional face (grad, vjp, jacrev, custom_vjp's bwd) gives JAX's gradient,
  dL/dx - i dL/dy (the plain transpose of the JVP): for |z|^2 it is 2 conj(z);
- the torch face (`.grad`, autograd.grad, hooks, Function.backward) gives PyTorch's,
  dL/dx + i dL/dy, the conjugate: for |z|^2 it is 2 z.
Same functions on both faces: |z|^2, cos(|z|), and a complex linear least-squares loss.
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd

rng = np.random.default_rng(11)
Z = rng.normal(size=3) + 1j * rng.normal(size=3)
A = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
B = rng.normal(size=4) + 1j * rng.normal(size=4)


def abs2(np_, z):
    return np_.sum(np_.abs(z) ** 2)


def cos_abs(np_, z):
    return np_.sum(np_.cos(np_.abs(z)))


def least_squares(np_, z):
    r = np_.matmul(A, z) - np_.asarray(B)
    return np_.sum(np_.real(r * np_.conj(r)))


LOSSES = {"abs2": abs2, "cos_abs": cos_abs, "least_squares": least_squares}

# Closed forms of JAX's gradient (conj of dL/dx + i dL/dy): checked without any peer.
EXPECTED_JAX = {
    "abs2": lambda z: 2 * np.conj(z),
    "cos_abs": lambda z: np.conj(-np.sin(np.abs(z)) * z / np.abs(z)),
    "least_squares": lambda z: np.conj(2 * A.conj().T @ (A @ z - B)),
}


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _torch():
    return pytest.importorskip("torch")


def _torch_np(torch):
    """The torch namespace spelled as NumPy for the losses above."""

    class T:
        sum = staticmethod(torch.sum)
        abs = staticmethod(torch.abs)
        cos = staticmethod(torch.cos)
        real = staticmethod(torch.real)
        conj = staticmethod(torch.conj)
        asarray = staticmethod(torch.as_tensor)

        @staticmethod
        def matmul(a, b):
            a = torch.as_tensor(a) if isinstance(a, np.ndarray) else a
            return torch.matmul(a, b)

    return T


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_functional_face_is_jax_convention(name):
    loss = LOSSES[name]
    want = EXPECTED_JAX[name](Z)
    np.testing.assert_allclose(ad.grad(lambda z: loss(anp, z))(Z), want, rtol=1e-12)
    value, g = ad.value_and_grad(lambda z: loss(anp, z))(Z)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    _, pull = ad.vjp(lambda z: loss(anp, z), Z)
    np.testing.assert_allclose(pull(1.0)[0], want, rtol=1e-12)
    np.testing.assert_allclose(ad.jacrev(lambda z: loss(anp, z))(Z), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_functional_face_matches_jax(name):
    jax = _jax()
    loss = LOSSES[name]
    theirs = np.asarray(jax.grad(lambda z: loss(jax.numpy, z))(Z))
    np.testing.assert_allclose(ad.grad(lambda z: loss(anp, z))(Z), theirs, rtol=1e-10)
    np.testing.assert_allclose(ad.jacrev(lambda z: loss(anp, z))(Z), theirs, rtol=1e-10)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_torch_face_is_the_conjugate(name):
    loss = LOSSES[name]
    want = np.conj(EXPECTED_JAX[name](Z))
    z = ad.tensor(Z, requires_grad=True)
    loss(anp, z).backward()
    np.testing.assert_allclose(z.grad.numpy(), want, rtol=1e-12)
    z2 = ad.tensor(Z, requires_grad=True)
    (g,) = autograd.grad(loss(anp, z2), z2)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_torch_face_matches_torch(name):
    torch = _torch()
    loss = LOSSES[name]
    t = torch.tensor(Z, requires_grad=True)
    loss(_torch_np(torch), t).backward()
    z = ad.tensor(Z, requires_grad=True)
    loss(anp, z).backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_hooks_see_torch_convention():
    z = ad.tensor(Z, requires_grad=True)
    seen = []
    z.register_hook(lambda g: seen.append(g.numpy().copy()))
    abs2(anp, z).backward()
    np.testing.assert_allclose(seen[0], 2 * Z, rtol=1e-12)
    torch = pytest.importorskip("torch")
    t = torch.tensor(Z, requires_grad=True)
    t_seen = []
    t.register_hook(lambda g: t_seen.append(g.numpy().copy()))
    torch.sum(torch.abs(t) ** 2).backward()
    np.testing.assert_allclose(seen[0], t_seen[0], rtol=1e-12)


class _Abs2(autograd.Function):
    """|z|^2 with a backward in torch's convention (grad_output * 2 z)."""

    @staticmethod
    def forward(z):
        return (z * z.conj()).real.sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output):
        (z,) = ctx.saved_tensors
        return grad_output * 2 * z


def test_function_backward_is_torch_convention_on_both_faces():
    z = ad.tensor(Z, requires_grad=True)
    _Abs2.apply(z).backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * Z, rtol=1e-12)
    # the same Function under the functional grad gives JAX's convention
    np.testing.assert_allclose(ad.grad(_Abs2.apply)(Z), 2 * np.conj(Z), rtol=1e-12)


def _abs2_custom_vjp():
    @ad.custom_vjp
    def f(z):
        return anp.sum(anp.abs(z) ** 2)

    def fwd(z):
        return f(z), z

    def bwd(z, g):  # JAX's convention: the transpose of the JVP, g * 2 conj(z)
        return (g * 2 * anp.conj(z),)

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_bwd_is_jax_convention():
    f = _abs2_custom_vjp()
    np.testing.assert_allclose(ad.grad(f)(Z), 2 * np.conj(Z), rtol=1e-12)
    # the torch face conjugates at its boundary: .grad through the same rule is torch's
    z = ad.tensor(Z, requires_grad=True)
    f(z).backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * Z, rtol=1e-12)


def test_custom_vjp_bwd_matches_jax():
    jax = _jax()
    jnp = jax.numpy

    @jax.custom_vjp
    def f(z):
        return jnp.sum(jnp.abs(z) ** 2)

    f.defvjp(lambda z: (f(z), z), lambda z, g: (g * 2 * jnp.conj(z),))
    np.testing.assert_allclose(
        ad.grad(_abs2_custom_vjp())(Z), np.asarray(jax.grad(f)(Z)), rtol=1e-12
    )


def test_holomorphic_and_complex_vjp_match_jax():
    jax = _jax()
    jnp = jax.numpy
    np.testing.assert_allclose(
        ad.grad(lambda z: anp.sum(anp.sin(z) * z), holomorphic=True)(Z),
        np.asarray(jax.grad(lambda z: jnp.sum(jnp.sin(z) * z), holomorphic=True)(Z)),
        rtol=1e-12,
    )
    ct = rng.normal(size=3) + 1j * rng.normal(size=3)
    ours = ad.vjp(lambda z: anp.conj(z) * anp.exp(z), Z)[1](ct)[0]
    theirs = jax.vjp(lambda z: jnp.conj(z) * jnp.exp(z), Z)[1](ct)[0]
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-12)
