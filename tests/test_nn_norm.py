"""nn.functional batch_norm / instance_norm / group_norm and the BatchNorm, InstanceNorm and
GroupNorm modules: values, gradients and running statistics against real torch, train/eval
semantics, transforms, torch's errors and reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn
from autodiff.nn import functional as F
from autodiff.testing import check_grads


def _compare_module(make, shape, steps=2, train=True):
    """Run the module `make(t)` of autodiff and torch on the same inputs for a few steps:
    outputs, input and parameter gradients, buffers."""
    torch = pytest.importorskip("torch")
    ours, theirs = make(nn), make(torch.nn).double()
    assert repr(ours) == repr(theirs)
    ours.train(train)
    theirs.train(train)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = rng.standard_normal(shape) * 2.0 + 0.5
        g = rng.standard_normal(shape)
        tx, ax = torch.tensor(x, requires_grad=True), ad.tensor(x, requires_grad=True)
        ty, ay = theirs(tx), ours(ax)
        ty.backward(torch.tensor(g))
        ay.backward(ad.tensor(g))
        np.testing.assert_allclose(ay.detach().numpy(), ty.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), atol=1e-10)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-10, err_msg=name)
    t_buffers = dict(theirs.named_buffers())
    assert list(dict(ours.named_buffers())) == list(t_buffers)
    for name, b in ours.named_buffers():
        np.testing.assert_allclose(b.numpy(), t_buffers[name].numpy(), atol=1e-12, err_msg=name)
        assert b.dtype == t_buffers[name].numpy().dtype, name


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda n: n.BatchNorm1d(3), (5, 3)),
        (lambda n: n.BatchNorm1d(3, momentum=None), (4, 3, 6)),
        (lambda n: n.BatchNorm2d(2, affine=False), (3, 2, 4, 5)),
        (lambda n: n.BatchNorm3d(2, track_running_stats=False, bias=False), (2, 2, 3, 2, 2)),
        (lambda n: n.InstanceNorm1d(3), (2, 3, 5)),
        (lambda n: n.InstanceNorm1d(3, affine=True), (3, 5)),  # (unbatched)
        (lambda n: n.InstanceNorm2d(2, affine=True, track_running_stats=True), (3, 2, 4, 3)),
        (lambda n: n.InstanceNorm3d(2, track_running_stats=True, momentum=0.3), (2, 2, 3, 2, 2)),
        (lambda n: n.GroupNorm(2, 4), (3, 4, 5)),
        (lambda n: n.GroupNorm(3, 3, affine=False), (2, 3, 2, 2)),
    ],
)
def test_norm_modules_match_torch_in_training(make, shape):
    _compare_module(make, shape)


def test_norm_modules_match_torch_in_eval():
    """Eval mode uses the running statistics (after a training step updated them); modules
    without them keep using the batch's."""
    torch = pytest.importorskip("torch")
    for make, shape in (
        (lambda n: n.BatchNorm2d(2), (3, 2, 4, 5)),
        (lambda n: n.BatchNorm1d(3, track_running_stats=False), (4, 3)),
        (lambda n: n.InstanceNorm1d(3, track_running_stats=True), (2, 3, 5)),
    ):
        ours, theirs = make(nn), make(torch.nn).double()
        x = np.random.default_rng(1).standard_normal(shape)
        ours(ad.tensor(x))
        theirs(torch.tensor(x))
        ours.eval()
        theirs.eval()
        y = x[::-1].copy() * 3.0
        np.testing.assert_allclose(
            ours(ad.tensor(y)).detach().numpy(),
            theirs(torch.tensor(y)).detach().numpy(),
            atol=1e-12,
        )


def test_functional_norms_higher_derivatives():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 2, 4))
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    check_grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    check_grads(lambda x, w: F.instance_norm(x, weight=w) ** 2, (x, w), modes=("rev", "fwd"))
    check_grads(lambda x: F.group_norm(x, 2) ** 2, (x,), modes=("fwd",))


def test_batch_norm_running_stats_and_eval_values():
    rm, rv = ad.zeros(2), ad.ones(2)
    x = ad.tensor([[1.0, 0.0], [3.0, 4.0]])
    out = F.batch_norm(x, rm, rv, training=True, momentum=0.5, eps=1e-12)
    np.testing.assert_allclose(out.numpy(), [[-1.0, -1.0], [1.0, 1.0]], atol=1e-9)
    np.testing.assert_allclose(rm.numpy(), [1.0, 1.0])  # (0.5 * 0 + 0.5 * mean)
    np.testing.assert_allclose(rv.numpy(), [1.5, 4.5])  # (unbiased: var 2 and 8)
    out = F.batch_norm(x, rm, rv, training=False, eps=0.0)
    np.testing.assert_allclose(out.numpy(), (x.numpy() - 1.0) / np.sqrt([1.5, 4.5]))


def test_norms_under_transforms():
    """Without running statistics the norms batch and differentiate as any composite;
    updating running statistics from inside vmap or jit raises."""
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 3, 2, 5))
    bn = nn.BatchNorm1d(2, track_running_stats=False)
    batched = ad.vmap(lambda x: bn(x))(xs)
    for x, y in zip(xs, np.asarray(batched)):
        np.testing.assert_allclose(y, bn(ad.tensor(x)).detach().numpy(), atol=1e-12)
    inorm = nn.InstanceNorm1d(2)
    np.testing.assert_allclose(
        np.asarray(ad.jit(lambda x: inorm(x))(xs[0])), inorm(ad.tensor(xs[0])).detach().numpy()
    )
    # ad.grad: the running statistics update from the concrete primal values
    tracked = nn.BatchNorm1d(2)
    ad.grad(lambda x: ad.numpy.sum(tracked(x) ** 3))(xs[0])
    np.testing.assert_allclose(tracked.running_mean.numpy(), 0.1 * xs[0].mean(axis=(0, 2)))
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input"):
        ad.vmap(lambda x: tracked(x))(xs)


def test_norm_errors_and_warnings_match_torch():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training"):
        F.batch_norm(ad.ones(1, 5), ad.zeros(5), ad.ones(5), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(ad.ones(2, 5), None, None)
    with pytest.raises(RuntimeError, match="running_mean should contain 5 elements not 3"):
        F.batch_norm(ad.ones(4, 5), ad.zeros(3), ad.ones(3), training=True)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(5)(ad.ones(4, 5, 2, 2))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(5)(ad.ones(4, 5, 2))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(ad.ones(1, 3, 1))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features"):
        nn.InstanceNorm2d(5, affine=True)(ad.ones(1, 4, 2, 2))
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible"):
        F.group_norm(ad.ones(2, 6, 3), 4)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.InstanceNorm2d(2)(ad.tensor([[[[1.0, 2.0]]]]))
    assert any("does not match num_features" in str(w.message) for w in caught)


def test_norm_module_bookkeeping():
    bn = nn.BatchNorm2d(3)
    assert list(bn.state_dict()) == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    bn.float()
    assert bn.running_mean.dtype == np.float32 and bn.num_batches_tracked.dtype == np.int64
    assert list(nn.InstanceNorm1d(3).state_dict()) == []
    inorm = nn.InstanceNorm1d(3, track_running_stats=True)
    assert list(inorm.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]
    bn.train()
    bn(ad.ones(2, 3, 2, 2, dtype=ad.float32))
    bn.reset_running_stats()
    assert int(bn.num_batches_tracked) == 0 and float(bn.running_var.sum()) == 3.0
