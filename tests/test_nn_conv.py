"""nn.functional convolutions and pools, and the Conv/Pool modules.

Values and gradients (reverse and forward mode) against real torch for strides, padding
(ints, "same", "valid"), dilation and groups; higher derivatives by finite differences
(`check_grads`); vmap and jit against the eager result; torch's errors and reprs.
"""

from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn
from autodiff.nn import functional as F
from autodiff.testing import check_grads

CONV_CASES = [
    (2, (2, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    (2, (1, 1, 12, 12), (3, 1, 10, 10), {}),  # (kernel larger than the output)
    (1, (3, 4, 10), (4, 1, 3), dict(groups=4, padding="same", dilation=2)),
    (1, (4, 10), (2, 4, 4), dict(padding="same")),  # (unbatched; even kernel: pad right)
    (3, (2, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
    (2, (2, 3, 7, 7), (4, 3, 3, 3), dict(padding="valid", stride=3)),
]


def _torch_conv(torch, nd, x, w, b, kw):
    return getattr(torch.nn.functional, f"conv{nd}d")(x, w, b, **kw)


@pytest.mark.parametrize("nd, xs, ws, kw", CONV_CASES)
def test_conv_matches_torch_values_and_gradients(nd, xs, ws, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = _torch_conv(torch, nd, tx, tw, tb, kw)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    ax, aw, ab = (ad.tensor(a, requires_grad=True) for a in (x, w, b))
    ay = getattr(F, f"conv{nd}d")(ax, aw, ab, **kw)
    ay.backward(ad.tensor(g))
    np.testing.assert_allclose(ay.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    for ours, theirs in ((ax, tx), (aw, tw), (ab, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)
    # forward mode, all three tangents at once
    tangents = tuple(rng.standard_normal(a.shape) for a in (x, w, b))
    _, t_jvp = torch.func.jvp(
        lambda *a: _torch_conv(torch, nd, *a, kw),
        tuple(torch.tensor(a) for a in (x, w, b)),
        tuple(torch.tensor(t) for t in tangents),
    )
    _, a_jvp = ad.jvp(lambda *a: getattr(F, f"conv{nd}d")(*a, **kw), (x, w, b), tangents)
    np.testing.assert_allclose(np.asarray(a_jvp), t_jvp.numpy(), atol=1e-12)


def test_conv_higher_derivatives_both_modes():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((2, 1, 2, 2))
    check_grads(
        lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, groups=2) ** 2,
        (x, w),
        order=2,
        modes=("rev", "fwd"),
    )


def test_conv_under_vmap_and_jit():
    rng = np.random.default_rng(2)
    xs, w = rng.standard_normal((3, 2, 2, 6, 6)), rng.standard_normal((4, 2, 3, 3))

    def f(x, w):
        return F.conv2d(x, w, stride=2, padding="valid", dilation=1)

    expected = np.stack([np.asarray(f(x, w)) for x in xs])
    np.testing.assert_allclose(np.asarray(ad.vmap(f, in_axes=(0, None))(xs, w)), expected)
    np.testing.assert_allclose(np.asarray(ad.jit(f)(xs[0], w)), expected[0])
    # per-example weight gradients
    per_example = ad.vmap(ad.grad(lambda x, w: ad.numpy.sum(f(x, w) ** 2), 1), (0, None))(xs, w)
    for x, g in zip(xs, np.asarray(per_example)):
        np.testing.assert_allclose(g, np.asarray(ad.grad(lambda w: ad.numpy.sum(f(x, w) ** 2))(w)))


def test_conv_errors_match_torch():
    x = ad.ones(1, 2, 8, 8)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input"):
        F.conv2d(ad.ones(2, 3), ad.ones(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="expected input\\[1, 2, 8, 8\\] to have 1 channels"):
        F.conv2d(x, ad.ones(6, 1, 3, 3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(x, ad.ones(6, 2, 3, 3), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(x, ad.ones(6, 2, 3, 3), padding="foo")
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv2d(ad.ones(1, 2, 2, 2), ad.ones(6, 2, 3, 3))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 6 elements"):
        F.conv2d(x, ad.ones(6, 2, 3, 3), ad.ones(5))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(ad.ones(1, 2, 8, 8, dtype=ad.float32), ad.ones(6, 2, 3, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="foo")


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv_module_matches_torch(mode):
    torch = pytest.importorskip("torch")
    kwargs = dict(stride=1, padding="same", dilation=2, groups=2, padding_mode=mode)
    ours, theirs = nn.Conv2d(4, 6, (3, 2), **kwargs), torch.nn.Conv2d(4, 6, (3, 2), **kwargs)
    assert repr(ours) == repr(theirs)
    theirs = theirs.double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 4, 7, 6))
    np.testing.assert_allclose(
        ours(ad.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-12
    )
    assert repr(nn.Conv1d(4, 4, 3)) == repr(torch.nn.Conv1d(4, 4, 3))
    assert repr(nn.Conv3d(4, 4, (1, 2, 3), padding="same", bias=False)) == repr(
        torch.nn.Conv3d(4, 4, (1, 2, 3), padding="same", bias=False)
    )


POOL_CASES = [
    ("max_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool2d", (2, 3, 7, 8), dict(kernel_size=(2, 3), stride=2, ceil_mode=True, dilation=(2, 1))),
    ("max_pool1d", (3, 9), dict(kernel_size=2)),
    ("max_pool3d", (1, 2, 5, 4, 6), dict(kernel_size=2, stride=(1, 2, 2), padding=1, ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=2, divisor_override=3)),
    ("avg_pool1d", (2, 3, 10), dict(kernel_size=4, stride=3, ceil_mode=True, padding=2)),
    ("avg_pool3d", (1, 2, 5, 4, 6), dict(kernel_size=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("adaptive_avg_pool2d", (2, 3, 7, 8), dict(output_size=(3, 4))),
    ("adaptive_avg_pool2d", (3, 7, 8), dict(output_size=(None, 5))),
    ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=1)),
    ("adaptive_avg_pool3d", (1, 2, 5, 4, 6), dict(output_size=(2, 3, 4))),
]  # fmt: skip


@pytest.mark.parametrize("name, xs, kw", POOL_CASES)
def test_pool_matches_torch(name, xs, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal(xs)
    if name.startswith("max"):
        x = np.round(x)  # (ties: the first maximum of a window gets the gradient, as torch's)
    tx = torch.tensor(x, requires_grad=True)
    ty = getattr(torch.nn.functional, name)(tx, **kw)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    ax = ad.tensor(x, requires_grad=True)
    ay = getattr(F, name)(ax, **kw)
    ay.backward(ad.tensor(g))
    np.testing.assert_allclose(ay.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), atol=1e-12)


def test_pool_modules_and_errors():
    torch = pytest.importorskip("torch")
    for ours, theirs, shape in (
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2), (2, 3, 6, 6)),
        (nn.MaxPool1d(3, ceil_mode=True), torch.nn.MaxPool1d(3, ceil_mode=True), (2, 3, 7)),
        (nn.AvgPool2d(3, 2, 1), torch.nn.AvgPool2d(3, 2, 1), (2, 3, 6, 6)),
        (nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1)), (3, 6, 5)),
    ):
        assert repr(ours) == repr(theirs)
        x = np.random.default_rng(5).standard_normal(shape)
        np.testing.assert_allclose(
            ours(ad.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), atol=1e-12
        )
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel"):
        F.max_pool2d(ad.ones(1, 1, 4, 4), 3, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ad.ones(1, 1, 2, 2), 3)
    check_grads(lambda x: F.avg_pool2d(x, 2, padding=1) ** 2, (np.ones((1, 3, 3)) * 0.5,))


def _small_cnn(t):
    return t.nn.Sequential(
        t.nn.Conv2d(1, 4, 3, padding=1),
        t.nn.BatchNorm2d(4),
        t.nn.ReLU(),
        t.nn.MaxPool2d(2),
        t.nn.Conv2d(4, 4, 3, groups=2, padding="same"),
        t.nn.AdaptiveAvgPool2d(1),
        t.nn.Flatten(),
        t.nn.Linear(4, 3),
    ).double()


def _train(t, start: dict):
    net = _small_cnn(t)
    net.load_state_dict({k: t.tensor(v) for k, v in start.items()})
    opt = t.optim.SGD(net.parameters(), lr=0.1)
    rng = np.random.default_rng(6)
    x = t.tensor(rng.standard_normal((8, 1, 6, 6)))
    y = t.tensor(rng.integers(0, 3, 8))
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = t.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    net.eval()
    return losses, net(x).detach().numpy(), net.state_dict()


def test_small_cnn_trains_like_torch():
    """Conv-BatchNorm-ReLU-MaxPool-Conv(groups)-AdaptiveAvgPool-Linear: the same losses,
    eval outputs and running statistics as torch over SGD steps, from the same weights."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    start = {k: v.numpy().copy() for k, v in _small_cnn(torch).state_dict().items()}
    t_losses, t_out, t_state = _train(torch, start)
    a_losses, a_out, a_state = _train(ad, start)
    np.testing.assert_allclose(a_losses, t_losses, rtol=1e-10)
    np.testing.assert_allclose(a_out, t_out, atol=1e-10)
    for key in ("1.running_mean", "1.running_var"):
        np.testing.assert_allclose(a_state[key].numpy(), t_state[key].numpy(), atol=1e-12)
    assert int(a_state["1.num_batches_tracked"]) == int(t_state["1.num_batches_tracked"]) == 3
