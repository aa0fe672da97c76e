"""`autodiff.compile` on the benchmark's CNN and dropout/LayerNorm steps: compiled against
eager step by step and against real torch with the weights copied; max pooling (the running
maximum of strided slices, and the gathered windows it replaces for small windows) against
torch's, ties, padding and NaN included; strided slices' transposes lowered in the compiled
backend."""

import copy

import numpy as np
import pytest

import autodiff as torch
import autodiff.nn as nn
import autodiff.nn.functional as F
from autodiff.core.abstract import ShapedArray
from autodiff.ops.gather_scatter import scatter_add_p
from autodiff.staging.ir import Equation, Var
from autodiff.staging.numba.lower import lowering_of
from autodiff.torch.nn.functional import pooling

real = pytest.importorskip("torch")


def _cnn(lib):
    return lib.nn.Sequential(
        lib.nn.Conv2d(3, 4, 3, padding=1),
        lib.nn.ReLU(),
        lib.nn.MaxPool2d(3, stride=2, padding=1),
        lib.nn.Conv2d(4, 6, 2),
        lib.nn.ReLU(),
        lib.nn.MaxPool2d(2),
        lib.nn.Flatten(),
        lib.nn.Linear(24, 5),
    ).double()


def _copy_weights(model, ref) -> None:
    with real.no_grad():
        for p, q in zip(model.parameters(), ref.parameters()):
            q.copy_(real.from_numpy(np.asarray(p.detach()).copy()))


def _step(lib, model, opt, x, y) -> float:
    opt.zero_grad()
    loss = lib.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def _close(a, b, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol * 0.1)


@pytest.mark.parametrize("compile_step", [False, True], ids=["step-eager", "step-compiled"])
def test_cnn_training_matches_eager_and_torch(compile_step):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((4, 3, 10, 10)) for _ in range(5)]
    ys = [rng.integers(0, 5, 4) for _ in range(5)]
    eager = _cnn(torch)
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="numba")
    ref = _cnn(real)
    _copy_weights(eager, ref)
    options = {"lr": 0.1, "momentum": 0.9}
    opts = [torch.optim.SGD(m.parameters(), **options) for m in (eager, compiled)]
    ref_opt = real.optim.SGD(ref.parameters(), **options)
    if compile_step:
        opts[1].step = torch.compile(opts[1].step, backend="numba")
    for x, y in zip(xs, ys):
        want = _step(torch, eager, opts[0], torch.tensor(x), torch.tensor(y))
        got = _step(torch, compiled, opts[1], torch.tensor(x), torch.tensor(y))
        theirs = _step(real, ref, ref_opt, real.from_numpy(x), real.from_numpy(y))
        assert abs(got - want) <= 1e-13 * abs(want)
        assert abs(got - theirs) <= 1e-12 * abs(theirs)
        for p, q, r in zip(mine.parameters(), eager.parameters(), ref.parameters()):
            _close(p.detach(), q.detach())
            _close(p.detach(), r.detach().numpy(), rtol=1e-10)
    assert compiled._compile_counts["staged"] == 1
    assert compiled._compile_counts["graph_breaks"] == 0


def test_cnn_input_gradient_matches_torch():
    torch.manual_seed(1)
    model = _cnn(torch)
    ref = _cnn(real)
    _copy_weights(model, ref)
    compiled = torch.compile(model, backend="numba")
    x = np.random.default_rng(2).standard_normal((2, 3, 10, 10))
    cot = np.random.default_rng(3).standard_normal((2, 5))
    # (a first call on data that requires no grad: its backward graph computes none for it)
    compiled(torch.tensor(x)).sum().backward()
    model.zero_grad()
    grads = []
    for m in (model, compiled):
        xt = torch.tensor(x, requires_grad=True)
        (m(xt) * torch.tensor(cot)).sum().backward()
        grads.append(xt.grad)
    assert compiled._compile_counts["staged"] == 2
    xr = real.from_numpy(x).requires_grad_()
    (ref(xr) * real.from_numpy(cot)).sum().backward()
    _close(grads[1], grads[0])
    _close(grads[0], xr.grad.numpy(), rtol=1e-10)


# (weight shape, stride, padding, dilation, groups) of a 2-d convolution: the input's windows
# one stack of strided slices, or (more than OFFSETS_MAX kernel positions) gathered per dim
CONVS = [
    ((4, 3, 3, 3), 1, 1, 1, 1),
    ((6, 1, 3, 2), (2, 1), (0, 2), (1, 2), 3),
    ((2, 3, 7, 5), (1, 2), 2, 1, 1),
]


@pytest.mark.parametrize("wshape,stride,padding,dilation,groups", CONVS)
def test_conv2d_matches_torch(wshape, stride, padding, dilation, groups):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 9, 8))
    w, b = rng.standard_normal(wshape), rng.standard_normal(wshape[0])
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    theirs = [real.from_numpy(v).requires_grad_() for v in (x, w, b)]
    want = real.nn.functional.conv2d(*theirs, **options)
    cot = rng.standard_normal(tuple(want.shape))
    want.backward(real.from_numpy(cot))

    def conv(*args):
        return F.conv2d(*args, **options)

    for fun in (conv, torch.compile(conv, backend="numba")):
        mine = [torch.tensor(v, requires_grad=True) for v in (x, w, b)]
        got = fun(*mine)
        got.backward(torch.tensor(cot))
        _close(got.detach(), want.detach().numpy(), rtol=1e-13)
        for m, t in zip(mine, theirs):
            _close(m.grad, t.grad.numpy(), rtol=1e-13)


# (kernel, stride, padding, dilation, ceil_mode) of a 2-d max pooling
POOLS = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 1, 1, 1, False),
    ((2, 3), (1, 2), (1, 0), 1, True),
    (2, 2, 1, 2, False),
    (3, 2, 0, 1, True),
    (5, 3, 2, 1, False),  # (25 elements a window: gathered, the reference path)
]


def _pool_input(rng, shape):
    # (few distinct values: many ties; a few -inf, whole windows of them near the corner)
    x = rng.integers(-2, 3, shape).astype(float)
    x[..., :2, :2] = -np.inf
    return x


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", POOLS)
def test_max_pool2d_matches_torch_with_ties(kernel, stride, padding, dilation, ceil_mode):
    rng = np.random.default_rng(4)
    x = _pool_input(rng, (2, 3, 9, 8))
    options = dict(
        kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode
    )
    xr = real.from_numpy(x).requires_grad_()
    want = real.nn.functional.max_pool2d(xr, **options)
    cot = rng.standard_normal(tuple(want.shape))
    want.backward(real.from_numpy(cot))

    def pool(t):
        return F.max_pool2d(t, **options)

    for fun in (pool, torch.compile(pool, backend="numba")):
        xt = torch.tensor(x, requires_grad=True)
        got = fun(xt)
        got.backward(torch.tensor(cot))
        np.testing.assert_array_equal(np.asarray(got.detach()), want.detach().numpy())
        # (overlapping windows: a position's cotangents are summed in another order)
        _close(xt.grad, xr.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("nd", [1, 3])
def test_max_pool_1d_3d_match_torch(nd):
    rng = np.random.default_rng(5)
    x = rng.integers(-2, 3, (2, 2) + (5,) * nd).astype(float)
    name = f"max_pool{nd}d"
    xr = real.from_numpy(x).requires_grad_()
    want = getattr(real.nn.functional, name)(xr, 3, stride=2, padding=1)
    want.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    got = getattr(F, name)(xt, 3, stride=2, padding=1)
    got.sum().backward()
    np.testing.assert_array_equal(np.asarray(got.detach()), want.detach().numpy())
    np.testing.assert_array_equal(np.asarray(xt.grad), xr.grad.numpy())


def test_max_pool_nan_takes_the_last_nan_as_torch():
    x = np.array([[[[1.0, np.nan, 0.0, np.nan], [3.0, 2.0, np.nan, 5.0]]]])
    xr = real.from_numpy(x).requires_grad_()
    want = real.nn.functional.max_pool2d(xr, (1, 4))
    want.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    got = F.max_pool2d(xt, (1, 4))
    got.sum().backward()
    np.testing.assert_array_equal(np.asarray(got.detach()), want.detach().numpy())
    np.testing.assert_array_equal(np.asarray(xt.grad), xr.grad.numpy())


@pytest.mark.parametrize(
    "kernel,stride,dilation", [((2, 2), (2, 2), (1, 1)), ((3, 2), (1, 2), (2, 1))]
)
def test_max_chain_matches_the_reference_windows(kernel, stride, dilation):
    # (distinct values: the gathered windows' argmax and the running maximum agree)
    x = np.random.default_rng(6).permutation(2 * 3 * 9 * 8).reshape(2, 3, 9, 8).astype(float)
    out_sizes = tuple(
        (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(x.shape[2:], kernel, stride, dilation)
    )
    cot = torch.tensor(np.random.default_rng(7).standard_normal((2, 3) + out_sizes))
    results = []
    for fun in (
        lambda t: pooling._max_windows(t, 2, kernel, stride, dilation),
        lambda t: pooling._max_chain(
            t, np.zeros(x.shape[2:], bool), kernel, stride, dilation, out_sizes
        ),
    ):
        xt = torch.tensor(x, requires_grad=True)
        y = fun(xt)
        (y * cot).sum().backward()
        results.append((np.asarray(y.detach()), np.asarray(xt.grad)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_strided_scatter_add_lowers_elementwise_and_matches():
    def f(x):
        return torch.sum(torch.sin(x[1::3, ::2])) + torch.sum(x[:, 2:7:2] ** 2)

    x = np.random.default_rng(8).standard_normal((8, 9))
    want = torch.func.grad(f)(torch.tensor(x))
    got = torch.jit(torch.func.grad(f), backend="numba")(torch.tensor(x))
    _close(got, want, rtol=1e-14)
    expected = np.zeros((8, 9))
    expected[1::3, ::2] += np.cos(x[1::3, ::2])
    expected[:, 2:7:2] += 2 * x[:, 2:7:2]
    _close(want, expected, rtol=1e-14)
    index = (slice(1, None, 3), slice(None, None, 2))
    eqn = Equation(
        scatter_add_p,
        [Var(ShapedArray((3, 5), np.float64))],
        [Var(ShapedArray((8, 9), np.float64))],
        {"shape": (8, 9), "index": index},
    )
    assert lowering_of(eqn, {}) == "elementwise"
    eqn.params["index"] = (slice(None, None, -1),)
    assert lowering_of(eqn, {}) is None  # (a negative step runs in NumPy)


class _DropoutLayerNormMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(6, 16), nn.LayerNorm(16), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(16, 16), nn.LayerNorm(16), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(16, 3),
        )  # fmt: skip

    def forward(self, x):
        return self.net(x)


def test_dropout_layer_norm_mlp_compiled_matches_eager_step_by_step():
    torch.manual_seed(0)
    eager = _DropoutLayerNormMLP().double()
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="numba")
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled)]
    opts[1].step = torch.compile(opts[1].step, backend="numba")
    rng = np.random.default_rng(9)
    for step in range(5):
        x, y = torch.tensor(rng.standard_normal((8, 6))), torch.tensor(rng.integers(0, 3, 8))
        losses = []
        for model, opt in zip((eager, compiled), opts):
            torch.manual_seed(step)  # (the same dropout masks: compiled draws from eager's stream)
            losses.append(_step(torch, model, opt, x, y))
        assert abs(losses[1] - losses[0]) <= 1e-13 * abs(losses[0])
        for p, q in zip(mine.parameters(), eager.parameters()):
            _close(p.detach(), q.detach())
    assert compiled._compile_counts["staged"] == 1
    assert compiled._compile_counts["graph_breaks"] == 0
