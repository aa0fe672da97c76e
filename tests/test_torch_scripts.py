"""Typical PyTorch autograd scripts, ported by renaming the import (API.md section C)."""

import numpy as np

import autodiff as torch  # the point of these tests: torch code runs with this one change
import autodiff.numpy as anp
from autodiff.autograd import forward_ad as fwAD
from autodiff.autograd import functional


def test_training_loop_with_manual_sgd():
    gen = np.random.default_rng(0)
    x = torch.tensor(gen.normal(size=(64, 3)))
    true_w = np.array([[1.5], [-2.0], [0.5]])
    y = torch.tensor(x.numpy() @ true_w + 0.3)
    w = torch.zeros(3, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr = 0.1
    for _ in range(300):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
    np.testing.assert_allclose(w.detach().numpy(), true_w, atol=1e-3)
    np.testing.assert_allclose(b.detach().numpy(), [0.3], atol=1e-3)
    assert loss.item() < 1e-6


def test_double_backward_gradient_penalty():
    gen = np.random.default_rng(1)
    x = torch.tensor(gen.normal(size=(8, 4)), requires_grad=True)
    w = torch.tensor(gen.normal(size=(4, 4)), requires_grad=True)
    out = anp.tanh(x @ w).sum()
    (gx,) = torch.autograd.grad(out, x, create_graph=True)
    penalty = (gx**2).sum()
    penalty.backward()

    # check against a finite difference of the penalty in w
    def penalty_of(wv):
        t = np.tanh(x.detach().numpy() @ wv)
        return np.sum(((1 - t**2) @ wv.T) ** 2)

    e = np.zeros((4, 4))
    e[1, 2] = 1e-6
    wv = w.detach().numpy()
    fd = (penalty_of(wv + e) - penalty_of(wv - e)) / 2e-6
    assert np.isclose(w.grad.numpy()[1, 2], fd, rtol=1e-5)


def test_hessian_via_functional_vectorized():
    def f(x):
        return (x**3).sum() + (x[0] * x[1])

    x = torch.tensor([1.0, 2.0, 3.0])
    h = functional.hessian(f, x, vectorize=True)
    expected = np.diag(6 * x.numpy())
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(h.numpy(), expected)


def test_forward_over_reverse_hvp_with_dual_levels_and_create_graph():
    def f(x):
        return (anp.sin(x) * x).sum()

    x0 = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(torch.tensor(x0, requires_grad=True), torch.tensor(v))
        (g,) = torch.autograd.grad(f(x), x, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    d2 = 2 * np.cos(x0) - x0 * np.sin(x0)  # the Hessian is diagonal
    np.testing.assert_allclose(hvp.detach().numpy(), d2 * v, rtol=1e-12)


def test_torch_style_functions_and_methods():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    y = torch.tanh(x).exp().sum() + torch.relu(x).sum() + x.sigmoid().sum()
    y.backward()
    t = np.tanh([1.0, -2.0])
    s = 1 / (1 + np.exp(-np.array([1.0, -2.0])))
    np.testing.assert_allclose(x.grad.numpy(), np.exp(t) * (1 - t**2) + [1.0, 0.0] + s * (1 - s))
    w = torch.zeros(2)
    w.add_(torch.ones(2), alpha=2).mul_(3)
    assert w.tolist() == [6.0, 6.0] and w._version == 2
    assert torch.cat([x, x]).view(2, 2).t().shape == (2, 2)
    assert torch.sum(x * x, dim=0).item() == 5.0 and x.unsqueeze(0).dim() == 2


def test_stack_and_unbind_are_one_node_each():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    a, b, c = x.unbind(1)
    assert a.grad_fn.name() == "UnbindBackward0" and a.tolist() == [1.0, 4.0]
    s = torch.stack([a, c * 3.0], dim=1)
    assert s.grad_fn.name() == "StackBackward0" and s.shape == (2, 2)
    (s * s).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0, 54.0], [8.0, 0.0, 108.0]])
    assert [t.tolist() for t in torch.unbind(x.detach())] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
