"""autodiff.utils.checkpoint: torch.utils.checkpoint's two variants on the torch face.

Gradients through a checkpointed block equal those without it (inputs and the parameters
the block closes over, dropout included: the random state is replayed); the recomputation
happens in backward; torch's warnings and errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn
from autodiff.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _block():
    ad.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Dropout(0.3), nn.Linear(4, 2))


def _grads(model, x, run) -> list[np.ndarray]:
    model.zero_grad()
    x.grad = None
    ad.manual_seed(7)
    out = run(x)
    ad.rand(5)  # (draws between forward and backward: the recomputation must not see them)
    (out * ad.linspace(1.0, -2.0, out.shape[-1])).sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gradients_equal_those_without_checkpoint(use_reentrant):
    model = _block()
    x = ad.randn(5, 3, requires_grad=True)
    expected = _grads(model, x, model)
    got = _grads(model, x, lambda x: checkpoint(model, x, use_reentrant=use_reentrant))
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    # the recomputation leaves the random stream where it was
    ad.manual_seed(1)
    checkpoint(model, x, use_reentrant=use_reentrant).sum().backward()
    after = ad.rand(3).numpy()
    ad.manual_seed(1)
    model(x)
    np.testing.assert_array_equal(after, ad.rand(3).numpy())


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_the_function_runs_again_in_backward(use_reentrant):
    calls = []
    w = ad.tensor([2.0, 3.0], requires_grad=True)

    def f(x, scale):
        calls.append(1)
        return (x * w).sin() * scale, x.exp()

    x = ad.tensor([0.5, 1.0], requires_grad=True)
    y, z = checkpoint(f, x, 2.0, use_reentrant=use_reentrant)
    assert len(calls) == 1
    (y.sum() + z.sum()).backward()
    assert len(calls) == 2
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([1.0, 3.0]) * [2, 3] + np.exp([0.5, 1.0]))
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.cos([1.0, 3.0]) * [0.5, 1.0])


def test_non_reentrant_works_with_autograd_grad_and_double_backward():
    w = ad.tensor([0.3, -0.7], requires_grad=True)
    x = ad.tensor([1.5, 0.5], requires_grad=True)

    def f(x):
        return (x * w).tanh() * x

    def hvp(run):
        (g,) = ad.autograd.grad(run(x).sum(), x, create_graph=True)
        return ad.autograd.grad((g * g).sum(), [x, w])

    expected = hvp(f)
    got = hvp(lambda x: checkpoint(f, x, use_reentrant=False))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-14)
    kwargs_out = checkpoint(lambda x, *, k: x * k, x, k=3.0, use_reentrant=False)
    assert kwargs_out.tolist() == [4.5, 1.5]


def test_reentrant_refuses_autograd_grad_and_inputs():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    message = "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()"
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ad.autograd.grad(checkpoint(ad.sin, x, use_reentrant=True).sum(), x)
    with pytest.raises(RuntimeError, match="or passing an `inputs` parameter to .backward()"):
        checkpoint(ad.sin, x, use_reentrant=True).sum().backward(inputs=[x])
    assert x.grad is None
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda x, k: x * k, x, k=2.0, use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(ad.sin, ad.ones(2), use_reentrant=True)


def test_warning_when_use_reentrant_is_not_passed():
    x = ad.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed") as record:
        out = checkpoint(ad.exp, x)
    assert "Backward" in type(out.grad_fn).__name__ or out.grad_fn is not None
    out.backward()
    assert x.grad.tolist() == [np.e]
    torch = pytest.importorskip("torch")
    torch_checkpoint = pytest.importorskip("torch.utils.checkpoint")
    with pytest.warns(UserWarning) as torch_record:
        torch_checkpoint.checkpoint(torch.exp, torch.ones(1, requires_grad=True))
    assert str(record[0].message) == str(torch_record[0].message)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential(use_reentrant):
    ad.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(3, 3) if i % 2 == 0 else nn.Tanh() for i in range(7)])
    x = ad.randn(2, 3, requires_grad=True)
    expected = _grads(model, x, model)
    got = _grads(
        model, x, lambda x: checkpoint_sequential(model, 3, x, use_reentrant=use_reentrant)
    )
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-14)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential(list(model), 2, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint_sequential(model, 2, x, use_reentrant=False)


def test_a_recomputation_that_differs_raises():
    runs = []

    def f(x):
        runs.append(1)
        return (x[: len(runs)] ** 2).sum()

    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata than during the forward pass"):
        out.backward()
